#!/usr/bin/env python3
"""End-to-end, IDS mode (passive AF_PACKET capture): drop and reject rules as Suricata runs them
without IPS. A real picket-sensor listens on the client-side port of a router namespace (the
client - router - server namespaces of inline_test.py, routed without NFQUEUE); nothing is
inline, so no packet can be stopped:

- a drop rule's request reaches the server and is answered; its alert says "allowed";
- a reject rule's request reaches the server too, but the sensor answers it at once with a TCP
  RST to the client through a raw socket of the router namespace (Suricata's IDS-mode reject),
  so the client's connection is reset well before the server's (delayed) answer;
- rejectdst resets the server's side instead: the client gets no reset, the server's socket
  does (its log says so).

Skipped when not root or when namespaces are unavailable.

Usage: ids_reject_test.py --build BUILD_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)
import picket_e2e  # noqa: E402
from picket_e2e import eve_events, have_netns, sensor_bin  # noqa: E402
from inline_test import PORT, Topology, stop_sensor  # noqa: E402

# tcp-pkt: matched on the request's own packet. A stream rule would match in IDS mode only when
# the request's bytes are acknowledged and the client's next packet comes (Suricata's raw
# stream timing), which here is after the server's delayed answer.
RULES = r'''drop tcp-pkt any any -> any 8080 (msg:"dropped in IDS"; content:"/dropme"; sid:2;)
reject tcp-pkt any any -> any 8080 (msg:"rejected"; content:"/reject-src"; sid:3;)
rejectdst tcp-pkt any any -> any 8080 (msg:"rejected toward the server"; content:"/reject-dst"; sid:4;)
'''

# The server: answers after DELAY seconds (so that a reset from the sensor comes first), logs
# each request line and, when the client's side was reset under it, "reset <path>".
SERVER = r'''
import socket, sys, threading, time
port, log, delay = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
def note(line):
    with open(log, "a") as f:
        f.write(line + "\n")
def serve(c):
    path = "?"
    try:
        data = b""
        while b"\r\n\r\n" not in data:
            b = c.recv(4096)
            if not b:
                break
            data += b
        path = data.split(b" ")[1].decode() if data.count(b" ") >= 2 else "?"
        note("GET " + path)
        c.settimeout(delay + 2)
        time.sleep(delay)
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
        c.recv(1)
    except (ConnectionResetError, BrokenPipeError):
        note("reset " + path)
    except OSError:
        pass
    finally:
        c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", port))
s.listen(16)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
'''

DELAY = 1.5


def start_ids_sensor(topo, rules, outdir, start_timeout=60):
    cmd = [sensor_bin(), "-S", rules, "-l", outdir, "-k", "none", "--capture", "afpacket",
           "-i", "m0", "--set", "stats-interval=1"]
    log = open(os.path.join(outdir, "sensor.log"), "w")
    proc = topo.popen(topo.middle, cmd, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    deadline = time.monotonic() + start_timeout
    while time.monotonic() < deadline:
        with open(os.path.join(outdir, "sensor.log")) as f:
            text = f.read()
        if "running with" in text:
            return proc
        if proc.poll() is not None:
            raise RuntimeError("picket-sensor exited %d:\n%s" % (proc.returncode, text))
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise RuntimeError("picket-sensor did not start")


@unittest.skipUnless(have_netns("ethtool"), "needs root, ethtool and network namespaces")
class IdsReject(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="picket-idsrej-")
        self.rules = os.path.join(self.tmp, "ids.rules")
        with open(self.rules, "w") as f:
            f.write(RULES)
        self.topo = None
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if self.topo is not None:
            self.topo.delete()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_drop_alerts_and_reject_resets_in_ids_mode(self):
        topo = Topology("idsr", "forward")
        self.topo = topo
        topo.create()
        # Offloaded checksums would leave the sensor's RST copying a partial sum: off, as for
        # the bridge (sensor/capture/README.md, "Offloads").
        topo.ns(topo.client, ["ethtool", "-K", "c0", "tx", "off"])
        topo.ns(topo.middle, ["ethtool", "-K", "m0", "gro", "off"])
        reqlog = os.path.join(self.tmp, "requests.log")
        open(reqlog, "w").close()
        script = os.path.join(self.tmp, "server.py")
        with open(script, "w") as f:
            f.write(SERVER)
        server = topo.popen(topo.server, [sys.executable, script, str(PORT), reqlog, str(DELAY)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(server)
        deadline = time.monotonic() + 10
        while (":%d " % PORT) not in topo.ns(topo.server, ["ss", "-ltn"]).stdout:
            self.assertLess(time.monotonic(), deadline, "the server did not start")
            time.sleep(0.05)
        out = os.path.join(self.tmp, "out")
        os.makedirs(out)
        sensor = start_ids_sensor(topo, self.rules, out)
        self.procs.append(sensor)

        # A drop rule in IDS mode: the request goes through and is answered.
        r = topo.get(self.tmp, "/dropme", timeout=DELAY + 3)
        self.assertEqual(r["result"], "ok", r)
        self.assertEqual(r["len"], 2, r)
        # reject (rejectsrc): the client is reset at once, before the server answers.
        r = topo.get(self.tmp, "/reject-src", timeout=DELAY + 3)
        self.assertEqual(r["result"], "reset", r)
        self.assertLess(r["seconds"], DELAY, r)
        # rejectdst: the server's side is reset; the client is not (it waits for an answer
        # that the reset server never sends, or reads the close).
        r = topo.get(self.tmp, "/reject-dst", timeout=DELAY + 1)
        self.assertNotEqual(r["result"], "ok", r)
        time.sleep(DELAY + 0.5)
        self.assertEqual(stop_sensor(sensor), 0)

        with open(reqlog) as f:
            seen = f.read().split("\n")
        # Nothing was stopped: every request reached the server.
        for path in ("/dropme", "/reject-src", "/reject-dst"):
            self.assertIn("GET " + path, seen)
        self.assertIn("reset /reject-dst", seen)
        self.assertNotIn("reset /dropme", seen)

        events = eve_events(os.path.join(out, "eve.json"))
        alerts = {}
        for ev in events:
            if ev.get("event_type") == "alert":
                alerts.setdefault(ev["alert"]["signature_id"], []).append(ev)
        self.assertEqual(sorted(alerts), [2, 3, 4], alerts)
        for sid in (2, 3, 4):
            self.assertEqual(len(alerts[sid]), 1, alerts[sid])
            self.assertEqual(alerts[sid][0]["alert"]["action"], "allowed")
        with open(os.path.join(out, "sensor.log")) as f:
            self.assertNotIn("without resetting", f.read())


if __name__ == "__main__":
    _, argv = picket_e2e.parse_args()
    picket_test.main(argv)
