// stream_size:<server|client|both|either>,<op>,<number> (Suricata 7): compares the TCP
// stream size of the server's, the client's, both or either direction, Suricata's
// next_seq - isn (so 1 after a bare SYN; TcpSeqState in ../flowbits.h), with < > = != <= >=.
// Matches only TCP packets of a flow whose sequence numbers the engine tracked (a parsed
// stream_size rule makes it track every TCP flow: FlowbitRegistry::want_tcp_seq).
#include <memory>

#include "sensor/detect/flowbits.h"
#include "sensor/detect/keywords/header_util.h"
#include "sensor/detect/keywords/keywords.h"

namespace picket::sensor::detect::keywords {

namespace {

enum class SizeSide : uint8_t { kServer, kClient, kBoth, kEither };
enum class SizeOp : uint8_t { kLt, kGt, kEq, kNe, kLe, kGe };

bool compare(SizeOp op, uint32_t v, uint32_t n) {
    switch (op) {
        case SizeOp::kLt:
            return v < n;
        case SizeOp::kGt:
            return v > n;
        case SizeOp::kEq:
            return v == n;
        case SizeOp::kNe:
            return v != n;
        case SizeOp::kLe:
            return v <= n;
        case SizeOp::kGe:
            return v >= n;
    }
    return false;
}

class StreamSizeOption final : public HeaderOption {
public:
    StreamSizeOption(SizeSide side, SizeOp op, uint32_t n) : side_(side), op_(op), n_(n) {}
    const char* keyword() const override { return "stream_size"; }
    bool match(const PacketContext& pc) const override {
        if (pc.flowbits == nullptr || pc.p == nullptr || !pc.p->has(decode::kFlagTcp)) {
            return false;
        }
        const TcpSeqState& t = pc.flowbits->tcp;
        if (t.known == 0) {
            return false;
        }
        // Directions are the sender's: the client sends kToServer.
        const uint32_t client = t.size(static_cast<int>(flow::Direction::kToServer));
        const uint32_t server = t.size(static_cast<int>(flow::Direction::kToClient));
        switch (side_) {
            case SizeSide::kServer:
                return compare(op_, server, n_);
            case SizeSide::kClient:
                return compare(op_, client, n_);
            case SizeSide::kBoth:
                return compare(op_, server, n_) && compare(op_, client, n_);
            case SizeSide::kEither:
                return compare(op_, server, n_) || compare(op_, client, n_);
        }
        return false;
    }
    uint64_t hash() const override {
        return hash_mix(hash_mix(hash_mix(hash_str("stream_size"), static_cast<uint64_t>(side_)),
                                 static_cast<uint64_t>(op_)),
                        n_);
    }
    bool equals(const HeaderOption& other) const override {
        const auto* o = dynamic_cast<const StreamSizeOption*>(&other);
        return o != nullptr && o->side_ == side_ && o->op_ == op_ && o->n_ == n_;
    }

private:
    SizeSide side_;
    SizeOp op_;
    uint32_t n_;
};

}  // namespace

bool parse_stream_size(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    std::string_view s = unquote(value);
    if (!has_value || s.empty()) {
        *error = "stream_size: expected <server|client|both|either>,<operator>,<number>";
        return false;
    }
    std::string_view parts[3];
    for (int i = 0; i < 3; ++i) {
        const size_t comma = i < 2 ? s.find(',') : std::string_view::npos;
        if (i < 2 && comma == std::string_view::npos) {
            *error =
                "stream_size: expected <server|client|both|either>,<operator>,<number>, got '" +
                std::string(value) + "'";
            return false;
        }
        parts[i] = trim_blanks(s.substr(0, comma));
        s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
    }
    SizeSide side;
    if (parts[0] == "server") {
        side = SizeSide::kServer;
    } else if (parts[0] == "client") {
        side = SizeSide::kClient;
    } else if (parts[0] == "both") {
        side = SizeSide::kBoth;
    } else if (parts[0] == "either") {
        side = SizeSide::kEither;
    } else {
        *error = "stream_size: invalid direction '" + std::string(parts[0]) +
                 "' (server, client, both or either)";
        return false;
    }
    SizeOp op;
    if (parts[1] == "<") {
        op = SizeOp::kLt;
    } else if (parts[1] == ">") {
        op = SizeOp::kGt;
    } else if (parts[1] == "=") {
        op = SizeOp::kEq;
    } else if (parts[1] == "!=") {
        op = SizeOp::kNe;
    } else if (parts[1] == "<=") {
        op = SizeOp::kLe;
    } else if (parts[1] == ">=") {
        op = SizeOp::kGe;
    } else {
        *error =
            "stream_size: invalid operator '" + std::string(parts[1]) + "' (<, >, =, !=, <= or >=)";
        return false;
    }
    uint64_t n = 0;
    if (!parse_decimal(parts[2], UINT32_MAX, &n)) {
        *error = "stream_size: invalid number '" + std::string(parts[2]) + "' (0 to 4294967295)";
        return false;
    }
    if (st.flowbits != nullptr) {
        st.flowbits->want_tcp_seq();
    }
    st.rule->header_options.push_back(
        std::make_unique<StreamSizeOption>(side, op, static_cast<uint32_t>(n)));
    return true;
}

}  // namespace picket::sensor::detect::keywords
