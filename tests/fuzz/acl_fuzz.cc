// libFuzzer target for sensor/filter: parse_acl_rules() on arbitrary acl.rules text; when it
// parses (at most 300 rules, to keep each run short), the classifier is built twice (the
// ACL's build and the all_matches one IP-only detection rules use) and queried with tuples
// taken from the rules' own prefixes, ports and protocols plus a few fixed ones; every answer
// of lookup(), lookup_batch() and match_all() must equal the linear scan's (the reference
// written from the definition).
// Seed corpus: tests/fuzz/corpus/acl (also deploy/ acl files via make_corpus.sh).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "sensor/filter/filter.h"

using namespace picket::sensor;
using namespace picket::sensor::filter;

namespace {

void check_all(const AclClassifier& c, const std::vector<AclRule>& rules,
               const std::vector<FiveTuple>& tuples, bool all_matches) {
    std::vector<Verdict> batch(tuples.size());
    c.lookup_batch(tuples, batch);
    std::vector<uint32_t> out(rules.size() + 1);
    for (size_t i = 0; i < tuples.size(); ++i) {
        const Verdict want = linear_lookup(rules, tuples[i]);
        const Verdict got = c.lookup(tuples[i]);
        if (got.rule != want.rule || (want.matched() && got.action != want.action) ||
            batch[i].rule != want.rule) {
            std::abort();
        }
        if (all_matches) {
            const std::vector<uint32_t> all = linear_match_all(rules, tuples[i]);
            const size_t n = c.match_all(tuples[i], out);
            if (n != all.size()) {
                std::abort();
            }
            for (size_t k = 0; k < n && k < out.size(); ++k) {
                if (out[k] != all[k]) {
                    std::abort();
                }
            }
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size > 16384) {
        return 0;
    }
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto parsed = parse_acl_rules(text, "fuzz.acl");
    if (!parsed.ok() || parsed->empty() || parsed->size() > 300) {
        return 0;
    }
    const std::vector<AclRule>& rules = *parsed;
    for (const AclRule& r : rules) {
        (void)to_string(r);
    }
    std::vector<FiveTuple> tuples;
    const uint8_t protos[] = {6, 17, 1};
    for (const AclRule& r : rules) {
        for (int v = 0; v < 2 && tuples.size() < 600; ++v) {
            FiveTuple t;
            t.src = r.src.addr;
            t.dst = r.dst.addr;
            // The prefix's last address too, so both edges of a range are visited.
            if (v == 1) {
                const int base = r.family == AclFamily::kIpv6 ? 0 : 96;
                for (int bit = base + r.src.len; bit < 128; ++bit) {
                    t.src.b[bit / 8] |= static_cast<uint8_t>(0x80 >> (bit % 8));
                }
                for (int bit = base + r.dst.len; bit < 128; ++bit) {
                    t.dst.b[bit / 8] |= static_cast<uint8_t>(0x80 >> (bit % 8));
                }
            }
            t.sport = v == 0 ? r.sport_lo : r.sport_hi;
            t.dport = v == 0 ? r.dport_lo : r.dport_hi;
            t.proto = r.any_proto ? protos[v] : r.proto;
            t.ip_version = r.family == AclFamily::kIpv6 ? 6 : 4;
            tuples.push_back(t);
        }
    }
    const uint8_t v4[4] = {10, 1, 2, 3};
    FiveTuple fixed;
    fixed.src = picket::sensor::decode::Address::from_v4(v4);
    fixed.dst = fixed.src;
    fixed.sport = 1234;
    fixed.dport = 80;
    fixed.proto = 6;
    fixed.ip_version = 4;
    tuples.push_back(fixed);
    fixed.ip_version = 6;
    tuples.push_back(fixed);

    AclBuildOptions opt;
    opt.max_memory_bytes = size_t{64} << 20;
    auto acl = AclClassifier::build(rules, opt);
    if (acl.ok()) {
        check_all(**acl, rules, tuples, false);
    }
    opt.all_matches = true;
    opt.leaf_rules = 1 + size % 16;
    auto all = AclClassifier::build(rules, opt);
    if (all.ok()) {
        check_all(**all, rules, tuples, true);
    }
    return 0;
}
