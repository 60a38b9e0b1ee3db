// Packet capture: every backend sits behind PacketSource, read by exactly one worker thread in
// batches of views into the backend's own buffers (zero copy), released after the verdict.
// Offline files and libpcap live capture are read by one reader thread that dispatches each
// packet to a worker queue by a symmetric flow hash (Dispatcher); AF_PACKET gives each worker
// its own TPACKET_V3 ring in a fanout group. Setup functions throw CaptureError.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace picket::sensor::capture {

class CaptureError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Link types are libpcap's DLT values (DLT_EN10MB=1, DLT_RAW=12/14, DLT_LINUX_SLL=113,
// DLT_LINUX_SLL2=276, DLT_NULL=0, DLT_LOOP=108; LINKTYPE_RAW=101 maps to DLT_RAW).
struct RawPacket {
    const uint8_t* data = nullptr;
    uint32_t caplen = 0;   // bytes present at data
    uint32_t wirelen = 0;  // original length on the wire
    int64_t ts_ns = 0;     // capture time, ns since the epoch
    int linktype = 1;
    uint64_t pcap_cnt = 0;  // 1-based index in the input (offline), 0 when unknown
};

enum class Verdict : uint8_t { kAccept = 0, kDrop = 1 };

inline constexpr uint32_t kMaxBatch = 64;

struct Batch {
    RawPacket pkts[kMaxBatch];
    Verdict verdict[kMaxBatch];  // inline backends read these on release(); passive ignore them
    uint32_t count = 0;
    uint64_t cookie = 0;  // private to the source (e.g. which ring block to give back)
};

enum class ReadResult : uint8_t {
    kOk,       // batch.count >= 1
    kTimeout,  // nothing arrived within the timeout; call again
    kEof,      // offline input finished and drained; no more packets will come
    kError,    // fatal; error() says what
};

struct CaptureStats {
    uint64_t packets = 0;  // packets the capture layer saw (kernel_packets)
    // Lost before a worker got them: the kernel ring was full (AF_PACKET, libpcap: the
    // engine's capture.kernel_drops) or the worker's dispatcher queue was full (Dispatcher
    // sources: capture.queue_drops). One source only ever reports one of the two.
    uint64_t drops = 0;
};

class PacketSource {
public:
    virtual ~PacketSource() = default;
    // Fills batch with 1..kMaxBatch packets. Views stay valid until release(batch). A worker
    // may hold several batches, but releases them in the order it got them.
    virtual ReadResult next_batch(Batch& batch, int timeout_ms) = 0;
    virtual void release(Batch& batch) = 0;
    // Cumulative since open. Called by the owning worker only (kernel counters reset on read,
    // so the source accumulates them).
    virtual CaptureStats stats() = 0;
    virtual std::string error() const = 0;
};

// ---------------------------------------------------------------------------------------
// BPF

enum class BpfMode : uint8_t { kKernel, kUser };

// A compiled tcpdump-style filter. Empty expression = accept all.
class BpfFilter {
public:
    BpfFilter();  // accept-all; out of line because Impl is incomplete here
    // Throws CaptureError("bad BPF expression 'EXPR': <libpcap's message>").
    BpfFilter(const std::string& expression, int linktype, uint32_t snaplen = 262144);
    BpfFilter(BpfFilter&&) noexcept;
    BpfFilter& operator=(BpfFilter&&) noexcept;
    ~BpfFilter();

    bool empty() const { return expression_.empty(); }
    const std::string& expression() const { return expression_; }
    int linktype() const { return linktype_; }
    // User-space evaluation; true = keep the packet.
    bool matches(const RawPacket& p) const;
    // The compiled program (struct bpf_program*), for SO_ATTACH_FILTER / pcap_setfilter.
    const void* program() const;

private:
    std::string expression_;
    int linktype_ = 1;
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------------------
// Offline files and libpcap live: read by one reader thread.

// Reads pcap and pcapng files (any link type libpcap reads) one after the other. Paths may be
// files or directories (their regular files, sorted by name). Not thread-safe; the reader
// thread owns it.
class PcapFileReader {
public:
    // Throws CaptureError naming the path when a file cannot be opened or is not a capture.
    explicit PcapFileReader(std::vector<std::string> paths);
    ~PcapFileReader();
    // kOk: p is filled, valid until the next call. kEof: all files done. kError: a file is
    // truncated or corrupt: error() names the file and byte offset; packets before it were
    // returned. Reading does not continue past an error, unless skip_damaged() takes it.
    ReadResult next(RawPacket& p);
    std::string error() const { return error_; }
    // After kError: when it was a damaged file (a truncated or corrupt record, not a failure
    // to open one), clears it and returns true with the message in *what; the next next()
    // goes on with the following file, as Suricata ends a file at a read error.
    bool skip_damaged(std::string* what);
    // Kernel-mode BPF on a file. There is no kernel for a file: libpcap would run the program
    // in user space inside its read loop, so the reader runs the same program itself
    // (pcap_offline_filter) and can count what it rejects. Recompiled from the expression for
    // a file of another link type. The filter must outlive the reader. Rejected packets still
    // take a pcap_cnt (pcap_cnt = frame number in the input, as in Wireshark).
    void set_filter(const BpfFilter& filter);
    // Starts over at the first file, for replay loops (the files are opened again).
    // packets_read(), bytes_read(), packets_filtered() and pcap_cnt keep counting. Not after
    // kError.
    void rewind();
    uint64_t packets_read() const { return packets_read_; }  // including filtered ones
    uint64_t bytes_read() const { return bytes_read_; }      // caplen sum, same packets
    uint64_t packets_filtered() const;                       // rejected by set_filter's program
    const std::vector<std::string>& files() const { return files_; }

private:
    bool open_next();
    std::vector<std::string> files_;
    size_t next_file_ = 0;
    void* pcap_ = nullptr;  // pcap_t*
    std::string current_;
    std::string error_;
    bool damaged_ = false;  // error_ is a truncated or corrupt record
    uint64_t packets_read_ = 0;
    uint64_t bytes_read_ = 0;
    uint64_t filtered_ = 0;
    const BpfFilter* filter_ = nullptr;
    BpfFilter relinked_;                 // filter_ recompiled for a file of another link type
    const BpfFilter* active_ = nullptr;  // the program applied to the current file
    int linktype_ = 1;                   // pcap_datalink of the current file
    int64_t offset_ = 0;                 // byte offset in the current file after the last record
    uint64_t file_packets_ = 0;          // packets read from the current file
    // Classic pcap files are mapped and parsed in place (no stdio copy per packet); pcapng
    // goes through libpcap.
    bool open_mapped(const std::string& path);
    ReadResult next_mapped(RawPacket& p);
    void unmap();
    const uint8_t* map_ = nullptr;
    size_t map_len_ = 0;
    bool swapped_ = false;  // file written on a machine of the other byte order
    bool nsec_ = false;     // nanosecond timestamps (magic 0xa1b23c4d)
};

// Replays the files of a PcapFileReader as a live capture would deliver them: `loops` passes
// over the files (0 = endless, until the caller stops reading), with every pass's timestamps
// shifted so that packet time only moves forward and flows and fragments time out as they
// would on a wire. From the first pass: span = latest - earliest timestamp, gap = the mean
// gap between its packets (span / (packets - 1), at least 1 us; 1 s for a single packet);
// pass k is shifted by k * (span + gap), so it starts one gap after pass k-1's latest packet.
// Pacing is the caller's (it knows the clock and the stop flag). Same thread rules as the
// reader.
class PcapReplay {
public:
    PcapReplay(PcapFileReader& reader, uint64_t loops);
    // kOk: the next packet with its timestamp shifted. kEof after the last pass, or at the end
    // of a pass that returned no packet (nothing to loop over). kError: as the reader.
    ReadResult next(RawPacket& p);
    uint64_t pass() const { return pass_; }  // 0-based pass being read
    int64_t shift_ns() const { return shift_ns_; }

private:
    PcapFileReader& reader_;
    uint64_t loops_;
    uint64_t pass_ = 0;
    int64_t shift_ns_ = 0;
    int64_t period_ns_ = 0;  // shift added per pass; fixed by the first pass
    uint64_t pass_packets_ = 0;
    int64_t min_ts_ = 0, max_ts_ = 0;  // first pass, unshifted
};

// libpcap live capture on one interface (read by the reader thread, then dispatched).
class PcapLiveReader {
public:
    // Throws CaptureError("interface 'X': <reason>") for an unknown interface, no permission...
    PcapLiveReader(const std::string& iface, uint32_t snaplen, int buffer_mb, bool promisc);
    ~PcapLiveReader();
    ReadResult next(RawPacket& p, int timeout_ms);
    void set_filter(const BpfFilter& filter);  // kernel mode: pcap_setfilter
    CaptureStats stats();                      // pcap_stats: ps_recv, ps_drop + ps_ifdrop
    int linktype() const;
    std::string error() const { return error_; }

private:
    void* pcap_ = nullptr;
    std::string iface_;
    std::string error_;
    uint64_t pcap_cnt_ = 0;
    // pcap_stats counters are 32-bit: accumulate deltas so totals survive a wrap.
    uint32_t last_recv_ = 0;
    uint32_t last_drop_ = 0;
    uint64_t total_recv_ = 0;
    uint64_t total_drop_ = 0;
};

// Symmetric hash used to pick a worker: the same for both directions of a flow and for every
// fragment of a datagram. Returns any 32-bit value; the dispatcher takes it modulo workers.
using DispatchHash = uint32_t (*)(const RawPacket& p);

// One single-producer single-consumer byte ring per worker, holding copies of the packets
// (the reader's buffer is reused on its next read). Lock-free; no allocation after start.
class Dispatcher {
public:
    // queue_bytes: ring size per worker. queue_packets: at most this many packets queued per
    // worker (pushed and not yet released by it; 0 = only the bytes limit). A queue is full
    // when either limit would be passed. blocking: plain offline reading waits when a queue
    // is full (no loss); live capture and live-like replay drop and count (the engine's
    // capture.queue_drops).
    Dispatcher(uint32_t workers, size_t queue_bytes, DispatchHash hash, bool blocking,
               uint64_t queue_packets = 0);
    ~Dispatcher();
    // Reader thread only. Returns false if the packet was dropped (queue full, non-blocking).
    bool push(const RawPacket& p);
    // Reader thread: no more packets; workers' sources return kEof once drained.
    void finish();
    // Ask a blocked push() to give up (shutdown).
    void abort();
    // The per-worker consumer end; owned by the dispatcher, used by worker i only.
    PacketSource& source(uint32_t worker);
    uint64_t dropped() const;
    uint64_t dispatched(uint32_t worker) const;

private:
    struct Queue;
    std::vector<std::unique_ptr<Queue>> queues_;
    DispatchHash hash_;
    bool blocking_;
    std::atomic<bool> aborted_{false};
};

// ---------------------------------------------------------------------------------------
// AF_PACKET, TPACKET_V3: one ring per worker, all in one fanout group (hash + defrag), so the
// kernel sends both directions of a flow to the same worker.

struct AfPacketOptions {
    std::string iface;
    uint16_t fanout_id = 0;  // 0 = derive from the process id
    uint32_t block_size = 1 << 20;
    uint32_t block_count = 32;
    uint32_t frame_size = 2048;
    uint32_t block_timeout_ms = 10;
    bool promisc = true;
    const BpfFilter* kernel_filter = nullptr;  // attached with SO_ATTACH_FILTER when set
};

// Throws CaptureError("interface 'X': ...") on unknown interface or socket errors.
std::unique_ptr<PacketSource> open_afpacket(const AfPacketOptions& options);

// ---------------------------------------------------------------------------------------
// Options of the inline and DPDK backends (inline.h, dpdk.h), here so that the sensor's
// configuration can hold them without including those headers.

struct NfqueueOptions {
    uint16_t queue = 0;
    uint32_t snaplen = 65535;  // NFQNL_COPY_PACKET range; longer packets are cut (caplen)
    uint32_t max_len = 4096;   // kernel queue length (NFQA_CFG_QUEUE_MAXLEN)
    bool fail_open = false;    // NFQA_CFG_F_FAIL_OPEN: the kernel accepts when the queue is full
    uint32_t mark = 0;         // set on accepted packets (NFQA_MARK) when use_mark
    bool use_mark = false;
    uint32_t rcvbuf_bytes = 8u << 20;  // netlink socket receive buffer (SO_RCVBUFFORCE)
};

struct AfPacketInlineOptions {
    std::string iface1;
    std::string iface2;
    // Fanout group ids: iface1 uses fanout_id, iface2 fanout_id + 1 (0 = derive from the pid).
    // Every worker opens one source; worker i is member i of both groups, so the kernel's
    // symmetric hash sends both directions of a flow to the same worker.
    uint16_t fanout_id = 0;
    uint32_t block_size = 1 << 20;
    uint32_t block_count = 16;
    uint32_t block_timeout_ms = 1;  // short: a frame waits in its block until it retires
    bool qdisc_bypass = false;      // PACKET_QDISC_BYPASS on the transmit side
};

// One entry of `dpdk.interfaces` (Suricata's layout): a DPDK port by its device name, a vdev
// ("net_pcap0", "net_af_packet0") or a PCI address ("0000:01:00.0").
struct DpdkInterface {
    std::string name;
    // Inline: the port accepted frames from `name` leave through (Suricata's copy-iface). The
    // pair works both ways; listing the reverse entry too is allowed. Ignored when passive.
    std::string copy_iface;
};

struct DpdkOptions {
    // EAL arguments without argv[0], e.g. {"--no-huge", "--no-pci", "-m", "1024",
    // "--file-prefix", "picket-1", "--vdev=net_pcap0,rx_pcap=in.pcap"}. Without a core option
    // (-l, -c, --lcores) the context adds "-l N", N = the first CPU the process may run on.
    std::vector<std::string> eal_args;
    std::vector<DpdkInterface> interfaces;
    bool inline_mode = false;
    uint16_t rx_queues = 1;  // = workers; a port without RSS gets 1 (see queues())
    uint32_t mbufs = 0;      // pool size; 0 = sized from ports, queues and descriptors
    uint16_t mbuf_cache = 256;
    uint16_t mbuf_data_room = 2048;  // bytes per mbuf after the headroom; frames up to this fit
    uint16_t rx_descriptors = 1024;
    uint16_t tx_descriptors = 1024;
    uint16_t burst = 32;  // rte_eth_rx_burst size, at most kMaxBatch
    uint16_t mtu = 0;     // 0 = the PMD's default
    bool promisc = true;
    // Idle polling: after 256 empty polls a worker sleeps 1 us, doubling up to this (µs), until
    // a packet or its timeout. 0 = pure busy polling (DPDK's usual: a whole core per worker).
    uint32_t idle_sleep_max_us = 100;
};

// ---------------------------------------------------------------------------------------
// Building every capture source of a run from the configuration (sources.cc).

class InlineSource;    // inline.h
class BridgeInjector;  // inline.h
class DpdkContext;     // dpdk.h

// capture.mode (--capture, -r, -i). kNfqueue and kAfPacketInline are inline (IPS): the
// sensor's verdicts decide what passes; kDpdk is inline when dpdk.copy-mode is ips
// (DpdkOptions::inline_mode), passive otherwise.
enum class CaptureMode : uint8_t {
    kPcapFile,
    kPcapLive,
    kAfPacket,
    kNfqueue,
    kAfPacketInline,
    kDpdk,
};

// What open_sources() needs of the sensor's configuration.
struct SourceOptions {
    CaptureMode mode = CaptureMode::kPcapFile;
    uint32_t workers = 1;
    std::vector<std::string> pcap_paths;  // kPcapFile
    std::string iface;                    // kPcapLive, kAfPacket
    uint32_t snaplen = 262144;
    bool promisc = true;
    uint64_t pcap_buffer_bytes = 32ULL << 20;  // kPcapLive
    // Dispatcher modes (kPcapFile, kPcapLive): each worker's queue, the worker hash, and
    // whether a file replay drops for a full queue as a live capture does (else it waits).
    uint64_t queue_bytes = 8ULL << 20;
    uint64_t queue_packets = 0;
    DispatchHash hash = nullptr;
    bool pcap_replay = false;
    std::string bpf;  // capture.bpf-filter; empty: none
    BpfMode bpf_mode = BpfMode::kKernel;
    AfPacketOptions afpacket;  // iface and kernel_filter are set from the fields above
    NfqueueOptions nfqueue;    // worker i binds queue nfqueue.queue + i
    AfPacketInlineOptions afpacket_inline;
    DpdkOptions dpdk;  // rx_queues is set from workers
};

// One worker's source and what inline handling it offers.
struct WorkerSource {
    PacketSource* source = nullptr;         // what the worker reads (owned by Sources)
    InlineSource* inline_source = nullptr;  // the same source, when it is inline
    BridgeInjector* injector = nullptr;     // inline: responses out of the source's ports
    bool raw_socket_responses = false;      // NFQUEUE: responses through raw IP sockets
};

// Every capture source of a run: the reader and its Dispatcher (offline files, libpcap live)
// or one source per worker (AF_PACKET, NFQUEUE, the bridge, DPDK), the compiled BPF and
// DPDK's EAL and ports. Built on the control thread; each worker uses its own WorkerSource;
// the reader thread uses file_reader() / live_reader() and dispatcher()->push.
class Sources {
public:
    ~Sources();  // the workers' sources first, then DPDK's ports and EAL
    Sources(const Sources&) = delete;
    Sources& operator=(const Sources&) = delete;

    // The workers that get packets: SourceOptions::workers, or fewer for DPDK ports with
    // fewer RX queues (warnings() says so).
    uint32_t workers() const { return static_cast<uint32_t>(workers_.size()); }
    const WorkerSource& worker(uint32_t i) const { return workers_[i]; }
    PcapFileReader* file_reader() const { return file_reader_.get(); }
    PcapLiveReader* live_reader() const { return live_reader_.get(); }
    Dispatcher* dispatcher() const { return dispatcher_.get(); }
    // capture.bpf-filter in user space, one program per link type (user mode, and inline
    // sources, which have no kernel filter): a packet whose link type has none passes. Empty
    // when the filter runs in the kernel or there is none.
    const std::map<int, BpfFilter>& user_filters() const { return user_filters_; }
    // Degraded settings worth a log line (DPDK: fewer queues than workers, ...).
    const std::vector<std::string>& warnings() const { return warnings_; }

private:
    Sources() = default;
    friend std::unique_ptr<Sources> open_sources(const SourceOptions& options);

    std::unique_ptr<BpfFilter> kernel_bpf_;
    std::map<int, BpfFilter> user_filters_;
    // Declared before the sources: built before them, destroyed after them. Deleted in
    // sources.cc, which knows whether the build has DPDK.
    DpdkContext* dpdk_ = nullptr;
    std::unique_ptr<PcapFileReader> file_reader_;
    std::unique_ptr<PcapLiveReader> live_reader_;
    std::unique_ptr<Dispatcher> dispatcher_;
    std::vector<std::unique_ptr<PacketSource>> owned_;
    std::vector<WorkerSource> workers_;
    std::vector<std::string> warnings_;
};

// Compiles the BPF expression (for Ethernet first, so that a bad one fails with libpcap's
// message whatever the mode) and opens the sources of options.mode. Throws CaptureError with
// what and where: unknown interface, unreadable file, bad BPF expression, DPDK's EAL or port
// setup, a DPDK mode in a build without DPDK.
std::unique_ptr<Sources> open_sources(const SourceOptions& options);

}  // namespace picket::sensor::capture
