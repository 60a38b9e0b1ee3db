"""Helpers shared by the fleet end-to-end tests (fleet_test, fleet_faults_test, metrics_test):
the build tree's binaries, generated attack traffic, the live sensor's command line, waiting
for the manager to listen and for a condition, stopping what a test started, picketctl --json,
bundles and eve.json alerts.

The tests are scripts that CTest runs as `NAME_test.py --build BUILD_DIR [...]`
(tests/e2e/CMakeLists.txt); parse_args() (tests/support/picket_e2e.py) reads that command line
and sets the build tree, against which binary() resolves. Not a test itself: unittest finds
nothing to run here.
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
# The build tree, the command line and eve.json readers (tests/support/picket_e2e.py), for the
# fleet tests that import them from here.
from picket_e2e import (binary, eve_alerts, parse_args, picketctl_bin, poll,  # noqa: E402,F401
                        sensor_bin, trafficgen_bin)


def netns(ns):
    """The prefix that runs a command in network namespace `ns` (None: the test's own)."""
    return ["ip", "netns", "exec", ns] if ns else []


def trafficgen(out, *args):
    r = subprocess.run([trafficgen_bin(), "-o", out] +
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
    return ([sensor_bin(), "-i", "pkt-b", "--workers", "1", "-l", logdir,
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


class FleetCase:
    """Mixin for a unittest.TestCase that drives the manager. The class sets `ctl_flags`
    (--manager and how picketctl authenticates) and, when the fleet lives in a network
    namespace, `ns` (picketctl runs there; send() injects `pcap` on its pkt-a)."""

    ns = None
    ctl_flags = ()

    def ctl_raw(self, *args, timeout=120):
        return subprocess.run(netns(self.ns) + [picketctl_bin()] +
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
