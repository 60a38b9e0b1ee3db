#include "sensor/detect/content_inspect.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <charconv>

#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {

using payload::Kind;
using payload::PayloadOp;

// ---------------------------------------------------------------------------------------
// Scratch.

PayloadScratch::~PayloadScratch() {
    if (match_data != nullptr) {
        pcre2_match_data_free(match_data);
    }
    if (match_context != nullptr) {
        pcre2_match_context_free(match_context);
    }
    if (jit_stack != nullptr) {
        pcre2_jit_stack_free(jit_stack);
    }
}

void PayloadScratchDeleter::operator()(PayloadScratch* s) const {
    delete s;
}

PayloadScratchPtr make_payload_scratch() {
    PayloadScratchPtr s(new PayloadScratch());
    // Only the whole-match offsets are read (no capture variables), so a fixed ovector is
    // enough for every pattern: PCRE2 fills what fits and still reports the match.
    s->match_data = pcre2_match_data_create(16, nullptr);
    s->match_context = pcre2_match_context_create(nullptr);
    s->jit_stack = pcre2_jit_stack_create(32 * 1024, 512 * 1024, nullptr);
    s->base64 = std::make_unique<uint8_t[]>(PayloadScratch::kBase64Max);
    if (s->match_context != nullptr && s->jit_stack != nullptr) {
        pcre2_jit_stack_assign(s->match_context, nullptr, s->jit_stack);
    }
    return s;
}

// ---------------------------------------------------------------------------------------
// Compiler view of a content.

bool get_content_info(const PayloadOption& opt, ContentInfo* out) {
    const auto* c = payload::option_as<payload::ContentOption>(&opt);
    if (c == nullptr) {
        return false;
    }
    const auto& p = c->p;
    *out = ContentInfo{};
    out->bytes = p.pattern;
    out->nocase = p.nocase;
    out->negated = p.negated;
    out->fast_pattern = p.fast_pattern;
    out->fast_pattern_only = p.fast_pattern_only;
    out->has_chop = p.has_chop;
    out->chop_offset = p.chop_offset;
    out->chop_length = p.chop_length;
    out->relative = p.has_distance || p.has_within;
    if (!out->relative) {
        if (p.has_offset && !p.offset.is_var()) {
            out->offset = static_cast<int32_t>(p.offset.value);
        }
        if (p.has_depth && !p.depth.is_var() && !p.offset.is_var()) {
            out->depth = static_cast<int32_t>(p.depth.value + (p.has_offset ? p.offset.value : 0));
        }
    }
    return true;
}

// ---------------------------------------------------------------------------------------
// Inspection.

namespace {

class Inspector {
public:
    Inspector(const BufferMatch& m, const uint8_t* data, uint32_t len, PayloadScratch& s)
        : m_(m), in_{data, len, s}, n_(m.options.size()) {}

    // 1 match, 0 no match, -1 no match and give up (Suricata's return convention).
    int run(size_t i, uint32_t cursor);
    uint32_t count() const { return count_; }
    bool limit_hit() const { return limit_hit_; }

private:
    int next(size_t i, uint32_t cursor) { return i + 1 == n_ ? 1 : run(i + 1, cursor); }
    int content(size_t i, const payload::ContentOption& c, uint32_t cursor);
    int pcre(size_t i, const payload::PcreOption& pc, uint32_t cursor);
    // byte_jump / byte_extract / byte_math: on success the options after i continue from
    // the cursor the option moved to.
    template <class T>
    int advance(size_t i, const PayloadOption& op, uint32_t cursor) {
        uint32_t nc = 0;
        if (!static_cast<const T&>(op).eval(in_, cursor, &nc)) {
            return 0;
        }
        return next(i, nc);
    }

    const BufferMatch& m_;
    payload::EvalInput in_;
    size_t n_;
    uint32_t count_ = 0;
    bool limit_hit_ = false;
};

int64_t var_or_value(const payload::VarValue& v, const PayloadScratch& s) {
    return v.get(s);
}

int Inspector::content(size_t i, const payload::ContentOption& c, uint32_t cursor) {
    const auto& p = c.p;
    const int64_t len = in_.len;
    const int64_t plen = static_cast<int64_t>(p.pattern.size());
    const bool rel = p.has_distance || p.has_within;
    const uint32_t prev_cursor = cursor;
    int64_t retry = 0;  // absolute restart position after a failed chain (0 = first search)
    const NextRelation& nr = c.next_relation();
    const bool single = !rel && !nr.relative && !p.has_depth && !p.has_offset;
    while (true) {
        int64_t start = 0;
        int64_t end = len;
        if (rel) {
            start = prev_cursor;
            int64_t dist = 0;
            if (p.has_distance) {
                dist = p.distance.is_var() ? static_cast<int32_t>(static_cast<uint32_t>(
                                                 in_.scratch.byte_values[p.distance.var]))
                                           : p.distance.value;
                start = (dist < 0 && -dist > start) ? 0 : start + dist;
            }
            if (p.has_within) {
                int64_t w = var_or_value(p.within, in_.scratch);
                int64_t e = static_cast<int64_t>(prev_cursor) + w + dist;
                if (e < end) {
                    end = e < 0 ? 0 : e;
                }
            }
        } else {
            start = p.has_offset ? var_or_value(p.offset, in_.scratch) : 0;
            if (p.has_depth) {
                end = start + var_or_value(p.depth, in_.scratch);
            }
        }
        if (retry != 0) {
            start = retry;
        }
        if (end > len) {
            end = len;
        }
        if (start > end || end == 0) {
            return p.negated ? next(i, cursor) : 0;
        }
        int64_t found = -1;
        if (p.endswith && end < len) {
            found = -1;
        } else if (plen <= end - start) {
            int64_t r = c.search(in_.data + start, static_cast<uint32_t>(end - start));
            found = r < 0 ? -1 : start + r;
        }
        if (found < 0) {
            if (!p.negated) {
                return rel ? 0 : -1;
            }
            return next(i, cursor);
        }
        const int64_t match_end = found + plen;
        if (p.negated) {
            if (p.endswith && match_end != len) {
                return next(i, cursor);
            }
            return single ? -1 : 0;
        }
        if (!p.endswith || match_end == len) {
            if (i + 1 == n_) {
                return 1;
            }
            int r = run(i + 1, static_cast<uint32_t>(match_end));
            if (r != 0) {
                return r;
            }
            if (!nr.bounds) {
                return -1;
            }
        }
        retry = found + 1;
    }
}

int Inspector::pcre(size_t i, const payload::PcreOption& pc, uint32_t cursor) {
    const uint32_t from = pc.relative_ ? cursor : 0;
    uint32_t retry = 0;
    const NextRelation& nr = pc.next_relation();
    while (true) {
        uint32_t ms = 0, me = 0;
        bool hit = false;
        if (from <= in_.len) {
            hit =
                pc.exec(in_.data, in_.len, from, retry == 0 ? from : retry, in_.scratch, &ms, &me);
        }
        if (pc.negated) {
            // A negated pcre never moves the cursor and is never retried.
            return hit ? 0 : next(i, cursor);
        }
        if (!hit) {
            return 0;
        }
        if (!nr.relative) {
            return next(i, me);
        }
        int r = next(i, me);
        if (r != 0) {
            return r;
        }
        retry = ms + 1;
        if (retry > in_.len) {
            return 0;
        }
    }
}

int Inspector::run(size_t i, uint32_t cursor) {
    ++count_;
    if (count_ >= in_.scratch.recursion_limit) {
        limit_hit_ = true;
        return -1;
    }
    const PayloadOption* op = m_.options[i].get();
    switch (op->kind()) {
        case Kind::kContent:
            return content(i, static_cast<const payload::ContentOption&>(*op), cursor);
        case Kind::kPcre:
            return pcre(i, static_cast<const payload::PcreOption&>(*op), cursor);
        case Kind::kByteTest:
            if (!static_cast<const payload::ByteTestOption&>(*op).eval(in_, cursor)) {
                return 0;
            }
            return next(i, cursor);
        case Kind::kByteJump:
            return advance<payload::ByteJumpOption>(i, *op, cursor);
        case Kind::kByteExtract:
            return advance<payload::ByteExtractOption>(i, *op, cursor);
        case Kind::kByteMath:
            return advance<payload::ByteMathOption>(i, *op, cursor);
        case Kind::kIsdataat: {
            int r = static_cast<const payload::IsdataatOption&>(*op).eval(in_, cursor);
            return r == 1 ? next(i, cursor) : r;
        }
        case Kind::kAsn1:
            if (!static_cast<const payload::Asn1Option&>(*op).eval(in_, cursor)) {
                return 0;
            }
            return next(i, cursor);
        case Kind::kBsize:
            if (!static_cast<const payload::BsizeOption&>(*op).p.match(in_.len)) {
                return -1;
            }
            return next(i, cursor);
        case Kind::kBase64Decode: {
            // Terminal, as in Suricata: the decoded data must match the base64_data options,
            // and the options after base64_decode in this buffer are not evaluated.
            const auto& b = static_cast<const payload::Base64DecodeOption&>(*op);
            uint32_t n = 0;
            if (!b.decode(in_, cursor, &n) || b.data.options.empty()) {
                return 0;
            }
            Inspector nested(b.data, in_.scratch.base64.get(), n, in_.scratch);
            const int r = nested.run(0, 0);
            count_ += nested.count();
            limit_hit_ = limit_hit_ || nested.limit_hit();
            return r == 1 ? 1 : 0;
        }
    }
    return -1;
}

}  // namespace

void link_payload_options(BufferMatch& m) {
    const size_t n = m.options.size();
    for (size_t i = 0; i < n; ++i) {
        NextRelation r;
        for (size_t j = i + 1; j < n; ++j) {
            const PayloadOption& op = *m.options[j];
            if (op.relative()) {
                r.relative = true;
                r.bounds = r.bounds || op.bounds_previous();
            }
            if (op.kind() == Kind::kContent || op.kind() == Kind::kPcre) {
                break;
            }
        }
        m.options[i]->set_next_relation(r);
        if (auto* b = payload::option_as<payload::Base64DecodeOption>(m.options[i].get())) {
            link_payload_options(b->data);
        }
    }
}

bool inspect_buffer(const BufferMatch& m, const uint8_t* data, uint32_t len,
                    const PacketContext& /*pc*/, PayloadScratch& scratch) {
    if (m.options.empty()) {
        return true;
    }
    static const uint8_t kEmpty = 0;
    Inspector ins(m, data != nullptr ? data : &kEmpty, data != nullptr ? len : 0, scratch);
    int r = ins.run(0, 0);
    scratch.last_recursion_count = ins.count();
    if (ins.limit_hit()) {
        ++scratch.recursion_limit_hits;
    }
    return r == 1;
}

// ---------------------------------------------------------------------------------------
// Parse helpers (payload.h).

namespace payload {

std::vector<std::string_view> split_args(std::string_view s) {
    std::vector<std::string_view> out;
    while (true) {
        size_t c = s.find(',');
        out.push_back(trim_blanks(s.substr(0, c)));
        if (c == std::string_view::npos) {
            break;
        }
        s.remove_prefix(c + 1);
    }
    return out;
}

bool parse_int(std::string_view s, int64_t* out) {
    s = trim_blanks(s);
    if (!s.empty() && s.front() == '+') {
        s.remove_prefix(1);
    }
    if (s.empty()) {
        return false;
    }
    int base = 10;
    bool neg = false;
    if (s.front() == '-') {
        neg = true;
        s.remove_prefix(1);
    }
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s.remove_prefix(2);
    }
    uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (ec != std::errc() || ptr != s.data() + s.size() || v > (uint64_t{1} << 63) - 1) {
        return false;
    }
    *out = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
    return true;
}

int find_byte_var(const ParseState& st, std::string_view name) {
    for (size_t i = 0; i < st.byte_vars.size(); ++i) {
        if (st.byte_vars[i] == name) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

bool parse_var_value(const ParseState& st, std::string_view s, int64_t lo, int64_t hi,
                     VarValue* out) {
    s = trim_blanks(s);
    int64_t v = 0;
    if (parse_int(s, &v)) {
        if (v < lo || v > hi) {
            return false;
        }
        *out = VarValue{v, -1};
        return true;
    }
    int idx = find_byte_var(st, s);
    if (idx < 0) {
        return false;
    }
    *out = VarValue{0, static_cast<int16_t>(idx)};
    return true;
}

bool declare_byte_var(ParseState& st, std::string_view name, int16_t* index) {
    int idx = find_byte_var(st, name);
    if (idx < 0) {
        if (st.byte_vars.size() >= PayloadScratch::kMaxByteVars) {
            return false;
        }
        st.byte_vars.emplace_back(name);
        idx = static_cast<int>(st.byte_vars.size() - 1);
    }
    *index = static_cast<int16_t>(idx);
    return true;
}

PayloadOp* append_option(ParseState& st, std::unique_ptr<PayloadOp> opt) {
    if (st.current == nullptr) {
        st.current = &st.list_for(st.sticky);
    }
    PayloadOp* raw = opt.get();
    st.current->options.push_back(std::move(opt));
    return raw;
}

PayloadOp* append_option_to(ParseState& st, BufferId id, std::unique_ptr<PayloadOp> opt) {
    // list_for may grow Rule::buffers and move the BufferMatch st.current points to.
    const bool had_current = st.current != nullptr;
    const BufferId cur = had_current ? st.current->buffer : BufferId::kPacket;
    BufferMatch& target = st.list_for(id);
    PayloadOp* raw = opt.get();
    target.options.push_back(std::move(opt));
    if (had_current) {
        st.current = &st.list_for(cur);
    }
    return raw;
}

}  // namespace payload

}  // namespace picket::sensor::detect
