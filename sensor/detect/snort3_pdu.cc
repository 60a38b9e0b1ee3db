// PduCutter's cut points (snort3_pdu.h): FTP lines and TLS records, as Snort 3's ftp_server and
// ssl stream splitters find them.
#include "sensor/detect/snort3_pdu.h"

#include <cstring>

namespace picket::sensor::detect {

size_t PduCutter::cut_point(const uint8_t* data, size_t len) {
    if (kind_ == PduKind::kFtpLines) {
        // After the last line feed of what was acknowledged (the FTP inspector deals with
        // pipelined commands itself).
        const void* lf = memrchr(data, '\n', len);
        return lf == nullptr ? 0 : static_cast<size_t>(static_cast<const uint8_t*>(lf) - data) + 1;
    }
    // kTlsRecords: walk the record headers; a cut after each complete record, the last one wins.
    size_t last = 0;
    size_t n = 0;
    while (n < len) {
        if (hdr_ == 5) {
            const size_t take = len - n < body_left_ ? len - n : body_left_;
            n += take;
            body_left_ -= static_cast<uint32_t>(take);
            if (body_left_ == 0) {
                hdr_ = 0;
                last = n;
            }
            continue;
        }
        const uint8_t b = data[n];
        switch (hdr_) {
            case 0:
                // change_cipher_spec 20, alert 21, handshake 22, application_data 23. Anything
                // else (heartbeat 24, SSLv2, garbage): stop cutting from this record on; what
                // ends before it still leaves as its own PDU.
                if (b < 20 || b > 23) {
                    gave_up_ = true;
                    return last;
                }
                break;
            case 3:
                rec_len_ = static_cast<uint16_t>(b << 8);
                break;
            case 4:
                rec_len_ = static_cast<uint16_t>(rec_len_ | b);
                break;
            default:
                break;
        }
        ++hdr_;
        ++n;
        if (hdr_ == 5) {
            body_left_ = rec_len_;
            if (body_left_ == 0) {
                hdr_ = 0;
                last = n;
            }
        }
    }
    return last;
}

}  // namespace picket::sensor::detect
