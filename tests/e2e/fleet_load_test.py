#!/usr/bin/env python3
"""bench/fleet/fleet_load small, with --kill-restart: 200 simulated sensor streams on the
callback-API client against a real picket-manager on loopback, a deploy to all, then a kill -9
of the manager and a restart on the same database and port (issue #25, "a kill -9 of the
manager ... all reconnect, nothing stored lost"). The 10,000-stream run is bench/fleet/run.sh.

Checks the exact figures of the result line (every stream connected, applied and reconnected,
every report stored, nothing stored before the kill missing after it, the deployment's state
kept), that the check bites (a manager restarted on an empty database is reported as lost
reports and a lost deployment, exit status 1) and that a bad option is refused by name.

Usage: fleet_load_test.py --build BUILD_DIR
"""
import os
import re
import stat
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_e2e  # noqa: E402
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)


def fields(out):
    """The `fleet: K=...` line as a dict of its key=value fields."""
    lines = [l for l in out.splitlines() if l.startswith("fleet: ")]
    if len(lines) != 1:
        raise AssertionError("expected one 'fleet:' line, got:\n" + out)
    return dict(re.findall(r"(\w+)=(\S+)", lines[0]))


class FleetLoadTool(unittest.TestCase):
    """The built fleet_load and picket-manager (also fleet_load_ha_test.py's base)."""
    @classmethod
    def setUpClass(cls):
        cls.tool = picket_e2e.binary("bench", "fleet", "fleet_load")
        cls.manager = picket_e2e.manager_bin()
        if not os.access(cls.tool, os.X_OK):
            raise unittest.SkipTest("bench/fleet/fleet_load not built (PICKET_BUILD_BENCH=OFF?)")
        if not os.access(cls.manager, os.X_OK):
            raise AssertionError("picket-manager not built: " + cls.manager)


class FleetLoadKillRestart(FleetLoadTool):

    def run_tool(self, k, manager, timeout=50):
        cmd = [self.tool, "--manager-bin", manager, "--sensors", str(k), "--interval", "1",
               "--soak", "3", "--kill-restart", "--connect-timeout", "30",
               "--deploy-timeout", "20"]
        t0 = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        took = time.monotonic() - t0
        print("fleet_load K=%d took %.1f s\n%s%s" % (k, took, p.stdout, p.stderr), flush=True)
        return p, fields(p.stdout)

    def test_all_reconnect_nothing_lost(self):
        p, f = self.run_tool(200, self.manager)
        self.assertEqual(p.returncode, 0, p.stderr)
        for key, want in [("K", "200"), ("connected", "200"), ("failed", "0"),
                          ("ended_early", "0"), ("report_write_failures", "0"),
                          ("applied", "200/200"), ("reconnected", "200/200"),
                          ("lost_reports", "0"), ("deployment_state_kept", "1")]:
            self.assertEqual(f[key], want, key)
        self.assertNotEqual(f["deploy_all_applied_ms"], "none")
        # Every report written before the kill phase was counted into run totals.
        self.assertEqual(f["reports_stored_total"], f["reports_sent_total"])
        sent = int(f["sent_at_kill"])
        before = int(f["stored_before_kill"])
        after = int(f["stored_after_restart"])
        # The kill phase sent one more interval of reports (200) after the first count.
        self.assertGreaterEqual(sent, int(f["reports_sent_total"]) + 200)
        self.assertGreaterEqual(after, before)
        self.assertLessEqual(after, sent)
        self.assertEqual(int(f["unstored_at_kill"]), sent - after)
        self.assertGreater(float(f["reconnect_s"]), 0)
        # picketctl (next to the manager) listed the sensors and the history and exited 0.
        self.assertGreaterEqual(float(f["picketctl_sensors_ms"]), 0)
        self.assertGreaterEqual(float(f["picketctl_history_ms"]), 0)

    def test_a_large_bundle_is_held_once(self):
        # 200 streams and a 4 MB bundle: the manager serializes it once and each stream's
        # ApplyBundle refers to those bytes. A copy per stream (and gRPC's serialization of
        # each) peaked at 919 MB here; 128 MB since.
        cmd = [self.tool, "--manager-bin", self.manager, "--sensors", "200", "--interval", "1",
               "--soak", "2", "--bundle-mb", "4", "--connect-timeout", "30",
               "--deploy-timeout", "40"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        print(p.stdout + p.stderr, flush=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        f = fields(p.stdout)
        self.assertEqual(f["applied"], "200/200")
        self.assertLess(float(f["end_hwm_mb"]), 400.0)

    def test_a_lost_database_is_reported(self):
        # The manager restarted on an empty database: everything stored before is gone.
        with tempfile.TemporaryDirectory(prefix="picket-fleetload-") as d:
            wrapper = os.path.join(d, "manager.sh")
            marker = os.path.join(d, "started")
            with open(wrapper, "w") as w:
                w.write("#!/bin/sh\n"
                        "# --listen ADDR --db PATH --insecure: the second start loses the db\n"
                        "if [ -e '%s' ]; then rm -f \"$4\" \"$4-wal\" \"$4-shm\"; fi\n"
                        "touch '%s'\n"
                        "exec '%s' \"$@\"\n" % (marker, marker, self.manager))
            os.chmod(wrapper, stat.S_IRWXU)
            p, f = self.run_tool(50, wrapper)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(f["connected"], "50")
        self.assertEqual(f["reconnected"], "50/50")
        self.assertEqual(f["deployment_state_kept"], "0")
        self.assertEqual(f["stored_after_restart"], "0")
        self.assertEqual(int(f["lost_reports"]), int(f["stored_before_kill"]))
        self.assertGreater(int(f["lost_reports"]), 0)

    def test_bad_option_is_named(self):
        p = subprocess.run([self.tool, "--manager-bin", self.manager, "--sensors", "12x"],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--sensors: '12x' is not a number", p.stderr)


if __name__ == "__main__":
    _, argv = picket_e2e.parse_args()
    picket_test.main(argv)
