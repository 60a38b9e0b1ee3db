// rte_acl beside AclClassifier for acl_bench: see rte_acl_ref.h. Written from DPDK's
// programmer's guide ("Packet Classification and Access Control") and rte_acl.h.
#include "bench/acl/rte_acl_ref.h"

#include <pthread.h>
#include <rte_acl.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_memory.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace picket::bench {
namespace {

using sensor::filter::AclFamily;
using sensor::filter::AclRule;
using sensor::filter::FiveTuple;
using sensor::filter::Verdict;

constexpr size_t kKeyStride = 48;
constexpr uint32_t kMaxBurst = 64;

// Input layout (network byte order): protocol at 0 (rte_acl wants a one-byte first field),
// then groups of four bytes. IPv4: source 4, destination 8, ports 12/14. IPv6: source 4-19,
// destination 20-35, ports 36/38.
constexpr uint32_t kProto = 0, kSrc = 4, kDst4 = 8, kPorts4 = 12, kDst6 = 20, kPorts6 = 36;

RTE_ACL_RULE_DEF(Rule4, 5);
RTE_ACL_RULE_DEF(Rule6, 11);

std::atomic<bool> g_eal_up{false};
enum rte_acl_classify_alg g_forced_alg = RTE_ACL_CLASSIFY_DEFAULT;
std::atomic<uint32_t> g_ctx_serial{0};

rte_acl_field_def field(uint8_t type, uint8_t size, uint8_t index, uint8_t input, uint32_t offset) {
    rte_acl_field_def d{};
    d.type = type;
    d.size = size;
    d.field_index = index;
    d.input_index = input;
    d.offset = offset;
    return d;
}

rte_acl_config config(bool v6) {
    rte_acl_config c{};
    c.num_categories = 1;
    uint8_t n = 0;
    c.defs[n] = field(RTE_ACL_FIELD_TYPE_BITMASK, 1, n, 0, kProto);
    ++n;
    const int words = v6 ? 4 : 1;
    for (int w = 0; w < words; ++w, ++n) {
        c.defs[n] = field(RTE_ACL_FIELD_TYPE_MASK, 4, n, n, kSrc + 4 * w);
    }
    for (int w = 0; w < words; ++w, ++n) {
        c.defs[n] = field(RTE_ACL_FIELD_TYPE_MASK, 4, n, n, (v6 ? kDst6 : kDst4) + 4 * w);
    }
    const uint32_t ports = v6 ? kPorts6 : kPorts4;
    // Both ports in one four-byte input group.
    c.defs[n] = field(RTE_ACL_FIELD_TYPE_RANGE, 2, n, n, ports);
    c.defs[n + 1] = field(RTE_ACL_FIELD_TYPE_RANGE, 2, n + 1, n, ports + 2);
    c.num_fields = n + 2;
    c.max_size = 0;  // no limit on the run-time structures
    return c;
}

uint32_t be32(const uint8_t* p) {
    return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

// One address prefix as `words` 32-bit MASK fields (host byte order, host bits cleared).
void set_prefix(rte_acl_field* f, const uint8_t* addr, int len, int words) {
    for (int w = 0; w < words; ++w) {
        const int bits = std::clamp(len - 32 * w, 0, 32);
        const uint32_t mask = bits == 0 ? 0 : ~uint32_t{0} << (32 - bits);
        f[w].value.u32 = be32(addr + 4 * w) & mask;
        f[w].mask_range.u32 = static_cast<uint32_t>(bits);
    }
}

template <class R>
void fill(R* out, const AclRule& r, uint32_t index, int32_t priority, bool v6) {
    std::memset(out, 0, sizeof(*out));
    out->data.category_mask = 1;
    out->data.priority = priority;
    out->data.userdata = index + 1;
    rte_acl_field* f = out->field;
    f[0].value.u8 = r.any_proto ? 0 : r.proto;
    f[0].mask_range.u8 = r.any_proto ? 0 : 0xff;
    const int words = v6 ? 4 : 1;
    const int first = v6 ? 0 : 12;  // IPv4 is stored v4-mapped
    set_prefix(f + 1, r.src.addr.b + first, r.src.len, words);
    set_prefix(f + 1 + words, r.dst.addr.b + first, r.dst.len, words);
    f[1 + 2 * words].value.u16 = r.sport_lo;
    f[1 + 2 * words].mask_range.u16 = r.sport_hi;
    f[2 + 2 * words].value.u16 = r.dport_lo;
    f[2 + 2 * words].mask_range.u16 = r.dport_hi;
}

size_t heap_allocated() {
    size_t total = 0;
    for (unsigned i = 0; i < rte_socket_count(); ++i) {
        rte_malloc_socket_stats s{};
        if (rte_malloc_get_socket_stats(rte_socket_id_by_idx(i), &s) == 0) {
            total += s.heap_allocsz_bytes;
        }
    }
    return total;
}

// rte_acl_dump() prints to stdout; read its "alg=" and "num_tries=" lines from a temp file.
void dump_fields(const rte_acl_ctx* ctx, int* alg, uint32_t* tries) {
    std::fflush(stdout);
    FILE* tmp = std::tmpfile();
    const int saved = dup(STDOUT_FILENO);
    if (tmp == nullptr || saved < 0) {
        return;
    }
    dup2(fileno(tmp), STDOUT_FILENO);
    rte_acl_dump(ctx);
    std::fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    std::rewind(tmp);
    char line[256];
    while (std::fgets(line, sizeof(line), tmp) != nullptr) {
        unsigned v = 0;
        if (std::sscanf(line, " alg=%u", &v) == 1) {
            *alg = static_cast<int>(v);
        } else if (std::sscanf(line, " num_tries=%u", &v) == 1) {
            *tries = v;
        }
    }
    std::fclose(tmp);
}

const char* alg_name(int alg) {
    switch (alg) {
        case RTE_ACL_CLASSIFY_SCALAR:
            return "scalar";
        case RTE_ACL_CLASSIFY_SSE:
            return "sse";
        case RTE_ACL_CLASSIFY_AVX2:
            return "avx2";
        case RTE_ACL_CLASSIFY_NEON:
            return "neon";
        case RTE_ACL_CLASSIFY_ALTIVEC:
            return "altivec";
        case RTE_ACL_CLASSIFY_AVX512X16:
            return "avx512x16";
        case RTE_ACL_CLASSIFY_AVX512X32:
            return "avx512x32";
        default:
            return "unknown";
    }
}

template <class R>
rte_acl_ctx* build_family(const std::vector<AclRule>& rules, const std::vector<uint32_t>& rank,
                          bool v6, size_t* runtime_bytes, std::string* error) {
    std::vector<R> out;
    for (uint32_t i = 0; i < rules.size(); ++i) {
        const AclFamily f = rules[i].family;
        if (f == AclFamily::kAny || (f == AclFamily::kIpv6) == v6) {
            out.emplace_back();
            fill(&out.back(), rules[i], i, static_cast<int32_t>(RTE_ACL_MAX_PRIORITY - rank[i]),
                 v6);
        }
    }
    if (out.empty()) {
        return nullptr;  // nothing to match: every packet of the family misses
    }
    const std::string name = "picket" + std::to_string(g_ctx_serial.fetch_add(1));
    rte_acl_param p{};
    p.name = name.c_str();
    p.socket_id = SOCKET_ID_ANY;
    p.rule_size = sizeof(R);
    p.max_rule_num = static_cast<uint32_t>(out.size());
    rte_acl_ctx* ctx = rte_acl_create(&p);
    if (ctx == nullptr) {
        *error = std::string("rte_acl_create: ") + rte_strerror(rte_errno);
        return nullptr;
    }
    int rc = rte_acl_add_rules(ctx, reinterpret_cast<const rte_acl_rule*>(out.data()),
                               static_cast<uint32_t>(out.size()));
    if (rc == 0) {
        const rte_acl_config c = config(v6);
        const size_t before = heap_allocated();
        rc = rte_acl_build(ctx, &c);
        *runtime_bytes += heap_allocated() - before;
    }
    if (rc != 0) {
        *error =
            std::string(v6 ? "IPv6" : "IPv4") + " rte_acl_add_rules/build: " + rte_strerror(-rc);
        rte_acl_free(ctx);
        return nullptr;
    }
    if (g_forced_alg != RTE_ACL_CLASSIFY_DEFAULT) {
        rc = rte_acl_set_ctx_classify(ctx, g_forced_alg);
        if (rc != 0) {
            *error = std::string("rte_acl_set_ctx_classify: ") + rte_strerror(-rc);
            rte_acl_free(ctx);
            return nullptr;
        }
    }
    return ctx;
}

}  // namespace

bool RteAcl::init_eal(size_t memory_mib, bool transparent_huge, std::string* error) {
    if (g_eal_up.load()) {
        return true;
    }
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    const bool have_affinity = pthread_getaffinity_np(pthread_self(), sizeof(cpus), &cpus) == 0;
    int first = 0;
    for (int c = 0; have_affinity && c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &cpus)) {
            first = c;
            break;
        }
    }
    std::vector<std::string> args = {"acl_bench",
                                     "-l",
                                     std::to_string(first),
                                     "--no-huge",
                                     "--no-pci",
                                     "--no-shconf",
                                     "--no-telemetry",
                                     "--log-level=3",
                                     "-m",
                                     std::to_string(memory_mib),
                                     "--file-prefix",
                                     "picket-aclbench-" + std::to_string(getpid())};
    std::vector<char*> argv;
    for (auto& a : args) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    const int rc = rte_eal_init(static_cast<int>(args.size()), argv.data());
    // rte_eal_init pins this thread to the main lcore: give the affinity back.
    if (have_affinity) {
        pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
    }
    if (rc < 0) {
        *error = std::string("rte_eal_init: ") + rte_strerror(rte_errno);
        return false;
    }
    g_eal_up = true;
    if (transparent_huge) {
        // Without hugepages EAL maps anonymous memory and faults it in on use (rte_zmalloc).
        rte_memseg_list_walk(
            [](const rte_memseg_list* msl, void*) {
                return madvise(msl->base_va, msl->len, MADV_HUGEPAGE) == 0 ? 0 : -1;
            },
            nullptr);
    }
    return true;
}

bool RteAcl::force_algorithm(const std::string& name) {
    for (int alg = RTE_ACL_CLASSIFY_SCALAR; alg <= RTE_ACL_CLASSIFY_AVX512X32; ++alg) {
        if (name == alg_name(alg)) {
            g_forced_alg = static_cast<enum rte_acl_classify_alg>(alg);
            return true;
        }
    }
    return false;
}

void RteAcl::cleanup_eal() {
    if (g_eal_up.exchange(false)) {
        // EAL makes its runtime directory even with --no-shconf; leave nothing behind.
        const std::string dir = rte_eal_get_runtime_dir();
        rte_eal_cleanup();
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
}

std::unique_ptr<RteAcl> RteAcl::build(const std::vector<AclRule>& rules, std::string* error) {
    // Rank by (priority, index): Picket's answer is the matching rule of lowest rank.
    std::vector<uint32_t> order(rules.size());
    for (uint32_t i = 0; i < order.size(); ++i) {
        order[i] = i;
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return rules[a].priority < rules[b].priority; });
    std::vector<uint32_t> rank(rules.size());
    for (uint32_t r = 0; r < order.size(); ++r) {
        rank[order[r]] = r;
    }
    if (rules.size() >= RTE_ACL_MAX_PRIORITY) {
        *error = "too many rules for distinct rte_acl priorities";
        return nullptr;
    }
    std::unique_ptr<RteAcl> acl(new RteAcl());
    const size_t before = heap_allocated();
    acl->v4_ = build_family<Rule4>(rules, rank, false, &acl->runtime_bytes_, error);
    if (acl->v4_ == nullptr && !error->empty()) {
        return nullptr;
    }
    acl->v6_ = build_family<Rule6>(rules, rank, true, &acl->runtime_bytes_, error);
    if (acl->v6_ == nullptr && !error->empty()) {
        return nullptr;
    }
    acl->memory_bytes_ = heap_allocated() - before;
    int alg = 0;
    for (rte_acl_ctx* ctx : {acl->v4_, acl->v6_}) {
        if (ctx != nullptr) {
            dump_fields(ctx, &alg, ctx == acl->v4_ ? &acl->tries_v4_ : &acl->tries_v6_);
        }
    }
    acl->algorithm_ = alg_name(alg);
    return acl;
}

RteAcl::~RteAcl() {
    rte_acl_free(v4_);
    rte_acl_free(v6_);
}

RteAcl::Keys RteAcl::make_keys(std::span<const FiveTuple> tuples) {
    Keys k;
    k.bytes.assign(tuples.size() * kKeyStride, 0);
    k.ptrs.resize(tuples.size());
    k.is_v6.resize(tuples.size());
    for (size_t i = 0; i < tuples.size(); ++i) {
        const FiveTuple& t = tuples[i];
        uint8_t* p = k.bytes.data() + i * kKeyStride;
        k.ptrs[i] = p;
        k.is_v6[i] = t.ip_version == 4 ? 0 : t.ip_version == 6 ? 1 : 2;
        p[kProto] = t.proto;
        const bool v6 = t.ip_version == 6;
        const uint32_t ports = v6 ? kPorts6 : kPorts4;
        if (v6) {
            std::memcpy(p + kSrc, t.src.b, 16);
            std::memcpy(p + kDst6, t.dst.b, 16);
        } else {
            std::memcpy(p + kSrc, t.src.b + 12, 4);
            std::memcpy(p + kDst4, t.dst.b + 12, 4);
        }
        p[ports] = static_cast<uint8_t>(t.sport >> 8);
        p[ports + 1] = static_cast<uint8_t>(t.sport);
        p[ports + 2] = static_cast<uint8_t>(t.dport >> 8);
        p[ports + 3] = static_cast<uint8_t>(t.dport);
    }
    return k;
}

void RteAcl::classify_batch(const Keys& keys, size_t first, size_t n, uint32_t* out) const {
    const uint8_t* data[2][kMaxBurst];
    uint32_t slot[2][kMaxBurst];
    uint32_t count[3] = {0, 0, 0};
    n = std::min<size_t>(n, kMaxBurst);
    for (size_t i = 0; i < n; ++i) {
        const uint8_t fam = keys.is_v6[first + i];
        out[i] = 0;
        if (fam < 2) {
            data[fam][count[fam]] = keys.ptrs[first + i];
            slot[fam][count[fam]++] = static_cast<uint32_t>(i);
        }
    }
    uint32_t results[kMaxBurst];
    for (int fam = 0; fam < 2; ++fam) {
        rte_acl_ctx* ctx = fam == 0 ? v4_ : v6_;
        if (count[fam] == 0 || ctx == nullptr) {
            continue;
        }
        rte_acl_classify(ctx, data[fam], results, count[fam], 1);
        for (uint32_t j = 0; j < count[fam]; ++j) {
            out[slot[fam][j]] = results[j];
        }
    }
    for (size_t i = 0; i < n; ++i) {
        out[i] = out[i] == 0 ? Verdict::kNoRule : out[i] - 1;
    }
}

uint32_t RteAcl::classify_one(const Keys& keys, size_t i) const {
    const uint8_t fam = keys.is_v6[i];
    rte_acl_ctx* ctx = fam == 0 ? v4_ : fam == 1 ? v6_ : nullptr;
    if (ctx == nullptr) {
        return Verdict::kNoRule;
    }
    const uint8_t* data = keys.ptrs[i];
    uint32_t result = 0;
    rte_acl_classify(ctx, &data, &result, 1, 1);
    return result == 0 ? Verdict::kNoRule : result - 1;
}

}  // namespace picket::bench
