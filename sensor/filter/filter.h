// 5-tuple ACL classifier: rules on source/destination CIDR (IPv4 and IPv6), port ranges and
// protocol, each with a priority and an action (pass, drop, bypass). build() runs on a control
// thread and yields an immutable classifier shared as shared_ptr<const>; lookup() is called by
// workers concurrently, with no allocation, lock, I/O or exception. parse_acl_rules() reads
// the acl.rules text format (docs/acl.md). See README.md for the algorithm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "sensor/decode/decode.h"

namespace picket::sensor::filter {

enum class AclAction : uint8_t {
    kPass,    // let the packet through without inspecting it
    kDrop,    // drop it (inline), never inspect it
    kBypass,  // let it through and stop inspecting its flow
};
const char* action_name(AclAction a);  // "pass", "drop", "bypass"

// Which packets a rule can match. kAny only when both prefixes are /0 ("any any").
enum class AclFamily : uint8_t { kAny, kIpv4, kIpv6 };

struct AclPrefix {
    decode::Address addr;  // IPv4 stored v4-mapped, as the decoder does
    uint8_t len = 0;       // in bits of the family: 0-32 for IPv4, 0-128 for IPv6
};

struct AclRule {
    AclFamily family = AclFamily::kAny;
    AclPrefix src, dst;
    uint16_t sport_lo = 0, sport_hi = 65535;  // inclusive
    uint16_t dport_lo = 0, dport_hi = 65535;
    bool any_proto = true;
    uint8_t proto = 0;      // IP protocol number when !any_proto
    uint32_t priority = 0;  // lowest wins; ties go to the rule that comes first
    AclAction action = AclAction::kPass;
    uint32_t id = 0;  // not interpreted: the acl.rules line number, a detection rule's index
};

// One line of text for messages and test failures:
// "drop tcp 10.0.0.0/8 any -> 192.0.2.1 80 priority 5".
std::string to_string(const AclRule& r);

// The fields a rule is matched against. Ports are 0 for packets without them (ICMP,
// fragments), so a rule with a port range other than 0:65535 never matches those.
struct FiveTuple {
    decode::Address src, dst;  // IPv4 v4-mapped
    uint16_t sport = 0, dport = 0;
    uint8_t proto = 0;
    uint8_t ip_version = 0;  // 4 or 6; any other value matches no rule

    static FiveTuple from_packet(const decode::Packet& p) {
        return {p.src, p.dst, p.sport, p.dport, p.proto, p.ip_version};
    }
};

struct Verdict {
    static constexpr uint32_t kNoRule = 0xffffffffu;
    uint32_t rule = kNoRule;  // index into the rules given to build(); kNoRule: no rule matched
    AclAction action = AclAction::kPass;  // meaningful only when matched()
    bool matched() const { return rule != kNoRule; }
};

// Tuning for tests and the benchmark; the defaults are what the sensor uses.
struct AclBuildOptions {
    // Keep every rule reachable for match_all(). Without it (the ACL's case), a rule that a
    // better rule covers entirely is left out of the trees, since lookup() can never return
    // it, and match_all() falls back to a linear scan.
    bool all_matches = false;
    uint32_t leaf_rules = 8;  // a node with at most this many rules becomes a leaf
    // Memory the built classifier may use. Over it, build() retries with coarser leaves,
    // then fails with ResourceExhausted.
    size_t max_memory_bytes = size_t{1} << 30;
};

struct AclStats {
    size_t rules = 0;             // as given to build()
    size_t trees = 0;             // over both families
    size_t nodes = 0;             // internal nodes
    size_t leaves = 0;            // non-empty leaves
    size_t leaf_entries = 0;      // rule copies held by leaves (wide rules are copied)
    size_t covered = 0;           // copies left out because a better rule covers them
    size_t max_leaf = 0;          // largest leaf, in rules
    size_t max_depth = 0;         // internal nodes on the longest root-to-leaf path
    size_t index_bytes = 0;       // the trees and leaves: what lookups read
    size_t memory_bytes = 0;      // everything the classifier owns, the rules' copy included
    uint32_t build_attempts = 0;  // see README.md: 2 for large sets, more over the budget
};

class AclClassifier {
public:
    // Validates every rule (InvalidArgument naming the rule's index and id), then builds.
    // Host bits beyond a prefix length are ignored. Call off the packet path: this takes
    // ~0.3 s at 100,000 rules.
    static absl::StatusOr<std::shared_ptr<const AclClassifier>> build(
        std::vector<AclRule> rules, const AclBuildOptions& options = {});

    // The matching rule with the lowest (priority, index), as linear_lookup() would find.
    Verdict lookup(const FiveTuple& t) const;
    // out[i] = lookup(tuples[i]) for i < min(tuples.size(), out.size()); interleaves the
    // lookups of a batch so that their memory loads overlap (a worker holds a batch anyway).
    void lookup_batch(std::span<const FiveTuple> tuples, std::span<Verdict> out) const;
    // Every matching rule (for IP-only detection rules), ordered by (priority, index): writes
    // up to out.size() rule indices and returns how many rules matched in total. As fast as
    // lookup() only when built with all_matches; a linear scan otherwise.
    size_t match_all(const FiveTuple& t, std::span<uint32_t> out) const;

    const std::vector<AclRule>& rules() const { return rules_; }
    const AclStats& stats() const { return stats_; }

    ~AclClassifier();
    AclClassifier(const AclClassifier&) = delete;
    AclClassifier& operator=(const AclClassifier&) = delete;

    struct Impl;  // internal: the per-family trees (acl_tree.h)

private:
    AclClassifier() = default;

    std::vector<AclRule> rules_;
    std::unique_ptr<Impl> impl_;
    AclStats stats_;
};

// The reference the classifier is tested against: every rule in order, no index.
bool rule_matches(const AclRule& r, const FiveTuple& t);
Verdict linear_lookup(std::span<const AclRule> rules, const FiveTuple& t);
std::vector<uint32_t> linear_match_all(std::span<const AclRule> rules, const FiveTuple& t);

// The prefixes that together cover exactly the inclusive range [lo, hi] of decode::Address
// (IPv4 v4-mapped), appended to *out with the family each is matched as: a block inside
// ::ffff:0:0/96 becomes an IPv4 prefix; a block containing it is emitted as the IPv6 prefix
// and as 0.0.0.0/0, since IPv4 packets are matched as IPv4. For turning the address ranges of
// IP-only detection rules into AclRules. Nothing is appended when lo > hi.
struct FamilyPrefix {
    AclFamily family;
    AclPrefix prefix;
};
void append_range_prefixes(const decode::Address& lo, const decode::Address& hi,
                           std::vector<FamilyPrefix>* out);

// Parses acl.rules text (syntax in docs/acl.md). Each rule's id is its line number; a line
// with lists or "<>" yields several rules, in the order the syntax documents. On errors,
// InvalidArgument with one "source_name:line: what is wrong" per line (at most 20).
absl::StatusOr<std::vector<AclRule>> parse_acl_rules(std::string_view text,
                                                     std::string_view source_name);

}  // namespace picket::sensor::filter
