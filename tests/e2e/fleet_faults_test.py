#!/usr/bin/env python3
"""Fleet fault injection, end to end: a real picket-manager (TLS, admin token, Prometheus
/metrics), three real picket-sensor processes capturing live and picketctl, in network
namespaces the test creates:

  ns MGR: manager (SQLite on a small tmpfs in a private mount namespace), sensors s1 and s2
          capturing pkt-b (attacks are injected on pkt-a)
  ns SEN: sensor s3 capturing its own pkt-b, linked to MGR by the veth pair lnk-m/lnk-s

One test per fault. Each checks what the operator sees (picketctl --json fields, the manager's
metrics), that nothing acknowledged is lost (bundles, deployments, run history), that sensors
keep alerting during the fault, and that the fleet converges afterwards; it prints one line
"FAULT <name>: ..." with the figures (docs/reliability-faults.part.md collects them).

Usage: fleet_faults_test.py --build BUILD_DIR
Env: PICKET_FAULTS_LONG=1 also cuts the link long enough for the sensor's keepalive (30 s +
10 s) to fire, so that it reconnects with backoff (adds about a minute).
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fleetlib  # noqa: E402
from fleetlib import binary, eve_alerts  # noqa: E402
from picket_e2e import have_netns  # noqa: E402  (on sys.path via fleetlib)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)

PORT = 47431
METRICS_PORT = 47432
LONG = os.environ.get("PICKET_FAULTS_LONG") == "1"
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def fault(name, **figures):
    print("FAULT %s: %s" % (name, ", ".join("%s=%s" % kv for kv in figures.items())),
          flush=True)


@unittest.skipUnless(have_netns() and shutil.which("unshare") and shutil.which("nsenter"),
                     "needs root, network namespaces, unshare and nsenter")
class FleetFaults(fleetlib.FleetCase, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-faults-")
        cls.ns = "picket-fm-%d" % os.getpid()
        cls.ns_s = "picket-fs-%d" % os.getpid()
        cls.procs = []
        cls.sensor_procs = {}
        cls.holder = None
        try:
            cls._setup()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def _setup(cls):
        cls.pcap = os.path.join(cls.tmp, "attacks.pcap")
        cls.passwd, cls.cmd = fleetlib.attack_pcap(cls.pcap, 120)
        # What a sensor's "tcp" capture filter lets through of one send.
        r = subprocess.run(["tcpdump", "-nr", cls.pcap, "tcp"], capture_output=True, text=True)
        cls.tcp_packets = len(r.stdout.splitlines())
        assert cls.tcp_packets > 0, r.stderr

        # PKI: the fleet runs as in production (TLS, client certificates, admin token).
        ctl = binary("manager", "cli", "picketctl")
        cls.pki = os.path.join(cls.tmp, "pki")
        for args in (["pki", "init", cls.pki],
                     ["pki", "issue", cls.pki, "--kind", "manager", "--name", "manager",
                      "--san", "127.0.0.1", "--san", "10.231.0.1"],
                     ["pki", "issue", cls.pki, "--kind", "sensor", "--name", "s1"],
                     ["pki", "issue", cls.pki, "--kind", "sensor", "--name", "s2"],
                     ["pki", "issue", cls.pki, "--kind", "sensor", "--name", "s3"]):
            r = subprocess.run([ctl] + args, capture_output=True, text=True)
            assert r.returncode == 0, (args, r.stderr)
        cls.token = os.path.join(cls.tmp, "admin.token")
        with open(cls.token, "w") as f:
            f.write("faults-admin-token-0123456789abcdef\n")
        os.chmod(cls.token, 0o600)

        def sh(*cmd, ns=None):
            full = (["ip", "netns", "exec", ns] if ns else []) + list(cmd)
            subprocess.run(full, check=True)

        sh("ip", "netns", "add", cls.ns)
        sh("ip", "netns", "add", cls.ns_s)
        for ns in (cls.ns, cls.ns_s):
            sh("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", ns=ns)
            sh("sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1", ns=ns)
            sh("ip", "link", "add", "pkt-a", "type", "veth", "peer", "name", "pkt-b", ns=ns)
            for dev in ("lo", "pkt-a", "pkt-b"):
                sh("ip", "link", "set", dev, "up", ns=ns)
        # The manager <-> s3 link.
        sh("ip", "-n", cls.ns, "link", "add", "lnk-m", "type", "veth", "peer", "name", "lnk-s",
           "netns", cls.ns_s)
        sh("ip", "addr", "add", "10.231.0.1/30", "dev", "lnk-m", ns=cls.ns)
        sh("ip", "addr", "add", "10.231.0.2/30", "dev", "lnk-s", ns=cls.ns_s)
        sh("ip", "link", "set", "lnk-m", "up", ns=cls.ns)
        sh("ip", "link", "set", "lnk-s", "up", ns=cls.ns_s)

        # The manager's disk: a 24 MiB tmpfs in a private mount namespace held by a sleeper,
        # so that it survives manager restarts and the host never sees it.
        cls.mnt = os.path.join(cls.tmp, "mgrdisk")
        os.makedirs(cls.mnt)
        cls.holder = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c",
             "mount -t tmpfs -o size=24m,mode=0700 picket-faults %s && echo ok && exec sleep 3600"
             % cls.mnt], stdout=subprocess.PIPE, text=True)
        assert cls.holder.stdout.readline().strip() == "ok"
        cls.disk = "/proc/%d/root%s" % (cls.holder.pid, cls.mnt)
        cls.db = os.path.join(cls.disk, "fleet.db")

        cls.addr = "127.0.0.1:%d" % PORT
        cls.ctl_flags = ["--manager", cls.addr, "--ca", os.path.join(cls.pki, "ca.crt"),
                         "--token-file", cls.token]
        cls.start_manager()
        cls.sensors = fleetlib.sensor_logdirs(cls.tmp, ("s1", "s2", "s3"))
        for name in cls.sensors:
            cls.start_sensor(name)

    # ---- processes

    @classmethod
    def start_manager(cls, prefix=()):
        args = ["nsenter", "-t", str(cls.holder.pid), "-m", "--net=/run/netns/" + cls.ns, "--"]
        args += list(prefix) + [
            binary("manager", "picket-manager"), "--listen", "0.0.0.0:%d" % PORT,
            "--db", os.path.join(cls.mnt, "fleet.db"),
            "--tls-cert", os.path.join(cls.pki, "manager.crt"),
            "--tls-key", os.path.join(cls.pki, "manager.key"),
            "--client-ca", os.path.join(cls.pki, "ca.crt"), "--admin-token-file", cls.token,
            "--metrics-listen", "127.0.0.1:%d" % METRICS_PORT, "--target-timeout", "60"]
        cls.mlog = open(os.path.join(cls.tmp, "manager.log"), "a")
        cls.manager = subprocess.Popen(args, stdout=cls.mlog, stderr=subprocess.STDOUT)
        cls.procs.append(cls.manager)
        fleetlib.wait_listening(cls.ns, [PORT, METRICS_PORT], 30, cls.manager)

    @classmethod
    def sensor_cmd(cls, name):
        ns = cls.ns_s if name == "s3" else cls.ns
        manager = ("10.231.0.1:%d" % PORT) if name == "s3" else cls.addr
        logdir = os.path.dirname(cls.sensors[name])
        tls = ["--tls-cert", os.path.join(cls.pki, name + ".crt"),
               "--tls-key", os.path.join(cls.pki, name + ".key"),
               "--ca", os.path.join(cls.pki, "ca.crt")]
        return ns, fleetlib.live_sensor_cmd(name, logdir, manager, tls,
                                            os.path.join(logdir, "state"))

    @classmethod
    def start_sensor(cls, name, env=None):
        ns, cmd = cls.sensor_cmd(name)
        log = open(os.path.join(cls.tmp, name + ".log"), "a")
        p = subprocess.Popen(fleetlib.netns(ns) + cmd, stdout=log,
                             stderr=subprocess.STDOUT, env=env)
        cls.procs.append(p)
        cls.sensor_procs[name] = p
        return p

    @classmethod
    def tearDownClass(cls):
        fleetlib.stop_all(cls.procs)
        if cls.holder is not None:
            cls.holder.kill()
            cls.holder.wait()
        for ns in (cls.ns, cls.ns_s):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        if os.environ.get("PICKET_FAULTS_KEEP") != "1":
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        # A fault test that failed half-way must not take the next ones down with it.
        if self.manager.poll() is not None:
            self.start_manager()
        for name, p in self.sensor_procs.items():
            if p.poll() is not None:
                self.start_sensor(name)

    # ---- helpers

    def metrics(self):
        get = ("import urllib.request,sys;sys.stdout.write(urllib.request.urlopen("
               "'http://127.0.0.1:%d/metrics',timeout=10).read().decode())" % METRICS_PORT)
        r = subprocess.run(fleetlib.netns(self.ns) + [sys.executable, "-c", get],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = {}
        for line in r.stdout.splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                out[key] = float(value)
        return out

    def bundle(self, name, rules, extra_rules=0):
        fillers = "".join('alert tcp any any -> any any (msg:"filler %d"; content:"zq%dxv%s"; '
                          'sid:%d;)\n' % (i, i, name, 100000 + i) for i in range(extra_rules))
        return fleetlib.write_bundle(os.path.join(self.tmp, "bundle-" + name), rules + fillers)

    def push(self, name, rules, extra_rules=0):
        d = self.bundle(name, rules, extra_rules)
        return self.ctl("bundle", "push", d, "--name", name, "-m", "faults " + name)["version"]

    def send_all(self):
        self.send(self.ns)
        self.send(self.ns_s)

    def alerts(self, name, sid=None):
        """Alerts of `sid` (any sid when None) in the sensor's eve.json."""
        counts = eve_alerts(self.sensors[name])
        return sum(counts.values()) if sid is None else counts.get(sid, 0)

    def wait_alerts(self, name, sid, want, seconds=30):
        deadline = time.time() + seconds
        while time.time() < deadline:
            if self.alerts(name, sid) >= want:
                return
            time.sleep(0.2)
        self.assertGreaterEqual(self.alerts(name, sid), want, "%s sid %s" % (name, sid))

    def poll(self, fn, what, seconds=60):
        return fleetlib.poll(fn, what, seconds, retry_on=AssertionError)  # manager restarting

    def fleet(self):
        return {s["name"]: (s["connected"], s["version"]) for s in self.ctl("sensors")}

    def wait_converged(self, version, seconds=90):
        want = {n: (True, version) for n in ("s1", "s2", "s3")}
        self.poll(lambda: self.fleet() == want, "the fleet on v%d (%s)" % (version, want),
                  seconds)

    def snapshot(self):
        """Everything acknowledged so far: bundles, deployments, run periods."""
        h = self.ctl("history", "--limit", "1000")
        return {"bundles": sorted((b["version"], b["sha256"]) for b in
                                  self.ctl("bundle", "list", "--limit", "1000")),
                "deployments": {str(d["deployment"]): d["state"] for d in h["deployments"]},
                "runs": {(r["sensor"], r["version"], r["started_at"]) for r in h["runs"]}}

    def assert_nothing_lost(self, before):
        after = self.snapshot()
        self.assertEqual([b for b in before["bundles"] if b not in after["bundles"]], [])
        self.assertEqual([d for d in before["deployments"] if d not in after["deployments"]], [])
        self.assertEqual(before["runs"] - after["runs"], set())
        return after

    def deploy_wait(self, version, to="all", expect=0, timeout=90):
        return self.ctl("deploy", str(version), "--to", to, "--wait", "--timeout", str(timeout),
                        expect=expect, timeout=timeout + 30)

    def db_sizes(self):
        return {f: os.path.getsize(os.path.join(self.disk, f)) for f in os.listdir(self.disk)
                if f.startswith("fleet.db")}

    # ---- the baseline every fault starts from

    def test_0_baseline(self):
        self.poll(lambda: sorted(n for n, (c, _) in self.fleet().items() if c) ==
                  ["s1", "s2", "s3"], "three connected sensors")
        v = self.push("passwd", 'alert tcp any any -> any any (msg:"passwd"; '
                                'content:"/etc/passwd"; sid:1;)\n')
        d = self.deploy_wait(v)
        self.assertEqual(sorted((t["sensor"], t["state"]) for t in d["targets"]),
                         [("s1", "applied"), ("s2", "applied"), ("s3", "applied")])
        self.send_all()
        for n in ("s1", "s2", "s3"):
            self.wait_alerts(n, 1, self.passwd)
        self.__class__.base = v
        self.__class__.base_sid = (1, self.passwd)

    def wait_base(self, name, before, seconds=30):
        """Waits until `name` alerted once more on every attack its running bundle matches."""
        sid, count = self.base_sid
        self.wait_alerts(name, sid, before + count, seconds)

    def base_alerts(self, name):
        return self.alerts(name, self.base_sid[0])

    # ---- a. manager kill -9 during a deployment

    def test_a_manager_kill9_during_deployment(self):
        v = self.push("cmd-a", 'alert tcp any any -> any any (msg:"cmd"; content:"cmd.exe"; '
                               'sid:2;)\n')
        d = self.ctl("deploy", str(v), "--to", "all", "--canary", "34", "--soak", "4")
        dep = str(d["deployment"])
        self.poll(lambda: self.ctl("deployment", "show", dep)["state"] == "soaking",
                  "the canary to soak")
        before = self.snapshot()
        self.assertIn(dep, before["deployments"])
        self.manager.send_signal(signal.SIGKILL)
        self.manager.wait(timeout=20)
        killed = time.time()
        # Manager gone: every sensor keeps inspecting on what it runs (the canary the new
        # bundle, the others the old one).
        base = {n: self.alerts(n) for n in self.sensors}
        self.send_all()
        for n in self.sensors:
            self.wait_alerts(n, None, base[n] + min(self.passwd, self.cmd))
        during = sum(self.alerts(n) - base[n] for n in self.sensors)
        self.start_manager()
        restarted = time.time()
        self.assert_nothing_lost(before)
        show = self.poll(lambda: (lambda x: x if x["state"] == "succeeded" else None)(
            self.ctl("deployment", "show", dep)), "deployment %s to finish" % dep, 90)
        self.assertEqual(sorted((t["sensor"], t["state"], t["version"]) for t in show["targets"]),
                         [("s1", "applied", v), ("s2", "applied", v), ("s3", "applied", v)])
        self.wait_converged(v)
        converged = time.time() - restarted
        m = self.metrics()
        self.assertEqual(m['picket_sensors{state="connected"}'], 3)
        base2 = {n: self.alerts(n, 2) for n in self.sensors}
        self.send_all()
        for n in self.sensors:
            self.wait_alerts(n, 2, base2[n] + self.cmd)
        fault("manager_kill9", outage_s="%.1f" % (restarted - killed),
              converge_after_restart_s="%.1f" % converged, acknowledged_lost=0,
              alerts_during_outage=during)
        self.__class__.base = v
        self.__class__.base_sid = (2, self.cmd)

    # ---- b. sensor kill -9 during a reload

    def test_b_sensor_kill9_during_reload(self):
        old = self.base
        # Enough rules that verifying, writing and compiling take a moment.
        v = self.push("big-b", 'alert tcp any any -> any any (msg:"passwd b"; '
                               'content:"/etc/passwd"; sid:3;)\n', extra_rules=4000)
        d = self.ctl("deploy", str(v), "--to", "s2")
        dep = str(d["deployment"])
        sent = self.poll(lambda: (lambda x: x if x != ["pending"] else None)(
            [t["state"] for t in self.ctl("deployment", "show", dep)["targets"]]),
            "the bundle sent to s2", 30)
        p = self.sensor_procs["s2"]
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=20)
        killed = time.time()
        state = self.ctl("deployment", "show", dep)["targets"][0]["state"]
        with open(os.path.join(self.tmp, "s2", "state", "current")) as f:
            current = f.read().strip()
        with open(os.path.join(self.tmp, "s2.log")) as f:
            seen = len(f.read())
        self.start_sensor("s2")
        # It comes back on the last good bundle it had applied (or the new one, had the
        # reload finished before the kill), and inspects.
        log = self.poll(lambda: (lambda t: t if "starting on bundle" in t else None)(
            open(os.path.join(self.tmp, "s2.log")).read()[seen:]), "s2 to start", 30)
        started_on = [ln for ln in log.splitlines() if "starting on bundle" in ln][0]
        show = self.poll(lambda: (lambda x: x if x["targets"][0]["state"] == "applied" else None)(
            self.ctl("deployment", "show", dep)), "s2 to apply v%d" % v, 90)
        converged = time.time() - killed
        self.assertEqual(show["state"], "succeeded")
        self.poll(lambda: self.fleet()["s2"] == (True, v), "s2 on v%d" % v)
        base = self.alerts("s2", 3)
        self.send()
        self.wait_alerts("s2", 3, base + self.passwd)
        fault("sensor_kill9_reload", target_before_kill=sent[0], target_after_kill=state, last_good_at_kill=current,
              restarted='"%s"' % started_on.strip()[-40:],
              converge_s="%.1f" % converged, acknowledged_lost=0)
        # Put s2 back with the others.
        self.deploy_wait(old, to="s2")

    # ---- c. the link between s3 and the manager cut, then restored

    def test_c_link_cut(self):
        cut_s = 50 if LONG else 8
        old = self.base
        v = self.push("cmd-c", 'alert tcp any any -> any any (msg:"cmd c"; content:"cmd.exe"; '
                               'sid:5;)\n')
        before = self.snapshot()
        subprocess.run(["ip", "-n", self.ns_s, "link", "set", "lnk-s", "down"], check=True)
        cut = time.time()
        d = self.ctl("deploy", str(v), "--to", "all")
        dep = str(d["deployment"])
        # s3 inspects during the cut; s1 and s2 apply.
        base = self.base_alerts("s3")
        self.send(self.ns_s)
        self.wait_base("s3", base)
        self.poll(lambda: {t["sensor"]: t["state"] for t in
                           self.ctl("deployment", "show", dep)["targets"]}.get("s1") == "applied",
                  "s1 to apply")
        time.sleep(max(0.0, cut_s - (time.time() - cut)))
        during = self.ctl("deployment", "show", dep)
        s3_during = [t["state"] for t in during["targets"] if t["sensor"] == "s3"][0]
        s3_conn = self.fleet()["s3"][0]
        m = self.metrics()
        last_report = m.get('picket_sensor_last_report_timestamp_seconds{sensor="s3"}', 0)
        subprocess.run(["ip", "-n", self.ns_s, "link", "set", "lnk-s", "up"], check=True)
        restored = time.time()
        show = self.poll(lambda: (lambda x: x if x["state"] == "succeeded" else None)(
            self.ctl("deployment", "show", dep)), "deployment %s to reach s3" % dep, 120)
        converged = time.time() - restored
        self.wait_converged(v)
        self.poll(lambda: self.metrics().get(
            'picket_sensor_last_report_timestamp_seconds{sensor="s3"}', 0) > restored,
            "s3's metrics to resume")
        self.assert_nothing_lost(before)
        base5 = self.alerts("s3", 5)
        self.send(self.ns_s)
        self.wait_alerts("s3", 5, base5 + self.cmd)
        fault("link_cut", cut_s=cut_s, s3_connected_during=s3_conn,
              s3_target_during=s3_during, s3_last_report_age_at_restore_s="%.1f" % (
                  restored - last_report), converge_after_restore_s="%.1f" % converged,
              acknowledged_lost=0)
        self.assertEqual(sorted((t["sensor"], t["state"]) for t in show["targets"]),
                         [("s1", "applied"), ("s2", "applied"), ("s3", "applied")])
        self.__class__.base = v
        self.__class__.base_sid = (5, self.cmd)

    # ---- d. the manager's disk full, then the file size limit

    def fill_disk(self):
        path = os.path.join(self.disk, "filler")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for size in (1 << 20, 4096):
                while True:
                    try:
                        os.write(fd, b"\0" * size)
                    except OSError:
                        break
        finally:
            os.close(fd)
        return path

    def test_d_disk_full(self):
        before = self.snapshot()
        filler = self.fill_disk()
        try:
            d = self.bundle("big-d", 'alert tcp any any -> any any (msg:"passwd d"; '
                                     'content:"/etc/passwd"; sid:6;)\n', extra_rules=8000)
            r = self.ctl_raw("bundle", "push", d, "--name", "big-d")
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("RESOURCE_EXHAUSTED", r.stderr)
            self.assertIn("disk full", r.stderr)
            push_error = r.stderr.strip()
            # Reads, sensors, metrics keep working; sensors keep inspecting.
            self.assertEqual(self.manager.poll(), None)
            self.assert_nothing_lost(before)
            self.assertEqual(self.metrics()['picket_sensors{state="connected"}'], 3)
            base = {n: self.base_alerts(n) for n in self.sensors}
            self.send_all()
            for n in self.sensors:
                self.wait_base(n, base[n])
        finally:
            os.unlink(filler)
        freed = time.time()
        v = self.ctl("bundle", "push", d, "--name", "big-d")["version"]
        self.deploy_wait(v, to="s1")
        works_again = time.time() - freed
        fault("disk_full", push_error='"%s"' % push_error, acknowledged_lost=0,
              works_again_s="%.1f" % works_again)
        self.deploy_wait(self.base, to="s1")

        # File size limit: the manager restarted under `prlimit --fsize` just above its files.
        before = self.snapshot()
        limit = max(self.db_sizes().values()) + 64 * 1024
        self.manager.send_signal(signal.SIGTERM)
        self.manager.wait(timeout=20)
        self.start_manager(prefix=["prlimit", "--fsize=%d" % limit])
        self.poll(lambda: all(c for c, _ in self.fleet().values()), "sensors back")
        # Bigger than the limit: no file of the manager's may hold it.
        d2 = self.bundle("big-d2", 'alert tcp any any -> any any (msg:"passwd d2"; '
                                   'content:"/etc/passwd"; sid:7;)\n',
                         extra_rules=(limit + 256 * 1024) // 60)
        r = self.ctl_raw("bundle", "push", d2, "--name", "big-d2")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("RESOURCE_EXHAUSTED", r.stderr)
        self.assertIn("file size limit", r.stderr)
        self.assertEqual(self.manager.poll(), None, "the manager died of SIGXFSZ")
        self.assert_nothing_lost(before)
        fsize_error = r.stderr.strip()
        self.manager.send_signal(signal.SIGTERM)
        self.manager.wait(timeout=20)
        self.start_manager()
        self.poll(lambda: all(c for c, _ in self.fleet().values()), "sensors back")
        v2 = self.ctl("bundle", "push", d2, "--name", "big-d2")["version"]
        self.assertGreater(v2, v)
        self.assert_nothing_lost(before)
        fault("file_size_limit", limit_bytes=limit, push_error='"%s"' % fsize_error,
              acknowledged_lost=0)

    # ---- e. a corrupted bundle blob on the manager, then on a sensor

    CORRUPT = r'''
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], timeout=10)
sha = con.execute("SELECT sha256 FROM bundles WHERE version = ?", (int(sys.argv[2]),)).fetchone()[0]
data = bytearray(con.execute("SELECT data FROM blobs WHERE sha256 = ?", (sha,)).fetchone()[0])
i = data.find(b"/etc/passwd")
assert i > 0
data[i:i + 4] = b"XXXX"  # still a parseable protobuf: only a rule's text changes
trig = con.execute("SELECT sql FROM sqlite_master WHERE name = 'blobs_immutable'").fetchone()[0]
with con:
    con.execute("DROP TRIGGER blobs_immutable")
    con.execute("UPDATE blobs SET data = ? WHERE sha256 = ?", (bytes(data), sha))
    con.execute(trig)
print(sha)
'''

    def corrupt_blob(self, version):
        # In the manager's mount namespace: SQLite resolves /proc/PID/root to the host's view.
        r = subprocess.run(["nsenter", "-t", str(self.holder.pid), "-m", sys.executable, "-c",
                            self.CORRUPT, os.path.join(self.mnt, "fleet.db"), str(version)],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.strip()

    def test_e_corrupt_blob_on_manager(self):
        old = self.base
        d = self.bundle("passwd-e", 'alert tcp any any -> any any (msg:"passwd e"; '
                                    'content:"/etc/passwd"; sid:8;)\n')
        v = self.ctl("bundle", "push", d, "--name", "passwd-e")["version"]
        self.corrupt_blob(v)
        r = self.ctl_raw("deploy", str(v), "--to", "all", "--wait", "--timeout", "30",
                         timeout=90)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        doc = json.loads(r.stdout)
        states = sorted((t["sensor"], t["state"]) for t in doc["targets"])
        errors = sorted({t["error"] for t in doc["targets"]})
        self.assertEqual(states, [("s1", "rejected"), ("s2", "rejected"), ("s3", "rejected")])
        self.assertEqual(len(errors), 1)
        self.assertIn("corrupt", errors[0])
        # Nobody applied it: the fleet runs the old version and keeps alerting.
        self.assertEqual(self.fleet(), {n: (True, old) for n in ("s1", "s2", "s3")})
        base = {n: self.base_alerts(n) for n in self.sensors}
        self.send_all()
        for n in self.sensors:
            self.wait_base(n, base[n])
        # Recovery: push the same bundle again (repairs the blob), deploy again.
        # Recovery: push the bundle again (picketctl stamps a new created_at, so it is a new
        # version; identical content would repair this one, see store_faults_test) and deploy.
        t0 = time.time()
        again = self.ctl("bundle", "push", d, "--name", "passwd-e")["version"]
        self.assertGreater(again, v)
        self.deploy_wait(again)
        self.wait_converged(again)
        converged = time.time() - t0
        fault("corrupt_blob_manager", operator_error='"%s"' % errors[0],
              converge_after_repush_s="%.1f" % converged, acknowledged_lost=0)
        self.deploy_wait(old)

    def test_e_corrupt_bundle_on_sensor(self):
        old = self.base
        state = os.path.join(self.tmp, "s1", "state")
        with open(os.path.join(state, "current")) as f:
            current = f.read().strip()
        rules = os.path.join(state, "bundles", current, "rules", "local.rules")
        with open(rules, "r+") as f:
            original = f.read()
            f.seek(0)
            f.write(original.replace('content:"', 'content:"X', 1))
        # Running rules are in memory: s1 keeps alerting.
        base = self.base_alerts("s1")
        self.send()
        self.wait_base("s1", base)
        # A restart re-verifies the copy: refused, named in the log, local rules.
        with open(os.path.join(self.tmp, "manager.log")) as f:
            mseen = len(f.read())
        p = self.sensor_procs["s1"]
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=20)
        with open(os.path.join(self.tmp, "s1.log")) as f:
            seen = len(f.read())
        self.start_sensor("s1")
        restarted = time.time()
        log = self.poll(lambda: (lambda t: t if "last good bundle unusable" in t else None)(
            open(os.path.join(self.tmp, "s1.log")).read()[seen:]), "s1's warning", 30)
        warning = [ln for ln in log.splitlines() if "last good bundle unusable" in ln][0]
        self.assertIn("local.rules", warning)
        # s1 says in its Hello that it runs its local rules (version 0), not what it last
        # applied: the manager sends that bundle again by itself (reconciliation, #25), as a
        # deployment of its own, and s1 rewrites its copy. No operator step.
        said = self.poll(lambda: [ln for ln in open(os.path.join(self.tmp, "manager.log"))
                                  .read()[mseen:].splitlines() if "sending it again" in ln],
                         "the manager to resend s1's bundle", 30)
        self.assertEqual(len(said), 1, said)
        self.assertIn("sensor s1 runs - version 0 sha256 , not ", said[0])
        self.assertIn(" version %d sha256 " % old, said[0])
        self.poll(lambda: self.fleet()["s1"] == (True, old), "s1 back on v%d" % old, 60)
        converged = time.time() - restarted
        with open(rules) as f:
            self.assertEqual(f.read(), original)
        base = self.base_alerts("s1")
        self.send()
        self.wait_base("s1", base)
        fault("corrupt_bundle_sensor", warning='"%s"' % warning.strip()[:160],
              reconciled_by_manager=1, converge_s="%.1f" % converged)

    # ---- f. a sensor's clock a day off

    def test_f_clock_skew(self):
        if not os.path.exists(FAKETIME_LIB):
            self.skipTest("libfaketime not installed (deploy/install-deps.sh installs it)")
        old = self.base
        results = {}
        for offset in ("+1d", "-1d"):
            p = self.sensor_procs["s2"]
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=20)
            env = dict(os.environ, LD_PRELOAD=FAKETIME_LIB, FAKETIME=offset,
                       FAKETIME_DONT_RESET="1")
            with open(os.path.join(self.tmp, "s2.log")) as f:
                seen = len(f.read())
            self.start_sensor("s2", env=env)
            t0 = time.time()
            connected = True
            try:
                self.poll(lambda: self.fleet()["s2"] == (True, old) and self.metrics().get(
                    'picket_manager_sensor_clock_offset_seconds{sensor="s2"}', 0) > 3600
                    if offset == "+1d" else self.fleet()["s2"] == (True, old),
                    "s2 (%s) back" % offset, 20 if offset == "+1d" else 6)
            except AssertionError:
                connected = False
            # Inspecting: with the link up, the manager sees every packet sent decoded.
            # (Alerts and eve.json stats are not checked under libfaketime: it shifts only this
            # process's clock, not the kernel's packet timestamps, so the engine's flow and
            # stats timers see packets a day old (or young); a host whose clock is off has both
            # off together.)
            if offset == "+1d":
                pkts = self.ctl("sensor", "show", "s2")["counters"].get("decoder.pkts", 0)
                self.send()
                self.poll(lambda: self.ctl("sensor", "show", "s2")["counters"].get(
                    "decoder.pkts", 0) >= pkts + self.tcp_packets,
                    "s2 (%s) to decode the traffic" % offset, 30)
            log = open(os.path.join(self.tmp, "s2.log")).read()[seen:]
            m = self.metrics()
            skew = m.get('picket_manager_sensor_clock_offset_seconds{sensor="s2"}')
            results[offset] = dict(
                connected=connected, alive=self.sensor_procs["s2"].poll() is None,
                offset_s=None if skew is None else round(skew),
                warning=[ln.strip()[:140] for ln in log.splitlines() if "warning" in ln][:1])
            if offset == "+1d":
                self.assertTrue(connected, results)
                self.assertGreater(skew, 86300, results)
                self.assertLess(skew, 86500, results)
            else:
                # Its clock says the fleet's certificates are not valid yet: it cannot connect,
                # says why, and keeps inspecting on its last good bundle.
                self.assertFalse(connected, results)
                self.assertTrue(results[offset]["alive"], results)
                self.assertIn("check the clocks", log)
                self.assertEqual(self.fleet()["s2"][0], False)
        # Clock fixed: s2 reconnects and converges.
        p = self.sensor_procs["s2"]
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=20)
        t0 = time.time()
        self.start_sensor("s2")
        self.poll(lambda: self.fleet()["s2"] == (True, old), "s2 back", 30)
        back = time.time() - t0
        offset = self.poll(lambda: (lambda v: (v,) if v is not None and abs(v) < 5 else None)(
            self.metrics().get('picket_manager_sensor_clock_offset_seconds{sensor="s2"}')),
            "s2's offset back to ~0")[0]
        fault("clock_skew", plus1d=results["+1d"], minus1d=results["-1d"],
              converge_after_fix_s="%.1f" % back, offset_after_fix_s="%.2f" % offset)


if __name__ == "__main__":
    _, argv = fleetlib.parse_args()
    picket_test.main(argv)
