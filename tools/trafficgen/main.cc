// picket-trafficgen: writes a deterministic pcap and its JSON record. See README.md.
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>

#include <CLI/CLI.hpp>

#include "tools/trafficgen/generator.h"

namespace tg = picket::tools::trafficgen;

int main(int argc, char** argv) {
    CLI::App app{"picket-trafficgen: deterministic pcap traffic generator"};
    tg::Options opt;
    std::string out, record_path, size_text;
    uint64_t sessions = 0;
    app.add_option("-o,--output", out, "output pcap file")->required();
    app.add_option("--seed", opt.seed, "random seed (same seed and options: same bytes)");
    auto* size_opt = app.add_option("--size", size_text,
                                    "approximate file size, e.g. 20M, 1G (binary multiples)");
    auto* sess_opt = app.add_option("--sessions", sessions, "number of sessions (default 1000)")
                         ->check(CLI::PositiveNumber);
    size_opt->excludes(sess_opt);
    app.add_option("--ipv6-share", opt.ipv6_share, "share of sessions over IPv6")
        ->check(CLI::Range(0.0, 1.0));
    app.add_option("--vlan-share", opt.vlan_share, "share of sessions with an 802.1Q tag")
        ->check(CLI::Range(0.0, 1.0));
    app.add_option("--frag-share", opt.frag_share,
                   "share of UDP flows sending a fragmented datagram")
        ->check(CLI::Range(0.0, 1.0));
    app.add_option("--attack", opt.attacks, "attack string to inject (repeatable)");
    app.add_option("--attack-share", opt.attack_share, "share of HTTP sessions carrying an attack")
        ->check(CLI::Range(0.0, 1.0));
    app.add_option("--record", record_path, "record JSON path (default OUT.pcap.json)");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
    }
    if (!size_text.empty()) {
        if (!tg::parse_size(size_text, &opt.size_bytes) || opt.size_bytes == 0) {
            std::fprintf(stderr, "error: --size: invalid size '%s' (examples: 1000000, 20M, 1G)\n",
                         size_text.c_str());
            return 2;
        }
    } else if (sessions != 0) {
        opt.sessions = sessions;
    }
    std::string err = tg::validate(opt);
    if (!err.empty()) {
        std::fprintf(stderr, "error: %s\n", err.c_str());
        return 2;
    }
    if (record_path.empty()) {
        record_path = out + ".json";
    }
    try {
        tg::Record rec = tg::generate(opt, out);
        std::ofstream f(record_path, std::ios::trunc);
        f << tg::to_json(rec).dump(2) << "\n";
        f.close();
        if (!f) {
            std::fprintf(stderr, "error: cannot write %s\n", record_path.c_str());
            return 1;
        }
        std::fprintf(stderr, "wrote %s: %llu packets, %llu bytes, %llu flows; record %s\n",
                     out.c_str(), static_cast<unsigned long long>(rec.packets),
                     static_cast<unsigned long long>(rec.file_bytes),
                     static_cast<unsigned long long>(rec.flows), record_path.c_str());
        if (rec.attack_string_packets != rec.attacks.size()) {
            std::fprintf(stderr,
                         "warning: attack strings occur in %llu packets but %zu were injected; "
                         "choose strings that generated traffic does not contain\n",
                         static_cast<unsigned long long>(rec.attack_string_packets),
                         rec.attacks.size());
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
