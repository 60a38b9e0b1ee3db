#!/usr/bin/env python3
"""End-to-end: logrotate rotates eve.json under traffic, with the shipped configuration.

A real picket-sensor replays a generated pcap in a loop (a live-like source: flows end and
their http, dns, tls and flow records keep coming) while the real logrotate rotates its log
directory twice with deploy/logrotate/picket-sensor (paths pointed at the test's directory,
postrotate sending SIGHUP to this sensor). Checks: every line of every file (rotated,
compressed and current) is one whole JSON object; after each SIGHUP the sensor closes the old
file (no descriptor of it in /proc/PID/fd) and writes to the new one; and no record is lost:
the lines of each type over all files equal the sensor's own count of records written
(eve.records.<type> in its last stats record), with none dropped.

Usage: eve_rotation_test.py --build BUILD_DIR
"""
import collections
import glob
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402
import picket_e2e  # noqa: E402
from picket_e2e import poll, sensor_bin, trafficgen_bin  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHIPPED = os.path.join(ROOT, "deploy", "logrotate", "picket-sensor")
LOGROTATE = shutil.which("logrotate") or "/usr/sbin/logrotate"


def test_config(text, logdir, pid):
    """The shipped configuration, for this test: its log directory and its sensor's PID."""
    text = re.sub(r"^/var/log/picket/\S+ /var/log/picket/\S+ \{",
                  "%s/eve.json %s/fast.log {" % (logdir, logdir), text, flags=re.M)
    text = re.sub(r"^\s*create .*$", "", text, flags=re.M)  # the test's files stay its own
    text = re.sub(r"(postrotate\n)\s*.*\n", r"\1        /bin/kill -HUP %d\n" % pid, text)
    return text


def read_lines(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return f.read().split("\n")


def open_files(pid):
    out = set()
    for fd in glob.glob("/proc/%d/fd/*" % pid):
        try:
            out.add(os.readlink(fd))
        except OSError:
            pass
    return out


@unittest.skipUnless(os.path.exists(LOGROTATE), "logrotate not installed")
class EveRotation(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="picket-rotate-")
        self.logdir = os.path.join(self.tmp, "log")
        os.mkdir(self.logdir)
        self.pcap = os.path.join(self.tmp, "gen.pcap")
        r = subprocess.run([trafficgen_bin(), "-o", self.pcap, "--seed", "11", "--sessions",
                            "400"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.proc = None

    def tearDown(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def eve_lines(self):
        try:
            return len(read_lines(os.path.join(self.logdir, "eve.json"))) - 1
        except FileNotFoundError:
            return 0

    def rotate(self, conf, state):
        r = subprocess.run([LOGROTATE, "-f", "-s", state, conf], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        rotated = os.path.realpath(os.path.join(self.logdir, "eve.json.1"))
        self.assertTrue(os.path.exists(rotated), os.listdir(self.logdir))
        # The sensor lets go of the rotated file and writes a new eve.json.
        poll(lambda: rotated not in open_files(self.proc.pid), "old eve.json closed", 10)
        poll(lambda: self.eve_lines() > 0, "new eve.json written", 20)

    def test_rotation_under_traffic_loses_and_splits_nothing(self):
        self.proc = subprocess.Popen(
            [sensor_bin(), "-r", self.pcap, "--pcap-loop", "0", "--pcap-rate", "20000",
             "-l", self.logdir, "-k", "none", "--set", "stats-interval=1",
             "--set", "stats-picket-counters=yes"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        poll(lambda: self.eve_lines() > 200, "records in eve.json", 30)
        with open(SHIPPED) as f:
            shipped = f.read()
        conf = os.path.join(self.tmp, "logrotate.conf")
        with open(conf, "w") as f:
            f.write(test_config(shipped, self.logdir, self.proc.pid))
        state = os.path.join(self.tmp, "logrotate.state")
        self.rotate(conf, state)
        poll(lambda: self.eve_lines() > 200, "records after the first rotation", 30)
        self.rotate(conf, state)  # eve.json.1 -> eve.json.2.gz (delaycompress)
        time.sleep(1)
        self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=60)
        self.assertEqual(self.proc.returncode, 0, err)

        files = sorted(glob.glob(os.path.join(self.logdir, "eve.json*")))
        self.assertEqual([os.path.basename(f) for f in files],
                         ["eve.json", "eve.json.1", "eve.json.2.gz"])
        per_type = collections.Counter()
        last_stats = None
        for path in reversed(files):  # oldest first
            lines = read_lines(path)
            self.assertEqual(lines[-1], "", path + ": does not end with a newline")
            self.assertGreater(len(lines), 1, path + ": empty")
            for n, line in enumerate(lines[:-1], 1):
                try:
                    ev = json.loads(line)
                except ValueError as e:
                    self.fail("%s line %d is not one JSON object (%s): %.200s" %
                              (path, n, e, line))
                per_type[ev["event_type"]] += 1
                if ev["event_type"] == "stats":
                    last_stats = ev["stats"]
        self.assertIsNotNone(last_stats)
        written = last_stats["eve"]["records"]
        dropped = last_stats["eve"]["dropped"]
        for t in ("flow", "http", "dns", "tls"):
            self.assertGreater(per_type[t], 0, "no %s record" % t)
        for t, n in written.items():
            self.assertEqual(per_type[t], n, "%s: lines over all files vs written" % t)
            self.assertEqual(dropped[t], 0, "%s records dropped" % t)


if __name__ == "__main__":
    _, argv = picket_e2e.parse_args()
    picket_test.main(argv)
