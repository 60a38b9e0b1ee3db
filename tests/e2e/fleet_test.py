#!/usr/bin/env python3
"""End-to-end fleet: a real picket-manager, three real picket-sensor processes capturing live
on a veth pair, and picketctl, all inside one network namespace the test creates (the manager
listens on that namespace's loopback). Push a bundle, deploy it to all, check every sensor
alerts exactly on the injected attacks; a broken bundle is rejected by every sensor and the
old rules keep alerting; a new bundle, then rollback restores the previous alerts; a bundle with
a Snort 3 rules file and config.yaml rule-syntax alerts on its Snort 3 rule.

Usage: fleet_test.py --build BUILD_DIR
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fleetlib  # noqa: E402
from fleetlib import binary, eve_alerts, live_sensor_cmd  # noqa: E402
from picket_e2e import have_netns, stats_events  # noqa: E402  (on sys.path via fleetlib)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)

PORT = 47411


@unittest.skipUnless(have_netns(), "needs root and network namespaces")
class Fleet(fleetlib.FleetCase, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-fleet-")
        cls.ns = "picket-fleet-%d" % os.getpid()
        cls.procs = []
        cls.pcap = os.path.join(cls.tmp, "attacks.pcap")
        cls.passwd, cls.cmd = fleetlib.attack_pcap(cls.pcap, 200)
        for cmd in (["ip", "netns", "add", cls.ns],
                    ["ip", "-n", cls.ns, "link", "add", "pkt-a", "type", "veth", "peer", "name",
                     "pkt-b"]):
            subprocess.run(cmd, check=True)
        for cmd in (["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"],
                    ["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"],
                    ["ip", "link", "set", "lo", "up"], ["ip", "link", "set", "pkt-a", "up"],
                    ["ip", "link", "set", "pkt-b", "up"]):
            subprocess.run(["ip", "netns", "exec", cls.ns] + cmd, check=True)
        cls.addr = "127.0.0.1:%d" % PORT
        cls.ctl_flags = ["--manager", cls.addr, "--insecure"]
        cls.start_manager()
        cls.sensors = fleetlib.sensor_logdirs(cls.tmp, ("s1", "s2", "s3"))
        for name, eve in cls.sensors.items():
            cls.start(cls.sensor_cmd(name, os.path.dirname(eve)))

    @classmethod
    def start(cls, args):
        p = subprocess.Popen(fleetlib.netns(cls.ns) + args, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        cls.procs.append(p)
        return p

    @classmethod
    def start_manager(cls):
        cls.manager = cls.start([binary("manager", "picket-manager"), "--listen", cls.addr,
                                 "--db", os.path.join(cls.tmp, "fleet.db"), "--insecure"])
        fleetlib.wait_listening(cls.ns, [PORT], 20)

    @classmethod
    def sensor_cmd(cls, name, logdir, state_dir=None):
        return live_sensor_cmd(name, logdir, cls.addr, ["--insecure"],
                               state_dir or os.path.join(logdir, "state"))

    @classmethod
    def tearDownClass(cls):
        fleetlib.stop_all(cls.procs)
        subprocess.run(["ip", "netns", "del", cls.ns], capture_output=True)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def bundle(self, name, rules, *flags):
        d = fleetlib.write_bundle(os.path.join(self.tmp, "bundle-" + name), rules)
        return self.ctl("bundle", "push", d, "--name", name, "-m", "test " + name,
                        *flags)["version"]

    def wait_alerts(self, want):
        deadline = time.time() + 30
        while time.time() < deadline:
            got = {n: eve_alerts(e) for n, e in self.sensors.items()}
            if all(got[n] == want for n in got):
                return
            time.sleep(0.2)
        self.assertEqual(got, {n: want for n in self.sensors})

    def test_fleet(self):
        deadline = time.time() + 30
        while True:
            sensors = self.ctl("sensors")
            if len([s for s in sensors if s["connected"]]) == 3 or time.time() > deadline:
                break
            time.sleep(0.2)
        self.assertEqual(sorted(s["name"] for s in sensors if s["connected"]), ["s1", "s2", "s3"])

        v1 = self.bundle("passwd", 'alert tcp any any -> any any (msg:"passwd"; '
                                   'content:"/etc/passwd"; sid:1;)\n')
        d = self.ctl("deploy", str(v1), "--to", "all", "--wait")
        self.assertEqual(sorted((t["sensor"], t["state"]) for t in d["targets"]),
                         [("s1", "applied"), ("s2", "applied"), ("s3", "applied")])
        self.send()
        self.wait_alerts({1: self.passwd})

        # Broken bundle: the manager refuses it (none of its rules loads with the sensor's
        # parser), naming the rule; pushed anyway (--force), every sensor rejects it with its
        # error and the old rules keep alerting.
        broken = 'alert tcp any any -> any any (msg:"x"; lua:a.lua; sid:9;)\n'
        d = fleetlib.write_bundle(os.path.join(self.tmp, "bundle-refused"), broken)
        r = self.ctl_raw("bundle", "push", d, "--name", "broken")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("none of its 1 enabled rules loads", r.stderr)
        self.assertIn("rules/local.rules:1 sid 9: ", r.stderr)
        v2 = self.bundle("broken", broken, "--force")
        d = self.ctl("deploy", str(v2), "--to", "all", "--wait", expect=1)
        for t in d["targets"]:
            self.assertEqual(t["state"], "rejected", t)
            self.assertTrue(t["error"], t)
        self.send()
        self.wait_alerts({1: 2 * self.passwd})

        # A new bundle, then rollback to the previous one.
        v3 = self.bundle("cmd", 'alert tcp any any -> any any (msg:"cmd"; content:"cmd.exe"; '
                                'sid:2;)\n')
        self.ctl("deploy", str(v3), "--to", "all", "--wait")
        self.send()
        self.wait_alerts({1: 2 * self.passwd, 2: self.cmd})
        d = self.ctl("rollback", "--to", "all", "--wait")
        self.assertEqual(sorted((t["sensor"], t["version"]) for t in d["targets"]),
                         [("s1", v1), ("s2", v1), ("s3", v1)])
        self.send()
        self.wait_alerts({1: 3 * self.passwd, 2: self.cmd})
        self.__class__.v1 = v1

    def connected(self):
        return sorted(s["name"] for s in self.ctl("sensors") if s["connected"])

    def wait_connected(self, names):
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if self.connected() == names:
                    return
            except AssertionError:
                pass  # the manager is still starting
            time.sleep(0.3)
        self.assertEqual(self.connected(), names)

    def poll(self, fn, what, seconds=40):
        return fleetlib.poll(fn, what, seconds)

    def test_s_snort3_bundle(self):
        """After test_fleet (all on v1): a bundle with a Snort 3 rules file forced by its
        config.yaml rule-syntax next to a Suricata file; a rule-syntax key naming no file is
        refused at push and nothing is stored; every sensor alerts on the Snort 3 rule. Leaves
        every sensor on v1 again for the tests after it."""
        v1 = self.__class__.v1
        d = os.path.join(self.tmp, "bundle-snort3")
        os.makedirs(os.path.join(d, "rules", "talos"))
        with open(os.path.join(d, "rules", "talos", "snort3.rules"), "w") as f:
            # A Snort 3 comma option: only the Snort 3 front-end reads it.
            f.write('alert tcp any any -> any any (msg:"s3 cmd"; content:"CMD.EXE",nocase; '
                    'sid:5; rev:1;)\n')
        with open(os.path.join(d, "rules", "local.rules"), "w") as f:
            f.write('alert tcp any any -> any any (msg:"passwd"; content:"/etc/passwd"; '
                    'sid:1;)\n')
        config = os.path.join(d, "config.yaml")
        with open(config, "w") as f:
            f.write("rule-syntax:\n  rules/talos/: snort3\n  rules/x.rules: suricata\n")
        bundles = len(self.ctl("bundle", "list"))
        r = self.ctl_raw("bundle", "push", d, "--name", "snort3")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn('config.yaml: rule-syntax: "rules/x.rules": no such rule file in the '
                      'bundle', r.stderr)
        self.assertEqual(len(self.ctl("bundle", "list")), bundles)

        with open(config, "w") as f:
            f.write("rule-syntax:\n  rules/talos/: snort3\n  rules/local.rules: suricata\n")
        v5 = self.ctl("bundle", "push", d, "--name", "snort3", "-m", "test snort3")["version"]
        dep = self.ctl("deploy", str(v5), "--to", "all", "--wait")
        self.assertEqual(sorted((t["sensor"], t["state"]) for t in dep["targets"]),
                         [("s1", "applied"), ("s2", "applied"), ("s3", "applied")])
        self.send()
        self.wait_alerts({1: 4 * self.passwd, 2: self.cmd, 5: self.cmd})
        self.ctl("deploy", str(v1), "--to", "all", "--wait")

    def test_y_canary_gate_fails_and_rolls_back(self):
        """After test_fleet (all on v1): a canary whose alert rate breaks the health gate
        during its soak is rolled back automatically; the other sensors never get it."""
        v1 = self.__class__.v1
        v4 = self.bundle("noisy", 'alert tcp any any -> any any (msg:"noisy"; '
                                  'content:"cmd.exe"; sid:4;)\n')
        d = self.ctl("deploy", str(v4), "--to", "all", "--canary", "30", "--soak", "4",
                     "--max-alert-rate", "0.5")
        dep = str(d["deployment"])
        show = self.poll(lambda: (lambda x: x if any(t["state"] == "applied"
                                                     for t in x["targets"]) else None)(
                             self.ctl("deployment", "show", dep)), "a canary to apply")
        canaries = [t["sensor"] for t in show["targets"] if t["state"] == "applied"]
        self.assertEqual(len(canaries), 1)  # 30% of 3 sensors, rounded up
        self.send()  # the canary alerts on every cmd.exe: far above 0.5 alerts/s
        show = self.poll(lambda: (lambda x: x if x["state"] in ("rolled_back", "failed",
                                                                "succeeded") else None)(
                             self.ctl("deployment", "show", dep)), "the gate to decide")
        self.assertEqual(show["state"], "rolled_back", show)
        self.poll(lambda: sorted((s["name"], s["version"]) for s in self.ctl("sensors")) ==
                  [("s1", v1), ("s2", v1), ("s3", v1)], "the canary back on v1")
        for name, eve in self.sensors.items():
            if name not in canaries:
                self.assertNotIn(4, eve_alerts(eve), name)

    def test_z_restarts(self):
        """After test_fleet: manager kill -9 and restart, then a sensor restart while the
        manager is down."""
        v1 = self.__class__.v1
        # kill -9: history intact, sensors reconnect by themselves.
        bundles = len(self.ctl("bundle", "list"))
        history = self.ctl("history")
        self.manager.send_signal(signal.SIGKILL)
        self.manager.wait(timeout=20)
        self.start_manager()
        self.wait_connected(["s1", "s2", "s3"])
        self.assertEqual(len(self.ctl("bundle", "list")), bundles)
        after = self.ctl("history")
        self.assertEqual([d["deployment"] for d in after["deployments"]],
                         [d["deployment"] for d in history["deployments"]])
        runs_after = {(r["sensor"], r["version"], r["started_at"]) for r in after["runs"]}
        for r in history["runs"]:
            self.assertIn((r["sensor"], r["version"], r["started_at"]), runs_after)
        self.assertGreaterEqual(len(history["deployments"]), 5)
        self.assertEqual(sorted((s["name"], s["version"]) for s in self.ctl("sensors")),
                         [("s1", v1), ("s2", v1), ("s3", v1)])

        # The manager down, s3 restarts: it runs its last good bundle (v1) on its own.
        self.manager.send_signal(signal.SIGTERM)
        self.manager.wait(timeout=20)
        s3 = [p for p in self.procs if "s3" in p.args][0]
        s3.send_signal(signal.SIGTERM)
        s3.communicate(timeout=20)
        logdir = os.path.join(self.tmp, "s3-again")
        os.makedirs(logdir)
        self.start(self.sensor_cmd("s3", logdir, os.path.join(self.tmp, "s3", "state")))
        eve = os.path.join(logdir, "eve.json")
        deadline = time.time() + 20
        while not stats_events(eve) and time.time() < deadline:
            time.sleep(0.1)
        self.send()
        deadline = time.time() + 20
        while eve_alerts(eve) != {1: self.passwd} and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(eve_alerts(eve), {1: self.passwd})
        # The manager comes back: s3 reconnects and reports the bundle it runs.
        self.start_manager()
        self.wait_connected(["s1", "s2", "s3"])
        self.assertEqual([s["version"] for s in self.ctl("sensors") if s["name"] == "s3"], [v1])


if __name__ == "__main__":
    _, argv = fleetlib.parse_args()
    picket_test.main(argv)
