#include "sensor/capture/dpdk.h"

#include <pthread.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>

namespace picket::sensor::capture {

namespace {

constexpr int kDltEthernet = 1;
constexpr uint32_t kSlots = 4;        // batches a worker may hold at once
constexpr uint32_t kSpinPolls = 256;  // empty polls before the first sleep
constexpr uint32_t kTxRetries = 64;   // tx_burst attempts when the TX ring is full
constexpr uint16_t kDefaultKeySize = 40;

// rte_eal_init may run once per process (a second call fails with EALREADY, and after
// rte_eal_cleanup it cannot run again), so the first context claims it for good.
std::atomic<bool> g_eal_claimed{false};

std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& a : v) {
        if (!s.empty()) {
            s += ' ';
        }
        s += a;
    }
    return s;
}

std::string rte_err(int rc) {
    // Most ethdev calls return -errno; some only set rte_errno.
    const int e = rc < 0 ? -rc : rte_errno;
    return rte_strerror(e);
}

bool has_core_option(const std::vector<std::string>& args) {
    for (const auto& a : args) {
        if (a == "-l" || a == "-c" || a.rfind("--lcores", 0) == 0 || a.rfind("-l", 0) == 0 ||
            a.rfind("-c", 0) == 0) {
            return true;
        }
    }
    return false;
}

int64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

struct DpdkContext::Impl {
    struct Port {
        DpdkPortInfo info;
        uint16_t peer_port = 0;  // inline: port id of the copy-iface
        int side = -1;           // inline: 2 * pair + 0/1 (BridgeInjector side)
    };
    DpdkOptions options;
    std::vector<Port> ports;
    std::vector<DpdkPortInfo> infos;
    std::vector<std::string> warnings;
    std::map<int, uint16_t> side_port;  // inline: side -> port id
    rte_mempool* pool = nullptr;
    uint16_t queues = 0;
    bool eal_up = false;

    void init_eal();
    void configure();
    void configure_port(Port& p, uint16_t rxq, uint16_t txq, bool rss);
    void teardown();
};

void DpdkContext::Impl::init_eal() {
    if (g_eal_claimed.exchange(true)) {
        throw CaptureError("DPDK: EAL can be initialised only once per process");
    }
    std::vector<std::string> args = options.eal_args;
    // rte_eal_init pins the calling thread to the main lcore, and threads it starts later
    // would inherit that: remember the affinity and give it back afterwards.
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    const bool have_affinity = pthread_getaffinity_np(pthread_self(), sizeof(cpus), &cpus) == 0;
    if (!has_core_option(args)) {
        int first = 0;
        for (int c = 0; have_affinity && c < CPU_SETSIZE; ++c) {
            if (CPU_ISSET(c, &cpus)) {
                first = c;
                break;
            }
        }
        args.insert(args.begin(), {"-l", std::to_string(first)});
    }
    std::vector<std::string> storage;
    storage.reserve(args.size() + 1);
    storage.emplace_back("picket");
    storage.insert(storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : storage) {
        argv.push_back(s.data());
    }
    argv.push_back(nullptr);
    const int rc = rte_eal_init(static_cast<int>(storage.size()), argv.data());
    if (have_affinity) {
        pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
    }
    if (rc < 0) {
        throw CaptureError("DPDK: rte_eal_init failed: " + std::string(rte_strerror(rte_errno)) +
                           " (EAL args: " + join(args) + ")");
    }
    eal_up = true;
}

void DpdkContext::Impl::configure_port(Port& p, uint16_t rxq, uint16_t txq, bool rss) {
    const uint16_t id = p.info.port_id;
    auto fail = [&](const std::string& step, int rc) {
        throw CaptureError("DPDK: port '" + p.info.name + "': " + step + ": " + rte_err(rc));
    };
    rte_eth_dev_info dev{};
    int rc = rte_eth_dev_info_get(id, &dev);
    if (rc != 0) {
        fail("rte_eth_dev_info_get", rc);
    }
    rte_eth_conf conf{};
    // Symmetric Toeplitz: with the 16-bit pattern 0x6d5a repeated, swapping source and
    // destination address (and port) gives the same hash, so both directions of a flow reach
    // the same queue, hence the same worker (Woo & Park, "Scalable TCP Session Monitoring with
    // Symmetric Receive-side Scaling").
    std::vector<uint8_t> key(dev.hash_key_size != 0 ? dev.hash_key_size : kDefaultKeySize);
    for (size_t i = 0; i < key.size(); ++i) {
        key[i] = (i % 2 == 0) ? 0x6d : 0x5a;
    }
    if (rss) {
        conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
        conf.rx_adv_conf.rss_conf.rss_key = key.data();
        conf.rx_adv_conf.rss_conf.rss_key_len = static_cast<uint8_t>(key.size());
        conf.rx_adv_conf.rss_conf.rss_hf =
            dev.flow_type_rss_offloads & (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP);
    }
    rc = rte_eth_dev_configure(id, rxq, txq, &conf);
    if (rc != 0) {
        fail("rte_eth_dev_configure (" + std::to_string(rxq) + " rx, " + std::to_string(txq) +
                 " tx queues)",
             rc);
    }
    if (options.mtu != 0) {
        rc = rte_eth_dev_set_mtu(id, options.mtu);
        if (rc != 0) {
            fail("rte_eth_dev_set_mtu " + std::to_string(options.mtu), rc);
        }
    }
    uint16_t rxd = options.rx_descriptors;
    uint16_t txd = options.tx_descriptors;
    rc = rte_eth_dev_adjust_nb_rx_tx_desc(id, &rxd, &txd);
    if (rc != 0) {
        fail("rte_eth_dev_adjust_nb_rx_tx_desc", rc);
    }
    const int socket = rte_eth_dev_socket_id(id);
    rte_eth_rxconf rxconf = dev.default_rxconf;
    for (uint16_t q = 0; q < rxq; ++q) {
        rc = rte_eth_rx_queue_setup(id, q, rxd, static_cast<unsigned>(socket), &rxconf, pool);
        if (rc != 0) {
            fail("rte_eth_rx_queue_setup " + std::to_string(q), rc);
        }
    }
    rte_eth_txconf txconf = dev.default_txconf;
    for (uint16_t q = 0; q < txq; ++q) {
        rc = rte_eth_tx_queue_setup(id, q, txd, static_cast<unsigned>(socket), &txconf);
        if (rc != 0) {
            fail("rte_eth_tx_queue_setup " + std::to_string(q), rc);
        }
    }
    if (options.promisc) {
        rc = rte_eth_promiscuous_enable(id);
        if (rc != 0 && rc != -ENOTSUP) {
            fail("rte_eth_promiscuous_enable", rc);
        }
    }
    rc = rte_eth_dev_start(id);
    if (rc != 0) {
        fail("rte_eth_dev_start", rc);
    }
    p.info.rx_queues = rxq;
    p.info.tx_queues = txq;
    p.info.rss = rss;
}

void DpdkContext::Impl::configure() {
    if (options.interfaces.empty()) {
        throw CaptureError("DPDK: no interfaces given (dpdk.interfaces)");
    }
    if (options.rx_queues == 0) {
        throw CaptureError("DPDK: rx_queues (workers) must be at least 1");
    }
    if (options.burst == 0 || options.burst > kMaxBatch) {
        throw CaptureError("DPDK: burst must be 1.." + std::to_string(kMaxBatch));
    }
    auto lookup = [&](const std::string& name) {
        uint16_t id = 0;
        if (rte_eth_dev_get_port_by_name(name.c_str(), &id) != 0) {
            std::vector<std::string> names;
            uint16_t pid = 0;
            RTE_ETH_FOREACH_DEV(pid) {
                char buf[RTE_ETH_NAME_MAX_LEN] = {};
                rte_eth_dev_get_name_by_port(pid, buf);
                names.emplace_back(buf);
            }
            throw CaptureError("DPDK: no port '" + name +
                               "' (ports: " + (names.empty() ? std::string("none") : join(names)) +
                               "; add a vdev with --vdev or bind the PCI device to a DPDK driver)");
        }
        return id;
    };
    // Ports in the order given; a copy-iface not listed on its own joins after its partner.
    std::map<std::string, std::string> peer_of;
    std::vector<std::string> order;
    auto add = [&](const std::string& n) {
        if (std::find(order.begin(), order.end(), n) == order.end()) {
            order.push_back(n);
        }
    };
    for (const auto& itf : options.interfaces) {
        if (itf.name.empty()) {
            throw CaptureError("DPDK: an interface without a name");
        }
        add(itf.name);
        if (!options.inline_mode) {
            continue;
        }
        if (itf.copy_iface.empty()) {
            throw CaptureError("DPDK: inline mode needs a copy-iface for '" + itf.name + "'");
        }
        if (itf.copy_iface == itf.name) {
            throw CaptureError("DPDK: '" + itf.name + "' cannot be its own copy-iface");
        }
        for (const auto& [a, b] :
             {std::pair{itf.name, itf.copy_iface}, std::pair{itf.copy_iface, itf.name}}) {
            auto it = peer_of.find(a);
            if (it != peer_of.end() && it->second != b) {
                throw CaptureError("DPDK: '" + a + "' is paired with both '" + it->second +
                                   "' and '" + b + "'");
            }
            peer_of[a] = b;
        }
        add(itf.copy_iface);
    }
    std::map<std::string, size_t> index;
    for (const auto& n : order) {
        Port p;
        p.info.name = n;
        p.info.port_id = lookup(n);
        rte_eth_dev_info dev{};
        const int rc = rte_eth_dev_info_get(p.info.port_id, &dev);
        if (rc != 0) {
            throw CaptureError("DPDK: port '" + n + "': rte_eth_dev_info_get: " + rte_err(rc));
        }
        p.info.driver = dev.driver_name != nullptr ? dev.driver_name : "";
        index[n] = ports.size();
        ports.push_back(std::move(p));
    }
    // Queue counts. RSS only with more than one queue and a PMD that hashes IP/TCP/UDP.
    // Inline pairs share one count: worker i receives on queue i of either port and sends on
    // TX queue i of the other (and injects on either), so each port needs as many TX as RX
    // queues.
    auto caps = [&](const Port& p, bool need_tx, bool& rss) {
        rte_eth_dev_info dev{};
        rte_eth_dev_info_get(p.info.port_id, &dev);
        rss = (dev.flow_type_rss_offloads & (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP)) !=
              0;
        uint16_t q = rss ? std::min<uint16_t>(options.rx_queues, dev.max_rx_queues) : 1;
        if (need_tx) {
            q = std::min<uint16_t>(q, dev.max_tx_queues);
        }
        if (q < options.rx_queues) {
            warnings.push_back("DPDK: port '" + p.info.name + "' (" + p.info.driver +
                               "): " + std::to_string(q) + " RX queue(s) for " +
                               std::to_string(options.rx_queues) + " workers" +
                               (rss ? std::string(" (the PMD's limit)")
                                    : std::string(" (no RSS in this PMD: its traffic all goes "
                                                  "to worker 0)")));
        }
        return std::max<uint16_t>(q, 1);
    };
    size_t total_queues = 0;
    std::vector<uint16_t> count(ports.size(), 0);
    std::vector<bool> rss(ports.size(), false);
    for (size_t i = 0; i < ports.size(); ++i) {
        bool r = false;
        count[i] = caps(ports[i], options.inline_mode, r);
        rss[i] = r;
    }
    int pair = 0;
    if (options.inline_mode) {
        for (size_t i = 0; i < ports.size(); ++i) {
            Port& p = ports[i];
            const size_t j = index.at(peer_of.at(p.info.name));
            p.peer_port = ports[j].info.port_id;
            p.info.peer = ports[j].info.name;
            if (p.side < 0) {
                p.side = 2 * pair;
                ports[j].side = 2 * pair + 1;
                ++pair;
                const uint16_t q = std::min(count[i], count[j]);
                count[i] = count[j] = q;
            }
            side_port[p.side] = p.info.port_id;
        }
    }
    for (size_t i = 0; i < ports.size(); ++i) {
        total_queues += count[i];
    }
    // Every RX descriptor holds an mbuf, every TX descriptor may, a worker holds up to kSlots
    // batches, and each lcore's cache keeps up to 1.5 x its size.
    const uint32_t lcores = RTE_MAX_LCORE < 16 ? RTE_MAX_LCORE : 16;
    const uint64_t need =
        total_queues * (static_cast<uint64_t>(options.rx_descriptors) +
                        (options.inline_mode ? options.tx_descriptors : 0) + kSlots * kMaxBatch) +
        static_cast<uint64_t>(lcores) * options.mbuf_cache * 3 / 2 + 1024;
    const uint32_t mbufs = options.mbufs != 0 ? options.mbufs : static_cast<uint32_t>(need);
    const unsigned cache = std::min<unsigned>(
        {options.mbuf_cache, RTE_MEMPOOL_CACHE_MAX_SIZE, static_cast<unsigned>(mbufs / 2)});
    pool = rte_pktmbuf_pool_create(
        "picket_mbufs", mbufs, cache, 0,
        static_cast<uint16_t>(options.mbuf_data_room + RTE_PKTMBUF_HEADROOM),
        static_cast<int>(rte_socket_id()));
    if (pool == nullptr) {
        throw CaptureError("DPDK: rte_pktmbuf_pool_create (" + std::to_string(mbufs) +
                           " mbufs of " + std::to_string(options.mbuf_data_room) +
                           " bytes): " + rte_strerror(rte_errno) +
                           " (without hugepages the pool must fit in EAL's -m memory)");
    }
    for (size_t i = 0; i < ports.size(); ++i) {
        configure_port(ports[i], count[i], options.inline_mode ? count[i] : 0,
                       rss[i] && count[i] > 1);
        queues = std::max(queues, count[i]);
    }
    for (const auto& p : ports) {
        infos.push_back(p.info);
    }
}

void DpdkContext::Impl::teardown() {
    for (const auto& p : ports) {
        // Ports that never started are closed too: configure() may have failed half-way.
        rte_eth_dev_stop(p.info.port_id);
        rte_eth_dev_close(p.info.port_id);
    }
    ports.clear();
    if (pool != nullptr) {
        rte_mempool_free(pool);
        pool = nullptr;
    }
    if (eal_up) {
        rte_eal_cleanup();
        eal_up = false;
    }
}

DpdkContext::DpdkContext(const DpdkOptions& options) : impl_(std::make_unique<Impl>()) {
    impl_->options = options;
    impl_->init_eal();
    try {
        impl_->configure();
    } catch (...) {
        impl_->teardown();
        throw;
    }
}

DpdkContext::~DpdkContext() {
    impl_->teardown();
}

uint16_t DpdkContext::queues() const {
    return impl_->queues;
}

const std::vector<DpdkPortInfo>& DpdkContext::ports() const {
    return impl_->infos;
}

const std::vector<std::string>& DpdkContext::warnings() const {
    return impl_->warnings;
}

namespace {

class DpdkSource final : public InlineSource, public BridgeInjector {
public:
    DpdkSource(DpdkContext::Impl& ctx, uint16_t worker) : ctx_(ctx), worker_(worker) {
        for (const auto& p : ctx.ports) {
            if (worker < p.info.rx_queues) {
                rx_.push_back(Rx{p.info.port_id, p.peer_port, p.side});
            }
        }
        max_port_ = 0;
        for (const auto& p : ctx.ports) {
            max_port_ = std::max<uint16_t>(max_port_, p.info.port_id);
        }
        side_of_port_.assign(max_port_ + 1u, -1);
        peer_of_port_.assign(max_port_ + 1u, 0);
        for (const auto& p : ctx.ports) {
            side_of_port_[p.info.port_id] = p.side;
            peer_of_port_[p.info.port_id] = p.peer_port;
        }
        tx_.resize(max_port_ + 1u);
    }

    ReadResult next_batch(Batch& batch, int timeout_ms) override;
    void release(Batch& batch) override;
    CaptureStats stats() override;
    std::string error() const override { return error_; }
    InlineStats inline_stats() const override { return inline_; }

    int side_of(const uint8_t* data) const override;
    bool inject(int side, const uint8_t* frame, size_t len) override;

private:
    struct Rx {
        uint16_t port;
        uint16_t peer;
        int side;
    };
    struct Slot {
        rte_mbuf* mbufs[kMaxBatch];
        uint32_t count = 0;
    };
    uint32_t poll(Batch& batch);
    void send(uint16_t port, rte_mbuf** mbufs, uint16_t n);

    DpdkContext::Impl& ctx_;
    uint16_t worker_;
    std::vector<Rx> rx_;
    size_t next_rx_ = 0;  // round robin over the ports
    uint16_t max_port_ = 0;
    std::vector<int> side_of_port_;
    std::vector<uint16_t> peer_of_port_;
    std::vector<std::vector<rte_mbuf*>> tx_;  // per destination port, reused
    Slot slots_[kSlots];
    uint64_t taken_ = 0;     // batches handed out
    uint64_t released_ = 0;  // batches released (in order)
    bool registered_ = false;
    uint64_t received_ = 0;
    InlineStats inline_;
    std::string error_;
};

uint32_t DpdkSource::poll(Batch& batch) {
    Slot& slot = slots_[taken_ % kSlots];
    slot.count = 0;
    for (size_t k = 0; k < rx_.size() && slot.count < kMaxBatch; ++k) {
        const Rx& r = rx_[(next_rx_ + k) % rx_.size()];
        const uint16_t room =
            static_cast<uint16_t>(std::min<uint32_t>(ctx_.options.burst, kMaxBatch - slot.count));
        slot.count += rte_eth_rx_burst(r.port, worker_, slot.mbufs + slot.count, room);
    }
    if (!rx_.empty()) {
        next_rx_ = (next_rx_ + 1) % rx_.size();
    }
    if (slot.count == 0) {
        return 0;
    }
    const int64_t ts = now_ns();
    for (uint32_t i = 0; i < slot.count; ++i) {
        const rte_mbuf* m = slot.mbufs[i];
        RawPacket& p = batch.pkts[i];
        p.data = rte_pktmbuf_mtod(m, const uint8_t*);
        p.caplen = m->data_len;  // first segment only: the worker needs contiguous bytes
        p.wirelen = m->pkt_len;
        p.ts_ns = ts;
        p.linktype = kDltEthernet;
        p.pcap_cnt = 0;
        batch.verdict[i] = Verdict::kAccept;
    }
    batch.count = slot.count;
    received_ += slot.count;
    return slot.count;
}

ReadResult DpdkSource::next_batch(Batch& batch, int timeout_ms) {
    batch.count = 0;
    if (!registered_) {
        // An lcore id gives this thread a mempool cache; without one (all ids taken) every
        // alloc and free goes to the shared ring, which still works.
        registered_ = true;
        if (rte_lcore_id() == LCORE_ID_ANY) {
            rte_thread_register();
        }
    }
    if (taken_ - released_ >= kSlots) {
        return ReadResult::kTimeout;  // every slot is held: the worker must release first
    }
    int64_t deadline = 0;
    uint32_t empty = 0;
    uint32_t sleep_us = 1;
    while (poll(batch) == 0) {
        if (++empty < kSpinPolls) {
            rte_pause();
            continue;
        }
        const int64_t now = now_ns();
        if (deadline == 0) {
            deadline = now + static_cast<int64_t>(timeout_ms) * 1000000;
        }
        if (now >= deadline) {
            return ReadResult::kTimeout;
        }
        if (ctx_.options.idle_sleep_max_us != 0) {
            const int64_t left_us = (deadline - now) / 1000 + 1;
            const timespec ts{0, std::min<int64_t>(sleep_us, left_us) * 1000};
            nanosleep(&ts, nullptr);
            sleep_us = std::min(sleep_us * 2, ctx_.options.idle_sleep_max_us);
        }
    }
    batch.cookie = taken_++;
    return ReadResult::kOk;
}

void DpdkSource::send(uint16_t port, rte_mbuf** mbufs, uint16_t n) {
    uint16_t sent = 0;
    for (uint32_t attempt = 0; sent < n && attempt < kTxRetries; ++attempt) {
        const uint16_t s = rte_eth_tx_burst(port, worker_, mbufs + sent, n - sent);
        sent += s;
        if (s == 0) {
            rte_pause();
        }
    }
    if (sent < n) {
        // The TX ring stayed full: the frames are lost, as a full NIC queue would lose them.
        rte_pktmbuf_free_bulk(mbufs + sent, n - sent);
        inline_.tx_errors += n - sent;
    }
}

void DpdkSource::release(Batch& batch) {
    if (released_ == taken_) {
        batch.count = 0;
        return;
    }
    Slot& slot = slots_[released_ % kSlots];
    if (!ctx_.options.inline_mode) {
        rte_pktmbuf_free_bulk(slot.mbufs, slot.count);
    } else {
        rte_mbuf* drop[kMaxBatch];
        uint32_t ndrop = 0;
        for (uint32_t i = 0; i < slot.count; ++i) {
            rte_mbuf* m = slot.mbufs[i];
            if (batch.verdict[i] == Verdict::kDrop) {
                drop[ndrop++] = m;
            } else {
                tx_[peer_of_port_[m->port]].push_back(m);
            }
        }
        inline_.dropped += ndrop;
        inline_.accepted += slot.count - ndrop;
        if (ndrop != 0) {
            rte_pktmbuf_free_bulk(drop, ndrop);
        }
        // Per destination port, in arrival order.
        for (uint16_t port = 0; port <= max_port_; ++port) {
            auto& q = tx_[port];
            if (!q.empty()) {
                send(port, q.data(), static_cast<uint16_t>(q.size()));
                q.clear();
            }
        }
    }
    slot.count = 0;
    ++released_;
    batch.count = 0;
}

CaptureStats DpdkSource::stats() {
    CaptureStats s;
    s.packets = received_;
    if (worker_ == 0) {
        // imissed (NIC FIFO/ring full) and rx_nombuf (pool empty) are per port, not per queue:
        // worker 0 reports them so that the engine's sum over workers counts them once.
        for (const auto& p : ctx_.ports) {
            rte_eth_stats st{};
            if (rte_eth_stats_get(p.info.port_id, &st) == 0) {
                s.drops += st.imissed + st.rx_nombuf;
            }
        }
        s.packets += s.drops;
    }
    return s;
}

int DpdkSource::side_of(const uint8_t* data) const {
    if (!ctx_.options.inline_mode) {
        return -1;
    }
    for (uint64_t b = released_; b < taken_; ++b) {
        const Slot& slot = slots_[b % kSlots];
        for (uint32_t i = 0; i < slot.count; ++i) {
            if (rte_pktmbuf_mtod(slot.mbufs[i], const uint8_t*) == data) {
                return side_of_port_[slot.mbufs[i]->port];
            }
        }
    }
    return -1;
}

bool DpdkSource::inject(int side, const uint8_t* frame, size_t len) {
    const auto it = ctx_.side_port.find(side);
    if (it == ctx_.side_port.end() || len > ctx_.options.mbuf_data_room) {
        ++inline_.tx_errors;
        return false;
    }
    rte_mbuf* m = rte_pktmbuf_alloc(ctx_.pool);
    if (m == nullptr) {
        ++inline_.tx_errors;
        return false;
    }
    char* dst = rte_pktmbuf_append(m, static_cast<uint16_t>(len));
    if (dst == nullptr) {
        rte_pktmbuf_free(m);
        ++inline_.tx_errors;
        return false;
    }
    std::memcpy(dst, frame, len);
    rte_mbuf* one[1] = {m};
    const uint64_t before = inline_.tx_errors;
    send(it->second, one, 1);
    if (inline_.tx_errors != before) {
        return false;
    }
    ++inline_.injected;
    return true;
}

}  // namespace

std::unique_ptr<InlineSource> make_dpdk_source(DpdkContext& context, uint16_t worker_index) {
    if (worker_index >= context.queues()) {
        throw CaptureError("DPDK: worker " + std::to_string(worker_index) + ": the ports have " +
                           std::to_string(context.queues()) +
                           " RX queue(s) (a PMD without RSS has one): run at most " +
                           std::to_string(context.queues()) + " DPDK workers");
    }
    return std::make_unique<DpdkSource>(*context.impl_, worker_index);
}

}  // namespace picket::sensor::capture
