// What sink.cc (the factory, the file sink), socket_sink.cc (unix sockets, syslog) and
// redis_sink.cc share. Internal to sensor/output: other modules use sink.h.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "sensor/output/sink.h"

namespace picket::sensor::output::internal {

// Retries are timed on the monotonic clock: a wall-clock step must not stall them.
using Clock = std::chrono::steady_clock;

// filename if absolute, else log_dir + "/" + filename.
std::string resolve_path(const SinkOptions& options);
// strerror(err) without the thread-unsafe static buffer.
std::string errno_text(int err);

std::unique_ptr<EveSink> make_file_sink(const SinkOptions& options);
// stream: SOCK_STREAM (record + '\n'), else SOCK_DGRAM (one datagram per record).
std::unique_ptr<EveSink> make_unix_sink(const SinkOptions& options, bool stream);
std::unique_ptr<EveSink> make_syslog_sink(const SinkOptions& options);
std::unique_ptr<EveSink> make_redis_sink(const SinkOptions& options);

}  // namespace picket::sensor::output::internal
