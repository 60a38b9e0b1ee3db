#!/usr/bin/env python3
"""The real picket-sensor with rule profiling and detect.mpm-algo, over a generated pcap.

- --profile-rules prints the table at exit and writes LOGDIR/rule_perf.json with every rule;
  profiling.rules.limit / filename / enabled work from --set and from a sensor.yaml (-c).
- Without the flag there is neither a table nor a file, and the alerts are byte-identical.
- -T flags a pcre without a content anchor (warning line and count) and names mpm-algo none.
- --set detect.mpm-algo=none gives the same fast.log as the default (hs); a bad value exits 2.

Usage: rule_profile_cli_test.py --build BUILD_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "support"))
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)
import picket_e2e  # noqa: E402

TMP = None
PCAP = None
RULES = None
RECORD = None  # the generator's record of PCAP (picket-trafficgen writes it next to it)

RULES_TEXT = (
    'alert tcp any any -> any any (msg:"one"; content:"ATK-one-xyz"; sid:101; rev:2;)\n'
    'alert udp any any -> any any (msg:"udp"; pcre:"/./s"; sid:102;)\n'
    'alert icmp any any -> any any (msg:"echo request"; itype:8; sid:103;)\n'
    'alert tcp any any -> any 80 (msg:"get"; flow:to_server,established; content:"GET "; '
    'depth:4; pcre:"/^GET \\/[a-z]/"; sid:104;)\n'
)
HEADER = ("   num        sid  gid  rev       checks    matches          ticks           us "
          " avg ticks  worst ticks  keywords                 fast pattern")


def sensor(*args, cwd=None):
    exe = picket_e2e.sensor_bin()
    return subprocess.run([exe] + list(args), capture_output=True, text=True, timeout=120,
                          cwd=cwd)


def run_dir(name):
    d = os.path.join(TMP, name)
    os.makedirs(d)
    return d


def alerts_by_sid(fast_log):
    """Alerts per sid in a fast.log ("... [**] [gid:sid:rev] msg [**] ...")."""
    counts = {}
    for line in fast_log.splitlines():
        m = re.search(r"\[\*\*\] \[(\d+):(\d+):(\d+)\]", line)
        if m is None:
            raise AssertionError("not a fast.log alert line: %r" % line)
        sid = int(m.group(2))
        counts[sid] = counts.get(sid, 0) + 1
    return counts


def table_rows(stdout):
    """The rule rows of the printed table."""
    lines = stdout.split("\n")
    start = lines.index(HEADER) + 1
    end = lines.index("by keyword (a rule counts under each of its keywords):")
    return lines[start:end]


class RuleProfilingCli(unittest.TestCase):
    def test_flag_prints_table_and_writes_json(self):
        out = run_dir("flag")
        r = sensor("-r", PCAP, "-S", RULES, "-l", out, "--workers", "2", "--profile-rules")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("\nrule profiling: 4 rules, 2 worker arrays over 1 generation, "
                      "mpm-algo hs, ", r.stdout)
        self.assertIn("\ntop 4 rules by ticks:\n", r.stdout)
        rows = table_rows(r.stdout)
        self.assertEqual(len(rows), 4)
        self.assertEqual(sorted(int(row.split()[1]) for row in rows), [101, 102, 103, 104])
        with open(os.path.join(out, "rule_perf.json")) as f:
            doc = json.load(f)
        self.assertEqual(list(doc.keys()), ["mpm_algo", "ticks_per_us", "generations",
                                            "worker_arrays", "totals", "rules", "by_keyword",
                                            "by_fast_pattern"])
        self.assertEqual(doc["mpm_algo"], "hs")
        self.assertEqual(doc["worker_arrays"], 2)
        self.assertEqual(len(doc["rules"]), 4)
        self.assertEqual(doc["totals"]["checks"], sum(x["checks"] for x in doc["rules"]))
        # The table's rows are the JSON's first rules, in the same order.
        self.assertEqual([int(row.split()[1]) for row in rows],
                         [x["sid"] for x in doc["rules"]])
        by_sid = {x["sid"]: x for x in doc["rules"]}
        self.assertEqual(by_sid[101]["rev"], 2)
        self.assertEqual(by_sid[101]["fast_pattern"], 'pkt_data:"ATK-one-xyz"')
        self.assertEqual(by_sid[104]["keywords"], ["content", "flow", "pcre"])
        self.assertEqual(by_sid[102]["fast_pattern"], "")
        self.assertEqual(sorted(g["keyword"] for g in doc["by_keyword"]),
                         ["content", "flow", "itype", "pcre"])
        self.assertEqual(sorted(g["fast_pattern"] for g in doc["by_fast_pattern"]),
                         ['none', 'pkt_data:"ATK-one-xyz"', 'pkt_data:"GET "'])

    def test_limit_and_filename_from_set(self):
        out = run_dir("limit")
        r = sensor("-r", PCAP, "-S", RULES, "-l", out, "--profile-rules",
                   "--set", "profiling.rules.limit=2", "--set",
                   "profiling.rules.filename=perf.json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("\ntop 2 rules by ticks:\n", r.stdout)
        self.assertEqual(len(table_rows(r.stdout)), 2)
        self.assertEqual(sorted(os.listdir(out)), ["eve.json", "fast.log", "perf.json"])

    def test_enabled_from_config_file(self):
        out = run_dir("yaml")
        cfg = os.path.join(out, "sensor.yaml")
        with open(cfg, "w") as f:
            f.write("profiling:\n  rules:\n    enabled: yes\n    limit: 1\n")
        r = sensor("-c", cfg, "-r", PCAP, "-S", RULES, "-l", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(table_rows(r.stdout)), 1)
        self.assertTrue(os.path.isfile(os.path.join(out, "rule_perf.json")))

    def test_off_prints_nothing_and_alerts_match(self):
        off, on = run_dir("off"), run_dir("on")
        a = sensor("-r", PCAP, "-S", RULES, "-l", off, "--workers", "1")
        b = sensor("-r", PCAP, "-S", RULES, "-l", on, "--workers", "1", "--profile-rules")
        self.assertEqual(a.returncode, 0, a.stderr)
        self.assertEqual(b.returncode, 0, b.stderr)
        self.assertNotIn("rule profiling", a.stdout)
        self.assertEqual(sorted(os.listdir(off)), ["eve.json", "fast.log"])
        with open(os.path.join(off, "fast.log")) as f1, open(os.path.join(on, "fast.log")) as f2:
            alerts = f1.read()
            self.assertEqual(alerts, f2.read())
        self.assertGreater(alerts.count("\n"), 0)

    def test_mpm_none_same_alerts(self):
        hs, none = run_dir("hs"), run_dir("none")
        a = sensor("-r", PCAP, "-S", RULES, "-l", hs, "--workers", "1")
        b = sensor("-r", PCAP, "-S", RULES, "-l", none, "--workers", "1",
                   "--set", "detect.mpm-algo=none")
        self.assertEqual(a.returncode, 0, a.stderr)
        self.assertEqual(b.returncode, 0, b.stderr)
        # 5 groups: the TCP groups are compiled apart (they also scan stream data). One
        # database: the any-port TCP group's (sid 101); sid 104's "GET " with depth:4 is a
        # bounded pattern, compared at its place, so the port-80 group has none.
        self.assertIn("\ngroups 5, hyperscan databases 1, rules without fast pattern 2\n",
                      a.stdout)
        self.assertIn("\ngroups 5, hyperscan databases 0, rules without fast pattern 2\n"
                      "  mpm-algo none: no prefilter, every rule of a group is checked on every "
                      "packet\n", b.stdout)
        with open(os.path.join(hs, "fast.log")) as f1, open(os.path.join(none, "fast.log")) as f2:
            hs_log, none_log = f1.read(), f2.read()
        self.assertEqual(none_log, hs_log)
        # Each mode also gives the alerts that the generator's record and the rule text
        # determine (not another run of the engine):
        #   101 content:"ATK-one-xyz": one alert per injected copy (each sits whole in one TCP
        #       segment, and the record's scan found the string in no other frame);
        #   102 udp pcre:"/./s": every UDP datagram (all DNS, never empty; a fragmented one
        #       counts once, as the record's udp does);
        #   103 icmp itype:8: the ICMPv4 echo requests, half of the ICMPv4 packets (echo
        #       sessions are request/reply pairs; ICMPv6 echo is type 128, not 8).
        # Sid 104 (GET to port 80 whose path starts with a lowercase letter) is left out: the
        # record does not say which requests use port 80 or what their paths are.
        rec = RECORD
        self.assertEqual(rec["attack_string_packets"], len(rec["attacks"]))
        self.assertEqual(rec["icmpv4"] % 2, 0)
        want = {101: len(rec["attacks"]), 102: rec["udp"], 103: rec["icmpv4"] // 2}
        for name, log in (("hs", hs_log), ("none", none_log)):
            got = alerts_by_sid(log)
            self.assertEqual({sid: got.get(sid, 0) for sid in want}, want, name)
            self.assertEqual(set(got) - {101, 102, 103, 104}, set(), name)

    def test_check_rules_flags_pcre_without_content(self):
        r = sensor("-T", "-S", RULES)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("\n  1 rule runs a pcre without a content anchor (warnings below)\n",
                      r.stdout)
        self.assertIn("\nwarning: %s:2 sid 102: pcre without content anchor: every packet of "
                      "its port group runs the regex\n" % RULES, r.stdout)
        self.assertTrue(r.stdout.endswith("rules: 4 loaded, 0 skipped\n"), r.stdout)

    def test_bad_mpm_algo_is_a_config_error(self):
        r = sensor("-T", "-S", RULES, "--set", "detect.mpm-algo=ac")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr, "picket-sensor: config error: <defaults>: detect.mpm-algo: "
                                   "expected one of hs, none, got 'ac'\n")


def main():
    global TMP, PCAP, RULES, RECORD
    _, argv = picket_e2e.parse_args()
    with tempfile.TemporaryDirectory(prefix="picket-ruleprof-") as tmp:
        TMP = tmp
        PCAP = os.path.join(tmp, "t.pcap")
        RULES = os.path.join(tmp, "r.rules")
        with open(RULES, "w") as f:
            f.write(RULES_TEXT)
        gen = picket_e2e.trafficgen_bin()
        subprocess.run([gen, "-o", PCAP, "--seed", "5", "--sessions", "200", "--attack",
                        "ATK-one-xyz", "--attack-share", "0.2"], check=True,
                       capture_output=True)
        with open(PCAP + ".json") as f:
            RECORD = json.load(f)
        status = picket_test.run(argv)
    sys.exit(status)


if __name__ == "__main__":
    main()
