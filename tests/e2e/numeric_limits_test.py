#!/usr/bin/env python3
"""End-to-end: numeric limits as Suricata 7 parses them (issue #22, docs/rules.md "Numeric
limits") through the real picket-sensor on UDP datagrams built here with pcapcraft.py.

- Values Suricata accepts load and mean what they say, each with a near miss that must not
  alert: a hex TTL (ttl:0x40), a dsize range in hex with blanks, a within beyond 65535 (Suricata
  7 allows up to 1 MiB).
- Values Suricata refuses are skipped with a diagnostic "file:line sid N: reason" naming the
  keyword, the value and the limit, and the good rules beside them still load.

    picket-sensor -r FILE.pcap -S RULES -l OUTDIR -k none

Usage: numeric_limits_test.py --build BUILD_DIR   (or --sensor PATH, or $PICKET_SENSOR)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pcapcraft as pc  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402
import picket_e2e  # noqa: E402

SENSOR = None
CLIENT = "203.0.113.5"
SERVER = "10.0.0.2"

# Line numbers matter: the refused rules' diagnostics name them (a trailing backslash here
# joins two source lines into one rule line).
RULES = """\
alert udp any any -> any 7000 (msg:"ttl in hex"; ttl:0x40; sid:1;)
alert udp any any -> any 7001 (msg:"dsize hex range with blanks"; dsize: 0x10 <> 0x20 ; sid:2;)
alert udp any any -> any 7002 (msg:"within beyond 65535"; content:"AAAA"; \
content:"BBBB"; distance:0; within:70000; sid:3;)
alert udp any any -> any 7000 (msg:"ttl above 8 bits"; ttl:256; sid:10;)
alert udp any any -> any 7002 (msg:"distance beyond 1 MiB"; content:"AAAA"; \
content:"BBBB"; distance:1048577; sid:11;)
alert udp any any -> any 7001 (msg:"dsize that always matches"; dsize:>=0; sid:12;)
alert udp any any -> any 7000 (msg:"a Suricata 8 bitmask"; ttl:&0xc0=0x40; sid:13;)
alert udp any any -> any 7001 (msg:"dsize above 16 bits"; dsize:65536; sid:14;)
"""

GRAMMAR_255 = "(expected N, !N, <N, <=N, >N, >=N, N-M, N<>M or !N-M with N from 0 to 255)"
REFUSED = {
    10: (4, "ttl: value out of range 0-255 in '256'"),
    11: (5, "distance: invalid value '1048577' (a number in [-1048576, 1048576] or a "
            "byte_extract variable)"),
    12: (6, "dsize: '>=0' always matches (values are 0-65535)"),
    13: (7, "ttl: invalid value '&0xc0=0x40' " + GRAMMAR_255),
    14: (8, "dsize: value out of range 0-65535 in '65536'"),
}


def datagram(w, sport, dport, payload, ttl=64):
    l4 = pc.udp_datagram(CLIENT, SERVER, sport, dport, payload)
    et, l3 = pc.ip_packet(CLIENT, SERVER, pc.PROTO_UDP, l4, ttl=ttl)
    w.add(pc.ethernet(et, l3))


def build_pcap():
    """Each datagram has its own source port; the near misses are the odd ones."""
    w = pc.PcapWriter()
    datagram(w, 5000, 7000, b"ttl", ttl=64)
    datagram(w, 5001, 7000, b"ttl", ttl=63)
    datagram(w, 5100, 7001, b"d" * 17)
    datagram(w, 5101, 7001, b"d" * 16)  # the range is exclusive
    datagram(w, 5103, 7001, b"d" * 32)
    datagram(w, 5200, 7002, b"AAAA" + b"z" * 3000 + b"BBBB")
    datagram(w, 5201, 7002, b"AAAA" + b"z" * 3000)
    return w


class NumericLimitsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-limits-")
        pcap = os.path.join(cls.tmp, "limits.pcap")
        build_pcap().save(pcap)
        cls.rules_path = os.path.join(cls.tmp, "limits.rules")
        with open(cls.rules_path, "w") as f:
            f.write(RULES)
        logdir = os.path.join(cls.tmp, "log")
        os.makedirs(logdir)
        cls.proc = subprocess.run(
            [SENSOR, "-r", pcap, "-S", cls.rules_path, "-l", logdir, "-k", "none"],
            capture_output=True, text=True, timeout=120)
        cls.alerts = []
        eve = os.path.join(logdir, "eve.json")
        if os.path.exists(eve):
            with open(eve) as f:
                for line in f:
                    ev = json.loads(line)
                    if ev.get("event_type") == "alert":
                        cls.alerts.append((ev["alert"]["signature_id"], ev["src_port"]))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_runs_ok(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)

    def test_accepted_values_mean_what_they_say(self):
        self.assertEqual(sorted(self.alerts), [(1, 5000), (2, 5100), (3, 5200)])

    def test_refused_values_name_keyword_value_and_limit(self):
        lines = [l for l in self.proc.stderr.splitlines() if " sid " in l]
        want = ["%s:%d sid %d: %s" % (self.rules_path, line, sid, reason)
                for sid, (line, reason) in sorted(REFUSED.items())]
        self.assertEqual(lines, want, self.proc.stderr)

    def test_summary_counts_the_loaded_rules(self):
        self.assertIn("rules: 3 loaded, 5 skipped", self.proc.stdout)


if __name__ == "__main__":
    SENSOR, argv = picket_e2e.sensor_from_args()
    picket_test.main(argv)
