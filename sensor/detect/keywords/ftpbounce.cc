// ftpbounce (Suricata 7, Snort 2.9): an FTP bounce attempt, a PORT command (RFC 959 section
// 4.1.2: `PORT SP h1,h2,h3,h4,p1,p2 CRLF`) naming an address other than the control
// connection's client, which asks the server to open its data connection to a third host.
//
// As Suricata, the keyword reads the FTP parser's transaction (sensor/applayer/ftp): the rule
// becomes an FTP app-layer rule, inspected on each FTP transaction, and matches the one whose
// PORT (or EPRT) command the parser read with an address other than the flow's client
// (AppView::ftp_bounce, set by the app layer). An address that is not four numbers of 0-255
// does not parse, so it is no bounce (Suricata lets 256 through and shifts it into the next
// byte). Content on pkt_data in the same rule is still matched on the packet or stream.
#include <string>
#include <string_view>

#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {
namespace {

class FtpbounceOption final : public HeaderOption {
public:
    const char* keyword() const override { return "ftpbounce"; }
    bool match(const PacketContext& pc) const override {
        return pc.view != nullptr && pc.view->proto == AppProto::kFtp && pc.view->ftp_bounce;
    }
    uint64_t hash() const override { return 0xf7b0u; }
    bool equals(const HeaderOption& other) const override {
        return dynamic_cast<const FtpbounceOption*>(&other) != nullptr;
    }
};

}  // namespace

namespace keywords {

// ftpbounce: no value; the rule inspects FTP transactions.
bool parse_ftpbounce(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    if (has_value) {
        *error = "ftpbounce: takes no value, got '" + std::string(trim_blanks(value)) + "'";
        return false;
    }
    Rule& r = *st.rule;
    const AppProto have = r.proto.app != AppProto::kUnknown ? r.proto.app : r.app_needed;
    if (have != AppProto::kUnknown && have != AppProto::kFtp) {
        *error = "ftpbounce: not usable on a rule for another app-layer protocol";
        return false;
    }
    r.app_needed = AppProto::kFtp;
    r.header_options.push_back(std::make_unique<FtpbounceOption>());
    return true;
}

}  // namespace keywords

}  // namespace picket::sensor::detect
