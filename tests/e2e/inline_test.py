#!/usr/bin/env python3
"""End-to-end, inline (IPS): a real picket-sensor between a client and an HTTP server, in three
network namespaces the test creates and removes (client - sensor - server), for both inline
modes:

- nfqueue: the sensor namespace routes; iptables FORWARD -j NFQUEUE --queue-num 0
  --queue-bypass hands every forwarded packet to the sensor.
- afpacket-inline: the sensor namespace bridges m0 and m1 itself (no kernel bridge); tx checksum
  offload is off on the endpoints and GRO on the bridge ports, as sensor/capture/README.md says.

Checks: a benign GET passes with the right bytes (sha256 of a served file), a request matching
a drop rule (http.uri and a plain content rule) never reaches the server (its request log) and
the next benign connection works, a reject rule resets the client's connection at once, ping
passes, eve.json has the blocked alerts with Suricata's verdict object and the stats the ips.*
and capture.inline.* counters. Then the sensor is killed with SIGKILL: with --queue-bypass
NFQUEUE traffic keeps flowing, without it (and on the AF_PACKET bridge) it stops.

Skipped when not root or when namespaces are unavailable. The namespace helpers are also used
by bench/inline/inline_latency.py.

Usage: inline_test.py --build BUILD_DIR
"""
import hashlib
import json
import os
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
from picket_e2e import eve_events, have_netns, sensor_bin  # noqa: E402

PORT = 8080

RULES = r'''drop http any any -> any any (msg:"evil uri"; http.uri; content:"/evil"; sid:1;)
drop tcp any any -> any 8080 (msg:"evil header"; content:"X-Evil-Header"; sid:2;)
reject tcp any any -> any 8080 (msg:"rejected uri"; content:"/reject"; sid:3;)
'''

# The server: serves ROOT, appends each request line to LOG (flushed at once).
SERVER = r'''
import http.server, sys
port, log, root = int(sys.argv[1]), sys.argv[2], sys.argv[3]
class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=root, **k)
    def log_message(self, fmt, *args):
        with open(log, "a") as f:
            f.write(self.requestline + "\n")
http.server.ThreadingHTTPServer(("0.0.0.0", port), Handler).serve_forever()
'''

# The client: one HTTP/1.0 request, prints what happened as JSON.
CLIENT = r'''
import hashlib, json, socket, sys, time

host, port, path, header, timeout = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5])
t0 = time.monotonic()
out = {}
try:
    s = socket.create_connection((host, port), timeout=timeout)
    req = "GET %s HTTP/1.0\r\nHost: server\r\n%s\r\n" % (path, header + "\r\n" if header else "")
    s.sendall(req.encode())
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    head, _, body = data.partition(b"\r\n\r\n")
    out = {"result": "ok", "status": int(head.split()[1]), "len": len(body),
           "sha256": hashlib.sha256(body).hexdigest()}
except ConnectionResetError:
    out = {"result": "reset"}
except socket.timeout:
    out = {"result": "timeout"}
except OSError as e:
    out = {"result": "error", "error": str(e)}
out["seconds"] = time.monotonic() - t0
print(json.dumps(out))
'''


def run(cmd, check=True, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    return r


class Topology:
    """client c0 <-> m0 [sensor] m1 <-> s0 server. mode "nfqueue": the sensor namespace routes
    10.78.1.0/24 <-> 10.78.2.0/24; "bridge": one subnet 10.78.3.0/24 bridged by the sensor
    (afpacket-inline); "kbridge": the same with a kernel bridge (a baseline); "forward": the
    routed namespaces without NFQUEUE (a baseline)."""

    def __init__(self, tag, mode):
        base = "picket-%s-%d-" % (tag, os.getpid())
        self.client, self.middle, self.server = base + "c", base + "m", base + "s"
        self.mode = mode
        routed = mode in ("nfqueue", "forward")
        self.server_ip = "10.78.2.2" if routed else "10.78.3.2"
        self.client_ip = "10.78.1.2" if routed else "10.78.3.1"

    def names(self):
        return [self.client, self.middle, self.server]

    def ns(self, name, cmd, check=True, **kw):
        return run(["ip", "netns", "exec", name] + cmd, check=check, **kw)

    def popen(self, name, cmd, **kw):
        return subprocess.Popen(["ip", "netns", "exec", name] + cmd, **kw)

    def create(self):
        self.delete()
        for n in self.names():
            run(["ip", "netns", "add", n])
            self.ns(n, ["ip", "link", "set", "lo", "up"])
            # No IPv6 chatter (router solicitations, DAD) in the counts.
            self.ns(n, ["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"])
            self.ns(n, ["sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1"])
        run(["ip", "link", "add", "c0", "netns", self.client, "type", "veth", "peer", "name", "m0",
             "netns", self.middle])
        run(["ip", "link", "add", "m1", "netns", self.middle, "type", "veth", "peer", "name", "s0",
             "netns", self.server])
        for n, dev in ((self.client, "c0"), (self.middle, "m0"), (self.middle, "m1"),
                       (self.server, "s0")):
            self.ns(n, ["ip", "link", "set", dev, "up"])
        if self.mode in ("nfqueue", "forward"):
            self.ns(self.client, ["ip", "addr", "add", "10.78.1.2/24", "dev", "c0"])
            self.ns(self.client, ["ip", "route", "add", "default", "via", "10.78.1.1"])
            self.ns(self.middle, ["ip", "addr", "add", "10.78.1.1/24", "dev", "m0"])
            self.ns(self.middle, ["ip", "addr", "add", "10.78.2.1/24", "dev", "m1"])
            self.ns(self.middle, ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"])
            self.ns(self.server, ["ip", "addr", "add", "10.78.2.2/24", "dev", "s0"])
            self.ns(self.server, ["ip", "route", "add", "default", "via", "10.78.2.1"])
        else:
            self.ns(self.client, ["ip", "addr", "add", "10.78.3.1/24", "dev", "c0"])
            self.ns(self.server, ["ip", "addr", "add", "10.78.3.2/24", "dev", "s0"])
            # The frames are read before a veth fills in an offloaded checksum, and GRO makes
            # frames larger than the MTU: sensor/capture/README.md, "Offloads".
            self.ns(self.client, ["ethtool", "-K", "c0", "tx", "off"])
            self.ns(self.server, ["ethtool", "-K", "s0", "tx", "off"])
            self.ns(self.middle, ["ethtool", "-K", "m0", "gro", "off"])
            self.ns(self.middle, ["ethtool", "-K", "m1", "gro", "off"])
            if self.mode == "kbridge":
                self.ns(self.middle, ["ip", "link", "add", "br0", "type", "bridge",
                                      "forward_delay", "0"])
                self.ns(self.middle, ["ip", "link", "set", "m0", "master", "br0"])
                self.ns(self.middle, ["ip", "link", "set", "m1", "master", "br0"])
                self.ns(self.middle, ["ip", "link", "set", "br0", "up"])

    def nfqueue_rule(self, bypass, add=True):
        cmd = ["iptables", "-A" if add else "-D", "FORWARD", "-j", "NFQUEUE", "--queue-num", "0"]
        if bypass:
            cmd.append("--queue-bypass")
        self.ns(self.middle, cmd)

    def delete(self):
        for n in self.names():
            subprocess.run(["ip", "netns", "del", n], capture_output=True)

    def ping(self, count=3, interval=0.2):
        r = self.ns(self.client, ["ping", "-c", str(count), "-i", str(interval), "-W", "1",
                                  self.server_ip], check=False)
        return r.stdout.count("bytes from")

    def start_server(self, tmp):
        root = os.path.join(tmp, "www")
        os.makedirs(root, exist_ok=True)
        log = os.path.join(tmp, "requests.log")
        open(log, "w").close()
        script = os.path.join(tmp, "server.py")
        with open(script, "w") as f:
            f.write(SERVER)
        proc = self.popen(self.server, [sys.executable, script, str(PORT), log, root],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if (":%d " % PORT) in self.ns(self.server, ["ss", "-ltn"]).stdout:
                return proc, root, log
            time.sleep(0.05)
        proc.kill()
        proc.wait()
        raise RuntimeError("the HTTP server did not start")

    def get(self, tmp, path, header="", timeout=2.0):
        script = os.path.join(tmp, "client.py")
        if not os.path.exists(script):
            with open(script, "w") as f:
                f.write(CLIENT)
        r = self.ns(self.client, [sys.executable, script, self.server_ip, str(PORT), path,
                                  header, str(timeout)])
        return json.loads(r.stdout)


def start_sensor(topo, mode, rules, outdir, extra=(), workers=1, start_timeout=60):
    sensor = sensor_bin()
    cmd = [sensor, "-S", rules, "-l", outdir, "-k", "none", "--set", "stats-interval=1",
           "--set", "stats-picket-counters=yes"]
    if mode == "nfqueue":
        cmd += ["--capture", "nfqueue", "--queue", "0"]
    else:
        cmd += ["--capture", "afpacket-inline", "--bridge", "m0:m1", "--workers", str(workers)]
    cmd += list(extra)
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


def stop_sensor(proc, sig=signal.SIGTERM):
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


@unittest.skipUnless(have_netns("iptables"), "needs root, iptables and network namespaces")
class Inline(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="picket-inline-")
        self.rules = os.path.join(self.tmp, "ips.rules")
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

    def scenario(self, mode):
        topo = Topology("ips" if mode == "nfqueue" else "ipsb",
                        "nfqueue" if mode == "nfqueue" else "bridge")
        self.topo = topo
        topo.create()
        if mode == "nfqueue":
            topo.nfqueue_rule(bypass=True)
        server, root, reqlog = topo.start_server(self.tmp)
        self.procs.append(server)
        body = os.urandom(300 * 1024)
        with open(os.path.join(root, "data.bin"), "wb") as f:
            f.write(body)
        want = hashlib.sha256(body).hexdigest()
        out = os.path.join(self.tmp, "out")
        os.makedirs(out)
        sensor = start_sensor(topo, mode, self.rules, out)
        self.procs.append(sensor)

        # Benign: the file arrives whole.
        r = topo.get(self.tmp, "/data.bin")
        self.assertEqual(r["result"], "ok", r)
        self.assertEqual(r["status"], 200)
        self.assertEqual(r["sha256"], want)
        self.assertEqual(topo.ping(), 3)

        # Dropped by the http.uri rule, then by the plain content rule: the client waits in
        # vain, the server never sees the request; the next connection works.
        r = topo.get(self.tmp, "/evil/x")
        self.assertEqual(r["result"], "timeout", r)
        r = topo.get(self.tmp, "/data.bin", header="X-Evil-Header: 1")
        self.assertEqual(r["result"], "timeout", r)
        r = topo.get(self.tmp, "/data.bin")
        self.assertEqual(r["result"], "ok", r)
        self.assertEqual(r["sha256"], want)

        # Rejected: reset at once.
        r = topo.get(self.tmp, "/reject", timeout=5.0)
        self.assertEqual(r["result"], "reset", r)
        self.assertLess(r["seconds"], 1.0, r)
        r = topo.get(self.tmp, "/data.bin")
        self.assertEqual(r["result"], "ok", r)

        time.sleep(1.0)  # retransmissions of the dropped requests are dropped too
        with open(reqlog) as f:
            seen = f.read()
        self.assertNotIn("/evil", seen)
        self.assertNotIn("/reject", seen)
        self.assertEqual(seen.count("GET /data.bin"), 3, seen)

        self.assertEqual(stop_sensor(sensor), 0)
        events = eve_events(os.path.join(out, "eve.json"))
        alerts = {}
        for ev in events:
            if ev.get("event_type") == "alert":
                alerts.setdefault(ev["alert"]["signature_id"], []).append(ev)
        self.assertEqual(sorted(alerts), [1, 2, 3], alerts)
        evil = alerts[1][0]
        self.assertEqual(evil["alert"]["action"], "blocked")
        self.assertEqual(evil["verdict"], {"action": "drop"})
        self.assertEqual(evil["app_proto"], "http")
        self.assertEqual(alerts[2][0]["verdict"], {"action": "drop"})
        self.assertEqual(alerts[3][0]["alert"]["action"], "blocked")
        self.assertEqual(alerts[3][0]["verdict"],
                         {"action": "drop", "reject-target": "to_client", "reject": ["tcp-reset"]})
        stats = [ev["stats"] for ev in events if ev.get("event_type") == "stats"][-1]
        ips = stats["ips"]
        self.assertEqual(ips["rejected"], 1)
        self.assertGreaterEqual(ips["drop_reason"]["rules"], 3)
        self.assertEqual(ips["blocked"], sum(ips["drop_reason"].values()))
        self.assertGreater(ips["accepted"], 200)  # 3 x 300 KB in full-size segments and more
        # reject is Suricata's rejectsrc: one RST, to the client that sent the request.
        self.assertEqual(ips["responses"]["sent"], 1)
        inline = stats["capture"]["inline"]
        self.assertEqual(inline["dropped"], ips["blocked"])
        self.assertEqual(inline["accepted"], ips["accepted"])
        if mode == "afpacket-inline":
            self.assertEqual(inline["injected"], 1)  # the one RST
        return topo, out

    def test_nfqueue(self):
        topo, out = self.scenario("nfqueue")
        # The sensor dies (SIGKILL, no cleanup): with --queue-bypass the kernel accepts what
        # nobody reads, so traffic flows uninspected.
        sensor = start_sensor(topo, "nfqueue", self.rules, out)
        self.procs.append(sensor)
        self.assertEqual(topo.get(self.tmp, "/data.bin")["result"], "ok")
        stop_sensor(sensor, signal.SIGKILL)
        self.assertEqual(topo.get(self.tmp, "/data.bin")["result"], "ok")
        self.assertEqual(topo.get(self.tmp, "/evil")["result"], "ok")  # nothing inspects
        self.assertEqual(topo.ping(), 3)
        # Without --queue-bypass an unbound queue drops everything (fail closed).
        topo.nfqueue_rule(bypass=True, add=False)
        topo.nfqueue_rule(bypass=False)
        self.assertEqual(topo.get(self.tmp, "/data.bin", timeout=1.5)["result"], "timeout")
        self.assertEqual(topo.ping(count=2), 0)

    def test_afpacket_inline(self):
        topo, out = self.scenario("afpacket-inline")
        # The sensor is the bridge: when it dies, nothing connects the two ports.
        sensor = start_sensor(topo, "afpacket-inline", self.rules, out)
        self.procs.append(sensor)
        self.assertEqual(topo.get(self.tmp, "/data.bin")["result"], "ok")
        stop_sensor(sensor, signal.SIGKILL)
        self.assertEqual(topo.get(self.tmp, "/data.bin", timeout=1.5)["result"], "timeout")
        self.assertEqual(topo.ping(count=2), 0)


if __name__ == "__main__":
    _, argv = picket_e2e.parse_args()
    picket_test.main(argv)
