// libFuzzer target for suricata-update's policy files as the manager reads them
// (manager/rules/policy.cc): the input is a policy file's text; byte 0 picks which file
// (enable.conf, disable.conf, drop.conf, modify.conf). When it parses, the policy is applied to
// a fixed set of rules (ids, groups, metadata, classtypes, a commented-out rule, a noalert rule)
// and the result is checked: the same number of rules, each still with its sid, counts that
// add up. modify.conf regexes and replacements are attacker-shaped input here (a policy file
// pushed by an operator who pasted it from the web), so PCRE2's match limits must hold.
// Seed corpus: tests/fuzz/corpus/rule_policy.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "manager/rules/rules.h"

using picket::rules::PolicyKind;
using picket::rules::RuleEntry;

namespace {

std::vector<RuleEntry> rules() {
    std::vector<RuleEntry> out;
    const char* texts[] = {
        "alert tcp any any -> any 80 (msg:\"ET SCAN a\"; content:\"x\"; classtype:attempted-recon; "
        "metadata:policy balanced-ips drop, signature_severity Major; sid:2000001; rev:3;)",
        "alert http any any -> any any (msg:\"ET INFO b\"; flow:established; flowbits:set,x; "
        "flowbits:noalert; sid:2000002; rev:1;)",
        "drop udp any any -> any 53 (msg:\"ET DNS c\"; content:\"|00|\"; "
        "classtype:trojan-activity; sid:2000003; rev:2;)",
        "alert tcp any any -> any any (msg:\"GPL d \\\"quoted\\\"\"; pcre:\"/a(b+)c/i\"; gid:3; "
        "sid:2000004; rev:1;)",
    };
    const char* groups[] = {"emerging-scan.rules", "emerging-info.rules", "emerging-dns.rules",
                            "gpl.rules"};
    for (uint32_t i = 0; i < 4; ++i) {
        RuleEntry e;
        e.source = "et";
        e.group = groups[i];
        e.line = i + 1;
        e.gid = i == 3 ? 3 : 1;
        e.sid = 2000001 + i;
        e.rev = 1;
        e.enabled = i != 2;
        e.text = texts[i];
        out.push_back(e);
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1 || size > 4096) {
        return 0;
    }
    static const PolicyKind kKinds[] = {PolicyKind::kEnable, PolicyKind::kDisable,
                                        PolicyKind::kDrop, PolicyKind::kModify};
    PolicyKind kind = kKinds[data[0] % 4];
    std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
    picket::rules::Policy policy;
    absl::Status st = picket::rules::parse_policy_file(kind, text, &policy);
    if (!st.ok()) {
        // "FILE:LINE: reason", every line.
        if (std::string(st.message()).rfind(picket::rules::policy_file_name(kind), 0) != 0) {
            std::abort();
        }
        return 0;
    }
    std::vector<RuleEntry> set = rules();
    picket::rules::PolicyReport report = picket::rules::apply_policy(policy, &set);
    if (set.size() != 4) {
        std::abort();
    }
    for (uint32_t i = 0; i < 4; ++i) {
        if (set[i].sid != 2000001 + i || set[i].group.empty()) {
            std::abort();
        }
    }
    if (report.enabled + report.disabled > 4 || report.dropped > 4 || report.modified > 4) {
        std::abort();
    }
    return 0;
}
