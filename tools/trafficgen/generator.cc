#include "tools/trafficgen/generator.h"

#include <cmath>
#include <memory>
#include <queue>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "tools/trafficgen/frames.h"
#include "tools/trafficgen/pcap_writer.h"
#include "tools/trafficgen/planner.h"
#include "tools/trafficgen/tally.h"

namespace picket::tools::trafficgen {
namespace {

constexpr int64_t kEpochUs = 1704067200LL * 1000000LL;  // 2024-01-01T00:00:00Z
constexpr size_t kMaxAttackLen = 512;

// Starts sessions as a Poisson process and plans each in full; a min-heap on (timestamp,
// session number) merges the live sessions' packets into the file in time order, and every
// frame on its way to the writer is tallied into the record.
Record run(Planner& g, const std::string& path) {
    PcapWriter w(path);
    Tally tally(g.rec, g.opt.attacks);
    struct Item {
        int64_t ts;
        uint64_t seq;
        Session* s;
        bool operator>(const Item& o) const { return ts != o.ts ? ts > o.ts : seq > o.seq; }
    };
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
    std::vector<std::unique_ptr<Session>> owned;
    std::vector<Session*> free_list;
    Rng arrivals(g.opt.seed ^ 0x617272ULL);
    int64_t next_arrival = kEpochUs;
    uint64_t planned = 24;
    uint64_t started = 0;
    uint64_t pcap_cnt = 0;
    const double mean_gap_us = 2000.0;
    for (;;) {
        bool can_start = g.opt.size_bytes ? planned < g.opt.size_bytes : started < g.opt.sessions;
        if (can_start && (heap.empty() || next_arrival <= heap.top().ts)) {
            Session* s;
            if (free_list.empty()) {
                owned.push_back(std::make_unique<Session>());
                s = owned.back().get();
            } else {
                s = free_list.back();
                free_list.pop_back();
            }
            s->reset();
            s->seq = started++;
            g.plan_session(*s, next_arrival);
            planned += s->file_bytes();
            heap.push(Item{s->pkts[0].ts, s->seq, s});
            next_arrival +=
                static_cast<int64_t>(-std::log(1.0 - arrivals.unit()) * mean_gap_us) + 1;
            continue;
        }
        if (heap.empty()) {
            break;
        }
        Item it = heap.top();
        heap.pop();
        Session* s = it.s;
        const Pkt& p = s->pkts[s->next++];
        const uint8_t* frame = s->data.data() + p.off;
        ++pcap_cnt;
        if (pcap_cnt == 1) {
            g.rec.first_ts_us = p.ts;
        }
        g.rec.last_ts_us = p.ts;
        w.packet(p.ts, frame, p.len);
        tally.observe(frame, p.len);
        if (p.attack >= 0) {
            g.rec.attacks[static_cast<size_t>(p.attack)].packet = pcap_cnt;
        }
        if (s->next < s->pkts.size()) {
            heap.push(Item{s->pkts[s->next].ts, s->seq, s});
        } else {
            if (s->data.capacity() > (128u << 10)) {
                // Keep pooled sessions small: a rare huge session should not pin its memory.
                std::vector<uint8_t>().swap(s->data);
                std::vector<Pkt>().swap(s->pkts);
            }
            free_list.push_back(s);
        }
    }
    w.close();
    g.rec.file_bytes = w.written();
    g.rec.seed = g.opt.seed;
    g.rec.options = g.opt;
    return g.rec;
}

}  // namespace

std::string validate(const Options& o) {
    auto share_ok = [](double v) { return v >= 0.0 && v <= 1.0; };
    if (!share_ok(o.ipv6_share)) {
        return "--ipv6-share must be between 0 and 1";
    }
    if (!share_ok(o.vlan_share)) {
        return "--vlan-share must be between 0 and 1";
    }
    if (!share_ok(o.frag_share)) {
        return "--frag-share must be between 0 and 1";
    }
    if (!share_ok(o.attack_share)) {
        return "--attack-share must be between 0 and 1";
    }
    if (o.size_bytes == 0 && o.sessions == 0) {
        return "one of --size or --sessions must be greater than 0";
    }
    for (const auto& a : o.attacks) {
        if (a.empty() || a.size() > kMaxAttackLen) {
            return "--attack strings must be 1 to " + std::to_string(kMaxAttackLen) + " bytes";
        }
    }
    return {};
}

Record generate(const Options& options, const std::string& path) {
    std::string err = validate(options);
    if (!err.empty()) {
        throw std::invalid_argument(err);
    }
    Planner g(options);
    return run(g, path);
}

nlohmann::json to_json(const Options& o) {
    nlohmann::json j;
    j["seed"] = o.seed;
    j["size_bytes"] = o.size_bytes;
    j["sessions"] = o.size_bytes ? 0 : o.sessions;
    j["ipv6_share"] = o.ipv6_share;
    j["vlan_share"] = o.vlan_share;
    j["frag_share"] = o.frag_share;
    j["attacks"] = o.attacks;
    j["attack_share"] = o.attack_share;
    return j;
}

nlohmann::json to_json(const Record& r) {
    nlohmann::json j;
    j["packets"] = r.packets;
    j["bytes"] = r.bytes;
    j["ipv4"] = r.ipv4;
    j["ipv6"] = r.ipv6;
    j["tcp"] = r.tcp;
    j["udp"] = r.udp;
    j["icmpv4"] = r.icmpv4;
    j["icmpv6"] = r.icmpv6;
    j["arp"] = r.arp;
    j["vlan"] = r.vlan;
    j["ipv4_fragments"] = r.ipv4_fragments;
    j["ipv6_fragments"] = r.ipv6_fragments;
    j["reassembled"] = r.reassembled;
    j["flows"] = r.flows;
    j["flows_tcp"] = r.flows_tcp;
    j["flows_udp"] = r.flows_udp;
    j["flows_icmpv4"] = r.flows_icmpv4;
    j["flows_icmpv6"] = r.flows_icmpv6;
    j["file_bytes"] = r.file_bytes;
    j["first_ts_us"] = r.first_ts_us;
    j["last_ts_us"] = r.last_ts_us;
    j["sessions"] = {{"http", r.sessions.http},
                     {"dns", r.sessions.dns},
                     {"tls", r.sessions.tls},
                     {"icmp", r.sessions.icmp}};
    j["http_requests"] = r.http_requests;
    nlohmann::json attacks = nlohmann::json::array();
    for (const auto& a : r.attacks) {
        attacks.push_back({{"string", a.string},
                           {"location", a.location},
                           {"packet", a.packet},
                           {"flow",
                            {{"proto", a.flow.proto},
                             {"src", a.flow.src},
                             {"sport", a.flow.sport},
                             {"dst", a.flow.dst},
                             {"dport", a.flow.dport},
                             {"vlan", a.flow.vlan}}}});
    }
    j["attacks"] = attacks;
    j["attack_string_packets"] = r.attack_string_packets;
    j["seed"] = r.seed;
    j["options"] = to_json(r.options);
    return j;
}

bool parse_size(const std::string& text, uint64_t* out) {
    size_t i = 0;
    uint64_t v = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
        uint64_t d = static_cast<uint64_t>(text[i] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return false;
        }
        v = v * 10 + d;
        ++i;
    }
    if (i == 0) {
        return false;
    }
    std::string suf;
    for (; i < text.size(); ++i) {
        suf += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
    }
    uint64_t mult = 1;
    if (!suf.empty()) {
        char u = suf[0];
        std::string rest = suf.substr(1);
        if (rest != "" && rest != "b" && rest != "ib") {
            return false;
        }
        // b, k, m, g, t: 1024 to the power of the unit's index; "b" takes no suffix.
        static constexpr std::string_view kUnits = "bkmgt";
        size_t unit = kUnits.find(u);
        if (unit == std::string_view::npos || (unit == 0 && !rest.empty())) {
            return false;
        }
        mult = 1ULL << (10 * unit);
    }
    if (v > UINT64_MAX / mult) {
        return false;
    }
    *out = v * mult;
    return true;
}

}  // namespace picket::tools::trafficgen
