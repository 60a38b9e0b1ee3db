#!/usr/bin/env python3
"""Sensors with several manager addresses, end to end on loopback (issue #26): real
picket-manager processes (each with its own SQLite database, --metrics-listen), a real
picket-sensor replaying generated traffic in a loop (--pcap-loop 0, paced) so that it keeps
reporting every second, and picketctl.

- failover: one sensor with `--manager A,B`; its name hashes to A. kill -9 A: within 10 s the
  sensor is connected to B (picketctl against B), the same process (PID, counters not back to
  zero), and B's stored run totals equal the sensor's own counters exactly (B had none of its
  reports: the sensor resent them all from seq 1, each once).
- reconnect: one sensor on one manager; kill -9 the manager and start it again on the same
  database: the sensor resends only what the store had not committed, so the stored run totals
  equal the sensor's counters exactly and the manager counts no duplicate.

Prints "FAILOVER seconds=..." per run (docs/fleet.md quotes min/median/max of several).
Usage: failover_test.py --build BUILD_DIR
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleetlib  # noqa: E402
from fleetlib import binary, picketctl_bin  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)

# FNV-1a 64 of the name mod 2 (sensor/agent first_choice): "s2" -> 0, the first address.
SENSOR = "s2"
RULES = ('alert tcp any any -> any any (msg:"passwd"; content:"/etc/passwd"; sid:1001; '
         'rev:1;)\n')


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def metric(text, name):
    """The value of an unlabelled series (or the sum of a family's series)."""
    total = None
    for line in text.splitlines():
        m = re.match(r"^%s(\{[^}]*\})? (\S+)$" % re.escape(name), line)
        if m:
            total = (total or 0) + float(m.group(2))
    return total


class Failover(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="picket-failover-")
        self.procs = []
        self.pcap = os.path.join(self.tmp, "traffic.pcap")
        fleetlib.trafficgen(self.pcap, "--seed", "7", "--sessions", "200", "--attack",
                            "/etc/passwd", "--attack-share", "0.2")
        self.rules = os.path.join(self.tmp, "local.rules")
        with open(self.rules, "w") as f:
            f.write(RULES)

    def tearDown(self):
        fleetlib.stop_all(self.procs)
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ---- processes

    def start(self, args):
        log_path = os.path.join(self.tmp, "proc-%d.log" % len(self.procs))
        with open(log_path, "w") as log:
            p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log)
        p.log_path = log_path
        self.procs.append(p)
        return p

    def wait_line(self, proc, pattern, timeout=30):
        deadline = time.time() + timeout
        rx = re.compile(pattern)
        text = ""
        while time.time() < deadline:
            with open(proc.log_path) as f:
                text = f.read()
            m = rx.search(text)
            if m:
                return m
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError("no line matching %r; got:\n%s" % (pattern, text))

    def start_manager(self, port, db):
        p = self.start([binary("manager", "picket-manager"), "--listen", "127.0.0.1:%d" % port,
                        "--db", os.path.join(self.tmp, db), "--insecure", "--metrics-listen",
                        "127.0.0.1:0"])
        self.wait_line(p, r"serving on .* \(port %d\)" % port)
        p.metrics_url = self.wait_line(p, r"metrics on (http://\S+)").group(1)
        p.addr = "127.0.0.1:%d" % port
        return p

    def start_sensor(self, name, managers):
        d = os.path.join(self.tmp, name)
        os.makedirs(d, exist_ok=True)
        port = free_port()
        p = self.start([binary("sensor", "picket-sensor"), "-r", self.pcap, "--pcap-loop", "0",
                        "--pcap-rate", "2000", "--manager", ",".join(managers), "--insecure",
                        "--metrics-interval", "1", "--name", name, "--state-dir", d, "-l", d,
                        "-S", self.rules, "--metrics-listen", "127.0.0.1:%d" % port])
        p.metrics_url = "http://127.0.0.1:%d/metrics" % port
        return p

    # ---- what the operator sees

    def ctl(self, manager, *args):
        r = subprocess.run([picketctl_bin(), "--manager", manager.addr, "--insecure", "--json"] +
                           list(args), capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, "%s: %s %s" % (args, r.stdout, r.stderr))
        return json.loads(r.stdout)

    def connected(self, manager, name):
        r = subprocess.run([picketctl_bin(), "--manager", manager.addr, "--insecure", "--json",
                            "sensors"], capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            return False
        out = json.loads(r.stdout)
        entries = out.get("sensors", []) if isinstance(out, dict) else out
        return any(s["name"] == name and s["connected"] for s in entries)

    def stored_totals(self, manager, name):
        runs = self.ctl(manager, "history", "--sensor", name)["runs"]
        return tuple(sum(r[k] for r in runs) for k in ("packets", "bytes", "alerts"))

    def reported(self, manager, name):
        c = self.ctl(manager, "sensor", "show", name)["counters"]
        return tuple(c.get(k, 0) for k in ("decoder.pkts", "decoder.bytes", "detect.alert"))

    def sensor_packets(self, sensor):
        return metric(http_get(sensor.metrics_url), "picket_sensor_packets_total") or 0

    def duplicates(self, manager):
        return metric(http_get(manager.metrics_url), "picket_manager_reports_duplicate_total")

    def poll(self, fn, what, seconds=30, every=0.1):
        deadline = time.time() + seconds
        last = None
        while time.time() < deadline:
            try:
                last = fn()
            except (AssertionError, OSError, ValueError, KeyError) as e:
                last = e
            else:
                if last:
                    return last
            time.sleep(every)
        self.fail("timed out waiting for %s (last: %r)" % (what, last))

    def assert_totals_exact(self, manager, name):
        """Stored run totals == the counters of the latest report (the sensor's own), once the
        writer has committed it: a lost report leaves them below, a doubled one above, for
        good."""
        def same():
            stored = self.stored_totals(manager, name)
            reported = self.reported(manager, name)
            return (stored, reported) if stored == reported and stored[0] > 0 else None
        stored, reported = self.poll(same, "stored run totals equal to the reported counters",
                                     seconds=20)
        return stored

    # ---- tests

    def test_failover_to_the_other_manager(self):
        a = self.start_manager(free_port(), "a.db")
        b = self.start_manager(free_port(), "b.db")
        sensor = self.start_sensor(SENSOR, [a.addr, b.addr])
        self.poll(lambda: self.connected(a, SENSOR), "the sensor on A (its first choice)")
        self.assertFalse(self.connected(b, SENSOR))
        self.poll(lambda: self.stored_totals(a, SENSOR)[0] >= 1000, "reports stored on A")
        before = self.sensor_packets(sensor)
        self.assertGreater(before, 0)

        a.send_signal(signal.SIGKILL)
        killed = time.time()
        a.wait()
        self.poll(lambda: self.connected(b, SENSOR), "the sensor on B", seconds=10, every=0.05)
        took = time.time() - killed
        print("FAILOVER seconds=%.2f" % took, flush=True)
        self.assertLess(took, 10)

        # The same process, inspecting all along: its counters did not start again.
        self.assertIsNone(sensor.poll())
        with open("/proc/%d/stat" % sensor.pid) as f:
            self.assertIn("picket-sensor", f.read())
        self.assertGreaterEqual(self.sensor_packets(sensor), before)
        # B stored every report of this process from seq 1 (resent from the sensor's ring),
        # each once: its totals are the sensor's counters exactly, and include what A saw.
        self.poll(lambda: self.reported(b, SENSOR)[0] >= before,
                  "B to have the reports taken after the kill", seconds=20)
        stored = self.assert_totals_exact(b, SENSOR)
        self.assertGreaterEqual(stored[0], before)
        self.assertEqual(self.duplicates(b), 0)
        with open(sensor.log_path) as f:
            log = f.read()
        self.assertIn("connected to manager %s" % b.addr, log)

    def test_reconnect_to_the_same_manager_counts_each_report_once(self):
        port = free_port()
        m = self.start_manager(port, "m.db")
        sensor = self.start_sensor("r1", [m.addr])
        self.poll(lambda: self.connected(m, "r1"), "the sensor connected")
        self.poll(lambda: self.stored_totals(m, "r1")[0] >= 1000, "reports stored")

        m.send_signal(signal.SIGKILL)
        m.wait()
        time.sleep(1.5)  # a report or two while no manager listens
        m = self.start_manager(port, "m.db")
        self.poll(lambda: self.connected(m, "r1"), "the sensor connected again", seconds=40)
        # Some reports after the reconnect, then the exact comparison.
        reported = self.reported(m, "r1")
        self.poll(lambda: self.reported(m, "r1")[0] > reported[0], "a report after reconnect")
        self.assert_totals_exact(m, "r1")
        self.assertEqual(self.duplicates(m), 0)
        self.assertIsNone(sensor.poll())
        with open(sensor.log_path) as f:
            log = f.read()
        self.assertRegex(log, r"it stored reports up to seq [1-9]")


if __name__ == "__main__":
    paths, argv = fleetlib.parse_args()
    picket_test.main(argv)
