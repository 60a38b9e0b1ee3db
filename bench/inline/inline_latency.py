#!/usr/bin/env python3
"""Inline (IPS) cost: round-trip latency and TCP throughput through picket-sensor in each inline
mode, each next to its baseline measured in the same namespaces in the same run:

  nfqueue          client -> [routing namespace, iptables FORWARD -j NFQUEUE, picket-sensor
                   --capture nfqueue] -> server          baseline: the same routing, no NFQUEUE
  afpacket-inline  client -> [picket-sensor --capture afpacket-inline --bridge m0:m1] -> server
                   baseline: a kernel bridge (ip link add br0 type bridge) over the same veths

Measured per configuration: ping RTT (p50/p99 of --pings echoes, 10 ms apart), a TCP
request/response loop (--rr round trips of 64 bytes on one connection, p50/p99), and TCP
throughput (--mbytes MB pushed by a Python socket sender into a sink, one connection; best of
--rounds). The sensor loads ET Open (every .rules file of /work/shared/data/rules/et-open,
concatenated) when that directory exists, else the e2e test's own rules. Prints figures, not
pass/fail. Needs root (network namespaces, iptables).

Usage: bench/inline/inline_latency.py --build BUILD_DIR [--pings N] [--rr N] [--mbytes N]
       [--rounds N] [--workers N]
"""
import argparse
import glob
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
import inline_test  # noqa: E402  (Topology, start_sensor, stop_sensor)

ET_OPEN = "/work/shared/data/rules/et-open"
ECHO_PORT = 9100
SINK_PORT = 9101

# In the server namespace: an echo server (request/response) and a sink that answers "k" once
# the sender has shut down its side (throughput).
SERVERS = r'''
import socket, sys, threading
def echo():
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", %d)); s.listen(8)
    while True:
        c, _ = s.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        def serve(c):
            while True:
                d = c.recv(4096)
                if not d:
                    break
                c.sendall(d)
            c.close()
        threading.Thread(target=serve, args=(c,), daemon=True).start()
def sink():
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", %d)); s.listen(8)
    while True:
        c, _ = s.accept()
        while c.recv(1 << 20):
            pass
        c.sendall(b"k"); c.close()
threading.Thread(target=echo, daemon=True).start()
sink()
''' % (ECHO_PORT, SINK_PORT)

RR_CLIENT = r'''
import socket, sys, time
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.create_connection((host, port), timeout=5)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
msg = b"x" * 64
out = []
for i in range(n):
    t0 = time.perf_counter()
    s.sendall(msg)
    got = 0
    while got < 64:
        got += len(s.recv(64 - got))
    out.append((time.perf_counter() - t0) * 1000)
print(" ".join("%.4f" % t for t in out))
'''

SENDER = r'''
import socket, sys, time
host, port, mbytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
buf = b"\xab" * (1 << 16)
s = socket.create_connection((host, port), timeout=30)
t0 = time.perf_counter()
left = mbytes << 20
while left > 0:
    n = s.send(buf[:min(left, len(buf))])
    left -= n
s.shutdown(socket.SHUT_WR)
s.recv(1)
print("%.6f" % (time.perf_counter() - t0))
'''


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


def measure(topo, tmp, args):
    r = topo.ns(topo.client, ["ping", "-c", str(args.pings), "-i", "0.01", "-W", "1",
                              topo.server_ip], check=False)
    pings = [float(x.split("time=")[1].split()[0]) for x in r.stdout.splitlines()
             if "time=" in x]
    rr_script = os.path.join(tmp, "rr.py")
    with open(rr_script, "w") as f:
        f.write(RR_CLIENT)
    r = topo.ns(topo.client, [sys.executable, rr_script, topo.server_ip, str(ECHO_PORT),
                              str(args.rr)])
    rr = [float(x) for x in r.stdout.split()]
    send_script = os.path.join(tmp, "send.py")
    with open(send_script, "w") as f:
        f.write(SENDER)
    rates = []
    for _ in range(args.rounds):
        r = topo.ns(topo.client, [sys.executable, send_script, topo.server_ip, str(SINK_PORT),
                                  str(args.mbytes)])
        rates.append(args.mbytes * 8 * 1.048576 / float(r.stdout))
    return {"ping": pings, "rr": rr, "mbit": max(rates), "mbit_all": rates}


def row(name, m):
    return ("%-34s ping p50 %7.3f p99 %7.3f ms (%3d/%d) | tcp rr p50 %7.3f p99 %7.3f ms | "
            "%8.1f Mbit/s (best of %s)" %
            (name, pct(m["ping"], 0.5), pct(m["ping"], 0.99), len(m["ping"]), ARGS.pings,
             pct(m["rr"], 0.5), pct(m["rr"], 0.99), m["mbit"],
             "/".join("%.0f" % x for x in m["mbit_all"])))


def rules_file(tmp):
    path = os.path.join(tmp, "bench.rules")
    files = sorted(glob.glob(os.path.join(ET_OPEN, "*.rules")))
    with open(path, "w") as out:
        if files:
            for f in files:
                with open(f, errors="replace") as src:
                    out.write(src.read())
                    out.write("\n")
        else:
            out.write(inline_test.RULES)
    return path, ("ET Open (%d files)" % len(files) if files else "tests/e2e rules")


def start_servers(topo, tmp):
    script = os.path.join(tmp, "servers.py")
    with open(script, "w") as f:
        f.write(SERVERS)
    proc = topo.popen(topo.server, [sys.executable, script], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        out = topo.ns(topo.server, ["ss", "-ltn"]).stdout
        if ":%d " % ECHO_PORT in out and ":%d " % SINK_PORT in out:
            return proc
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("bench servers did not start")


def run_pair(mode, tmp, rules, results):
    """Baseline, then the sensor, in the same namespaces."""
    if mode == "nfqueue":
        topo = inline_test.Topology("bench", "forward")
    else:
        topo = inline_test.Topology("benchb", "kbridge")
    procs = []
    try:
        topo.create()
        procs.append(start_servers(topo, tmp))
        if mode != "nfqueue":
            topo.ping(count=3)  # the kernel bridge's ports reach forwarding state
        base = "plain forwarding" if mode == "nfqueue" else "kernel bridge"
        results.append((base, measure(topo, tmp, ARGS)))
        print(row(base, results[-1][1]), flush=True)
        if mode == "nfqueue":
            topo.nfqueue_rule(bypass=False)
        else:
            topo.ns(topo.middle, ["ip", "link", "del", "br0"])
        out = os.path.join(tmp, "out-" + mode)
        os.makedirs(out, exist_ok=True)
        sensor = inline_test.start_sensor(topo, mode, rules, out, ["--set", "stats-interval=60"],
                                          workers=ARGS.workers, start_timeout=300)
        procs.append(sensor)
        name = "picket-sensor %s" % mode
        results.append((name, measure(topo, tmp, ARGS)))
        print(row(name, results[-1][1]), flush=True)
        inline_test.stop_sensor(sensor)
        with open(os.path.join(out, "sensor.log")) as f:
            loaded = [x for x in f.read().splitlines() if x.startswith("rules:")]
        print("  (%s: %s)" % (mode, loaded[-1] if loaded else "no rule summary"), flush=True)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        topo.delete()


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--pings", type=int, default=500)
    ap.add_argument("--rr", type=int, default=2000)
    ap.add_argument("--mbytes", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=1, help="afpacket-inline workers")
    ARGS = ap.parse_args()
    if os.geteuid() != 0:
        print("inline_latency: needs root (network namespaces, iptables)", file=sys.stderr)
        return 2
    inline_test.BUILD = os.path.abspath(ARGS.build)
    tmp = tempfile.mkdtemp(prefix="picket-inline-bench-")
    try:
        rules, what = rules_file(tmp)
        print("inline latency/throughput; rules: %s; %d pings, %d TCP round trips, %d MB x %d"
              % (what, ARGS.pings, ARGS.rr, ARGS.mbytes, ARGS.rounds), flush=True)
        results = []
        run_pair("nfqueue", tmp, rules, results)
        run_pair("afpacket-inline", tmp, rules, results)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


ARGS = None

if __name__ == "__main__":
    sys.exit(main())
