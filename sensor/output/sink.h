// Where EVE records go: a regular file, a unix stream or datagram socket, the local syslog
// daemon, or Redis (eve-log.filetype). One thread (the output thread) owns a sink and calls
// everything on it. A sink never throws once made and never blocks for long: when its
// destination is away (unwritable directory, full disk, socket missing, Redis down) it says so
// once through picket::log, counts the records it could not deliver as dropped, retries with
// a backoff and says once when it is back.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "sensor/output/eve_config.h"

namespace picket::sensor::output {

class EveSink {
public:
    virtual ~EveSink() = default;

    // One record: a JSON object, no trailing newline (the sink adds the framing its
    // destination needs: a newline for files and unix_stream, a syslog header...). Counts it
    // as written or dropped.
    virtual void write(std::string_view record) = 0;
    // Pushes buffered records out (called after each drain and each stats record).
    virtual void flush() {}
    // SIGHUP: close and reopen the file (logrotate moved it away); sockets reconnect.
    virtual void reopen() {}

    // What it writes to, for messages: "/var/log/picket/eve.json", "redis 127.0.0.1:6379
    // list suricata", "syslog /dev/log", "unix_stream /run/x.sock".
    const std::string& name() const { return name_; }
    uint64_t written() const { return written_; }
    uint64_t dropped() const { return dropped_; }
    // False while the destination is away.
    bool healthy() const { return healthy_; }

protected:
    std::string name_;
    uint64_t written_ = 0;
    uint64_t dropped_ = 0;
    bool healthy_ = true;
};

// Makes the sink options describes. Throws std::invalid_argument naming the option for
// options that cannot work (an empty key, an unknown facility); an unreachable destination is
// not an error here (the sink retries).
std::unique_ptr<EveSink> make_sink(const SinkOptions& options);

}  // namespace picket::sensor::output
