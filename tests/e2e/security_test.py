#!/usr/bin/env python3
"""End-to-end security of the fleet link, on loopback only: a real picket-manager with TLS
from `picketctl pki` and an admin token, real picket-sensor processes replaying a pcap.

- the manager refuses to start without TLS unless --insecure, and --insecure off loopback;
- a sensor with its fleet certificate and one with an enrollment token connect;
- `picketctl sensor revoke` closes a sensor's stream at once; the sensor is refused when it
  reconnects (its certificate, its token), `picketctl sensors` shows it revoked and its metrics
  stop; `picket-manager --enroll` issues a new token and lets it back in;
- a sensor with a certificate of another CA, and one with a wrong token, never get in.

Usage: security_test.py --build BUILD_DIR   (runtime about 30 s)
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)
import picket_e2e  # noqa: E402
from picket_e2e import binary, poll  # noqa: E402


class Proc:
    """A process whose stderr goes to a file (so it never blocks on a full pipe)."""

    def __init__(self, tmp, name, args):
        self.log_path = os.path.join(tmp, name + ".log")
        self.log = open(self.log_path, "w")
        self.p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self.log)

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def wait_line(self, pattern, timeout=20):
        rx = re.compile(pattern)

        def found():
            m = rx.search(self.text())
            if not m and self.p.poll() is not None:
                raise AssertionError("exited %s:\n%s" % (self.p.returncode, self.text()))
            return m
        return poll(found, "/%s/ in %s" % (pattern, self.log_path), timeout)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()


class Security(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-security-")
        cls.procs = []
        pki = os.path.join(cls.tmp, "pki")
        other = os.path.join(cls.tmp, "other-ca")
        cls.pki = pki
        for args in (["pki", "init", pki, "--cn", "fleet CA"],
                     ["pki", "issue", pki, "--kind", "manager", "--name", "manager",
                      "--san", "127.0.0.1"],
                     ["pki", "issue", pki, "--kind", "sensor", "--name", "edge1"],
                     ["pki", "init", other, "--cn", "another CA"],
                     ["pki", "issue", other, "--kind", "sensor", "--name", "rogue"]):
            r = subprocess.run([binary("manager", "cli", "picketctl")] + args,
                               capture_output=True, text=True)
            assert r.returncode == 0, (args, r.stderr)
        # The rogue sensor trusts the fleet CA (to check the manager) and its own: the sensor
        # refuses to start with a certificate that does not chain to --ca.
        cls.both_cas = os.path.join(cls.tmp, "both-ca.crt")
        with open(cls.both_cas, "w") as out:
            for f in (os.path.join(other, "ca.crt"), os.path.join(pki, "ca.crt")):
                with open(f) as src:
                    out.write(src.read())
        cls.token_file = os.path.join(cls.tmp, "admin.token")
        with open(cls.token_file, "w") as f:
            f.write("e2e-admin-token-0123456789abcdef\n")
        os.chmod(cls.token_file, 0o600)
        cls.pcap = os.path.join(cls.tmp, "traffic.pcap")
        r = subprocess.run([binary("tools", "trafficgen", "picket-trafficgen"), "-o", cls.pcap,
                            "--seed", "3", "--sessions", "50"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        cls.db = os.path.join(cls.tmp, "fleet.db")
        cls.manager = cls.start("manager", [
            binary("manager", "picket-manager"), "--listen", "127.0.0.1:0", "--db", cls.db,
            "--tls-cert", os.path.join(pki, "manager.crt"),
            "--tls-key", os.path.join(pki, "manager.key"),
            "--client-ca", os.path.join(pki, "ca.crt"), "--admin-token-file", cls.token_file])
        port = cls.manager.wait_line(r"serving on .* \(port (\d+)\)").group(1)
        cls.addr = "127.0.0.1:" + port

    @classmethod
    def tearDownClass(cls):
        for p in reversed(cls.procs):
            p.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def start(cls, name, args):
        p = Proc(cls.tmp, name, args)
        cls.procs.append(p)
        return p

    def sensor(self, label, name, *auth):
        state = os.path.join(self.tmp, label)
        os.makedirs(state, exist_ok=True)
        return self.start(label, [
            binary("sensor", "picket-sensor"), "-r", self.pcap, "--pcap-loop", "0",
            "--pcap-rate", "200", "--workers", "1", "-l", state, "--state-dir", state,
            "--manager", self.addr, "--name", name, "--metrics-interval", "1"] + list(auth))

    def cert_auth(self, name, pki=None):
        pki = pki or self.pki
        return ["--tls-cert", os.path.join(pki, name + ".crt"),
                "--tls-key", os.path.join(pki, name + ".key"),
                "--ca", os.path.join(self.pki, "ca.crt")]

    def ctl(self, *args, expect=0):
        r = subprocess.run([binary("manager", "cli", "picketctl"), "--manager", self.addr,
                            "--ca", os.path.join(self.pki, "ca.crt"),
                            "--token-file", self.token_file, "--json"] + list(args),
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, expect, "%s: %s %s" % (args, r.stdout, r.stderr))
        return json.loads(r.stdout) if r.stdout.strip() else None

    def sensors(self):
        return {s["name"]: s for s in self.ctl("sensors")}

    def enroll(self, name):
        r = subprocess.run([binary("manager", "picket-manager"), "--db", self.db,
                            "--enroll", name], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        token = r.stdout.strip()
        self.assertEqual(len(token), 43)  # 32 random bytes, base64url
        return token

    def connected(self, name):
        return poll(lambda: self.sensors().get(name, {}).get("connected"), name + " to connect",
                    20)

    # ---- defaults: TLS unless --insecure, --insecure only on loopback

    def test_1_manager_refuses_plaintext_by_default(self):
        base = [binary("manager", "picket-manager"), "--db", os.path.join(self.tmp, "x.db")]
        r = subprocess.run(base + ["--listen", "127.0.0.1:0"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--tls-cert, --tls-key and --client-ca are required unless --insecure",
                      r.stderr)
        r = subprocess.run(base + ["--listen", "0.0.0.0:0", "--insecure"], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--insecure is refused on a non-loopback address ('0.0.0.0:0')", r.stderr)
        r = subprocess.run(base + ["--listen", "0.0.0.0:0", "--tls-cert",
                                   os.path.join(self.pki, "manager.crt"), "--tls-key",
                                   os.path.join(self.pki, "manager.key"), "--client-ca",
                                   os.path.join(self.pki, "ca.crt")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("an admin token (--admin-token-file) is required unless --insecure",
                      r.stderr)
        # A key file in a directory the service user may not enter is named as such, not as
        # missing (a pki directory not yet given to group picket).
        tls = ["--tls-cert", os.path.join(self.pki, "manager.crt"), "--tls-key",
               os.path.join(self.pki, "manager.key"), "--client-ca", os.path.join(self.pki, "ca.crt")]
        r = subprocess.run(base + ["--listen", "127.0.0.1:0"] + tls[:2] + [
            "--tls-key", os.path.join(self.tmp, "missing.key")] + tls[4:],
            capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--tls-key %s: no such file" % os.path.join(self.tmp, "missing.key"),
                      r.stderr)
        if os.geteuid() == 0 and shutil.which("setpriv"):
            # Readable certificates beside a key in a directory only root may enter.
            open_dir = tempfile.mkdtemp(prefix="picket-security-open-")
            try:
                os.chmod(open_dir, 0o755)
                for f in ("manager.crt", "ca.crt"):
                    shutil.copy(os.path.join(self.pki, f), open_dir)
                    os.chmod(os.path.join(open_dir, f), 0o644)
                locked = os.path.join(open_dir, "locked")
                os.mkdir(locked, 0o700)
                key = os.path.join(locked, "manager.key")
                shutil.copy(os.path.join(self.pki, "manager.key"), key)
                r = subprocess.run(
                    ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                     binary("manager", "picket-manager"), "--db", os.path.join(open_dir, "x.db"),
                     "--listen", "127.0.0.1:0", "--tls-cert", os.path.join(open_dir, "manager.crt"),
                     "--tls-key", key, "--client-ca", os.path.join(open_dir, "ca.crt")],
                    capture_output=True, text=True)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn("--tls-key %s: Permission denied" % key, r.stderr)
            finally:
                shutil.rmtree(open_dir)
        # Without the admin token, picketctl gets nothing.
        r = subprocess.run([binary("manager", "cli", "picketctl"), "--manager", self.addr,
                            "--ca", os.path.join(self.pki, "ca.crt"), "sensors"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 1)
        self.assertIn("UNAUTHENTICATED", r.stderr)

    # ---- unauthenticated sensors

    def test_2_foreign_certificate_and_wrong_token_never_connect(self):
        rogue = self.sensor("rogue", "rogue", "--tls-cert", os.path.join(self.tmp, "other-ca",
                                                                          "rogue.crt"),
                            "--tls-key", os.path.join(self.tmp, "other-ca", "rogue.key"),
                            "--ca", self.both_cas)
        self.enroll("edge3")
        wrong = self.sensor("wrong", "edge3", "--token", "not-the-token",
                            "--ca", os.path.join(self.pki, "ca.crt"))
        self.manager.wait_line(r"sensor 'edge3' from \S+ refused: bad enrollment token for "
                               r"sensor 'edge3'")
        wrong.wait_line(r"ended: bad enrollment token for sensor 'edge3'")
        time.sleep(2)  # several attempts of the rogue sensor (backoff 0.5 s, 1 s, ...)
        self.assertIsNone(rogue.p.poll(), rogue.text())  # still trying, never let in
        self.assertIsNone(wrong.p.poll(), wrong.text())
        listed = self.sensors()
        self.assertNotIn("rogue", listed)
        self.assertFalse(listed["edge3"]["connected"])
        self.assertEqual(listed["edge3"]["first_seen"], None)
        self.assertNotIn("agent: connected", rogue.text())
        self.assertNotIn("agent: connected", wrong.text())
        rogue.stop()
        wrong.stop()

    # ---- revocation

    def test_3_revoked_certificate_sensor_is_cut_off(self):
        edge1 = self.sensor("edge1", "edge1", *self.cert_auth("edge1"))
        self.connected("edge1")
        poll(lambda: self.ctl("sensor", "show", "edge1")["counters_timestamp"], "edge1 metrics",
             20)
        t0 = time.time()
        out = self.ctl("sensor", "revoke", "edge1")
        self.assertEqual(out["name"], "edge1")
        self.assertTrue(out["revoked_now"])
        self.assertTrue(out["disconnected"])
        # Closed at once, and refused when it comes back.
        edge1.wait_line(r"ended: the client certificate of sensor 'edge1' was revoked; issue it "
                        r"a new certificate \(picketctl pki issue\)", timeout=10)
        self.assertLess(time.time() - t0, 5)
        s = self.sensors()["edge1"]
        self.assertFalse(s["connected"])
        self.assertTrue(s["revoked"])
        # No more metrics from it.
        before = self.ctl("sensor", "show", "edge1")["counters_timestamp"]
        time.sleep(2.5)
        self.assertEqual(self.ctl("sensor", "show", "edge1")["counters_timestamp"], before)
        self.assertIsNone(edge1.p.poll())  # the sensor keeps inspecting on its own
        again = self.ctl("sensor", "revoke", "edge1")
        self.assertFalse(again["revoked_now"])
        self.ctl("sensor", "revoke", "nobody", expect=1)
        edge1.stop()

        # Re-enrollment lets the name back in with a new token; the certificate stays revoked.
        token = self.enroll("edge1")
        self.assertFalse(self.sensors()["edge1"]["revoked"])
        back = self.sensor("edge1-token", "edge1", "--token", token,
                           "--ca", os.path.join(self.pki, "ca.crt"))
        self.connected("edge1")
        back.stop()
        old_cert = self.sensor("edge1-cert", "edge1", *self.cert_auth("edge1"))
        old_cert.wait_line(r"ended: the client certificate of sensor 'edge1' was revoked")
        old_cert.stop()

    def test_4_revoked_token_sensor_is_cut_off(self):
        token = self.enroll("edge2")
        edge2 = self.sensor("edge2", "edge2", "--token", token,
                            "--ca", os.path.join(self.pki, "ca.crt"))
        self.connected("edge2")
        out = self.ctl("sensor", "revoke", "edge2")
        self.assertTrue(out["disconnected"])
        edge2.wait_line(r"ended: sensor 'edge2' is revoked \(re-enroll it to let it back in: "
                        r"picket-manager --enroll edge2\)", timeout=10)
        s = self.sensors()["edge2"]
        self.assertTrue(s["revoked"])
        self.assertFalse(s["connected"])
        edge2.stop()


def main():
    _, argv = picket_e2e.parse_args()
    picket_test.main(argv)


if __name__ == "__main__":
    main()
