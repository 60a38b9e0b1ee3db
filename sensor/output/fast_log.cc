#include "sensor/output/output.h"

#include <cstdio>
#include <ctime>

#include "common/time_util.h"

namespace picket::sensor::output {

namespace {

void append_fmt_time(std::string& out, int64_t ts_ns) {
    const UtcTime u = split_utc(ts_ns);
    char buf[40];
    const int n = std::snprintf(buf, sizeof(buf), "%02d/%02d/%04d-%02d:%02d:%02d.%06d", u.month,
                                u.day, u.year, u.hour, u.minute, u.second, u.usec);
    out.append(buf, static_cast<size_t>(n));
}

void append_num(std::string& out, uint64_t v) {
    char buf[24];
    const int n = std::snprintf(buf, sizeof(buf), "%llu", static_cast<unsigned long long>(v));
    out.append(buf, static_cast<size_t>(n));
}

}  // namespace

FastLogWriter::FastLogWriter(const std::string& path) : file_(path) {
    line_.reserve(1024);
}

// Suricata's AlertFastLogger (alert-fastlog.c), byte for byte: two spaces after the time,
// "[Drop] " / "[wDrop] " before the first "[**]" for drop rules, the protocol keyword or
// PROTO:NNN in braces, ICMP type and code where the ports would be, and for a packet that
// is not IP the first 32 bytes in hex instead of the addresses.
void FastLogWriter::format(const AlertEvent& ev, std::string& out) {
    static const AlertMeta kNoMeta{};
    const AlertMeta& m = ev.meta != nullptr ? *ev.meta : kNoMeta;
    append_fmt_time(out, ev.ts_ns);
    out += "  ";
    if (ev.action == AlertAction::kBlocked) {
        out += "[Drop] ";
    } else if (ev.drop_rule) {
        out += "[wDrop] ";
    }
    out += "[**] [";
    append_num(out, m.gid);
    out.push_back(':');
    append_num(out, m.sid);
    out.push_back(':');
    append_num(out, m.rev);
    out += "] ";
    out += m.signature;
    out += " [**] [Classification: ";
    out += m.category;
    out += "] [Priority: ";
    append_num(out, static_cast<uint32_t>(m.severity));
    out += "]";
    if (ev.ip_version == 0) {
        out += " [**] [Raw pkt: ";
        static constexpr char kHexUpper[] = "0123456789ABCDEF";
        const uint32_t n = ev.packet_len < 32 ? ev.packet_len : 32;
        for (uint32_t i = 0; i < n; ++i) {
            out.push_back(kHexUpper[ev.packet[i] >> 4]);
            out.push_back(kHexUpper[ev.packet[i] & 0xf]);
            out.push_back(' ');
        }
        if (ev.pcap_cnt != 0) {
            out += "] [pcap file packet: ";
            append_num(out, ev.pcap_cnt);
            out += "]\n";
        } else {
            out += "]\n";
        }
        return;
    }
    out += " {";
    if (const char* name = proto_name(ev.proto)) {
        out += name;
    } else {
        char buf[16];
        const int n = std::snprintf(buf, sizeof(buf), "PROTO:%03u", ev.proto);
        out.append(buf, static_cast<size_t>(n));
    }
    out += "} ";
    const bool icmp = ev.proto == 1 || ev.proto == 58;
    char ip[46];
    out += format_address(ev.src, ip);
    out.push_back(':');
    append_num(out, icmp ? ev.icmp_type : ev.sport);
    out += " -> ";
    out += format_address(ev.dst, ip);
    out.push_back(':');
    append_num(out, icmp ? ev.icmp_code : ev.dport);
    out.push_back('\n');
}

void FastLogWriter::write(const AlertEvent& ev) {
    line_.clear();
    format(ev, line_);
    file_.write(line_);
}

}  // namespace picket::sensor::output
