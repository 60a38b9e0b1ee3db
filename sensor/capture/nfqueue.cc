#include <arpa/inet.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <endian.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "sensor/capture/inline.h"

namespace picket::sensor::capture {

namespace {

constexpr int kDltRaw = 12;  // decode::kDltRaw: IPv4 or IPv6 by the version nibble
// Received datagrams are kept in a FIFO of slots until the batch holding them is released:
// two batches' worth, so a worker can hold one batch while the next is read.
constexpr uint32_t kSlots = 2 * kMaxBatch;
// Netlink header, nfgenmsg and the attributes around the payload (packet header, mark,
// timestamp, interfaces, hardware address, cap_len, skb info) stay well below this.
constexpr size_t kSlotOverhead = 1024;

int64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

class NfqueueSource final : public InlineSource {
public:
    explicit NfqueueSource(const NfqueueOptions& o);
    ~NfqueueSource() override;

    ReadResult next_batch(Batch& batch, int timeout_ms) override;
    void release(Batch& batch) override;
    CaptureStats stats() override;
    std::string error() const override { return error_; }
    InlineStats inline_stats() const override { return istats_; }

private:
    struct Slot {
        uint8_t* buf = nullptr;
        RawPacket pkt;
        uint32_t id = 0;
    };
    std::string prefix() const { return "nfqueue " + std::to_string(queue_) + ": "; }
    [[noreturn]] void fail(const std::string& what, int err) const {
        throw CaptureError(prefix() + what + ": " + std::strerror(err));
    }
    [[noreturn]] void fail_config(int err) const;
    // Receives what is there without blocking into free slots; false on a fatal error.
    bool receive();
    // Parses one datagram into slot `s`; true when it held a packet.
    bool parse(Slot& s, size_t len);
    void send_verdict(uint32_t id, bool accept, bool batch);
    bool flush_verdicts();

    uint16_t queue_;
    uint32_t mark_;
    bool use_mark_;
    mnl_socket* nl_ = nullptr;
    int fd_ = -1;
    int proc_fd_ = -1;  // /proc/net/netfilter/nfnetlink_queue of the namespace at open
    uint32_t seq_ = 0;
    size_t slot_size_ = 0;
    std::vector<uint8_t> slab_;
    Slot slots_[kSlots];
    // Slot positions (index = pos % kSlots): [tail_, given_) held by the worker, [given_,
    // head_) received and not yet handed out, [head_, tail_ + kSlots) free.
    uint64_t head_ = 0;
    uint64_t given_ = 0;
    uint64_t tail_ = 0;
    std::vector<uint8_t> out_;  // verdict messages of one release, sent with one sendto
    size_t out_len_ = 0;
    uint64_t received_ = 0;
    uint64_t kernel_drops_ = 0;
    InlineStats istats_;
    std::string error_;
};

// True when the queue appears in this namespace's nfnetlink_queue table, i.e. some socket
// has bound it.
bool queue_listed(uint16_t queue) {
    FILE* f = std::fopen("/proc/thread-self/net/netfilter/nfnetlink_queue", "r");
    if (f == nullptr) {
        return false;
    }
    unsigned q = 0;
    bool found = false;
    char line[256];
    while (!found && std::fgets(line, sizeof(line), f) != nullptr) {
        found = std::sscanf(line, "%u", &q) == 1 && q == queue;
    }
    std::fclose(f);
    return found;
}

void NfqueueSource::fail_config(int err) const {
    // The kernel answers EPERM both without CAP_NET_ADMIN and when another socket owns the
    // queue (EBUSY only when the same socket binds twice): the /proc table tells them apart.
    if (err == EBUSY || (err == EPERM && queue_listed(queue_))) {
        throw CaptureError(prefix() + "already bound by another socket or process");
    }
    switch (err) {
        case EPERM:
        case EACCES:
            throw CaptureError(prefix() + "permission denied: binding a queue needs CAP_NET_ADMIN");
        case EINVAL:
        case ENOENT:
        case EOPNOTSUPP:
        case EPROTONOSUPPORT:
            throw CaptureError(prefix() +
                               "nfnetlink_queue is not available in this kernel (modprobe "
                               "nfnetlink_queue): " +
                               std::strerror(err));
        default:
            fail("configuring the queue", err);
    }
}

NfqueueSource::NfqueueSource(const NfqueueOptions& o)
    : queue_(o.queue), mark_(o.mark), use_mark_(o.use_mark) {
    nl_ = mnl_socket_open(NETLINK_NETFILTER);
    if (nl_ == nullptr) {
        fail_config(errno);
    }
    try {
        if (mnl_socket_bind(nl_, 0, MNL_SOCKET_AUTOPID) < 0) {
            fail("netlink bind", errno);
        }
        fd_ = mnl_socket_get_fd(nl_);
        const int one = 1;
        // Losses are read from /proc (queue_user_dropped), not signalled as recv errors.
        setsockopt(fd_, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof(one));
        const int rcvbuf = static_cast<int>(o.rcvbuf_bytes);
        if (setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) != 0) {
            setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
        }
        const uint32_t snaplen = o.snaplen == 0 ? 65535 : o.snaplen;
        slot_size_ = (snaplen + kSlotOverhead + 63) & ~size_t{63};
        slab_.resize(slot_size_ * kSlots);
        for (uint32_t i = 0; i < kSlots; ++i) {
            slots_[i].buf = slab_.data() + i * slot_size_;
        }
        out_.resize(kMaxBatch * 64 + MNL_SOCKET_BUFFER_SIZE);

        // Bind, copy mode, queue length and flags in one message: the kernel applies the
        // attributes in that order, and a single ACK tells whether all of it worked.
        std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
        nlmsghdr* nlh = nfq_nlmsg_put(buf.data(), NFQNL_MSG_CONFIG, queue_);
        nlh->nlmsg_flags |= NLM_F_ACK;
        nlh->nlmsg_seq = ++seq_;
        nfq_nlmsg_cfg_put_cmd(nlh, AF_UNSPEC, NFQNL_CFG_CMD_BIND);
        nfq_nlmsg_cfg_put_params(nlh, NFQNL_COPY_PACKET, static_cast<int>(snaplen));
        nfq_nlmsg_cfg_put_qmaxlen(nlh, o.max_len);
        const uint32_t flags = o.fail_open ? NFQA_CFG_F_FAIL_OPEN : 0;
        mnl_attr_put_u32(nlh, NFQA_CFG_FLAGS, htonl(flags));
        mnl_attr_put_u32(nlh, NFQA_CFG_MASK, htonl(NFQA_CFG_F_FAIL_OPEN));
        if (mnl_socket_sendto(nl_, nlh, nlh->nlmsg_len) < 0) {
            fail_config(errno);
        }
        // Wait for the ACK. Packets may already be queued to us before it arrives: they
        // are kept in slots and handed out by the first next_batch().
        for (;;) {
            pollfd pfd{fd_, POLLIN, 0};
            if (poll(&pfd, 1, 5000) <= 0) {
                fail("no answer from the kernel to the bind request", ETIMEDOUT);
            }
            Slot& s = slots_[head_ % kSlots];
            const ssize_t n = recv(fd_, s.buf, slot_size_, 0);
            if (n < 0) {
                fail_config(errno);
            }
            const auto* h = reinterpret_cast<const nlmsghdr*>(s.buf);
            if (static_cast<size_t>(n) >= sizeof(nlmsghdr) && h->nlmsg_type == NLMSG_ERROR &&
                h->nlmsg_seq == seq_) {
                const auto* e = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(h));
                if (e->error != 0) {
                    fail_config(-e->error);
                }
                break;
            }
            if (parse(s, static_cast<size_t>(n)) && head_ - tail_ < kSlots) {
                ++head_;
            }
        }
        proc_fd_ = open("/proc/thread-self/net/netfilter/nfnetlink_queue", O_RDONLY | O_CLOEXEC);
        if (fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK) != 0) {
            fail("O_NONBLOCK", errno);
        }
    } catch (...) {
        if (proc_fd_ >= 0) {
            close(proc_fd_);
        }
        mnl_socket_close(nl_);
        throw;
    }
}

NfqueueSource::~NfqueueSource() {
    // Closing the socket unbinds the queue; the kernel drops what was still waiting for a
    // verdict (nfqnl_flush on instance destroy).
    if (proc_fd_ >= 0) {
        close(proc_fd_);
    }
    mnl_socket_close(nl_);
}

bool NfqueueSource::parse(Slot& s, size_t len) {
    const auto* nlh = reinterpret_cast<const nlmsghdr*>(s.buf);
    if (!mnl_nlmsg_ok(nlh, static_cast<int>(len))) {
        return false;
    }
    if (nlh->nlmsg_type == NLMSG_ERROR) {
        // A verdict the kernel refused (unknown id after a flush): nothing to hand out.
        const auto* e = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(nlh));
        if (e->error != 0) {
            ++istats_.tx_errors;
        }
        return false;
    }
    if (nlh->nlmsg_type != ((NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET)) {
        return false;
    }
    nlattr* attr[NFQA_MAX + 1] = {};
    if (nfq_nlmsg_parse(nlh, attr) < 0 || attr[NFQA_PACKET_HDR] == nullptr ||
        attr[NFQA_PAYLOAD] == nullptr) {
        return false;
    }
    const auto* ph =
        static_cast<const nfqnl_msg_packet_hdr*>(mnl_attr_get_payload(attr[NFQA_PACKET_HDR]));
    s.id = ntohl(ph->packet_id);
    RawPacket& p = s.pkt;
    p.data = static_cast<const uint8_t*>(mnl_attr_get_payload(attr[NFQA_PAYLOAD]));
    p.caplen = mnl_attr_get_payload_len(attr[NFQA_PAYLOAD]);
    p.wirelen =
        attr[NFQA_CAP_LEN] != nullptr ? ntohl(mnl_attr_get_u32(attr[NFQA_CAP_LEN])) : p.caplen;
    if (attr[NFQA_TIMESTAMP] != nullptr) {
        const auto* ts = static_cast<const nfqnl_msg_packet_timestamp*>(
            mnl_attr_get_payload(attr[NFQA_TIMESTAMP]));
        p.ts_ns = static_cast<int64_t>(be64toh(ts->sec)) * 1000000000 +
                  static_cast<int64_t>(be64toh(ts->usec)) * 1000;
    } else {
        // Forwarded packets usually carry no timestamp.
        p.ts_ns = now_ns();
    }
    p.linktype = kDltRaw;
    p.pcap_cnt = 0;
    ++received_;
    return true;
}

bool NfqueueSource::receive() {
    // nfnetlink_queue sends each packet as its own datagram, so one slot = one packet.
    mmsghdr msgs[kMaxBatch];
    iovec iov[kMaxBatch];
    const uint64_t free_slots = kSlots - (head_ - tail_);
    const uint32_t want = static_cast<uint32_t>(std::min<uint64_t>(free_slots, kMaxBatch));
    if (want == 0) {
        return true;
    }
    // Slots are contiguous only up to the end of the array; split the request there.
    uint32_t n = want;
    const uint32_t first = static_cast<uint32_t>(head_ % kSlots);
    n = std::min(n, kSlots - first);
    for (uint32_t i = 0; i < n; ++i) {
        iov[i] = iovec{slots_[first + i].buf, slot_size_};
        msgs[i] = mmsghdr{};
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    const int got = recvmmsg(fd_, msgs, n, MSG_DONTWAIT, nullptr);
    if (got < 0) {
        if (errno == EAGAIN || errno == EINTR || errno == ENOBUFS) {
            return true;
        }
        error_ = prefix() + "recv: " + std::strerror(errno);
        return false;
    }
    // Datagrams that were not packets leave a hole: move the following packets down so that
    // the slots stay dense (rare: only refused verdicts produce such messages).
    uint64_t pos = head_;
    for (int i = 0; i < got; ++i) {
        Slot& src = slots_[(first + i) % kSlots];
        Slot& dst = slots_[pos % kSlots];
        if (&src != &dst) {
            std::swap(src.buf, dst.buf);  // the buffers move with their packet
        }
        if (parse(dst, msgs[i].msg_len)) {
            ++pos;
        }
    }
    head_ = pos;
    return true;
}

ReadResult NfqueueSource::next_batch(Batch& batch, int timeout_ms) {
    batch.count = 0;
    if (given_ == head_) {
        if (!receive()) {
            return ReadResult::kError;
        }
        if (given_ == head_) {
            pollfd pfd{fd_, POLLIN, 0};
            const int rc = poll(&pfd, 1, timeout_ms);
            if (rc < 0 && errno != EINTR) {
                error_ = prefix() + "poll: " + std::strerror(errno);
                return ReadResult::kError;
            }
            if (rc > 0 && !receive()) {
                return ReadResult::kError;
            }
        }
    }
    while (batch.count < kMaxBatch && given_ < head_) {
        batch.pkts[batch.count] = slots_[given_ % kSlots].pkt;
        batch.verdict[batch.count] = Verdict::kAccept;
        ++batch.count;
        ++given_;
    }
    if (batch.count == 0) {
        return ReadResult::kTimeout;
    }
    batch.cookie = given_;
    return ReadResult::kOk;
}

void NfqueueSource::send_verdict(uint32_t id, bool accept, bool batch) {
    auto* nlh = nfq_nlmsg_put(reinterpret_cast<char*>(out_.data() + out_len_),
                              batch ? NFQNL_MSG_VERDICT_BATCH : NFQNL_MSG_VERDICT, queue_);
    nfq_nlmsg_verdict_put(nlh, static_cast<int>(id), accept ? NF_ACCEPT : NF_DROP);
    if (accept && use_mark_) {
        nfq_nlmsg_verdict_put_mark(nlh, mark_);
    }
    out_len_ += NLMSG_ALIGN(nlh->nlmsg_len);
}

bool NfqueueSource::flush_verdicts() {
    if (out_len_ == 0) {
        return true;
    }
    // nfnetlink handles every message of the datagram in order.
    const ssize_t rc = mnl_socket_sendto(nl_, out_.data(), out_len_);
    out_len_ = 0;
    return rc >= 0;
}

void NfqueueSource::release(Batch& batch) {
    // Slots [cookie - count, cookie) hold this batch's packets in order. A run of equal
    // verdicts becomes one NFQNL_MSG_VERDICT_BATCH: the kernel applies it to every queued
    // packet with an id up to the run's last, which is exactly the run because batches are
    // released in order and ids grow with arrival.
    const uint64_t first = batch.cookie - batch.count;
    uint32_t i = 0;
    while (i < batch.count) {
        const Verdict v = batch.verdict[i];
        uint32_t j = i + 1;
        while (j < batch.count && batch.verdict[j] == v &&
               slots_[(first + j) % kSlots].id == slots_[(first + j - 1) % kSlots].id + 1) {
            ++j;
        }
        const bool accept = v == Verdict::kAccept;
        send_verdict(slots_[(first + j - 1) % kSlots].id, accept, j - i > 1);
        (accept ? istats_.accepted : istats_.dropped) += j - i;
        i = j;
    }
    if (!flush_verdicts()) {
        istats_.tx_errors += batch.count;
    }
    tail_ = batch.cookie;
    batch.count = 0;
}

CaptureStats NfqueueSource::stats() {
    // Columns: queue, portid, queued, copy mode, copy range, queue_dropped (queue full),
    // queue_user_dropped (netlink delivery failed), id sequence, 1.
    if (proc_fd_ >= 0) {
        char buf[8192];
        const ssize_t n = pread(proc_fd_, buf, sizeof(buf) - 1, 0);
        if (n > 0) {
            buf[n] = '\0';
            for (char* line = buf; line != nullptr && *line != '\0';) {
                char* next = std::strchr(line, '\n');
                if (next != nullptr) {
                    *next++ = '\0';
                }
                unsigned q = 0, portid = 0, total = 0, mode = 0, range = 0, dropped = 0,
                         udropped = 0;
                if (std::sscanf(line, "%u %u %u %u %u %u %u", &q, &portid, &total, &mode, &range,
                                &dropped, &udropped) == 7 &&
                    q == queue_) {
                    kernel_drops_ = static_cast<uint64_t>(dropped) + udropped;
                    break;
                }
                line = next;
            }
        }
    }
    // packets includes the kernel's drops, as AF_PACKET's tp_packets (kernel_packets).
    return CaptureStats{received_ + kernel_drops_, kernel_drops_};
}

}  // namespace

std::unique_ptr<InlineSource> make_nfqueue_source(const NfqueueOptions& options) {
    return std::make_unique<NfqueueSource>(options);
}

QueueRange parse_queue_range(const std::string& spec) {
    const auto bad = [&](const std::string& why) {
        return CaptureError("bad queue range '" + spec + "': " + why);
    };
    const auto number = [&](std::string_view s) -> uint32_t {
        uint32_t v = 0;
        const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) {
            throw bad("'" + std::string(s) + "' is not a number");
        }
        if (v > 65535) {
            throw bad("queue " + std::to_string(v) + " is above 65535");
        }
        return v;
    };
    const size_t colon = spec.find(':');
    const std::string_view sv(spec);
    const uint32_t first = number(sv.substr(0, colon));
    const uint32_t last = colon == std::string::npos ? first : number(sv.substr(colon + 1));
    if (last < first) {
        throw bad("last queue " + std::to_string(last) + " is below first " +
                  std::to_string(first));
    }
    return QueueRange{static_cast<uint16_t>(first), last - first + 1};
}

}  // namespace picket::sensor::capture
