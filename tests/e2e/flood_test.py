#!/usr/bin/env python3
"""End-to-end: picket-sensor under floods keeps its memory within the memcaps, still alerts on
the legitimate attack traffic mixed into the flood, and counts everything it sheds by reason.

CI-sized version of bench/floods (README there): the same generator (floodgen.py, --scale ci)
and checks (floodrun.py), five floods scaled down about tenfold, with the memcaps scaled down
with them so that every limit is reached:

    picket-sensor -c deploy/sensor.yaml -r FLOOD.pcap -S local.rules -l DIR
        --set stats-interval=1 --set flow.memcap=16mb --set stream.memcap=8mb
        --set stream.reassembly.memcap=32mb --set defrag.memcap=4mb --set app-layer.memcap=8mb
        [variant --set ...]

- syn:  200,000 SYNs from random sources; flow table in emergency mode, flows evicted, half-open
        sessions reclaimed at the stream memcap.
- frag: fragments that never complete, overlaps, duplicates (IPv4 and IPv6); oldest datagrams
        evicted at the defrag memcap, idle ones timed out.
- tiny: 1-byte out-of-order TCP segments behind a hole never filled; segment memcap drops.
- http: 1,000,000-byte header lines, 100,000 header fields, gzip / nested gzip / deflate bombs;
        the http-bomb variant raises the body limits so that the decompression limit stops the
        bombs.
- dns:  compression pointer loops, self and forward pointers, chains past the jump limit,
        oversized labels and names, over UDP and TCP; the least recently used flows' app state
        evicted at the app-layer memcap.

Rules: the local rules of the legitimate traffic (bench/floods/floodlib.py LOCAL_RULES; no
/work/shared needed). Each flood must raise exactly the alerts its legitimate sessions call
for, and none on the flood itself. Peak RSS (wait4) must stay within the baseline (the
legitimate traffic alone) + the memcaps + the stated overhead; the memcap gauges within their
memcaps; every flow accounted for.

Usage: flood_test.py --build BUILD_DIR   (or --sensor PATH)
"""
import os
import shutil
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "..", "bench", "floods"))
import floodgen  # noqa: E402
import floodrun as fr  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)
import picket_e2e  # noqa: E402

SENSOR = None
# Checks that show a sensor bug: asserted in their own test, run as an expected failure until
# the engine is fixed (as in stream_applayer_test.py). Key: "flood:check"; value: the reason.
# (The DNS flood's peak RSS was one, ~5 KB of app state per UDP DNS flow under no memcap,
# until app-layer.memcap: sensor/applayer/README.md.)
KNOWN_ENGINE_BUGS = {}
known_bug = picket_e2e.known_bugs(KNOWN_ENGINE_BUGS)


# The memcaps, scaled down with the floods (stated in the docstring above).
CI_SETS = ["flow.memcap=16mb", "stream.memcap=8mb", "stream.reassembly.memcap=32mb",
           "defrag.memcap=4mb", "app-layer.memcap=8mb"]


class FloodTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-flood-")
        cls.caps, cls.limits = fr.memcaps(sets=CI_SETS)
        cls.rules, _, _ = fr.rules_file(cls.tmp, use_et_open=False)
        benign = floodgen.write("benign", os.path.join(cls.tmp, "benign.pcap"), "ci")
        cls.baseline = fr.run_sensor(SENSOR, benign["pcap"], cls.rules, None,
                                     os.path.join(cls.tmp, "log-benign"), sets=CI_SETS,
                                     timeout=120)
        assert cls.baseline.rc == 0, cls.baseline.stderr
        cls.workers = fr.workers_of(cls.baseline)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    runs = {}   # name -> (run, checks)
    pcaps = {}  # kind -> manifest

    def flood(self, kind, variant=None):
        """Runs the flood once (cached per class) and asserts every check but the known bugs;
        returns (run, checks)."""
        name = variant or kind
        if name in self.runs:
            return self.runs[name]
        t0 = time.time()
        if kind not in self.pcaps:
            self.pcaps[kind] = floodgen.write(kind, os.path.join(self.tmp, kind + ".pcap"), "ci")
        man = self.pcaps[kind]
        sets = CI_SETS + (fr.VARIANTS[variant][1] if variant else [])
        run = fr.run_sensor(SENSOR, man["pcap"], self.rules, None,
                            os.path.join(self.tmp, "log-" + name), sets=sets, timeout=120)
        want = {int(k): v for k, v in man["want_local"].items() if v}
        ok, checks = fr.check(name, run, None, self.baseline, self.caps, self.limits,
                              self.workers, want=want)
        report = "\n".join("  %-48s %s  %s" % (n, "ok  " if c else "FAIL", d)
                           for n, c, d in checks)
        print("%s: %d packets, %.1f s (sensor %.1f s, peak RSS %d MB)\n%s" % (
            name, man["packets"], time.time() - t0, run.wall_sec, run.maxrss_kb >> 10, report),
            file=sys.stderr)
        self.runs[name] = (run, checks)
        failed = [n for n, c, _ in checks
                  if not c and "%s:%s" % (name, n) not in KNOWN_ENGINE_BUGS]
        self.assertEqual(failed, [], "%s:\n%s\nstderr: %s" % (name, report, run.stderr[-2000:]))
        # The flood itself matches none of the local rules.
        self.assertEqual(run.flood_alerts(), {})
        return run, checks

    def check_passes(self, name, check):
        _, checks = self.runs[name]
        self.assertEqual([c for n, c, _ in checks if n == check], [True], check)

    def test_syn_flood(self):
        run, _ = self.flood("syn")
        self.assertEqual(run.stat("tcp.ssn_memcap_drop"), 0)  # reclaimed instead

    def test_fragment_flood(self):
        self.flood("frag")

    def test_tiny_segment_flood(self):
        self.flood("tiny")

    def test_http_huge_headers_and_bombs(self):
        self.flood("http")

    def test_http_bombs_past_the_decompression_limit(self):
        self.flood("http", "http-bomb")

    def test_dns_compression_loops(self):
        self.flood("dns")

    @known_bug("dns:peak RSS (anon)")
    def test_dns_flood_memory_within_memcaps(self):
        self.flood("dns")
        self.check_passes("dns", "peak RSS (anon)")


def main():
    global SENSOR
    SENSOR, argv = picket_e2e.sensor_from_args()
    return picket_test.run(argv)


if __name__ == "__main__":
    sys.exit(main())
