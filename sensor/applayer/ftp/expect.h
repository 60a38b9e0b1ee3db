// The FTP data-channel expectations: a transfer command (STOR, RETR, LIST...) on a control
// connection announces the next data connection (the port of PORT / EPRT or of the 227 / 229
// reply, the control connection's addresses); the new TCP flow that matches one is ftp-data.
//
// Threads: one table shared by every worker. Flows are spread to workers by a symmetric hash of
// their 5-tuple, so the data connection usually lands on another worker than its control
// connection; the table is therefore shared, bounded (fixed slots, no allocation after
// construction) and lock-free: each slot is owned by whoever moved its state from free / live
// to busy with a compare-exchange, so its plain fields are only ever touched by one thread, and
// a release store publishes them. Readers only pay an atomic load of a count when the table is
// empty, and look at most kProbe slots otherwise.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "sensor/applayer/ftp/ftp.h"

namespace picket::sensor::applayer::ftp {

// Who opens the data connection to whom: orig (the data connection's client) and resp, resp_port
// (its server and port). Addresses in 16 bytes (IPv4 in the first 4, zeros after).
struct ExpectKey {
    bool v6 = false;
    uint8_t orig[16] = {};
    uint8_t resp[16] = {};
    uint16_t resp_port = 0;
};

struct Expectation {
    ExpectKey key;
    uint64_t owner = 0;      // the control flow (released: its expectations go)
    int64_t expires_ns = 0;  // packet time after which it is dropped
    DataCommand command = DataCommand::kNone;
    bool active = false;   // PORT / EPRT: the server opens the data connection
    uint64_t ctrl_tx = 0;  // the control transaction of the command
    static constexpr size_t kMaxName = 255;
    char filename[kMaxName] = {};  // the command's argument (cut at kMaxName)
    uint8_t filename_len = 0;
    std::string_view name() const { return std::string_view(filename, filename_len); }
};

class ExpectTable {
public:
    static constexpr size_t kProbe = 8;  // slots looked at per key
    // slots: rounded up to a power of two, at least kProbe.
    explicit ExpectTable(size_t slots = 1024);
    ExpectTable(const ExpectTable&) = delete;
    ExpectTable& operator=(const ExpectTable&) = delete;

    // Adds e (replacing an expired one of its slots, or one with the same key); false when
    // every slot of its key is taken (the caller counts it).
    bool add(const Expectation& e, int64_t now_ns);
    // Takes (removes) the live expectation for k into *out; false when there is none (expired
    // ones met on the way are dropped).
    bool take(const ExpectKey& k, int64_t now_ns, Expectation* out);
    // Drops every expectation of a control flow (it ended).
    void remove_owner(uint64_t owner);
    size_t live() const { return static_cast<size_t>(live_.load(std::memory_order_relaxed)); }
    size_t capacity() const { return mask_ + 1; }

private:
    enum : uint32_t { kFree = 0, kBusy = 1, kLive = 2 };
    struct alignas(64) Slot {
        std::atomic<uint32_t> state{kFree};
        std::atomic<uint64_t> tag{0};    // the key's hash while live: readers skip other keys
        std::atomic<uint64_t> owner{0};  // while live: remove_owner skips other flows
        Expectation e;                   // touched only by the thread that made the slot busy
    };
    static uint64_t hash(const ExpectKey& k);
    void release(Slot& s);

    std::unique_ptr<Slot[]> slots_;
    size_t mask_;
    std::atomic<int64_t> live_{0};
};

bool same_key(const ExpectKey& a, const ExpectKey& b);

}  // namespace picket::sensor::applayer::ftp
