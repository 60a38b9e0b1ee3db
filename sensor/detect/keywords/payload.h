// Internal to the payload keywords (content, pcre, byte_*, isdataat, bsize) and the content
// inspection engine: the concrete PayloadOption classes, their parsed values and their
// per-option evaluation. Parsing happens on the control thread; the eval/search members are
// const, allocation-free and called by inspect_buffer() on a worker thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sensor/detect/content_inspect.h"
#include "sensor/detect/keywords/header_util.h"
#include "sensor/detect/rule.h"

struct pcre2_real_code_8;

namespace picket::sensor::detect::payload {

using Kind = PayloadKind;
using PayloadOp = PayloadOption;

// FNV-1a style combiner for hash().
struct Hasher {
    uint64_t h = 1469598103934665603ull;
    Hasher& add(uint64_t v) {
        for (int i = 0; i < 8; ++i) {
            h ^= (v >> (i * 8)) & 0xff;
            h *= 1099511628211ull;
        }
        return *this;
    }
    Hasher& add(std::string_view s) {
        for (unsigned char c : s) {
            h ^= c;
            h *= 1099511628211ull;
        }
        return add(s.size());
    }
};

// A number, or a byte_extract / byte_math variable (index into PayloadScratch::byte_values).
struct VarValue {
    int64_t value = 0;
    int16_t var = -1;
    bool is_var() const { return var >= 0; }
    int64_t get(const PayloadScratch& s) const {
        return var >= 0 ? static_cast<int64_t>(s.byte_values[var]) : value;
    }
    bool operator==(const VarValue&) const = default;
};

// Evaluation state passed to the simple (non-backtracking) options.
struct EvalInput {
    const uint8_t* data;
    uint32_t len;
    PayloadScratch& scratch;
};

// The boilerplate every payload option shares, decided by the concrete class D: its kind, its
// keyword (D::kKeyword) and equality on its parsed parameters (D::p). equals() checks the
// kind, so no RTTI is needed.
template <class D, Kind K>
class OptionOf : public PayloadOption {
public:
    static constexpr Kind kKind = K;
    OptionOf() : PayloadOption(K) {}
    const char* keyword() const override { return D::kKeyword; }
    bool equals(const PayloadOption& other) const override {
        return other.kind() == K &&
               static_cast<const D&>(*this).same_params(static_cast<const D&>(other));
    }
    // D may hide this when its parameters are not one member p.
    bool same_params(const D& o) const { return static_cast<const D&>(*this).p == o.p; }
};

// The option as its concrete class when it is one, else nullptr (kind check, no RTTI).
template <class T>
const T* option_as(const PayloadOption* o) {
    return o != nullptr && o->kind() == T::kKind ? static_cast<const T*>(o) : nullptr;
}
template <class T>
T* option_as(PayloadOption* o) {
    return o != nullptr && o->kind() == T::kKind ? static_cast<T*>(o) : nullptr;
}

// ---------------------------------------------------------------------------------------
// content / uricontent (content.cc)
class ContentOption final : public OptionOf<ContentOption, Kind::kContent> {
public:
    static constexpr const char* kKeyword = "content";
    uint64_t hash() const override;
    bool relative() const override { return p.has_distance || p.has_within; }
    bool bounds_previous() const override { return p.has_within; }

    // Finds the pattern in hay[0, n): the start index, or -1. No allocation.
    int64_t search(const uint8_t* hay, uint32_t n) const;
    // Rebuilds the search tables after the pattern or nocase changed (parse time).
    void prepare();

    struct Params {
        std::string pattern;  // raw bytes
        bool negated = false;
        bool nocase = false;
        bool rawbytes = false;
        bool startswith = false;
        bool endswith = false;
        bool fast_pattern = false;
        bool fast_pattern_only = false;
        bool has_chop = false;
        uint16_t chop_offset = 0, chop_length = 0;
        bool has_offset = false, has_depth = false, has_distance = false, has_within = false;
        VarValue offset, depth, distance, within;  // depth as written (relative to offset)
        bool operator==(const Params&) const = default;
    } p;

private:
    std::string folded_;        // pattern lowered when nocase
    uint32_t shift_[256] = {};  // Horspool bad-character shifts
};

// ---------------------------------------------------------------------------------------
// pcre (pcre.cc)
class PcreOption final : public OptionOf<PcreOption, Kind::kPcre> {
public:
    static constexpr const char* kKeyword = "pcre";
    ~PcreOption() override;
    uint64_t hash() const override;
    bool same_params(const PcreOption& o) const {
        return o.source == source && o.jit == jit && o.captures == captures;
    }
    bool relative() const override { return relative_; }

    // Runs the regex on data[0,len) from `from` (absolute), starting the search at
    // `start` (absolute, >= from). On match sets *mstart/*mend (absolute). Negation is
    // not applied here.
    bool exec(const uint8_t* data, uint32_t len, uint32_t from, uint32_t start, PayloadScratch& s,
              uint32_t* mstart, uint32_t* mend) const;

    std::string source;  // the value as written, e.g. "/a+b/iR"
    bool negated = false;
    bool relative_ = false;
    uint32_t compile_options = 0;
    bool jit = false;
    pcre2_real_code_8* code = nullptr;
    // Groups captured into variables: group number -> the rule's capture slot
    // (Rule::var_captures). Empty for almost every pcre: exec() then reads no group.
    struct Capture {
        uint8_t group = 0;
        uint8_t slot = 0;
        bool operator==(const Capture&) const = default;
    };
    std::vector<Capture> captures;
};

// ---------------------------------------------------------------------------------------
// Number extraction shared by byte_test / byte_jump / byte_extract / byte_math.
enum class NumBase : uint8_t { kNone, kHex, kDec, kOct };
struct Extract {
    VarValue nbytes;
    VarValue offset;
    bool relative = false;
    bool little = false;
    NumBase base = NumBase::kNone;  // kNone: binary
    bool has_bitmask = false;
    uint64_t bitmask = 0;
    bool operator==(const Extract&) const = default;
    void hash(Hasher& h) const;
};
// Reads the number at the option's position. *end receives the absolute index after the
// bytes read. False when out of bounds or (string form) not a number.
bool extract_number(const Extract& e, const EvalInput& in, uint32_t cursor, uint64_t* value,
                    uint32_t* end, uint32_t* start = nullptr);
uint64_t apply_bitmask(const Extract& e, uint64_t v);
// Parses "hex"/"dec"/"oct".
bool parse_base(std::string_view s, NumBase* out);
// Max string digits for a base (Suricata's limits).
uint32_t max_string_bytes(NumBase b);
// Trailing flags shared by byte_test / byte_jump / byte_extract (relative, big, little,
// string, hex, dec, oct, bitmask N, dce -> error); unknown tokens go to *rest.
bool parse_common_flags(const char* kw, std::vector<std::string_view>& toks, Extract* ex,
                        bool* is_string, std::vector<std::string_view>* rest, std::string* error);
bool check_nbytes(const char* kw, const Extract& ex, uint32_t max_binary, std::string* error);

// byte_test / byte_jump / byte_extract / byte_math: relative through their Extract.
template <class D, Kind K>
class ExtractOptionOf : public OptionOf<D, K> {
public:
    bool relative() const override { return static_cast<const D&>(*this).p.ex.relative; }
};

class ByteTestOption final : public ExtractOptionOf<ByteTestOption, Kind::kByteTest> {
public:
    static constexpr const char* kKeyword = "byte_test";
    uint64_t hash() const override;
    bool eval(const EvalInput& in, uint32_t cursor) const;
    enum class Op : uint8_t { kLt, kGt, kEq, kLe, kGe, kAnd, kXor };
    struct Params {
        Extract ex;
        Op op = Op::kEq;
        bool negated = false;
        VarValue value;
        bool operator==(const Params&) const = default;
    } p;
};

class ByteJumpOption final : public ExtractOptionOf<ByteJumpOption, Kind::kByteJump> {
public:
    static constexpr const char* kKeyword = "byte_jump";
    uint64_t hash() const override;
    // On success sets *new_cursor.
    bool eval(const EvalInput& in, uint32_t cursor, uint32_t* new_cursor) const;
    struct Params {
        Extract ex;
        uint32_t multiplier = 1;
        bool align = false;
        bool from_beginning = false;
        bool from_end = false;
        int32_t post_offset = 0;
        bool operator==(const Params&) const = default;
    } p;
};

class ByteExtractOption final : public ExtractOptionOf<ByteExtractOption, Kind::kByteExtract> {
public:
    static constexpr const char* kKeyword = "byte_extract";
    uint64_t hash() const override;
    bool eval(const EvalInput& in, uint32_t cursor, uint32_t* new_cursor) const;
    struct Params {
        Extract ex;
        uint32_t multiplier = 1;
        uint32_t align = 0;  // 0, 2 or 4
        std::string name;
        int16_t var = 0;
        bool operator==(const Params&) const = default;
    } p;
};

class ByteMathOption final : public ExtractOptionOf<ByteMathOption, Kind::kByteMath> {
public:
    static constexpr const char* kKeyword = "byte_math";
    uint64_t hash() const override;
    bool eval(const EvalInput& in, uint32_t cursor, uint32_t* new_cursor) const;
    enum class Op : uint8_t { kAdd, kSub, kMul, kDiv, kShl, kShr };
    struct Params {
        Extract ex;
        Op op = Op::kAdd;
        VarValue rvalue;
        std::string name;
        int16_t var = 0;
        bool operator==(const Params&) const = default;
    } p;
};

// isdataat (isdataat.cc): returns 1 match, 0 no match, -1 no match and stop.
class IsdataatOption final : public OptionOf<IsdataatOption, Kind::kIsdataat> {
public:
    static constexpr const char* kKeyword = "isdataat";
    uint64_t hash() const override;
    bool relative() const override { return p.relative; }
    int eval(const EvalInput& in, uint32_t cursor) const;
    struct Params {
        VarValue n;
        bool negated = false;
        bool relative = false;
        bool operator==(const Params&) const = default;
    } p;
};

// base64_decode (base64.cc): decodes part of the buffer into PayloadScratch::base64; the
// base64_data options that follow are `data`, inspected on the decoded bytes.
class Base64DecodeOption final : public OptionOf<Base64DecodeOption, Kind::kBase64Decode> {
public:
    static constexpr const char* kKeyword = "base64_decode";
    uint64_t hash() const override;
    bool relative() const override { return p.relative; }
    // Decodes from the buffer (at offset, after cursor when relative) into in.scratch.base64;
    // false when no byte was decoded. *n: the decoded length.
    bool decode(const EvalInput& in, uint32_t cursor, uint32_t* n) const;
    // Never shared between rules: each has its own base64_data options.
    bool same_params(const Base64DecodeOption& o) const { return this == &o; }
    struct Params {
        uint32_t bytes = 0;  // encoded bytes to decode; 0 = to the end of the buffer
        uint32_t offset = 0;
        bool relative = false;
        bool operator==(const Params&) const = default;
    } p;
    BufferMatch data;  // the base64_data options
};
// RFC 4648 decoding of in[0, n) into out (at most cap bytes), stopping at the first byte
// outside the alphabet (padding included); a final partial group yields its whole bytes.
// Returns the decoded length.
uint32_t base64_decode_rfc4648(const uint8_t* in, uint32_t n, uint8_t* out, uint32_t cap);

// asn1 (asn1.cc): decodes BER elements from an offset of the buffer and matches when one of
// them shows a checked condition. Reads the cursor (relative_offset) and never moves it; like
// Suricata 7 it does not make the previous content retry its next occurrence.
class Asn1Option final : public OptionOf<Asn1Option, Kind::kAsn1> {
public:
    static constexpr const char* kKeyword = "asn1";
    uint64_t hash() const override;
    bool relative() const override { return false; }
    bool eval(const EvalInput& in, uint32_t cursor) const;
    struct Params {
        bool bitstring_overflow = false;
        bool double_overflow = false;
        bool has_oversize_length = false;
        uint32_t oversize_length = 0;
        bool has_absolute_offset = false;
        uint16_t absolute_offset = 0;
        bool has_relative_offset = false;
        int32_t relative_offset = 0;  // -65535..65535
        bool operator==(const Params&) const = default;
    } p;
};

bool valid_var_name(std::string_view s);

// bsize: the length of the current buffer against a keywords::UintSpec (u64).
class BsizeOption final : public OptionOf<BsizeOption, Kind::kBsize> {
public:
    static constexpr const char* kKeyword = "bsize";
    uint64_t hash() const override;
    bool relative() const override { return false; }
    keywords::UintSpec p;
};

// ---------------------------------------------------------------------------------------
// Parse helpers shared by the keyword files.

// Splits on ',' (no quoting), trimming each part.
std::vector<std::string_view> split_args(std::string_view s);
bool parse_int(std::string_view s, int64_t* out);
// Looks up a byte variable declared earlier in the rule; -1 when unknown.
int find_byte_var(const ParseState& st, std::string_view name);
// A number in [lo, hi] or the name of a declared byte variable.
bool parse_var_value(const ParseState& st, std::string_view s, int64_t lo, int64_t hi,
                     VarValue* out);
// Declares (or reuses) a byte variable; false when too many.
bool declare_byte_var(ParseState& st, std::string_view name, int16_t* index);
// Appends opt to the current sticky list (creating it) and returns the raw pointer.
PayloadOp* append_option(ParseState& st, std::unique_ptr<PayloadOp> opt);
// Appends to the list of another buffer without changing st.current.
PayloadOp* append_option_to(ParseState& st, BufferId id, std::unique_ptr<PayloadOp> opt);

// The end of byte_test / byte_jump: checks the byte count (0 is accepted as written, as by
// Suricata 7; such an option never matches) and appends the option.
template <class T>
bool append_with_nbytes(ParseState& st, const char* kw, std::unique_ptr<T> opt,
                        std::string* error) {
    const Extract& ex = opt->p.ex;
    const bool zero = !ex.nbytes.is_var() && ex.nbytes.value == 0;
    if (!zero && !check_nbytes(kw, ex, 8, error)) {
        return false;
    }
    append_option(st, std::move(opt));
    return true;
}

// The end of byte_extract / byte_math: checks the byte count, declares the option's result
// variable (p.name -> p.var) and appends it.
template <class T>
bool append_with_var(ParseState& st, const char* kw, uint32_t max_binary, std::unique_ptr<T> opt,
                     std::string* error) {
    auto& p = opt->p;
    if (!check_nbytes(kw, p.ex, max_binary, error)) {
        return false;
    }
    if (!declare_byte_var(st, p.name, &p.var)) {
        *error = std::string(kw) + ": too many byte variables in one rule";
        return false;
    }
    append_option(st, std::move(opt));
    return true;
}

}  // namespace picket::sensor::detect::payload
