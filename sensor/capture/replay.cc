#include "sensor/capture/capture.h"

namespace picket::sensor::capture {

namespace {

constexpr int64_t kMinGapNs = 1000;                 // 1 us
constexpr int64_t kSinglePacketGapNs = 1000000000;  // a one-packet pass repeats once a second

}  // namespace

PcapReplay::PcapReplay(PcapFileReader& reader, uint64_t loops) : reader_(reader), loops_(loops) {}

ReadResult PcapReplay::next(RawPacket& p) {
    for (;;) {
        const ReadResult r = reader_.next(p);
        if (r == ReadResult::kOk) {
            if (pass_ == 0) {
                // Files of a directory need not be in time order: track both ends.
                if (pass_packets_ == 0 || p.ts_ns < min_ts_) {
                    min_ts_ = p.ts_ns;
                }
                if (pass_packets_ == 0 || p.ts_ns > max_ts_) {
                    max_ts_ = p.ts_ns;
                }
            }
            ++pass_packets_;
            p.ts_ns += shift_ns_;
            return r;
        }
        if (r != ReadResult::kEof) {
            return r;
        }
        if (pass_packets_ == 0 || (loops_ != 0 && pass_ + 1 >= loops_)) {
            return ReadResult::kEof;
        }
        if (pass_ == 0) {
            const int64_t span = max_ts_ - min_ts_;
            int64_t gap = pass_packets_ > 1 ? span / static_cast<int64_t>(pass_packets_ - 1)
                                            : kSinglePacketGapNs;
            if (gap < kMinGapNs) {
                gap = kMinGapNs;
            }
            period_ns_ = span + gap;
        }
        // Time stands still instead of wrapping once timestamps would pass the year 2262.
        int64_t next_shift = 0;
        if (!__builtin_add_overflow(shift_ns_, period_ns_, &next_shift) &&
            !__builtin_add_overflow(next_shift, max_ts_, &next_shift)) {
            shift_ns_ += period_ns_;
        }
        ++pass_;
        pass_packets_ = 0;
        reader_.rewind();
    }
}

}  // namespace picket::sensor::capture
