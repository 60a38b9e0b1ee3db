#!/usr/bin/env python3
"""Several picket-manager replicas on one PostgreSQL database, end to end on loopback (issue
#26): a real PostgreSQL 15 server of the test's own (tests/support pg_test_server), three real
managers on one database (--replica-name, --metrics-listen), real sensors replaying generated
traffic in a loop (so that they keep reporting), and picketctl against any replica.

- deploy: each sensor streams to a different replica; a bundle pushed and deployed through
  replica a is applied by the sensors on b and c; every replica lists the same fleet; one
  leader among the three (picket_manager_replica_info), and the fleet series come from it only.
- leader killed mid-canary: a canary deployment with a soak is created through a follower; the
  leader (which drives it) is killed with SIGKILL during the soak; another replica takes the
  lead within 5 s and the deployment completes, every sensor on the new version.
- replica of a sensor killed: a sensor given all three addresses moves to another replica within
  10 s, the same process, and no report is stored twice (stored run totals equal its counters).
- database away 30 s: the replicas say unavailable (metrics role, picketctl's error), the
  sensors keep inspecting, and everything comes back on its own: one leader, the fleet listed,
  reports stored again, none twice.

Prints "HA deploy_seconds=", "HA takeover_seconds=", "HA failover_seconds=" and
"HA recovery_seconds=" lines. Skipped without the PostgreSQL server binaries.
Usage: manager_ha_test.py --build BUILD_DIR
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

PG_BIN = os.environ.get("PICKET_PG_BIN", "/usr/lib/postgresql/15/bin")
RULES_V1 = ('alert tcp any any -> any any (msg:"passwd"; content:"/etc/passwd"; sid:1001; '
            'rev:1;)\n')
RULES_V2 = ('alert tcp any any -> any any (msg:"passwd v2"; content:"/etc/passwd"; sid:1001; '
            'rev:2;)\n')


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def series(text, name):
    """[(labels dict, value)] of a family in a Prometheus exposition."""
    out = []
    for line in text.splitlines():
        m = re.match(r"^%s(?:\{([^}]*)\})? (\S+)$" % re.escape(name), line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1) or ""))
            out.append((labels, float(m.group(2))))
    return out


class ManagerReplicas(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(os.path.join(PG_BIN, "initdb"), os.X_OK):
            raise unittest.SkipTest("PostgreSQL server binaries not found in " + PG_BIN)
        cls.tmp = tempfile.mkdtemp(prefix="picket-ha-")
        cls.state = os.path.join(cls.tmp, "pg.state")
        cls.server = binary("tests", "support", "pg_test_server")
        r = subprocess.run([cls.server, "start", cls.state], capture_output=True, text=True,
                           timeout=120)
        if r.returncode != 0 or not os.path.exists(cls.state):
            raise unittest.SkipTest("no PostgreSQL test server: " + r.stdout + r.stderr)
        cls.pg_port = int(open(cls.state).read().split()[0])
        cls.pcap = os.path.join(cls.tmp, "traffic.pcap")
        fleetlib.trafficgen(cls.pcap, "--seed", "7", "--sessions", "200", "--attack",
                            "/etc/passwd", "--attack-share", "0.2")
        cls.rules = os.path.join(cls.tmp, "local.rules")
        with open(cls.rules, "w") as f:
            f.write(RULES_V1)
        cls.dbs = 0

    @classmethod
    def tearDownClass(cls):
        subprocess.run([cls.server, "stop", cls.state], timeout=120)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.procs = []
        # A database of its own per test: LISTEN/NOTIFY channels and the leader lock are
        # per database.
        self.__class__.dbs += 1
        name = "ha%d" % self.dbs
        r = subprocess.run([os.path.join(PG_BIN, "createdb"), "-h", "127.0.0.1", "-p",
                            str(self.pg_port), "-U", "picket", name], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.dsn = "postgresql://picket@127.0.0.1:%d/%s" % (self.pg_port, name)

    def tearDown(self):
        fleetlib.stop_all(self.procs)

    # ---- processes

    def start(self, args, name):
        log_path = os.path.join(self.tmp, "%s-%s.log" % (self._testMethodName, name))
        with open(log_path, "w") as log:
            p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log)
        p.log_path = log_path
        self.procs.append(p)
        return p

    def wait_line(self, proc, pattern, timeout=60):
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

    def start_manager(self, name, port=None):
        port = port or free_port()
        p = self.start([binary("manager", "picket-manager"), "--listen", "127.0.0.1:%d" % port,
                        "--db", self.dsn, "--replica-name", name, "--insecure",
                        "--metrics-listen", "127.0.0.1:0"], "manager-" + name)
        self.wait_line(p, r"serving on .* \(port %d\)" % port)
        p.metrics_url = self.wait_line(p, r"metrics on (http://\S+)").group(1)
        p.addr = "127.0.0.1:%d" % port
        p.name = name
        return p

    def start_sensor(self, name, managers):
        d = os.path.join(self.tmp, self._testMethodName, name)
        os.makedirs(d, exist_ok=True)
        port = free_port()
        p = self.start([binary("sensor", "picket-sensor"), "-r", self.pcap, "--pcap-loop", "0",
                        "--pcap-rate", "2000", "--manager", ",".join(m.addr for m in managers),
                        "--insecure", "--metrics-interval", "1", "--name", name, "--state-dir",
                        d, "-l", d, "-S", self.rules, "--metrics-listen",
                        "127.0.0.1:%d" % port], "sensor-" + name)
        p.metrics_url = "http://127.0.0.1:%d/metrics" % port
        return p

    # ---- what the operator sees

    def ctl_raw(self, manager, *args, timeout=60):
        return subprocess.run([picketctl_bin(), "--manager", manager.addr, "--insecure",
                               "--json"] + list(args), capture_output=True, text=True,
                              timeout=timeout)

    def ctl(self, manager, *args, expect=0, timeout=60):
        r = self.ctl_raw(manager, *args, timeout=timeout)
        self.assertEqual(r.returncode, expect, "%s: %s %s" % (args, r.stdout, r.stderr))
        return json.loads(r.stdout) if r.stdout.strip() else None

    def sensors(self, manager):
        out = self.ctl(manager, "sensors")
        return out.get("sensors", []) if isinstance(out, dict) else out

    def connected(self, manager):
        return sorted(s["name"] for s in self.sensors(manager) if s["connected"])

    def role(self, manager):
        for labels, value in series(http_get(manager.metrics_url),
                                    "picket_manager_replica_info"):
            if value == 1:
                return labels.get("role")
        return None

    def leaders(self, managers):
        return [m.name for m in managers if m.poll() is None and self.role(m) == "leader"]

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

    def push(self, manager, name, rules):
        d = fleetlib.write_bundle(os.path.join(self.tmp, self._testMethodName, "b-" + name),
                                  rules)
        return self.ctl(manager, "bundle", "push", d, "--name", name, "-m", name)["version"]

    def stored_totals(self, manager, name):
        runs = self.ctl(manager, "history", "--sensor", name)["runs"]
        return tuple(sum(r[k] for r in runs) for k in ("packets", "bytes", "alerts"))

    def reported(self, manager, name):
        c = self.ctl(manager, "sensor", "show", name)["counters"]
        return tuple(c.get(k, 0) for k in ("decoder.pkts", "decoder.bytes", "detect.alert"))

    def assert_totals_exact(self, manager, name):
        def same():
            stored = self.stored_totals(manager, name)
            reported = self.reported(manager, name)
            if stored == reported and stored[0] > 0:
                return stored
            raise AssertionError("stored %s, reported %s" % (stored, reported))
        return self.poll(same, "stored run totals equal to %s's counters" % name, seconds=30)

    # ---- tests

    def test_deploy_through_one_replica_reaches_every_replica(self):
        a, b, c = (self.start_manager(n) for n in ("a", "b", "c"))
        ms = [a, b, c]
        self.start_sensor("s1", [a])
        self.start_sensor("s2", [b])
        self.start_sensor("s3", [c])
        for m in ms:
            self.poll(lambda m=m: self.connected(m) == ["s1", "s2", "s3"],
                      "replica %s to list the whole fleet connected" % m.name)
        self.poll(lambda: len(self.leaders(ms)) == 1, "one leader")
        leader = [m for m in ms if m.name == self.leaders(ms)[0]][0]

        v = self.push(a, "v1", RULES_V2)
        t0 = time.time()
        d = self.ctl(a, "deploy", str(v), "--to", "all", "--wait", timeout=120)
        print("HA deploy_seconds=%.2f" % (time.time() - t0), flush=True)
        self.assertEqual(sorted((t["sensor"], t["state"]) for t in d["targets"]),
                         [("s1", "applied"), ("s2", "applied"), ("s3", "applied")])
        for m in ms:
            self.assertEqual(sorted((s["name"], s["version"]) for s in self.sensors(m)),
                             [("s1", v), ("s2", v), ("s3", v)], m.name)
        # Prometheus scraping every replica sums to the fleet once: the fleet series from the
        # leader only, each sensor's series from its own replica.
        for m in ms:
            text = http_get(m.metrics_url)
            fleet = series(text, "picket_sensors")
            if m is leader:
                self.assertEqual(sorted((l["state"], v) for l, v in fleet),
                                 [("connected", 3.0), ("disconnected", 0.0)])
            else:
                self.assertEqual(fleet, [])
            on = sorted(l["sensor"] for l, v in series(text, "picket_sensor_replica_info"))
            self.assertEqual(on, {"a": ["s1"], "b": ["s2"], "c": ["s3"]}[m.name])

    def test_a_killed_leader_hands_its_canary_deployment_over(self):
        a = self.start_manager("a")
        self.poll(lambda: self.role(a) == "leader", "a to lead")
        b, c = self.start_manager("b"), self.start_manager("c")
        ms = [a, b, c]
        # The sensors stream to the followers: killing the leader leaves them connected.
        for name, m in (("s1", b), ("s2", c), ("s3", b)):
            self.start_sensor(name, [m])
        self.poll(lambda: self.connected(c) == ["s1", "s2", "s3"], "the fleet connected")
        v = self.push(b, "v2", RULES_V2)
        d = self.ctl(b, "deploy", str(v), "--to", "all", "--canary", "34", "--soak", "8")
        dep = str(d["deployment"])
        self.poll(lambda: self.ctl(c, "deployment", "show", dep)["state"] == "soaking",
                  "the canary applied and soaking", seconds=60)
        a.send_signal(signal.SIGKILL)
        killed = time.time()
        a.wait()
        self.poll(lambda: len(self.leaders([b, c])) == 1, "a new leader", seconds=5,
                  every=0.05)
        print("HA takeover_seconds=%.2f" % (time.time() - killed), flush=True)
        show = self.poll(lambda: (lambda x: x if x["state"] in ("succeeded", "failed",
                                                               "rolled_back", "superseded")
                                  else None)(
                             self.ctl(c, "deployment", "show", dep)),
                         "the deployment to finish", seconds=90)
        self.assertEqual(show["state"], "succeeded", show)
        self.assertEqual(sorted((s["name"], s["version"]) for s in self.sensors(b)),
                         [("s1", v), ("s2", v), ("s3", v)])
        del ms

    def test_a_sensor_moves_when_its_replica_dies(self):
        ms = [self.start_manager(n) for n in ("a", "b", "c")]
        sensor = self.start_sensor("s2", ms)
        on = self.poll(lambda: [m for m in ms if "s2" in
                                [l["sensor"] for l, v in
                                 series(http_get(m.metrics_url), "picket_sensor_replica_info")]],
                       "the sensor on a replica")[0]
        self.poll(lambda: self.stored_totals(on, "s2")[0] >= 1000, "reports stored")
        on.send_signal(signal.SIGKILL)
        killed = time.time()
        on.wait()
        rest = [m for m in ms if m is not on]

        def now_on():
            return [m for m in rest if "s2" in [
                l["sensor"] for l, v in series(http_get(m.metrics_url),
                                               "picket_sensor_replica_info")]]
        self.poll(lambda: self.connected(rest[0]) == ["s2"] and now_on(),
                  "the sensor on another replica", seconds=10, every=0.05)
        print("HA failover_seconds=%.2f" % (time.time() - killed), flush=True)
        self.assertIsNone(sensor.poll())  # the same process, inspecting all along
        new = now_on()[0]
        # Its latest counters are in the memory of the replica it streams to; the stored run
        # totals (any replica reads them) equal them exactly: nothing lost, nothing twice.
        before = self.poll(lambda: self.reported(new, "s2"), "a report on the new replica")
        self.poll(lambda: self.reported(new, "s2")[0] > before[0], "a report after")
        self.assert_totals_exact(new, "s2")

    def test_database_away_30_seconds(self):
        a, b = self.start_manager("a"), self.start_manager("b")
        sensor = self.start_sensor("s1", [a, b])
        self.poll(lambda: self.connected(a) == ["s1"], "the sensor connected")
        self.poll(lambda: self.stored_totals(a, "s1")[0] >= 500, "reports stored")
        r = subprocess.run([self.server, "pause", self.state], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # Whatever fails below, the next test gets its server back.
        self.addCleanup(subprocess.run, [self.server, "resume", self.state],
                        capture_output=True, timeout=120)
        stopped = time.time()
        self.poll(lambda: self.role(a) == "unavailable" and self.role(b) == "unavailable",
                  "both replicas unavailable", seconds=15)
        r = self.ctl_raw(a, "sensors")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("unavailable", (r.stdout + r.stderr).lower())
        pkts = lambda: sum(v for l, v in series(http_get(sensor.metrics_url),  # noqa: E731
                                                "picket_sensor_packets_total"))
        first = pkts()
        time.sleep(max(0, 30 - (time.time() - stopped)))
        self.assertGreater(pkts(), first)  # inspecting all along
        self.assertIsNone(sensor.poll())
        r = subprocess.run([self.server, "resume", self.state], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        back = time.time()
        self.poll(lambda: len(self.leaders([a, b])) == 1, "one leader again", seconds=30)
        for m in (a, b):
            self.poll(lambda m=m: self.connected(m) == ["s1"], "the fleet listed on " + m.name)
        on = self.poll(lambda: [m for m in (a, b) if "s1" in [
            l["sensor"] for l, v in series(http_get(m.metrics_url),
                                           "picket_sensor_replica_info")]],
                       "the sensor on a replica again")[0]
        print("HA recovery_seconds=%.2f" % (time.time() - back), flush=True)
        # Reports refused during the outage are not lost: the next stored one adds the whole
        # increase over the last stored counters, and none is stored twice.
        self.assert_totals_exact(on, "s1")


if __name__ == "__main__":
    paths, argv = fleetlib.parse_args()
    picket_test.main(argv)
