"""What the process-level suites (tests/e2e, tests/deploy, tests/dashboards) share: the command
line CTest gives them, where the built binaries are, whether network namespaces are available,
waiting for a condition, known engine bugs and the readers of a sensor's eve.json.

CTest runs a suite as `NAME_test.py --build BUILD_DIR [--source SOURCE_DIR ...]`; parse_args()
reads that and sets BUILD, against which binary() and the *_bin() helpers resolve. Suites that
replay pcaps through the sensor alone also accept --sensor PATH or $PICKET_SENSOR
(sensor_from_args()). Import it as picket_test is imported (tests/support on sys.path). Not a
test itself: unittest finds nothing to run here.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import unittest

BUILD = None


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


def sensor_from_args():
    """For suites that only run picket-sensor: --sensor PATH, else BUILD_DIR/sensor/picket-sensor
    from --build, else $PICKET_SENSOR. Exits (status 2, a usage error) when none names an
    executable. Returns (the sensor's path, argv for unittest.main)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", help="build directory (sensor/picket-sensor inside)")
    ap.add_argument("--sensor", help="path of picket-sensor")
    args, rest = ap.parse_known_args()
    if args.sensor:
        sensor = os.path.abspath(args.sensor)
    elif args.build:
        sensor = os.path.join(os.path.abspath(args.build), "sensor", "picket-sensor")
    else:
        sensor = os.environ.get("PICKET_SENSOR")
    if not sensor or not os.access(sensor, os.X_OK):
        print("picket-sensor not found: give --build DIR, --sensor PATH or $PICKET_SENSOR",
              file=sys.stderr)
        sys.exit(2)
    return sensor, [sys.argv[0]] + rest


def binary(*parts):
    """A path inside the build tree (parse_args() must have run)."""
    return os.path.join(BUILD, *parts)


def sensor_bin():
    return binary("sensor", "picket-sensor")


def manager_bin():
    return binary("manager", "picket-manager")


def picketctl_bin():
    return binary("manager", "cli", "picketctl")


def trafficgen_bin():
    return binary("tools", "trafficgen", "picket-trafficgen")


def have_netns(*tools):
    """True when this process is root, `ip` and every one of `tools` are on PATH, and a network
    namespace can be created (a probe namespace is added and deleted)."""
    if os.geteuid() != 0 or any(shutil.which(t) is None for t in ("ip",) + tools):
        return False
    name = "picket-probe-%d" % os.getpid()
    ok = subprocess.run(["ip", "netns", "add", name], capture_output=True).returncode == 0
    if ok:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return ok


def known_bugs(bugs):
    """The decorator factory of a suite's table of known engine bugs ({key: reason}): a test
    marked @known_bug(key) runs as an expected failure while `bugs` lists its key. Use:
        KNOWN_ENGINE_BUGS = {}
        known_bug = picket_e2e.known_bugs(KNOWN_ENGINE_BUGS)"""
    def known_bug(key):
        def wrap(fn):
            return unittest.expectedFailure(fn) if key in bugs else fn
        return wrap
    return known_bug


def poll(fn, what, seconds, retry_on=()):
    """Calls fn() every 0.2 s until it returns something true, and returns that; an exception
    in `retry_on` counts as "not yet" (e.g. AssertionError from picketctl while the manager
    restarts). Fails after `seconds`, naming `what`."""
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


def eve_events(eve, event_type=None):
    """The events of the complete lines of an eve.json (the sensor may be mid-write), in file
    order; only those of `event_type` when given. [] when the file does not exist yet."""
    out = []
    if not os.path.exists(eve):
        return out
    with open(eve) as f:
        for line in f:
            if line.endswith("\n"):
                ev = json.loads(line)
                if event_type is None or ev.get("event_type") == event_type:
                    out.append(ev)
    return out


def stats_events(eve):
    """The `stats` objects of an eve.json's stats events, oldest first."""
    return [ev["stats"] for ev in eve_events(eve, "stats")]


def eve_alerts(eve):
    """{sid: alerts} of the complete lines of an eve.json."""
    out = {}
    for ev in eve_events(eve, "alert"):
        sid = ev["alert"]["signature_id"]
        out[sid] = out.get(sid, 0) + 1
    return out
