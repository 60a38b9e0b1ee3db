// ftpdata_command:(retr|stor) (Suricata 7): an ftp-data flow whose transfer the control
// connection asked with RETR (a download) or STOR (an upload). The rule becomes an ftp-data
// rule; the app layer says the command in AppView::ftpdata_command.
#include <string>
#include <string_view>

#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {
namespace {

class FtpdataCommandOption final : public HeaderOption {
public:
    explicit FtpdataCommandOption(uint8_t c) : command_(c) {}
    const char* keyword() const override { return "ftpdata_command"; }
    bool match(const PacketContext& pc) const override {
        return pc.view != nullptr && pc.view->proto == AppProto::kFtpData &&
               pc.view->ftpdata_command == command_;
    }
    uint64_t hash() const override { return 0xf7d0u + command_; }
    bool equals(const HeaderOption& other) const override {
        const auto* o = dynamic_cast<const FtpdataCommandOption*>(&other);
        return o != nullptr && o->command_ == command_;
    }

private:
    uint8_t command_;
};

bool ieq(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) {
        return false;
    }
    for (size_t i = 0; i < a.size(); ++i) {
        const char c = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] + 32) : a[i];
        if (c != b[i]) {
            return false;
        }
    }
    return true;
}

}  // namespace

namespace keywords {

// ftpdata_command:retr | stor (any case).
bool parse_ftpdata_command(ParseState& st, std::string_view value, bool has_value,
                           std::string* error) {
    const std::string_view v = trim_blanks(value);
    uint8_t c = 0;
    if (has_value && ieq(v, "retr")) {
        c = inspect::kFtpRetr;
    } else if (has_value && ieq(v, "stor")) {
        c = inspect::kFtpStor;
    } else {
        *error = "ftpdata_command: invalid value '" + std::string(v) + "' (expected retr or stor)";
        return false;
    }
    Rule& r = *st.rule;
    const AppProto have = r.proto.app != AppProto::kUnknown ? r.proto.app : r.app_needed;
    if (have != AppProto::kUnknown && have != AppProto::kFtpData) {
        *error = "ftpdata_command: not usable on a rule for another app-layer protocol";
        return false;
    }
    r.app_needed = AppProto::kFtpData;
    r.header_options.push_back(std::make_unique<FtpdataCommandOption>(c));
    return true;
}

}  // namespace keywords

}  // namespace picket::sensor::detect
