// The rule model shared inside sensor/detect: what the parser builds, what the keyword files
// parse into and evaluate, and what the compiler groups. Not a public header: other modules
// use detect.h. A Rule is built on the control thread and immutable once compiled; evaluators
// are const and keep per-worker state in the MatchContext they are given.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sensor/decode/decode.h"
#include "sensor/detect/action.h"
#include "sensor/detect/buffer_id.h"
#include "sensor/flow/flow.h"

namespace picket::sensor::detect {

// Spaces and tabs trimmed off both ends: the blanks of the rule grammar, for the keyword
// parsers (strings::trim also drops CR, LF, VT and FF, which option values keep).
inline std::string_view trim_blanks(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
        s.remove_suffix(1);
    }
    return s;
}

struct BufferDef {
    BufferId id;
    const char* name;      // canonical sticky name, e.g. "http.uri"
    const char* alias;     // other sticky spelling, e.g. "http_uri" (Suricata 5) or nullptr
    const char* modifier;  // Snort-style content modifier, e.g. "http_uri", or nullptr
    AppProto app;          // protocol that fills it (kUnknown for kPacket)
};
// Every buffer, indexed by BufferId.
const BufferDef& buffer_def(BufferId id);
// Looks up a sticky buffer keyword ("http.uri", "http_uri" as sticky where Suricata accepts it,
// "file.data", "file_data", "pkt_data"); false when name is not a buffer.
bool find_sticky_buffer(std::string_view name, BufferId* out);
// Looks up a content modifier ("http_uri", "http_raw_uri", "http_client_body", ...).
bool find_buffer_modifier(std::string_view name, BufferId* out);

// ---------------------------------------------------------------------------------------
// Header: addresses and ports.

struct IpRange {  // inclusive, in the 16-byte v4-mapped space of decode::Address
    decode::Address lo, hi;
};
// A set such as [10.0.0.0/8,!10.1.0.0/16] or any. Negation is resolved at parse time into
// included ranges minus excluded ranges.
struct AddressSet {
    bool any = true;
    std::vector<IpRange> include;
    std::vector<IpRange> exclude;
    bool contains(const decode::Address& a) const;
};
struct PortRange {
    uint16_t lo = 0, hi = 65535;
};
struct PortSet {
    bool any = true;
    std::vector<PortRange> include;
    std::vector<PortRange> exclude;
    bool contains(uint16_t port) const;
};

// Rule protocol as written in the header. ip matches every IP packet; tcp/udp/icmp by L4
// (icmp matches ICMPv4 and ICMPv6, as in Suricata); app-layer names imply their transport
// and additionally require the flow's app protocol.
struct ProtoSpec {
    enum L4 : uint8_t { kIp, kTcp, kUdp, kIcmp } l4 = kIp;
    bool tcp_pkt_only = false;     // tcp-pkt: packets only, never the reassembled stream
    bool tcp_stream_only = false;  // tcp-stream
    AppProto app = AppProto::kUnknown;
    int8_t ip_version = 0;  // ipv4 / ipv6 headers restrict; 0 = both
};

// ---------------------------------------------------------------------------------------
// Evaluation contexts (built per packet by the engine; evaluators only read them, apart from
// the scratch members documented as writable).

struct FlowbitStore;  // per-flow bits, defined by the engine (flow user slot)
struct VarSet;        // string variables (flowvar / pktvar), flowbits.h

struct PacketContext {
    const decode::Packet* p = nullptr;
    const flow::Flow* flow = nullptr;  // nullptr: no flow (e.g. non-IP or memcap)
    flow::Direction dir = flow::Direction::kToServer;
    bool established = false;  // TCP handshake seen both ways / UDP flow seen both ways
    bool from_stream = false;  // payload is reassembled stream data (stream issue)
    FlowbitStore* flowbits = nullptr;
    // The packet's variables (pktvar, pcre pkt_ captures) as of this rule; nullptr: none.
    const VarSet* pkt_vars = nullptr;
    AppProto app = AppProto::kUnknown;  // flow's detected app protocol
    // The transaction being inspected (app-layer rules only), else nullptr.
    const AppView* view = nullptr;
    // The bytes pkt_data is being matched against: the packet's payload or the stream window
    // (from_stream). nullptr: the packet's payload (for header options that read the
    // message, such as sip_method).
    const uint8_t* data = nullptr;
    uint32_t data_len = 0;
};

// Per-worker scratch owned by the engine generation, handed to payload evaluation.
struct PayloadScratch;

// ---------------------------------------------------------------------------------------
// Options. Keyword files subclass these; identical options are shared by the compiler through
// hash()/equals() (Snort's ips_option convention).

class HeaderOption {
public:
    virtual ~HeaderOption() = default;
    virtual const char* keyword() const = 0;
    virtual bool match(const PacketContext& pc) const = 0;
    virtual uint64_t hash() const = 0;
    virtual bool equals(const HeaderOption& other) const = 0;
};

// Payload options are evaluated in order on one buffer by the content inspection engine
// (content_inspect.h); the concrete classes live in keywords/payload.h. The kind is fixed by
// the concrete class and the next relation is decided once the rule's lists are final
// (link_payload_options, end of parsing), so that inspection dispatches with a switch and
// never rescans the list or asks RTTI.
enum class PayloadKind : uint8_t {
    kContent,
    kPcre,
    kByteTest,
    kByteJump,
    kByteExtract,
    kByteMath,
    kIsdataat,
    kBsize,
    kBase64Decode,
    kAsn1
};

// How the options after a content or pcre depend on it: the options up to and including the
// next content/pcre take it as their "previous match".
struct NextRelation {
    bool relative = false;  // Suricata's *_RELATIVE_NEXT: one of them is relative
    bool bounds = false;    // DETECT_CONTENT_WITHIN_NEXT: one of them bounds the window
    bool operator==(const NextRelation&) const = default;
};

class PayloadOption {
public:
    explicit PayloadOption(PayloadKind k) : kind_(k) {}
    virtual ~PayloadOption() = default;
    PayloadKind kind() const { return kind_; }
    virtual const char* keyword() const = 0;
    virtual uint64_t hash() const = 0;
    virtual bool equals(const PayloadOption& other) const = 0;
    // Relative to the previous match (distance/within, R, relative).
    virtual bool relative() const = 0;
    // A relative option that bounds the window after the previous match, so that a later
    // occurrence of the previous content may succeed where the first failed (Suricata's
    // DETECT_CONTENT_WITHIN_NEXT): every relative option except a content with only distance.
    virtual bool bounds_previous() const { return relative(); }

    const NextRelation& next_relation() const { return next_; }
    void set_next_relation(NextRelation r) { next_ = r; }

private:
    PayloadKind kind_;
    NextRelation next_;
};

// The payload options of one buffer, in rule order.
struct BufferMatch {
    BufferId buffer = BufferId::kPacket;
    // Suricata transforms (dotprefix, to_lowercase, ...) given after the sticky buffer, in
    // order; the options see the transformed bytes. 0 = none (see transform.h).
    uint32_t transforms = 0;
    std::vector<std::unique_ptr<PayloadOption>> options;
};

// A content string as the compiler sees it, for fast-pattern selection and Hyperscan.
struct ContentInfo {
    std::string bytes;
    bool nocase = false;
    bool negated = false;
    bool fast_pattern = false;       // fast_pattern given
    bool fast_pattern_only = false;  // fast_pattern:only
    bool has_chop = false;           // fast_pattern:offset,length given
    uint16_t chop_offset = 0, chop_length = 0;
    // Absolute constraints when the content is not relative (for prefilter bounds).
    bool relative = false;
    int32_t offset = 0;
    int32_t depth = 0;  // 0 = none
};

enum class FlowbitCmd : uint8_t { kSet, kUnset, kToggle, kIsset, kIsnotset, kNoalert };
struct FlowbitOp {
    FlowbitCmd cmd;
    std::vector<uint32_t> bits;  // interned ids; isset a|b = any, a&b = all
    bool any_of = false;         // '|' form
};

// xbits (hostbits / ip_pair bits, flowbits.h). name_hash identifies the bit (names are not
// interned: the table is keyed by a hash of track, name and address). kIpBoth (hostbits'
// direction both) is the source and the destination host at once; kTx (Suricata 8's track tx)
// is the app-layer transaction being inspected, kept in the flow's FlowbitStore.
enum class XbitTrack : uint8_t { kIpSrc, kIpDst, kIpPair, kIpBoth, kTx };
struct XbitOp {
    FlowbitCmd cmd = FlowbitCmd::kSet;  // kSet, kUnset, kToggle, kIsset, kIsnotset
    XbitTrack track = XbitTrack::kIpSrc;
    uint64_t name_hash = 0;
    uint32_t expire_s = 30;  // set/toggle: seconds the bit lives (Suricata's default 30)
};

// tag (tag.h): once the rule matched, the packets that follow on its flow (session) or from or
// to one of its packet's addresses (host) are tagged until a limit of packets, bytes or
// seconds; tagged packets are logged as EVE "packet" records.
enum class TagScope : uint8_t { kSession, kHost };
inline constexpr size_t kMaxRuleTags = 8;  // tag keywords in one rule
enum class TagMetric : uint8_t { kPackets, kSeconds, kBytes };
struct TagSpec {
    TagScope scope = TagScope::kSession;
    TagMetric metric = TagMetric::kPackets;
    uint32_t count = 256;   // Suricata's default: 256 packets
    bool host_src = false;  // host: the alerting packet's source address (default: destination)
    bool operator==(const TagSpec&) const = default;
};

// flowint (flowbits.h): integer flow variables. A rule's ops run in rule order on the flow's
// values once its other options matched (run_flowints); a failed comparison stops the rule.
enum class FlowintCmd : uint8_t { kSet, kAdd, kSub, kEq, kNe, kLt, kLe, kGt, kGe, kIsset, kNotset };
struct FlowintOp {
    FlowintCmd cmd = FlowintCmd::kSet;
    uint8_t var = 0;            // interned id (FlowbitRegistry::intern_int)
    bool value_is_var = false;  // the operand is another flowint
    uint8_t value_var = 0;
    uint32_t value = 0;
    bool operator==(const FlowintOp&) const = default;
};

// String variables (flowbits.h): a flow variable lives with its flow, a packet variable for
// one packet's inspection. Set by pcre captures ((?P<flow_NAME>..), (?P<pkt_NAME>..), or the
// "/re/, flow:NAME, pkt:NAME" list) when their rule matched; read by flowvar: / pktvar:.
enum class VarScope : uint8_t { kPacket, kFlow };
inline constexpr uint32_t kMaxVarLen = 256;       // bytes of a value kept (longer ones cut)
inline constexpr uint32_t kMaxPcreCaptures = 8;   // captures into variables per pcre
inline constexpr uint32_t kMaxRuleCaptures = 16;  // ... per rule
inline constexpr uint32_t kMaxCaptureGroup = 15;  // highest group number read (ovector)
inline constexpr uint32_t kMaxVarNames = 4096;    // names per scope, over the sensor's life
struct VarCapture {
    VarScope scope = VarScope::kFlow;
    uint16_t var = 0;  // interned id (FlowbitRegistry::intern_var)
};

// kBackoff: alerts at the count-th match of a flow, then each time the matches reach the
// previous mark times multiplier (count 1, multiplier 10: 1, 10, 100, ...). kRate is a
// threshold.config rate_filter: once count matches fall within seconds, the rule's action
// becomes new_action for timeout seconds.
enum class ThresholdType : uint8_t { kLimit, kThreshold, kBoth, kDetectionFilter, kBackoff, kRate };
// kFlow: counted per flow (the flow's id), as Suricata 8's by_flow.
enum class TrackBy : uint8_t { kSrc, kDst, kRule, kBoth, kFlow };
struct ThresholdSpec {
    ThresholdType type = ThresholdType::kLimit;
    TrackBy track = TrackBy::kSrc;
    uint32_t count = 1;
    uint32_t seconds = 60;
    uint32_t multiplier = 0;             // kBackoff only
    uint32_t timeout = 0;                // kRate only
    Action new_action = Action::kAlert;  // kRate only
};

// flow: keyword summary, also used by the compiler to place a rule in a direction group.
enum FlowFlags : uint16_t {
    kFlowToServer = 1 << 0,
    kFlowToClient = 1 << 1,
    kFlowEstablished = 1 << 2,
    kFlowNotEstablished = 1 << 3,
    kFlowStateless = 1 << 4,
    kFlowOnlyStream = 1 << 5,
    kFlowNoStream = 1 << 6,
    kFlowOnlyFrag = 1 << 7,
    kFlowNoFrag = 1 << 8,
};

// The rule language a rule was written in. Where Snort 3 and Suricata define a semantic
// differently, a Snort 3 rule gets Snort 3's (docs/rules.md, "Snort 3 rules").
enum class RuleSyntax : uint8_t { kSuricata, kSnort3 };

struct Rule {
    // Identity and meta.
    uint32_t gid = 1;
    uint32_t sid = 0;
    uint32_t rev = 0;
    std::string msg;
    std::string classtype;  // short name
    std::string category;   // description from classification.config ("" if none)
    int priority = 3;       // from priority:, else the classtype's, else 3
    bool priority_set = false;
    std::vector<std::pair<std::string, std::string>> references;  // (system, id)
    std::vector<std::string> metadata;                            // "key value" entries
    enum class Target : uint8_t { kNone, kSrc, kDst } target = Target::kNone;

    // Header.
    Action action = Action::kAlert;
    RejectTo reject_to = RejectTo::kSender;  // reject / rejectsrc; rejectdst, rejectboth
    ProtoSpec proto;
    AddressSet src, dst;
    PortSet sport, dport;
    bool bidirectional = false;  // <>

    // Options.
    uint16_t flow_flags = 0;
    std::vector<std::unique_ptr<HeaderOption>> header_options;
    std::vector<BufferMatch> buffers;   // at most one entry per BufferId, in first-use order
    std::vector<ContentInfo> contents;  // every content of the rule, for the compiler
    std::vector<FlowbitOp> flowbits;
    std::vector<XbitOp> xbits;
    bool has_xbit_actions = false;  // xbits has a set, unset or toggle
    std::vector<FlowintOp> flowints;
    // pcre captures into variables, by capture slot (PayloadScratch::cap_*): stored when the
    // rule matched (flowbits.h, store_captures).
    std::vector<VarCapture> var_captures;
    std::vector<TagSpec> tags;  // tag keywords in rule order (at most kMaxRuleTags)
    bool noalert = false;
    bool has_threshold = false;
    ThresholdSpec threshold;
    bool has_detection_filter = false;
    ThresholdSpec detection_filter;
    // An app-layer protocol a header option needs (urilen: http) though no buffer names it.
    AppProto app_needed = AppProto::kUnknown;
    // Snort 3's service: option ("OR ports"): the rule applies to a flow Picket identified as
    // proto.app whatever its ports, and to its header's ports whatever the flow's protocol
    // (so also while the protocol is unknown, or its detection failed).
    bool service_or_ports = false;
    bool ip_only = false;  // set by the compiler: no payload, no L4 header options
    // Set by the compiler: Suricata's protocol-detection-only rule (app-layer-protocol and
    // nothing else but flow:to_server/to_client, flowbits:set and meta options), checked only
    // on the packet where its direction's protocol detection finished
    // (InspectExtras::proto_detect_pkt).
    bool pd_only = false;
    // Set by the compiler: the rule has options on the packet payload (pkt_data), and
    // whether those may match the reassembled stream instead (Suricata's
    // SIG_FLAG_REQUIRE_STREAM; not with tcp-pkt, flow:no_stream or dsize, which need the
    // packet itself).
    bool packet_buffer = false;
    bool stream_capable = false;
    // Set by the compiler: the stream view's prefilter finds this rule (a fast pattern).
    bool stream_prefiltered = false;
    uint32_t index = 0;  // position in the engine's rule list, set by the compiler

    // Source.
    RuleSyntax syntax = RuleSyntax::kSuricata;  // the language the rule was written in
    std::string file;
    uint32_t line = 0;
    std::string text;
};

// ---------------------------------------------------------------------------------------
// Parsing. Keywords are registered by name in one explicit list (keywords/registry.cc); each
// keyword file provides its parse function, which appends to the rule under construction.

class FlowbitRegistry;  // interns flowbit names; outlives engines (engine-owned)

struct VarTable;  // address and port variables ($HOME_NET, $HTTP_PORTS), see parser.h

struct ParseState {
    Rule* rule = nullptr;
    // Current sticky buffer for payload keywords (pkt_data / kPacket until one is set).
    BufferId sticky = BufferId::kPacket;
    // The payload option list currently being appended to, and its last content, so that
    // modifiers (nocase, depth, http_uri, fast_pattern, ...) apply to the previous content.
    BufferMatch* current = nullptr;
    PayloadOption* last_content = nullptr;
    // byte_extract / byte_math result names declared so far (usable by later options).
    std::vector<std::string> byte_vars;
    FlowbitRegistry* flowbits = nullptr;
    const VarTable* vars = nullptr;
    bool pcre_jit = true;  // compile pcre with PCRE2 JIT

    // Returns the list for buffer id, creating it at the end when new.
    BufferMatch& list_for(BufferId id);
};

// value: the text after ':' with surrounding spaces trimmed (and the quotes kept as written,
// the parser unescapes nothing); has_value: whether ':' was present. On failure set *error to
// a short reason naming the problem ("depth: must be a positive number, got 'x'").
using KeywordParseFn = bool (*)(ParseState& st, std::string_view value, bool has_value,
                                std::string* error);

struct KeywordDef {
    const char* name;
    KeywordParseFn parse;
};

// The registry: every supported keyword. nullptr when unknown.
const KeywordDef* find_keyword(std::string_view name);

}  // namespace picket::sensor::detect
