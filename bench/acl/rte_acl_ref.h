// DPDK's rte_acl holding the same rules as an AclClassifier, for acl_bench's comparison. Built
// only when libdpdk is found (PICKET_HAVE_RTE_ACL); this header includes no DPDK header, so
// that DPDK's compile flags (-march=corei7, -include rte_config.h) stay on rte_acl_ref.cc.
//
// Layout: IPv4 rules in one context of five fields (protocol, source, destination, source
// port, destination port), IPv6 rules in a second one of eleven (the addresses as four 32-bit
// fields each, rte_acl's IPv6 layout); a rule of either family goes into both. rte_acl picks
// the highest priority, so a rule's rte_acl priority is RTE_ACL_MAX_PRIORITY minus its rank by
// (priority, index), Picket's first-match order; no two rules share a priority. userdata is
// the rule's index + 1 (0: no match).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sensor/filter/filter.h"

struct rte_acl_ctx;  // DPDK's, opaque here

namespace picket::bench {

class RteAcl {
public:
    // The tuples in rte_acl's input layout (network byte order), one per packet: what a DPDK
    // application points rte_acl_classify at in the packet's headers.
    struct Keys {
        std::vector<uint8_t> bytes;        // 48 bytes a packet (the IPv6 layout's 40, rounded)
        std::vector<const uint8_t*> ptrs;  // into bytes
        std::vector<uint8_t> is_v6;        // 0: IPv4, 1: IPv6, 2: neither (matches nothing)
    };

    // Starts DPDK's EAL once per process: --no-huge --no-pci, -m memory_mib, a file prefix of
    // its own, on the first CPU the thread may run on (the affinity is given back after).
    // False with *error when it fails.
    // transparent_huge: madvise(MADV_HUGEPAGE) on EAL's memory, so that with THP in "madvise"
    // mode rte_acl's tables land on 2 MiB pages as they would on hugetlbfs in production.
    static bool init_eal(size_t memory_mib, bool transparent_huge, std::string* error);
    static void cleanup_eal();
    // The classify method later builds use instead of rte_acl's default: "scalar", "sse",
    // "avx2", "avx512x16" or "avx512x32". False when the name is unknown.
    static bool force_algorithm(const std::string& name);

    // Both contexts built from the rules; nullptr with *error when rte_acl refuses them.
    static std::unique_ptr<RteAcl> build(const std::vector<sensor::filter::AclRule>& rules,
                                         std::string* error);
    ~RteAcl();
    RteAcl(const RteAcl&) = delete;
    RteAcl& operator=(const RteAcl&) = delete;

    static Keys make_keys(std::span<const sensor::filter::FiveTuple> tuples);

    // out[i] = the matching rule's index or Verdict::kNoRule, for the packets [first, first+n)
    // of keys (n <= 64): split by family, one rte_acl_classify per family.
    void classify_batch(const Keys& keys, size_t first, size_t n, uint32_t* out) const;
    // One packet, rte_acl_classify with num = 1.
    uint32_t classify_one(const Keys& keys, size_t i) const;

    // Heap bytes (rte_malloc_get_socket_stats' allocated bytes) the two contexts hold: total
    // (context, the rules' copy, the run-time tries) and run_time (what rte_acl_build added).
    size_t memory_bytes() const { return memory_bytes_; }
    size_t runtime_bytes() const { return runtime_bytes_; }
    // The classify method rte_acl chose by default ("scalar", "sse", "avx2", "avx512x16",
    // ...), and the tries of each context (rte_acl_dump).
    const std::string& algorithm() const { return algorithm_; }
    uint32_t tries_v4() const { return tries_v4_; }
    uint32_t tries_v6() const { return tries_v6_; }

private:
    RteAcl() = default;

    ::rte_acl_ctx* v4_ = nullptr;
    ::rte_acl_ctx* v6_ = nullptr;
    size_t memory_bytes_ = 0;
    size_t runtime_bytes_ = 0;
    std::string algorithm_;
    uint32_t tries_v4_ = 0, tries_v6_ = 0;
};

}  // namespace picket::bench
