#!/usr/bin/env python3
"""End-to-end: real picket-trafficgen and picket-sensor processes on generated pcaps.

Checks the sensor's EVE stats against the generator's own record (exact counts), the same
counts with 1 and 2 workers and with kernel- and user-space BPF, and the bad-input paths
(truncated pcap, bad BPF, bad YAML, bad config value, unknown interface, bad arguments).
Also runs the shared pcaps in ../shared/data/pcaps when present (skipped otherwise).

Usage: sensor_offline_test.py --build BUILD_DIR
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pcapcraft  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)
import picket_e2e  # noqa: E402
from picket_e2e import sensor_bin, stats_events, trafficgen_bin  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED_PCAPS = os.path.join(os.path.dirname(ROOT), "shared", "data", "pcaps")


def run(args, timeout=300):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


def last_stats(logdir):
    stats = stats_events(os.path.join(logdir, "eve.json"))
    assert stats, "no stats event in eve.json"
    return stats[-1]


def stat(stats, dotted):
    cur = stats
    for part in dotted.split("."):
        cur = cur[part]
    return cur


def count_pcap(path):
    """Independent count of records and wire bytes of a classic pcap file."""
    _, records = pcapcraft.read_pcap(path)
    return len(records), sum(orig for _, _, _, orig in records)


class Generated(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-")
        cls.pcap = os.path.join(cls.tmp, "gen.pcap")
        r = run([trafficgen_bin(), "-o", cls.pcap, "--seed", "7", "--sessions", "3000",
                 "--frag-share", "0.2", "--vlan-share", "0.1", "--ipv6-share", "0.3",
                 "--attack", "/etc/passwd", "--attack-share", "0.05"])
        assert r.returncode == 0, r.stderr
        with open(cls.pcap + ".json") as f:
            cls.rec = json.load(f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def sensor(self, *extra, expect=0):
        logdir = tempfile.mkdtemp(dir=self.tmp)
        # Picket's own counters (capture.bpf_filtered, flow.memcap_drops...) in EVE stats too.
        r = run([sensor_bin(), "-r", self.pcap, "-l", logdir, "--set", "stats-picket-counters=yes",
                 *extra])
        self.assertEqual(r.returncode, expect, r.stderr)
        return logdir, r

    def assert_counts_match_record(self, s):
        rec = self.rec
        self.assertEqual(stat(s, "capture.kernel_packets"), rec["packets"])
        self.assertEqual(stat(s, "capture.kernel_drops"), 0)
        self.assertEqual(stat(s, "decoder.pkts"), rec["packets"])
        self.assertEqual(stat(s, "decoder.bytes"), rec["bytes"])
        for key in ("ipv4", "ipv6", "tcp", "udp", "icmpv4", "icmpv6", "arp", "vlan"):
            self.assertEqual(stat(s, "decoder." + key), rec[key], key)
        self.assertEqual(stat(s, "decoder.invalid"), 0)
        self.assertEqual(stat(s, "defrag.ipv4.fragments"), rec["ipv4_fragments"])
        self.assertEqual(stat(s, "defrag.ipv6.fragments"), rec["ipv6_fragments"])
        self.assertEqual(stat(s, "defrag.ipv4.reassembled") + stat(s, "defrag.ipv6.reassembled"),
                         rec["reassembled"])
        self.assertEqual(stat(s, "flow.total"), rec["flows"])
        self.assertEqual(stat(s, "flow.tcp"), rec["flows_tcp"])
        self.assertEqual(stat(s, "flow.udp"), rec["flows_udp"])
        self.assertEqual(stat(s, "flow.icmpv4"), rec["flows_icmpv4"])
        self.assertEqual(stat(s, "flow.icmpv6"), rec["flows_icmpv6"])
        self.assertEqual(stat(s, "flow.memcap_drops"), 0)

    def test_record_is_not_trivial(self):
        # The generated file must exercise every path the counts below check.
        for key in ("ipv6", "vlan", "ipv4_fragments", "ipv6_fragments", "icmpv4", "icmpv6",
                    "arp", "reassembled"):
            self.assertGreater(self.rec[key], 0, key)
        n, total = count_pcap(self.pcap)
        self.assertEqual(n, self.rec["packets"])
        self.assertEqual(total, self.rec["bytes"])

    def test_counts_two_workers(self):
        logdir, r = self.sensor("--workers", "2", "-k", "all")
        s = last_stats(logdir)
        self.assert_counts_match_record(s)
        for ev in ("ipv4.checksum_invalid", "tcp.checksum_invalid", "udp.checksum_invalid"):
            self.assertEqual(stat(s, "decoder.event." + ev), 0, ev)
        workers = s["rates"]["workers"]
        self.assertEqual(len(workers), 2)
        self.assertEqual(sum(w["pkts"] for w in workers), self.rec["packets"])
        self.assertGreater(min(w["pkts"] for w in workers), 0)
        self.assertIn("summary: %d packets" % self.rec["packets"], r.stdout)

    def test_counts_one_worker(self):
        logdir, _ = self.sensor("--workers", "1")
        self.assert_counts_match_record(last_stats(logdir))

    def test_bpf_kernel_and_user_agree(self):
        results = {}
        for mode in ("kernel", "user"):
            # As with tcpdump, "tcp" alone does not look past a VLAN tag.
            logdir, _ = self.sensor("--workers", "2", "--set", "capture.bpf-mode=" + mode,
                                    "tcp", "or", "(vlan", "and", "tcp)")
            s = last_stats(logdir)
            self.assertEqual(stat(s, "capture.bpf_filtered"), self.rec["packets"] - self.rec["tcp"])
            self.assertEqual(stat(s, "decoder.pkts"), self.rec["tcp"])
            self.assertEqual(stat(s, "decoder.tcp"), self.rec["tcp"])
            self.assertEqual(stat(s, "flow.total"), self.rec["flows_tcp"])
            results[mode] = stat(s, "decoder.bytes")
        self.assertEqual(results["kernel"], results["user"])

    def test_directory_and_repeated_files(self):
        d = os.path.join(self.tmp, "dir")
        os.makedirs(d, exist_ok=True)
        shutil.copy(self.pcap, os.path.join(d, "a.pcap"))
        shutil.copy(self.pcap, os.path.join(d, "b.pcap"))
        logdir = tempfile.mkdtemp(dir=self.tmp)
        r = run([sensor_bin(), "-r", d, "-r", self.pcap, "-l", logdir, "--workers", "2",
                 "--set", "stats-picket-counters=yes"])
        self.assertEqual(r.returncode, 0, r.stderr)
        s = last_stats(logdir)
        self.assertEqual(stat(s, "decoder.pkts"), 3 * self.rec["packets"])
        self.assertEqual(stat(s, "capture.kernel_packets"), 3 * self.rec["packets"])

    def test_truncated_pcap(self):
        bad = os.path.join(self.tmp, "truncated.pcap")
        # Cut inside the 101st record: 100 whole packets survive.
        with open(self.pcap, "rb") as f:
            data = f.read()
        off = 24
        endian = "<"
        for _ in range(100):
            incl = struct.unpack(endian + "I", data[off + 8:off + 12])[0]
            off += 16 + incl
        with open(bad, "wb") as f:
            f.write(data[:off + 20])
        # As Suricata: the damage ends that file with a warning naming file and offset, the
        # packets before it are processed, the run goes on with the next file and exits 0.
        logdir = tempfile.mkdtemp(dir=self.tmp)
        r = run([sensor_bin(), "-r", bad, "-r", self.pcap, "-l", logdir, "--workers", "2"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("warning: " + bad, r.stderr)
        self.assertIn("offset %d after packet 100" % off, r.stderr)
        self.assertIn("the rest of that file was skipped", r.stderr)
        s = last_stats(logdir)
        self.assertEqual(stat(s, "decoder.pkts"), 100 + self.rec["packets"])
        self.assertIn("summary: %d packets" % (100 + self.rec["packets"]), r.stdout)
        # pcap-file.strict: the damage is an input failure (exit status 1), nothing after it
        # is read.
        logdir = tempfile.mkdtemp(dir=self.tmp)
        r = run([sensor_bin(), "-r", bad, "-r", self.pcap, "-l", logdir, "--workers", "2",
                 "--set", "pcap-file.strict=yes"])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("error: " + bad, r.stderr)
        self.assertIn("offset %d" % off, r.stderr)
        s = last_stats(logdir)
        self.assertEqual(stat(s, "decoder.pkts"), 100)
        self.assertIn("summary: 100 packets", r.stdout)

    def test_bad_bpf_expression(self):
        logdir = tempfile.mkdtemp(dir=self.tmp)
        r = run([sensor_bin(), "-r", self.pcap, "-l", logdir, "tcp", "port", "notaport"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("bad BPF expression 'tcp port notaport'", r.stderr)

    def test_bad_yaml(self):
        cfg = os.path.join(self.tmp, "bad.yaml")
        with open(cfg, "w") as f:
            f.write("flow:\n  memcap: 10mb\n  hash-size: [1, 2\n")
        r = run([sensor_bin(), "-r", self.pcap, "-c", cfg])
        self.assertEqual(r.returncode, 2)
        self.assertIn(cfg + ":", r.stderr)
        self.assertIn("bad YAML", r.stderr)

    def test_bad_config_value_names_key_and_line(self):
        cfg = os.path.join(self.tmp, "badvalue.yaml")
        with open(cfg, "w") as f:
            f.write("workers: 1\ndefrag:\n  memcap: plenty\n")
        r = run([sensor_bin(), "-r", self.pcap, "-c", cfg])
        self.assertEqual(r.returncode, 2)
        self.assertIn(cfg + ":3: defrag.memcap: expected a size", r.stderr)

    def test_set_override_bad_choice(self):
        r = run([sensor_bin(), "-r", self.pcap, "--set", "defrag.policy=sideways"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("defrag.policy", r.stderr)
        self.assertIn("sideways", r.stderr)

    def test_unknown_interface(self):
        for mode in ("afpacket", "pcap"):
            r = run([sensor_bin(), "-i", "picketnosuch0", "--capture", mode])
            self.assertNotEqual(r.returncode, 0, mode)
            self.assertIn("interface 'picketnosuch0'", r.stderr, mode)

    def test_missing_file(self):
        r = run([sensor_bin(), "-r", os.path.join(self.tmp, "nope.pcap")])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("nope.pcap", r.stderr)

    def test_bad_arguments(self):
        for args in (["--workers", "0", "-r", self.pcap], ["--frobnicate"], [],
                     ["-k", "maybe", "-r", self.pcap]):
            r = run([sensor_bin(), *args])
            self.assertEqual(r.returncode, 2, args)
            self.assertTrue(r.stderr.strip(), args)

    def test_version_and_help(self):
        r = run([sensor_bin(), "--version"])
        self.assertEqual(r.returncode, 0)
        self.assertIn("picket-sensor", r.stdout)
        r = run([sensor_bin(), "--help"])
        self.assertEqual(r.returncode, 0)
        self.assertIn("-r", r.stdout)


class Detection(unittest.TestCase):
    """Rules against generated traffic whose attacks the generator recorded."""

    ATTACKS = ("/etc/passwd", "cmd.exe")

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-detect-")
        cls.pcap = os.path.join(cls.tmp, "attacks.pcap")
        args = [trafficgen_bin(), "-o", cls.pcap, "--seed", "21", "--sessions", "1500",
                "--attack-share", "0.1"]
        for a in cls.ATTACKS:
            args += ["--attack", a]
        r = run(args)
        assert r.returncode == 0, r.stderr
        with open(cls.pcap + ".json") as f:
            cls.rec = json.load(f)
        cls.rules = os.path.join(cls.tmp, "local.rules")
        with open(cls.rules, "w") as f:
            f.write('alert tcp any any -> any any (msg:"passwd"; content:"/etc/passwd"; '
                    'sid:1000001; rev:3; classtype:attempted-recon;)\n')
            f.write('alert tcp any any -> any any (msg:"cmd"; content:"CMD.EXE"; nocase; '
                    'sid:1000002; rev:1;)\n')
            f.write('alert tcp any any -> any any (msg:"broken"; content:"x"; lua:foo.lua; '
                    'sid:1000003;)\n')
        cls.classification = os.path.join(cls.tmp, "classification.config")
        with open(cls.classification, "w") as f:
            f.write("config classification: attempted-recon,Attempted Information Leak,2\n")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_alerts(self, extra=()):
        logdir = tempfile.mkdtemp(dir=self.tmp)
        r = run([sensor_bin(), "-r", self.pcap, "-S", self.rules, "-l", logdir, "--workers", "2",
                 "--set", "classification-file=" + self.classification, *extra])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(self.rules + ":3 sid 1000003: unsupported keyword 'lua'", r.stderr)
        self.assertIn("rules: 2 loaded, 1 skipped", r.stdout)
        alerts = []
        with open(os.path.join(logdir, "eve.json")) as f:
            for line in f:
                ev = json.loads(line)
                if ev["event_type"] == "alert":
                    alerts.append(ev)
        return logdir, alerts

    def test_alerts_are_exactly_the_injected_attacks(self):
        sid_of = {"/etc/passwd": 1000001, "cmd.exe": 1000002}
        want = sorted((a["packet"], sid_of[a["string"]]) for a in self.rec["attacks"])
        self.assertGreater(len(want), 20)
        # Raw content per packet: each alert names the attack's own packet.
        _, alerts = self.run_alerts(["--set", "stream.raw-on-ack=no"])
        got = sorted((a["pcap_cnt"], a["alert"]["signature_id"]) for a in alerts)
        self.assertEqual(got, want)
        # Suricata's IDS timing (the default): the same alerts, each on the attack's packet
        # or a later one of its flow (when its acknowledged chunk is inspected), or on the
        # flow's end-of-flow pseudo packet (no pcap_cnt).
        logdir, alerts = self.run_alerts()
        for sid in sid_of.values():
            w = sorted(p for p, s in want if s == sid)
            g = [a.get("pcap_cnt") for a in alerts if a["alert"]["signature_id"] == sid]
            self.assertEqual(len(g), len(w), sid)
            late = sorted(c if c is not None else 1 << 62 for c in g)
            self.assertTrue(all(x >= y for x, y in zip(late, w)), (sid, late, w))
        passwd = [a for a in alerts if a["alert"]["signature_id"] == 1000001][0]
        self.assertEqual(passwd["alert"]["category"], "Attempted Information Leak")
        self.assertEqual(passwd["alert"]["severity"], 2)
        self.assertEqual(passwd["alert"]["rev"], 3)
        self.assertEqual(passwd["direction"], "to_server")
        self.assertEqual(passwd["proto"], "TCP")
        with open(os.path.join(logdir, "fast.log")) as f:
            self.assertEqual(len(f.readlines()), len(want))
        s = last_stats(logdir)
        self.assertEqual(stat(s, "detect.alert"), len(want))
        self.assertEqual(stat(s, "detect.alert_queue_overflow"), 0)
        self.assertEqual(s["detect"]["engines"][0]["rules_loaded"], 2)
        self.assertEqual(s["detect"]["engines"][0]["rules_failed"], 1)

    def test_check_mode(self):
        r = run([sensor_bin(), "-T", "-S", self.rules])
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout.strip().splitlines()[-1], "rules: 2 loaded, 1 skipped")
        good = os.path.join(self.tmp, "good.rules")
        with open(good, "w") as f:
            f.write('alert tcp any any -> any any (msg:"ok"; content:"a"; sid:5;)\n')
        r = run([sensor_bin(), "-T", "-S", good])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip().splitlines()[-1], "rules: 1 loaded, 0 skipped")
        r = run([sensor_bin(), "-T", "-S", os.path.join(self.tmp, "missing.rules")])
        self.assertEqual(r.returncode, 1)
        self.assertIn("missing.rules", r.stderr)

    def test_check_mode_reports_a_bad_eve_type(self):
        good = os.path.join(self.tmp, "eve-good.rules")
        with open(good, "w") as f:
            f.write('alert tcp any any -> any any (msg:"ok"; content:"a"; sid:5;)\n')
        cfg = os.path.join(self.tmp, "eve-types.yaml")
        with open(cfg, "w") as f:
            f.write("outputs:\n  - fast: {enabled: yes}\n  - eve-log:\n      types: [alert, htpp]\n"
                    "  - pcap-log: {enabled: no}\n")
        r = run([sensor_bin(), "-T", "-c", cfg, "-S", good])
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr.splitlines(), [
            "picket: warning: %s: outputs: 'pcap-log' is not supported by Picket; ignored" % cfg,
            "picket-sensor: config error: %s: outputs.eve-log.types: unknown type 'htpp' "
            "(known: alert, anomaly, dns, drop, files, flow, ftp, http, ssh, stats, tls)" % cfg,
        ])

    def test_check_mode_reads_the_acl_file(self):
        good = os.path.join(self.tmp, "acl-good.rules")
        with open(good, "w") as f:
            f.write('alert tcp any any -> any any (msg:"ok"; content:"a"; sid:5;)\n')
        acl = os.path.join(self.tmp, "good.acl")
        with open(acl, "w") as f:
            f.write("pass tcp 10.0.0.0/8 any -> any 80\ndrop udp any any -> 192.0.2.1 53\n")
        r = run([sensor_bin(), "-T", "-S", good, "--set", "acl-file=" + acl])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip().splitlines()[-1], "acl-file %s: 2 rules" % acl)
        bad = os.path.join(self.tmp, "bad.acl")
        with open(bad, "w") as f:
            f.write("pass tcp 10.0.0.0/8 any -> any 80\npass tcp 10.0.0.0/33 any -> any 80\n")
        r = run([sensor_bin(), "-T", "-S", good, "--set", "acl-file=" + bad])
        self.assertEqual(r.returncode, 1)
        self.assertIn('%s:2: bad source address "10.0.0.0/33"' % bad, r.stderr)


@unittest.skipUnless(os.path.isdir(SHARED_PCAPS), "shared pcaps not present")
class SharedPcaps(unittest.TestCase):
    def test_shared_pcaps_counts(self):
        tmp = tempfile.mkdtemp(prefix="picket-e2e-shared-")
        try:
            for name in sorted(os.listdir(SHARED_PCAPS)):
                if not name.endswith(".pcap"):
                    continue
                path = os.path.join(SHARED_PCAPS, name)
                n, total = count_pcap(path)
                logdir = tempfile.mkdtemp(dir=tmp)
                r = run([sensor_bin(), "-r", path, "-l", logdir, "--workers", "2"])
                self.assertEqual(r.returncode, 0, name + r.stderr)
                s = last_stats(logdir)
                self.assertEqual(stat(s, "decoder.pkts"), n, name)
                self.assertEqual(stat(s, "decoder.bytes"), total, name)
                self.assertGreater(stat(s, "flow.total"), 0, name)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    _, argv = picket_e2e.parse_args()
    picket_test.main(argv)
