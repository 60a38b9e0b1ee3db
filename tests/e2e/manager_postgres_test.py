#!/usr/bin/env python3
"""picket-manager on the PostgreSQL store (docs/fleet.md "The store on PostgreSQL"), on loopback:
a real PostgreSQL 15 server of the test's own (tests/support pg_test_server: initdb and pg_ctl
in a temporary directory), a fleet enrolled into an SQLite file, then

- `picket-manager migrate --from sqlite:FILE` copies it (the DSN from $PICKET_DB_DSN, with a
  password that appears nowhere in the output);
- picket-manager serves from $PICKET_DB_DSN alone (no --db; its log names the database with the
  password as ***) and picketctl lists the migrated sensor;
- a second migrate into the now non-empty database is refused, exit 1, naming the table.

Skipped when the PostgreSQL server binaries are absent.
Usage: manager_postgres_test.py --build BUILD_DIR   (runtime about 5 s)
"""
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402
import picket_e2e  # noqa: E402
from picket_e2e import binary, poll  # noqa: E402

PG_BIN = os.environ.get("PICKET_PG_BIN", "/usr/lib/postgresql/15/bin")
SECRET = "n0t-in-any-log"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ManagerOnPostgres(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(os.path.join(PG_BIN, "initdb"), os.X_OK):
            raise unittest.SkipTest("PostgreSQL server binaries not found in " + PG_BIN)
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-pg-")
        cls.state = os.path.join(cls.tmp, "pg.state")
        cls.server = binary("tests", "support", "pg_test_server")
        r = subprocess.run([cls.server, "start", cls.state], capture_output=True, text=True,
                           timeout=120)
        if r.returncode != 0 or not os.path.exists(cls.state):
            raise unittest.SkipTest("no PostgreSQL test server: " + r.stdout + r.stderr)
        port = open(cls.state).read().split()[0]
        # Trust authentication ignores the password: it is there to be kept out of the logs.
        cls.dsn = "postgresql://picket:%s@127.0.0.1:%s/postgres" % (SECRET, port)
        cls.env = dict(os.environ, PICKET_DB_DSN=cls.dsn)

    @classmethod
    def tearDownClass(cls):
        subprocess.run([cls.server, "stop", cls.state], timeout=120)

    def manager(self, *args, env=None):
        return subprocess.run([picket_e2e.manager_bin()] + list(args), capture_output=True,
                              text=True, timeout=120, env=env or self.env)

    def test_migrate_serve_and_refuse_a_second_copy(self):
        fleet = os.path.join(self.tmp, "fleet.db")
        r = self.manager("--db", fleet, "--enroll", "edge-1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout.strip(), r"^[A-Za-z0-9_-]{20,}$")

        r = self.manager("migrate", "--from", "sqlite:" + fleet)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"(?m)^sensors +1 rows$")
        self.assertIn("row counts verified", r.stdout)
        self.assertNotIn(SECRET, r.stdout + r.stderr)
        self.assertIn("postgresql://picket:***@127.0.0.1:", r.stdout)

        port = free_port()
        log_path = os.path.join(self.tmp, "manager.log")
        with open(log_path, "w") as log:
            p = subprocess.Popen([picket_e2e.manager_bin(), "--listen", "127.0.0.1:%d" % port,
                                  "--insecure"], stdout=subprocess.DEVNULL, stderr=log,
                                 env=self.env)
        try:
            poll(lambda: "serving on" in open(log_path).read(), "manager serving", 30)
            out = subprocess.run([picket_e2e.picketctl_bin(), "--manager",
                                  "127.0.0.1:%d" % port, "--insecure", "--json", "sensors"],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn('"edge-1"', out.stdout)
        finally:
            p.terminate()
            p.wait(timeout=30)
        text = open(log_path).read()
        self.assertNotIn(SECRET, text)
        self.assertRegex(text, r"database postgresql://picket:\*\*\*@127\.0\.0\.1:\d+/postgres")

        r = self.manager("migrate", "--from", "sqlite:" + fleet)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("the target is not empty (table sensors has 1 rows)", r.stderr)
        self.assertNotIn(SECRET, r.stdout + r.stderr)


if __name__ == "__main__":
    paths, argv = picket_e2e.parse_args()
    picket_test.main(argv)
