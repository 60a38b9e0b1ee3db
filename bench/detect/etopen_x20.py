#!/usr/bin/env python3
"""Throughput with all of ET Open on one worker (#24, target 2), with an exact alert diff.

Makes the input itself: the records of PCAP (default the shared app-mix.pcap) written TIMES
times in a row, timestamps unchanged (a larger run phase without new traffic shapes). Then, in
alternated rounds, runs picket-sensor -r on it, one worker:

  etopen    SENSOR with every *.rules file of the ET Open directory (concatenated)
  baseline  BASELINE (another build, --baseline-sensor) with the same rules, when given
  norules   SENSOR with engine.stages=app-layer (decode, flow, stream, app layer; no rules)
  read      SENSOR with engine.stages=read (the capture reads the file, nothing else)

and prints, per configuration, the run phase's seconds and Gbit/s (the sensor's own summary
line: bytes over the time from the first packet read to the last one processed; rule loading
is not in it), minimum / median / maximum over the rounds. Then the alert lines: every alert
of every etopen round as (pcap_cnt, gid:sid:rev, addresses, ports), sorted; the rounds must
agree with each other and with the baseline build's. Exit status 1 when they differ, else 0:
never on a time (these machines are shared and noisy).

Usage:
  bench/detect/etopen_x20.py --sensor build/sensor/picket-sensor \\
      [--baseline-sensor OTHER/sensor/picket-sensor] [--rules DIR] [--pcap FILE] \\
      [--times 20] [--rounds 3] [--keep DIR]
Exit 77 (skip) when the ET Open directory or the pcap is missing.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "data"))
SUMMARY = re.compile(r"^summary: (\d+) packets, (\d+) bytes in ([0-9.]+) s")


def repeat_pcap(src, dst, times):
    """Writes src's records `times` times after its global header (classic pcap only)."""
    with open(src, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    if magic not in (0xA1B2C3D4, 0xA1B23C4D, 0xD4C3B2A1, 0x4D3CB2A1):
        raise SystemExit("%s: not a classic pcap file (magic %08x)" % (src, magic))
    with open(dst, "wb") as f:
        f.write(data[:24])
        for _ in range(times):
            f.write(data[24:])


def alert_lines(eve):
    out = []
    with open(eve) as f:
        for line in f:
            ev = json.loads(line)
            if ev.get("event_type") != "alert":
                continue
            a = ev["alert"]
            out.append("%s %d:%d:%d %s:%s -> %s:%s" % (
                ev.get("pcap_cnt", "-"), a["gid"], a["signature_id"], a["rev"],
                ev.get("src_ip"), ev.get("src_port", ""), ev.get("dest_ip"),
                ev.get("dest_port", "")))
    return sorted(out)


def run(sensor, pcap, rules, outdir, extra=()):
    os.makedirs(outdir, exist_ok=True)
    cmd = [sensor, "-r", pcap, "-l", outdir, "-k", "none", "--workers", "1"]
    cmd += ["-S", rules] if rules else []
    cmd += list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("%s failed (%d):\n%s" % (" ".join(cmd), r.returncode, r.stderr[-2000:]))
    for line in r.stdout.splitlines():
        m = SUMMARY.match(line)
        if m:
            return int(m.group(2)), float(m.group(3))
    raise SystemExit("no summary line from %s:\n%s" % (" ".join(cmd), r.stdout[-2000:]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sensor", required=True)
    ap.add_argument("--baseline-sensor")
    ap.add_argument("--rules", default=os.path.join(SHARED, "rules", "et-open"))
    ap.add_argument("--pcap", default=os.path.join(SHARED, "pcaps", "app-mix.pcap"))
    ap.add_argument("--times", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", help="keep the inputs and outputs in this directory")
    a = ap.parse_args()
    if not os.path.isdir(a.rules) or not os.path.isfile(a.pcap):
        print("skip: needs %s and %s" % (a.rules, a.pcap))
        return 77
    tmp = a.keep or tempfile.mkdtemp(prefix="picket-etx20-")
    os.makedirs(tmp, exist_ok=True)
    try:
        big = os.path.join(tmp, "x%d.pcap" % a.times)
        repeat_pcap(a.pcap, big, a.times)
        rules = os.path.join(tmp, "et-open.rules")
        with open(rules, "w") as out:
            for name in sorted(os.listdir(a.rules)):
                if name.endswith(".rules"):
                    with open(os.path.join(a.rules, name)) as f:
                        out.write(f.read())
                        out.write("\n")
        cfg = ["--set", "classification-file=" + os.path.join(a.rules, "classification.config")]
        configs = [("etopen", a.sensor, rules, cfg)]
        if a.baseline_sensor:
            configs.append(("baseline", a.baseline_sensor, rules, cfg))
        configs += [("norules", a.sensor, None, ["--set", "engine.stages=app-layer"]),
                    ("read", a.sensor, None, ["--set", "engine.stages=read"])]
        times = {name: [] for name, *_ in configs}
        size = {}
        alerts = {}
        for rnd in range(a.rounds):
            for name, sensor, rl, extra in configs:
                outdir = os.path.join(tmp, "%s-%d" % (name, rnd))
                nbytes, secs = run(sensor, big, rl, outdir, extra)
                times[name].append(secs)
                size[name] = nbytes
                if rl:
                    alerts["%s round %d" % (name, rnd)] = alert_lines(
                        os.path.join(outdir, "eve.json"))
                if not a.keep:
                    shutil.rmtree(outdir, ignore_errors=True)
        mb = os.path.getsize(big) / 1e6
        print("input: %s x %d = %.0f MB; rules: %s; %d rounds, alternated" %
              (os.path.basename(a.pcap), a.times, mb, a.rules, a.rounds))
        print("%-9s %24s %30s" % ("config", "run phase s (min/med/max)",
                                   "Gbit/s per worker (min/med/max)"))
        # The read stage decodes nothing, so it counts no bytes: the others' count stands in.
        nbytes = max(size.values())
        for name, *_ in configs:
            t = sorted(times[name])
            g = [nbytes * 8 / 1e9 / x for x in t]
            print("%-9s %8.3f %7.3f %7.3f %10.2f %9.2f %9.2f" %
                  (name, t[0], statistics.median(t), t[-1], min(g), statistics.median(g),
                   max(g)))
        ref_name = "etopen round 0"
        ref = alerts[ref_name]
        bad = 0
        for name, lines in alerts.items():
            if lines != ref:
                bad += 1
                only_a = sorted(set(ref) - set(lines))
                only_b = sorted(set(lines) - set(ref))
                print("alerts differ: %s (%d) vs %s (%d): %d only in the first, %d only in the "
                      "second" % (ref_name, len(ref), name, len(lines), len(only_a),
                                  len(only_b)))
                for line in (only_a[:5] + only_b[:5]):
                    print("  " + line)
        print("alerts: %d per run; %d runs compared, %s" %
              (len(ref), len(alerts), "identical" if bad == 0 else "%d differ" % bad))
        return 0 if bad == 0 else 1
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
