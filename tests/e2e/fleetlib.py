"""Helpers shared by the fleet end-to-end tests (fleet_test, fleet_faults_test, metrics_test):
the build tree's binaries, generated attack traffic, the live sensor's command line, waiting
for the manager to listen and for a condition, stopping what a test started, picketctl --json,
bundles and eve.json alerts.

The tests are scripts that CTest runs as `NAME_test.py --build BUILD_DIR [...]`
(tests/e2e/CMakeLists.txt); parse_args() reads that command line and sets BUILD, against which
binary() resolves. Not a test itself: unittest finds nothing to run here.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

BUILD = None


def binary(*parts):
    return os.path.join(BUILD, *parts)


def parse_args(*dirs):
    """Reads --build BUILD_DIR and each option in `dirs` (directories too, e.g. "--source"), all
    required; sets BUILD. Returns ({option name: absolute path}, argv for unittest.main) so that
    unittest's own options still work."""
    global BUILD
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    for opt in dirs:
        ap.add_argument(opt, required=True)
    args, rest = ap.parse_known_args()
    paths = {k: os.path.abspath(v) for k, v in vars(args).items()}
    BUILD = paths["build"]
    return paths, [sys.argv[0]] + rest


def netns(ns):
    """The prefix that runs a command in network namespace `ns` (None: the test's own)."""
    return ["ip", "netns", "exec", ns] if ns else []


def trafficgen(out, *args):
    r = subprocess.run([binary("tools", "trafficgen", "picket-trafficgen"), "-o", out] +
                       list(args), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def attack_pcap(out, sessions):
    """Writes `sessions` TCP sessions (no VLAN tags, no fragments), 40% of them attacks carrying
    "/etc/passwd" or "cmd.exe"; returns how many carry each, from trafficgen's record."""
    trafficgen(out, "--seed", "17", "--sessions", str(sessions), "--vlan-share", "0",
               "--frag-share", "0", "--attack", "/etc/passwd", "--attack", "cmd.exe",
               "--attack-share", "0.4")
    with open(out + ".json") as f:
        rec = json.load(f)
    return (sum(1 for a in rec["attacks"] if a["string"] == "/etc/passwd"),
            sum(1 for a in rec["attacks"] if a["string"] == "cmd.exe"))


def live_sensor_cmd(name, logdir, manager, auth, state_dir):
    """picket-sensor capturing TCP on pkt-b with one worker, reporting to `manager` as `name`
    (`auth`: --insecure or its TLS flags); eve.json stats every 0.5 s, metrics every second so
    that the manager sees changes quickly."""
    return ([binary("sensor", "picket-sensor"), "-i", "pkt-b", "--workers", "1", "-l", logdir,
             "--manager", manager, "--name", name] + list(auth) +
            ["--state-dir", state_dir, "--labels", "site=lab", "--metrics-interval", "1",
             "--set", "stats-interval=0.5", "tcp"])


def sensor_logdirs(tmp, names):
    """Creates the log directory TMP/NAME of each sensor; returns {name: its eve.json}."""
    eves = {}
    for name in names:
        logdir = os.path.join(tmp, name)
        os.makedirs(logdir)
        eves[name] = os.path.join(logdir, "eve.json")
    return eves


def wait_listening(ns, ports, seconds, proc=None):
    """Waits until every TCP port in `ports` listens in namespace `ns`; with `proc` (the
    manager), fails as soon as it exits instead of at the deadline."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        out = subprocess.run(netns(ns) + ["ss", "-ltn"], capture_output=True, text=True).stdout
        if all(":%d " % port in out for port in ports):
            return
        if proc is not None:
            assert proc.poll() is None, "manager exited %s" % proc.returncode
        time.sleep(0.1)
    raise AssertionError("manager did not listen")


def poll(fn, what, seconds, retry_on=()):
    """Calls fn() every 0.2 s until it returns something true, and returns that; an exception
    in `retry_on` counts as "not yet" (e.g. AssertionError from picketctl while the manager
    restarts). Fails after `seconds`."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            value = fn()
        except retry_on:
            value = None
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("timed out waiting for " + what)


def stop_all(procs):
    """SIGTERM to every process still running, the last started first (sensors before the
    manager), then 20 s each to exit, its pipes drained; SIGKILL after that."""
    for p in reversed(procs):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def write_bundle(d, rules):
    """A bundle directory for `picketctl bundle push`: rules/local.rules and an empty config."""
    os.makedirs(os.path.join(d, "rules"), exist_ok=True)
    with open(os.path.join(d, "rules", "local.rules"), "w") as f:
        f.write(rules)
    with open(os.path.join(d, "config.yaml"), "w") as f:
        f.write("{}\n")
    return d


def eve_alerts(eve):
    """{sid: alerts} of the complete lines of an eve.json (the sensor may be mid-write)."""
    out = {}
    if not os.path.exists(eve):
        return out
    with open(eve) as f:
        for line in f:
            if line.endswith("\n") and '"event_type":"alert"' in line:
                sid = json.loads(line)["alert"]["signature_id"]
                out[sid] = out.get(sid, 0) + 1
    return out


class FleetCase:
    """Mixin for a unittest.TestCase that drives the manager. The class sets `ctl_flags`
    (--manager and how picketctl authenticates) and, when the fleet lives in a network
    namespace, `ns` (picketctl runs there; send() injects `pcap` on its pkt-a)."""

    ns = None
    ctl_flags = ()

    def ctl_raw(self, *args, timeout=120):
        return subprocess.run(netns(self.ns) + [binary("manager", "cli", "picketctl")] +
                              list(self.ctl_flags) + ["--json"] + list(args),
                              capture_output=True, text=True, timeout=timeout)

    def ctl(self, *args, expect=0, timeout=120):
        """picketctl's JSON output (None when it prints nothing), after checking its exit
        status."""
        r = self.ctl_raw(*args, timeout=timeout)
        self.assertEqual(r.returncode, expect, "%s: %s %s" % (args, r.stdout, r.stderr))
        return json.loads(r.stdout) if r.stdout.strip() else None

    def send(self, ns=None):
        # Imported here: importing sensor_live_test probes for network namespaces, which a
        # loopback-only test such as metrics_test has no business doing.
        from sensor_live_test import SENDER

        r = subprocess.run(netns(ns or self.ns) + [sys.executable, "-c", SENDER, self.pcap,
                                                   "pkt-a"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
