#!/usr/bin/env python3
"""End-to-end bootstrap enrollment (docs/fleet.md "Enrolling sensors"), on loopback only: a
real picket-manager with TLS and the fleet CA key, real picket-sensor processes replaying a
pcap with --bootstrap-token-file and no certificate.

- one token (--uses 2 --labels site=lab) enrolls edge-a and edge-b: each generates its own key
  (0600, in its own state directory) and gets its own certificate (CN = its name, different
  serials); both are listed with site=lab and report metrics;
- edge-b's key and certificate cannot report as edge-a;
- a used-up token, an expired one, an unknown one and a name outside the token's pattern are
  refused with the manager's reason, and the sensor exits 1; a fresh token cannot give a
  sensor in use a second key;
- a revoked sensor cannot re-enroll with a fresh token until `picketctl sensor readmit`; its
  old certificate stays refused;
- a restarted sensor reuses its stored key and certificate (the token's uses do not change);
- a manager without --ca-key refuses enrollment (FAILED_PRECONDITION);
- with --enroll-validity 30s the sensor renews its certificate (new serial, new key) and
  reconnects with it.

Usage: enroll_test.py --build BUILD_DIR   (runtime about 60 s)
"""
import json
import os
import re
import shutil
import signal
import socket
import ssl
import stat
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

    def wait_exit(self, timeout=20):
        try:
            return self.p.wait(timeout=timeout)
        finally:
            self.log.flush()

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        if not self.log.closed:
            self.log.close()


def cert_facts(path):
    """(serial, CN) of a PEM certificate, read by Python's own ssl module."""
    d = ssl._ssl._test_decode_cert(path)
    cn = [v for rdn in d["subject"] for (k, v) in rdn if k == "commonName"]
    return d["serialNumber"], cn[0] if cn else None


class Enroll(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-enroll-")
        cls.procs = []
        cls.pki = os.path.join(cls.tmp, "pki")
        for args in (["pki", "init", cls.pki, "--cn", "fleet CA"],
                     ["pki", "issue", cls.pki, "--kind", "manager", "--name", "manager",
                      "--san", "127.0.0.1"]):
            r = subprocess.run([binary("manager", "cli", "picketctl")] + args,
                               capture_output=True, text=True)
            assert r.returncode == 0, (args, r.stderr)
        cls.ca = os.path.join(cls.pki, "ca.crt")
        cls.admin_token = os.path.join(cls.tmp, "admin.token")
        with open(cls.admin_token, "w") as f:
            f.write("e2e-admin-token-0123456789abcdef\n")
        os.chmod(cls.admin_token, 0o600)
        cls.pcap = os.path.join(cls.tmp, "traffic.pcap")
        r = subprocess.run([binary("tools", "trafficgen", "picket-trafficgen"), "-o", cls.pcap,
                            "--seed", "3", "--sessions", "50"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        cls.addr = cls.start_manager("manager", "fleet.db", "--ca-key",
                                     os.path.join(cls.pki, "ca.key"), "--enroll-validity", "1d")
        cls.token = cls.ctl_as(cls.addr, "enroll", "token", "create", "--uses", "2",
                               "--labels", "site=lab")["token"]
        cls.sensors_started = {}

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

    @classmethod
    def start_manager(cls, label, db, *extra):
        m = cls.start(label, [
            binary("manager", "picket-manager"), "--listen", "127.0.0.1:0",
            "--db", os.path.join(cls.tmp, db),
            "--tls-cert", os.path.join(cls.pki, "manager.crt"),
            "--tls-key", os.path.join(cls.pki, "manager.key"),
            "--client-ca", cls.ca, "--admin-token-file", cls.admin_token] + list(extra))
        port = m.wait_line(r"serving on .* \(port (\d+)\)").group(1)
        return "127.0.0.1:" + port

    @classmethod
    def ctl_as(cls, addr, *args, expect=0):
        r = subprocess.run([binary("manager", "cli", "picketctl"), "--manager", addr,
                            "--ca", cls.ca, "--token-file", cls.admin_token, "--json"] +
                           list(args), capture_output=True, text=True, timeout=30)
        assert r.returncode == expect, "%s: %s %s" % (args, r.stdout, r.stderr)
        return json.loads(r.stdout) if r.stdout.strip() else r.stderr

    def ctl(self, *args, expect=0):
        return self.ctl_as(self.addr, *args, expect=expect)

    def token_file(self, label, token):
        path = os.path.join(self.tmp, label + ".token")
        with open(path, "w") as f:
            f.write(token + "\n")
        os.chmod(path, 0o600)
        return path

    def state(self, label):
        d = os.path.join(self.tmp, "state-" + label)
        os.makedirs(d, exist_ok=True)
        return d

    def sensor(self, label, name, *auth, addr=None, state_dir=None):
        state = state_dir or self.state(label)
        return self.start(label, [
            binary("sensor", "picket-sensor"), "-r", self.pcap, "--pcap-loop", "0",
            "--pcap-rate", "200", "--workers", "1", "-l", state, "--state-dir", state,
            "--manager", addr or self.addr, "--name", name, "--metrics-interval", "1"] +
            list(auth))

    def bootstrap(self, label, name, token, addr=None):
        return self.sensor(label, name, "--bootstrap-token-file", self.token_file(label, token),
                           "--ca", self.ca, addr=addr)

    def token_info(self, token_id, addr=None):
        tokens = self.ctl_as(addr or self.addr, "enroll", "token", "list")["tokens"]
        return {t["id"]: t for t in tokens}[token_id]

    def refused(self, proc, message):
        rc = proc.wait_exit()
        self.assertEqual(rc, 1, proc.text())
        self.assertIn(message, proc.text())

    # ------------------------------------------------------------------------------------

    def test_01_one_token_enrolls_two_sensors_each_with_its_own_identity(self):
        a = self.bootstrap("edge-a", "edge-a", self.token)
        b = self.bootstrap("edge-b", "edge-b", self.token)
        for p in (a, b):
            p.wait_line(r"agent: enrolled as '.*' with bootstrap token: certificate \w+, "
                        r"labels site=lab")
            p.wait_line(r"agent: connected to manager")
        facts = {}
        for name in ("edge-a", "edge-b"):
            key = os.path.join(self.state(name), "tls", "sensor.key")
            crt = os.path.join(self.state(name), "tls", "sensor.crt")
            self.assertEqual(stat.S_IMODE(os.stat(key).st_mode), 0o600)
            with open(key) as f:
                self.assertIn("-----BEGIN PRIVATE KEY-----", f.read())
            facts[name] = cert_facts(crt)
            self.assertEqual(facts[name][1], name)
        self.assertNotEqual(facts["edge-a"][0], facts["edge-b"][0])
        # The key never left the node: the manager's log and database do not hold it.
        with open(os.path.join(self.state("edge-a"), "tls", "sensor.key")) as f:
            body = f.read().split("\n")[1]
        with open(os.path.join(self.tmp, "manager.log")) as f:
            self.assertNotIn(body, f.read())
        for name in ("edge-a", "edge-b"):
            poll(lambda: self.ctl("sensor", "show", name)["counters_timestamp"],
                 name + " metrics", 20)
        sensors = {s["name"]: s for s in self.ctl("sensors")}
        for name in ("edge-a", "edge-b"):
            self.assertEqual(sensors[name]["labels"], {"site": "lab"})
            self.assertTrue(sensors[name]["connected"])
        info = self.token_info(self.token.split(".")[0])
        self.assertEqual((info["used"], info["uses"], info["uses_left"], info["state"]),
                         (2, 2, 0, "used_up"))
        self.assertEqual(info["labels"], {"site": "lab"})
        self.assertNotIn("token", info)
        self.assertNotIn(self.token.split(".")[1], json.dumps(self.ctl("enroll", "token", "list")))

    def test_02_another_nodes_key_cannot_report_as_edge_a(self):
        tls = os.path.join(self.state("edge-b"), "tls")
        p = self.sensor("impostor", "edge-a", "--tls-cert", os.path.join(tls, "sensor.crt"),
                        "--tls-key", os.path.join(tls, "sensor.key"), "--ca", self.ca)
        p.wait_line(r"ended: client certificate is for sensor 'edge-b', Hello says 'edge-a'")
        p.stop()
        # Nor can its state directory be used under another name.
        copy = os.path.join(self.tmp, "state-copy-of-edge-b")
        shutil.copytree(self.state("edge-b"), copy, symlinks=True)
        p = self.sensor("edge-b-as-a", "edge-a", "--bootstrap-token-file",
                        self.token_file("edge-b-as-a", self.token), "--ca", self.ca,
                        state_dir=copy)
        self.refused(p, "is the certificate of sensor 'edge-b', not of --name 'edge-a'")

    def test_03_used_up_token_is_refused(self):
        p = self.bootstrap("edge-c", "edge-c", self.token)
        self.refused(p, "enrollment refused: PERMISSION_DENIED: bootstrap token '%s' is used "
                        "up (2 of 2 uses)" % self.token.split(".")[0])
        self.assertFalse(os.path.exists(os.path.join(self.state("edge-c"), "tls")))
        self.assertNotIn("edge-c", [s["name"] for s in self.ctl("sensors")])
        # A fresh token does not give a sensor in use a second key: only new or readmitted names.
        fresh = self.ctl("enroll", "token", "create")
        p = self.bootstrap("edge-b-twin", "edge-b", fresh["token"])
        self.refused(p, "enrollment refused: PERMISSION_DENIED: sensor 'edge-b' already exists; "
                        "to give it a new key, revoke and readmit it first")
        self.assertEqual(self.token_info(fresh["id"])["used"], 0)

    def test_04_expired_unknown_and_pattern_refusals(self):
        expiring = self.ctl("enroll", "token", "create", "--ttl", "1s")
        time.sleep(1.5)
        self.assertEqual(self.token_info(expiring["id"])["state"], "expired")
        p = self.bootstrap("edge-d", "edge-d", expiring["token"])
        self.refused(p, "enrollment refused: PERMISSION_DENIED: bootstrap token '%s' expired "
                        "at " % expiring["id"])
        p = self.bootstrap("edge-e", "edge-e", "zzzzzz9." + "A" * 43)
        self.refused(p, "enrollment refused: UNAUTHENTICATED: bootstrap token 'zzzzzz9' unknown")
        wrong_secret = self.token.split(".")[0] + "." + "B" * 43
        p = self.bootstrap("edge-f", "edge-f", wrong_secret)
        self.refused(p, "enrollment refused: UNAUTHENTICATED: bootstrap token '%s' unknown"
                     % self.token.split(".")[0])
        patterned = self.ctl("enroll", "token", "create", "--name-pattern", "edge-[0-9]+")
        p = self.bootstrap("edge-x", "edge-x", patterned["token"])
        self.refused(p, "enrollment refused: PERMISSION_DENIED: sensor name 'edge-x' does not "
                        "match the name pattern 'edge-[0-9]+' of bootstrap token '%s'"
                     % patterned["id"])
        self.assertEqual(self.token_info(patterned["id"])["used"], 0)
        p = self.bootstrap("edge-7", "edge-7", patterned["token"])
        p.wait_line(r"agent: connected to manager")
        p.stop()
        revoked = self.ctl("enroll", "token", "create")
        self.assertTrue(self.ctl("enroll", "token", "revoke", revoked["id"])["revoked_now"])
        p = self.bootstrap("edge-g", "edge-g", revoked["token"])
        self.refused(p, "enrollment refused: PERMISSION_DENIED: bootstrap token '%s' is revoked"
                     % revoked["id"])

    def test_05_revoked_sensor_cannot_reenroll_until_readmitted(self):
        self.ctl("sensor", "revoke", "edge-a")
        old = [p for p in self.procs if p.log_path.endswith("/edge-a.log")][0]
        old.wait_line(r"ended: sensor 'edge-a' is revoked|the client certificate of sensor "
                      r"'edge-a' was revoked", timeout=15)
        old.stop()
        fresh = self.ctl("enroll", "token", "create")
        p = self.bootstrap("edge-a-again", "edge-a", fresh["token"])
        self.refused(p, "enrollment refused: PERMISSION_DENIED: sensor 'edge-a' is revoked; "
                        "readmit it first: picketctl sensor readmit edge-a")
        self.assertEqual(self.token_info(fresh["id"])["used"], 0)
        self.assertTrue(self.ctl("sensor", "readmit", "edge-a")["readmitted_now"])
        # Its old certificate stays refused after the readmission.
        p = self.sensor("edge-a-old", "edge-a", "--bootstrap-token-file",
                        self.token_file("edge-a-old", fresh["token"]), "--ca", self.ca,
                        state_dir=self.state("edge-a"))
        p.wait_line(r"ended: the client certificate of sensor 'edge-a' was revoked")
        p.stop()
        p = self.bootstrap("edge-a-again2", "edge-a", fresh["token"])
        p.wait_line(r"agent: connected to manager")
        self.assertEqual(self.token_info(fresh["id"])["used"], 1)
        self.assertFalse({s["name"]: s for s in self.ctl("sensors")}["edge-a"]["revoked"])
        p.stop()

    def test_06_restarted_sensor_reuses_its_identity(self):
        b = [p for p in self.procs if p.log_path.endswith("/edge-b.log")][0]
        b.stop()
        crt = os.path.join(self.state("edge-b"), "tls", "sensor.crt")
        with open(crt) as f:
            before = f.read()
        used = self.token_info(self.token.split(".")[0])["used"]
        p = self.bootstrap("edge-b", "edge-b", self.token)
        p.wait_line(r"agent: using the enrolled identity in .*/tls \(certificate \w+\)")
        p.wait_line(r"agent: connected to manager")
        with open(crt) as f:
            self.assertEqual(f.read(), before)
        self.assertEqual(self.token_info(self.token.split(".")[0])["used"], used)
        self.assertNotIn("enrolled as", p.text())
        p.stop()

    def test_07_enrollment_off_without_ca_key(self):
        addr = self.start_manager("manager-no-ca-key", "nokey.db")
        token = self.ctl_as(addr, "enroll", "token", "create")["token"]
        p = self.bootstrap("edge-h", "edge-h", token, addr=addr)
        self.refused(p, "enrollment refused: FAILED_PRECONDITION: enrollment is not configured "
                        "on this manager: it has no CA key (tls.ca-key in manager.yaml or "
                        "--ca-key)")

    def test_08_short_lived_certificate_is_renewed(self):
        addr = self.start_manager("manager-short", "short.db", "--ca-key",
                                  os.path.join(self.pki, "ca.key"), "--enroll-validity", "30s")
        created = self.ctl_as(addr, "enroll", "token", "create")
        p = self.bootstrap("edge-r", "edge-r", created["token"], addr=addr)
        p.wait_line(r"agent: connected to manager")
        crt = os.path.join(self.state("edge-r"), "tls", "sensor.crt")
        first = cert_facts(crt)[0]
        key = os.path.join(self.state("edge-r"), "tls", "sensor.key")
        with open(key) as f:
            key_before = f.read()
        # 30 s + 3 s backdate: due once 11 s are left, about 19 s after the enrollment.
        p.wait_line(r"agent: certificate renewed: \w+", timeout=40)
        poll(lambda: len(re.findall(r"agent: connected to manager", p.text())) >= 2,
             "reconnect with the renewed certificate", 20)
        self.assertNotEqual(cert_facts(crt)[0], first)
        with open(key) as f:
            self.assertNotEqual(f.read(), key_before)
        self.assertEqual(stat.S_IMODE(os.stat(key).st_mode), 0o600)
        self.assertEqual(self.token_info(created["id"], addr=addr)["used"], 1)
        # The previous key was removed with its directory.
        self.assertEqual(len([d for d in os.listdir(self.state("edge-r"))
                              if d.startswith("tls.")]), 1)
        p.stop()

    def test_09_first_choice_away_enrolls_through_another_replica(self):
        # --manager with two addresses: the sensor's first choice (FNV-1a 64 of its name mod
        # 2, sensor/agent first_choice) is a port nothing listens on; it must enroll through
        # the other address at once, not retry the dead one with its backoff.
        def first_choice(name, n):
            h = 14695981039346656037
            for c in name.encode():
                h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
            return h % n
        name = next(n for n in ("edge-%d" % i for i in range(20, 60)) if first_choice(n, 2) == 0)
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        dead = "127.0.0.1:%d" % s.getsockname()[1]
        s.close()
        created = self.ctl_as(self.addr, "enroll", "token", "create")
        p = self.bootstrap(name, name, created["token"], addr=dead + "," + self.addr)
        p.wait_line(r"agent: enrollment: manager %s unavailable: .*; trying %s"
                    % (re.escape(dead), re.escape(self.addr)))
        p.wait_line(r"agent: enrolled as '%s' with bootstrap token" % name)
        p.wait_line(r"agent: connected to manager")
        self.assertEqual(self.token_info(created["id"])["used"], 1)
        p.stop()


def main():
    _, argv = picket_e2e.parse_args()
    picket_test.main(argv)


if __name__ == "__main__":
    main()
