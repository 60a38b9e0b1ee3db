// DPDK capture (optional: built as picket_capture_dpdk when libdpdk is found, which defines
// PICKET_HAVE_DPDK for its users). A DpdkContext initialises DPDK's EAL once per process and
// configures the ports: one RX queue per worker, spread by RSS with a symmetric Toeplitz key.
// make_dpdk_source(context, i) is worker i's PacketSource on queue i of every port; in inline
// mode release() forwards accepted frames to the paired port and frees dropped ones. No DPDK
// header is included here: the pkg-config flags of libdpdk stay on the one library.
// Thread rules: the context is built and destroyed by the control thread (after every source
// is gone); each source is read and released by its worker only. Setup throws CaptureError.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sensor/capture/capture.h"
#include "sensor/capture/inline.h"

namespace picket::sensor::capture {

// DpdkInterface and DpdkOptions (dpdk.*): capture.h.

struct DpdkPortInfo {
    std::string name;
    uint16_t port_id = 0;
    std::string driver;      // "net_pcap", "net_ixgbe", ...
    uint16_t rx_queues = 0;  // configured
    uint16_t tx_queues = 0;  // configured (inline: one per worker receiving from the peer)
    bool rss = false;        // RSS on IP/TCP/UDP with the symmetric key
    std::string peer;        // inline: the copy-iface, "" passive
};

class DpdkContext {
public:
    // Throws CaptureError:
    //   "DPDK: rte_eal_init failed: <rte_strerror> (EAL args: ...)",
    //   "DPDK: EAL can be initialised only once per process",
    //   "DPDK: no port 'X' (ports: ...)", "DPDK: port 'X': <step>: <rte_strerror>", ...
    explicit DpdkContext(const DpdkOptions& options);
    ~DpdkContext();  // stops and closes the ports, frees the pool, rte_eal_cleanup()
    DpdkContext(const DpdkContext&) = delete;
    DpdkContext& operator=(const DpdkContext&) = delete;

    // The most RX queues of any port: workers 0..queues()-1 get packets; make_dpdk_source
    // refuses a higher index. Virtual PMDs (net_pcap, net_ring, net_af_packet) have no RSS,
    // so they get one queue and all their traffic goes to worker 0.
    uint16_t queues() const;
    const std::vector<DpdkPortInfo>& ports() const;
    // Degraded settings worth a log line (a port without RSS while rx_queues > 1, ...).
    const std::vector<std::string>& warnings() const;

    struct Impl;  // defined in dpdk.cc

private:
    std::unique_ptr<Impl> impl_;
    friend std::unique_ptr<InlineSource> make_dpdk_source(DpdkContext&, uint16_t);
};

// Worker `worker_index`'s source: polls RX queue worker_index of every port that has it.
// Packets are Ethernet (linktype 1), ts_ns = CLOCK_REALTIME at the burst; a frame chained over
// several mbufs is shown up to the first segment's end (caplen < wirelen). Inline: release()
// sends accepted frames to the peer port's TX queue worker_index (kept in order per port) and
// frees dropped ones; passive frees all. Also a BridgeInjector (inline only): side 2k / 2k+1
// are pair k's `name` and `copy_iface`. stats(): packets received by this worker; worker 0
// adds every port's imissed + rx_nombuf to both packets and drops (port-wide counters, counted
// once). Throws CaptureError when worker_index >= context.queues(). The context must outlive
// the source.
std::unique_ptr<InlineSource> make_dpdk_source(DpdkContext& context, uint16_t worker_index);

}  // namespace picket::sensor::capture
