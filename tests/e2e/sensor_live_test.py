#!/usr/bin/env python3
"""End-to-end, live capture: a real picket-sensor process on one end of a veth pair inside a
network namespace the test creates (and removes), frames of a generated pcap sent into the
other end with an AF_PACKET socket. Both live backends (afpacket with 2 workers in a fanout
group, libpcap) and both BPF modes; the sensor is stopped with SIGTERM and must write its
final stats. Skipped when not root or when namespaces are unavailable.

Usage: sensor_live_test.py --build BUILD_DIR
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import fleetlib  # noqa: E402 (beside this file)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)
import picket_e2e  # noqa: E402
from picket_e2e import have_netns, sensor_bin, stats_events, trafficgen_bin  # noqa: E402

SENDER = r'''
import socket, struct, sys
path, iface = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
sent = 0
with open(path, "rb") as f:
    f.read(24)
    while True:
        rec = f.read(16)
        if len(rec) < 16:
            break
        _, _, incl, _ = struct.unpack("<IIII", rec)
        s.send(f.read(incl))
        sent += 1
print(sent)
'''


@unittest.skipUnless(have_netns(), "needs root and network namespaces")
class LiveCapture(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-live-")
        cls.pcap = os.path.join(cls.tmp, "live.pcap")
        gen = trafficgen_bin()
        # No VLAN tags (AF_PACKET hands tags over out of band) and no fragments (a veth's
        # MTU is the limit either way): the counts must be exact.
        r = subprocess.run([gen, "-o", cls.pcap, "--seed", "11", "--sessions", "400",
                            "--vlan-share", "0", "--frag-share", "0"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        with open(cls.pcap + ".json") as f:
            cls.rec = json.load(f)
        cls.ns = "picket-live-%d" % os.getpid()
        cls.sh(["ip", "netns", "add", cls.ns])
        cls.sh(["ip", "-n", cls.ns, "link", "add", "pkt-a", "type", "veth", "peer", "name",
                "pkt-b"])
        for cmd in (["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"],
                    ["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"],
                    ["ip", "link", "set", "pkt-a", "up"], ["ip", "link", "set", "pkt-b", "up"],
                    ["ip", "link", "set", "lo", "up"]):
            cls.sh(["ip", "netns", "exec", cls.ns] + cmd)

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["ip", "netns", "del", cls.ns], capture_output=True)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @staticmethod
    def sh(cmd):
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, "%s: %s" % (cmd, r.stderr)

    def run_live(self, capture, workers, bpf_mode):
        logdir = tempfile.mkdtemp(dir=self.tmp)
        eve = os.path.join(logdir, "eve.json")
        sensor = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, sensor_bin(),
             "-i", "pkt-b", "--capture", capture, "--workers", str(workers), "-l", logdir,
             "--set", "stats-interval=0.5", "--set", "capture.bpf-mode=" + bpf_mode,
             "--set", "stats-picket-counters=yes", "tcp"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.time() + 20
            while not stats_events(eve):
                self.assertIsNone(sensor.poll(), sensor.stderr.read() if sensor.poll() else "")
                self.assertLess(time.time(), deadline, "sensor wrote no stats")
                time.sleep(0.1)
            r = subprocess.run(["ip", "netns", "exec", self.ns, sys.executable, "-c", SENDER,
                                self.pcap, "pkt-a"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(int(r.stdout), self.rec["packets"])
            # Wait until the sensor has seen every TCP frame (or give up after 20 s).
            deadline = time.time() + 20
            while time.time() < deadline:
                ev = stats_events(eve)
                if ev and ev[-1]["decoder"]["pkts"] >= self.rec["tcp"]:
                    break
                time.sleep(0.2)
        finally:
            sensor.send_signal(signal.SIGTERM)
            out, err = sensor.communicate(timeout=30)
        self.assertEqual(sensor.returncode, 0, err)
        return stats_events(eve)[-1]

    def check(self, s):
        self.assertEqual(s["decoder"]["pkts"], self.rec["tcp"])
        self.assertEqual(s["decoder"]["tcp"], self.rec["tcp"])
        self.assertEqual(s["flow"]["tcp"], self.rec["flows_tcp"])
        self.assertEqual(s["capture"]["kernel_drops"], 0)

    def test_afpacket_two_workers_kernel_bpf(self):
        s = self.run_live("afpacket", 2, "kernel")
        self.check(s)
        self.assertEqual(s["capture"]["kernel_packets"], self.rec["tcp"])
        per_worker = [w["pkts"] for w in s["rates"]["workers"]]
        self.assertEqual(sum(per_worker), self.rec["tcp"])

    def test_afpacket_user_bpf(self):
        s = self.run_live("afpacket", 2, "user")
        self.check(s)
        self.assertEqual(s["capture"]["bpf_filtered"], self.rec["packets"] - self.rec["tcp"])

    def test_libpcap_live(self):
        s = self.run_live("pcap", 2, "kernel")
        self.check(s)


@unittest.skipUnless(have_netns(), "needs root and network namespaces")
class LiveReload(unittest.TestCase):
    """SIGUSR2 reloads the rules of a running live sensor: alerts follow the new rules at once,
    exactly, and the sensor keeps running."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-hup-")
        cls.pcap = os.path.join(cls.tmp, "attacks.pcap")
        gen = trafficgen_bin()
        r = subprocess.run([gen, "-o", cls.pcap, "--seed", "13", "--sessions", "300",
                            "--vlan-share", "0", "--frag-share", "0", "--attack", "/etc/passwd",
                            "--attack", "cmd.exe", "--attack-share", "0.3"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        with open(cls.pcap + ".json") as f:
            rec = json.load(f)
        cls.passwd = sum(1 for a in rec["attacks"] if a["string"] == "/etc/passwd")
        cls.cmd = sum(1 for a in rec["attacks"] if a["string"] == "cmd.exe")
        cls.ns = "picket-hup-%d" % os.getpid()
        LiveCapture.sh(["ip", "netns", "add", cls.ns])
        LiveCapture.sh(["ip", "-n", cls.ns, "link", "add", "pkt-a", "type", "veth", "peer",
                        "name", "pkt-b"])
        for cmd in (["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"],
                    ["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"],
                    ["ip", "link", "set", "pkt-a", "up"], ["ip", "link", "set", "pkt-b", "up"]):
            LiveCapture.sh(["ip", "netns", "exec", cls.ns] + cmd)

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["ip", "netns", "del", cls.ns], capture_output=True)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def send(self):
        r = subprocess.run(["ip", "netns", "exec", self.ns, sys.executable, "-c", SENDER,
                            self.pcap, "pkt-a"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    def wait_for(self, eve, pred, what):
        deadline = time.time() + 20
        while time.time() < deadline:
            ev = stats_events(eve)
            if ev and pred(ev[-1]):
                return
            time.sleep(0.1)
        self.fail("timed out waiting for " + what)

    def test_sighup_swaps_rules(self):
        rules = os.path.join(self.tmp, "local.rules")
        with open(rules, "w") as f:
            f.write('alert tcp any any -> any any (msg:"passwd"; content:"/etc/passwd"; sid:1;)\n')
        logdir = tempfile.mkdtemp(dir=self.tmp)
        eve = os.path.join(logdir, "eve.json")
        sensor = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, sensor_bin(),
             "-i", "pkt-b", "--workers", "2", "-l", logdir, "-S", rules,
             "--set", "stats-interval=0.3", "--set", "stats-picket-counters=yes", "tcp"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            self.wait_for(eve, lambda s: True, "the first stats event")
            self.send()
            self.wait_for(eve, lambda s: s["detect"]["alert"] >= self.passwd, "phase 1 alerts")
            with open(rules, "w") as f:
                f.write('alert tcp any any -> any any (msg:"cmd"; content:"cmd.exe"; sid:2;)\n')
            sensor.send_signal(signal.SIGUSR2)
            self.wait_for(eve, lambda s: s["detect"]["reloads"] == 1, "the reload")
            self.send()
            self.wait_for(eve, lambda s: s["detect"]["alert"] >= self.passwd + self.cmd,
                          "phase 2 alerts")
        finally:
            sensor.send_signal(signal.SIGTERM)
            out, err = sensor.communicate(timeout=30)
        self.assertEqual(sensor.returncode, 0, err)
        self.assertIn("rules reloaded: rules: 1 loaded, 0 skipped", err)
        self.assertEqual(fleetlib.eve_alerts(eve), {1: self.passwd, 2: self.cmd})
        s = stats_events(eve)[-1]
        self.assertEqual(s["capture"]["kernel_drops"], 0)
        self.assertEqual(s["detect"]["reload_failures"], 0)


if __name__ == "__main__":
    _, argv = picket_e2e.parse_args()
    picket_test.main(argv)
