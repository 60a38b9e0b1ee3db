#!/usr/bin/env python3
"""bench/fleet/fleet_load small with --managers 2 --kill-replica: a PostgreSQL server of the
tool's own (Debian's binaries), two picket-manager replicas on one database in it, 200 simulated
sensor streams spread over them (stream i on replica i mod 2), a deploy through replica r0 that
every stream applies, then a kill -9 of the leader replica: its 100 streams fail over to the
other replica (the next address in their list), nothing stored is lost, and a second deploy
through the survivor reaches all 200 (issue #26 "Figures"; the 2,000 and 20,000-stream runs are
bench/fleet/run.sh --ha / --ha-20k).

Checks the exact figures of the result line, and that the tool says so when the PostgreSQL
binaries are absent (exit 3) and refuses --managers 2 with --kill-restart. Skips (exit 77) when
the PostgreSQL server binaries are absent or the bench is not built.

Usage: fleet_load_ha_test.py --build BUILD_DIR
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_e2e  # noqa: E402
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)

PG_BIN = os.environ.get("PICKET_PG_BIN", "/usr/lib/postgresql/15/bin")

# The tool's line parser and the built binaries, shared with the one-manager test.
from fleet_load_test import FleetLoadTool, fields  # noqa: E402


class FleetLoadTwoReplicas(FleetLoadTool):

    def test_leader_killed_its_streams_fail_over_nothing_lost(self):
        if not all(os.access(os.path.join(PG_BIN, b), os.X_OK) for b in ("initdb", "pg_ctl")):
            self.skipTest("PostgreSQL server binaries not found in " + PG_BIN)
        cmd = [self.tool, "--manager-bin", self.manager, "--sensors", "200", "--managers", "2",
               "--kill-replica", "--interval", "1", "--soak", "3", "--connect-timeout", "30",
               "--deploy-timeout", "20"]
        t0 = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=100)
        print("fleet_load took %.1f s\n%s%s" % (time.monotonic() - t0, p.stdout, p.stderr),
              flush=True)
        if p.returncode == 3 and "needs PostgreSQL binaries" in p.stderr:
            self.skipTest(p.stderr.strip())
        f = fields(p.stdout)
        self.assertEqual(p.returncode, 0, p.stderr)
        for key, want in [("K", "200"), ("managers", "2"), ("connected", "200"), ("failed", "0"),
                          ("ended_early", "0"), ("report_write_failures", "0"),
                          ("applied", "200/200"), ("killed_role", "leader"),
                          # stream i on replica i mod 2: 100 on the killed one
                          ("reconnected", "100/100"), ("other_reconnects", "0"),
                          ("lost_reports", "0"), ("deployment_state_kept", "1"),
                          ("applied2", "200/200")]:
            self.assertEqual(f[key], want, key)
        self.assertIn(f["killed"], ("r0", "r1"))
        self.assertNotEqual(f["deploy_all_applied_ms"], "none")
        self.assertNotEqual(f["deploy2_all_applied_ms"], "none")
        # Every report written before the kill phase was counted into run totals, whichever
        # replica stored it.
        self.assertEqual(f["reports_stored_total"], f["reports_sent_total"])
        sent = int(f["sent_at_kill"])
        before = int(f["stored_before_kill"])
        after = int(f["stored_after_restart"])
        self.assertGreaterEqual(sent, int(f["reports_sent_total"]) + 200)
        self.assertGreaterEqual(after, before)
        self.assertLessEqual(after, sent)
        self.assertEqual(int(f["unstored_at_kill"]), sent - after)
        failover = float(f["failover_s"])
        self.assertGreater(failover, 0)
        self.assertEqual(f["reconnect_s"], f["failover_s"])
        self.assertGreater(float(f["reconnect_median_s"]), 0)
        self.assertLessEqual(float(f["reconnect_median_s"]), failover)
        for key in ("mgr0_cpu_pct", "mgr1_cpu_pct", "pg_cpu_pct"):
            self.assertGreater(float(f[key]), 0, key)
        for key in ("mgr0_rss_mb", "mgr1_rss_mb"):
            self.assertGreater(float(f[key]), 1, key)

    def test_without_postgresql_binaries_it_says_so(self):
        env = dict(os.environ, PICKET_PG_BIN="/nonexistent/postgresql/bin")
        p = subprocess.run([self.tool, "--manager-bin", self.manager, "--sensors", "2",
                            "--managers", "2"], capture_output=True, text=True, timeout=30,
                           env=env)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("--managers 2 needs PostgreSQL binaries", p.stderr)
        self.assertNotIn("fleet: ", p.stdout)

    def test_replicas_go_with_kill_replica_only(self):
        for args, msg in [(["--managers", "2", "--kill-restart"], "not --kill-restart"),
                          (["--kill-replica"], "--kill-replica needs --managers 2 or more"),
                          (["--managers", "0"], "must be above 0")]:
            p = subprocess.run([self.tool, "--manager-bin", self.manager] + args,
                               capture_output=True, text=True, timeout=10)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(msg, p.stderr, args)


if __name__ == "__main__":
    _, argv = picket_e2e.parse_args()
    picket_test.main(argv)
