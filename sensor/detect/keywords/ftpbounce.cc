// ftpbounce (Suricata 7, Snort 2.9): an FTP bounce attempt, a PORT command (RFC 959 section
// 4.1.2: `PORT SP h1,h2,h3,h4,p1,p2 CRLF`) naming an address other than the client's, which
// asks the server to open its data connection to a third host.
//
// Inspected with an FTP transaction (an FTP rule: one with ftp.command / ftp.command_data or
// another FTP app-layer keyword), it reads the FTP parser's transaction: the PORT (or EPRT)
// command whose address differs from the flow's client (AppView::ftp_bounce, set by the app
// layer). In a packet rule (ET's `alert tcp ... content:"PORT"; ftpbounce; pcre:...`, whose
// content is matched on the packet or stream), it reads the same bytes pkt_data is matched
// against on to-server packets of a flow that is FTP or not identified: every complete line
// (ending in LF) that starts with PORT (any case) followed by a blank is a command, and the
// keyword matches when one of them carries an IPv4 address h1.h2.h3.h4 different from the
// flow's client (the packet's source without a flow). Both read PORT as the parser does.
// As Suricata, only the address is read (four numbers, each followed by a comma, blanks
// allowed before the comma), not the port; an address that is not four numbers of 0-255 is no
// match (Suricata lets 256 through, and shifts it into the next byte). A client on IPv6 never
// matches (PORT carries IPv4; EPRT is not read).
#include <cstring>
#include <string>
#include <string_view>

#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {
namespace {

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

bool is_blank(char c) {
    return c == ' ' || c == '\t';
}

// The IPv4 address of a PORT line's argument (after the blanks that follow PORT).
bool port_address(std::string_view arg, uint8_t out[4]) {
    size_t i = 0;
    while (i < arg.size() && is_blank(arg[i])) {
        ++i;
    }
    for (int octet = 0; octet < 4; ++octet) {
        uint32_t v = 0;
        size_t digits = 0;
        while (i < arg.size() && is_digit(arg[i])) {
            if (++digits > 3) {
                return false;
            }
            v = v * 10 + static_cast<uint32_t>(arg[i] - '0');
            ++i;
        }
        if (digits == 0 || v > 255) {
            return false;
        }
        while (i < arg.size() && is_blank(arg[i])) {
            ++i;
        }
        if (i >= arg.size() || arg[i] != ',') {
            return false;
        }
        ++i;
        out[octet] = static_cast<uint8_t>(v);
    }
    return true;
}

bool starts_with_port(std::string_view line) {
    if (line.size() < 5) {
        return false;
    }
    const char* kw = "PORT";
    for (size_t i = 0; i < 4; ++i) {
        const char c = line[i];
        if (c != kw[i] && c != kw[i] + ('a' - 'A')) {
            return false;
        }
    }
    return is_blank(line[4]);
}

class FtpbounceOption final : public HeaderOption {
public:
    const char* keyword() const override { return "ftpbounce"; }
    bool match(const PacketContext& pc) const override {
        if (pc.view != nullptr) {
            return pc.view->proto == AppProto::kFtp && pc.view->ftp_bounce;
        }
        if (pc.flow != nullptr && pc.dir != flow::Direction::kToServer) {
            return false;
        }
        if (pc.app != AppProto::kUnknown && pc.app != AppProto::kFtp) {
            return false;
        }
        const decode::Address& client = pc.flow != nullptr ? pc.flow->client_addr : pc.p->src;
        if (!client.is_v4()) {
            return false;
        }
        const uint8_t* d = pc.data;
        uint32_t n = pc.data_len;
        if (d == nullptr) {
            d = pc.p->payload;
            n = pc.p->payload_len;
        }
        if (d == nullptr) {
            return false;
        }
        std::string_view rest(reinterpret_cast<const char*>(d), n);
        while (true) {
            const size_t nl = rest.find('\n');
            if (nl == std::string_view::npos) {
                return false;  // an unfinished line is not a command yet
            }
            const std::string_view line = rest.substr(0, nl);
            rest.remove_prefix(nl + 1);
            uint8_t addr[4];
            if (starts_with_port(line) && port_address(line.substr(5), addr) &&
                std::memcmp(addr, client.v4(), 4) != 0) {
                return true;
            }
        }
    }
    uint64_t hash() const override { return 0xf7b0u; }
    bool equals(const HeaderOption& other) const override {
        return dynamic_cast<const FtpbounceOption*>(&other) != nullptr;
    }
};

}  // namespace

namespace keywords {

// ftpbounce: no value.
bool parse_ftpbounce(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    if (has_value) {
        *error = "ftpbounce: takes no value, got '" + std::string(trim_blanks(value)) + "'";
        return false;
    }
    st.rule->header_options.push_back(std::make_unique<FtpbounceOption>());
    return true;
}

}  // namespace keywords

}  // namespace picket::sensor::detect
