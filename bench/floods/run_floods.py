#!/usr/bin/env python3
"""Flood bench: picket-sensor against five floods with the default config and ET Open.

For each flood (syn, frag, tiny, http, dns; floodgen.py) it runs the sensor three times, all
with deploy/sensor.yaml, the same rules and `--set stats-interval=1` (observation only):

  1. on the benign pcap (the legitimate traffic alone, repeated): the baseline peak RSS;
  2. on FLOOD.legit.pcap (the legitimate frames of the flood, same timestamps): the alerts the
     legitimate traffic raises;
  3. on FLOOD.pcap: peak RSS (wait4 ru_maxrss), alerts, stats.

and checks: the sensor exits 0 in time; peak RSS <= baseline + the sum of the memcaps + the
stated overhead; each memcap gauge stays within its memcap; the legitimate alerts of run 3
equal those of run 2 (per sid, exact); each expected shed reason is counted; every flow
created is accounted for (active + timed out + evicted + reused).

    run_floods.py --build BUILD_DIR [--scale full|ci] [--floods syn,frag,...] [--work DIR]
                  [--rules et-open|local] [--set KEY=VALUE]... [--markdown OUT.md]
                  [--json OUT.json]

Exit status: 0 when every check of every flood passed, 1 otherwise.
"""
import argparse
import json
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import floodgen  # noqa: E402
import floodrun as fr  # noqa: E402

ALL = ["syn", "frag", "tiny", "http", "dns"]


def generate(kind, work, scale, seed):
    path = os.path.join(work, "%s-%s-%d.pcap" % (kind, scale, seed))
    man_path = path[:-5] + ".json"
    if os.path.exists(path) and os.path.exists(man_path):
        with open(man_path) as f:
            return json.load(f)
    t = time.time()
    man = floodgen.write(kind, path, scale, seed)
    print("  generated %s: %d packets, %.1f MB in %.0f s" % (
        os.path.basename(path), man["packets"], man["bytes"] / 1e6, time.time() - t), flush=True)
    return man


def mb(kb):
    return "%d" % (kb >> 10)


def table(results, caps, limits, workers, rules_label, cmd_line):
    over = fr.overhead_bytes(limits, workers)
    lines = []
    lines.append("| flood | packets | flows | baseline RssAnon MB | peak RssAnon MB (VmHWM) "
                 "| bound MB | "
                 "max gauges MB (flow / defrag / tcp / reassembly / app / http) | "
                 "legit alerts expected / fired | shed counts by reason | result |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        shed = "; ".join("%s %s" % (k, r["stats"].get(k, 0)) for k in fr.REPORTED[r["kind"]])
        g = r["gauges_max"]
        gauges = " / ".join("%.1f" % (g.get(k, 0) / 1048576)
                            for k in list(fr.GAUGES) + fr.APP_GAUGES)
        name = r["kind"] + ("" if not r["sets"] else " (" + ", ".join(
            x.split(".")[-1] for x in r["sets"]) + ")")
        lines.append("| %s | %d | %s | %s | %s | %s | %s | %d / %d | %s | %s |" % (
            name, r["packets"], r["flows"], mb(r["baseline_kb"]),
            "%s (%s)" % (mb(r["peak_kb"]), mb(r["vmhwm_kb"])),
            mb(r["bound_kb"]), gauges, r["legit_expected"], r["legit_fired"], shed,
            "PASS" if r["ok"] else "FAIL: " + ", ".join(r["failed"])))
    head = [
        "Rules: %s. Config: deploy/sensor.yaml (defaults), %d workers." % (rules_label, workers),
        "Memcaps (from deploy/sensor.yaml): " + ", ".join(
            "%s %d MB" % (k, v >> 20) for k, v in caps.items()) +
        "; sum %d MB." % (sum(caps.values()) >> 20),
        "Stated overhead: %d MB = %d workers x (capture.queue-size %d MB + "
        "outputs.alert-queue-size %d MB) + 64 MB allocator slack." % (
            over >> 20, workers, limits["capture.queue-size"] >> 20,
            limits["outputs.alert-queue-size"] >> 20),
        "Bound = baseline peak RssAnon + sum of memcaps + overhead. RSS is RssAnon (the "
        "sensor's own memory, /proc/PID/status every 0.1 s): VmHWM (ru_maxrss, in brackets) "
        "also counts the pages of the pcap, which the file reader maps.",
        "",
        "Command: `%s`" % cmd_line,
        "",
    ]
    return "\n".join(head + lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", help="build directory (sensor/picket-sensor)")
    ap.add_argument("--sensor", help="picket-sensor binary")
    ap.add_argument("--scale", default="full", choices=sorted(floodgen.SCALES))
    ap.add_argument("--floods", default=",".join(ALL))
    ap.add_argument("--work", default="/tmp/picket-floods")
    ap.add_argument("--rules", default="et-open", choices=["et-open", "local"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per sensor run")
    ap.add_argument("--set", action="append", default=[], dest="sets",
                    help="KEY=VALUE config override for every run (e.g. the smaller memcaps "
                    "of tests/e2e/flood_test.py with --scale ci)")
    ap.add_argument("--markdown")
    ap.add_argument("--json")
    a = ap.parse_args()
    sensor = a.sensor or (os.path.join(a.build, "sensor", "picket-sensor") if a.build else None)
    if not sensor or not os.access(sensor, os.X_OK):
        ap.error("give --build BUILD_DIR or --sensor PATH")
    os.makedirs(a.work, exist_ok=True)
    caps, limits = fr.memcaps(sets=a.sets)
    rules, classification, rules_label = fr.rules_file(a.work, a.rules == "et-open")
    if a.rules == "et-open" and rules_label == "local":
        print("note: %s is absent: local rules only" % fr.ET_OPEN_DIR)
    print("rules: %s; memcaps: %s" % (rules_label, caps), flush=True)

    benign = generate("benign", a.work, a.scale, a.seed)
    base = fr.run_sensor(sensor, benign["pcap"], rules, classification,
                         os.path.join(a.work, "log-benign"), sets=a.sets, timeout=a.timeout)
    workers = fr.workers_of(base)
    print("baseline (benign, %d packets): peak RssAnon %d MB (VmHWM %d MB), %d alerts, rc %d, "
          "%.1f s" % (benign["packets"], base.peak_anon_kb >> 10, base.maxrss_kb >> 10,
                      len(base.alerts), base.rc, base.wall_sec),
        flush=True)
    results = []
    all_ok = base.rc == 0
    floods = [k for k in a.floods.split(",") if k]
    runs = []
    for k in floods:
        runs.append((k, k, []))
        runs += [(v, base_kind, sets) for v, (base_kind, sets) in fr.VARIANTS.items()
                 if base_kind == k]
    legit_runs = {}
    for kind, pcap_kind, sets in runs:
        print("== %s%s" % (kind, "" if not sets else " (" + " ".join(sets) + ")"), flush=True)
        man = generate(pcap_kind, a.work, a.scale, a.seed)
        if pcap_kind not in legit_runs:
            legit_runs[pcap_kind] = fr.run_sensor(
                sensor, man["legit_pcap"], rules, classification,
                os.path.join(a.work, "log-%s-legit" % pcap_kind), sets=a.sets,
                timeout=a.timeout)
        legit = legit_runs[pcap_kind]
        flood = fr.run_sensor(sensor, man["pcap"], rules, classification,
                              os.path.join(a.work, "log-%s" % kind), sets=a.sets + sets,
                              timeout=a.timeout)
        ok, checks = fr.check(kind, flood, legit, base, caps, limits, workers)
        all_ok = all_ok and ok
        for name, c_ok, detail in checks:
            print("  %-48s %s  %s" % (name, "ok  " if c_ok else "FAIL", detail))
        print("  %.1f s, flood alerts (not legitimate): %d" % (
            flood.wall_sec, sum(flood.flood_alerts().values())), flush=True)
        bound_kb = base.peak_anon_kb + \
            (sum(caps.values()) + fr.overhead_bytes(limits, workers)) // 1024
        results.append(dict(
            kind=kind, packets=man["packets"], bytes=man["bytes"],
            flows=man["flood_flows"] if man["flood_flows"] is not None else
            "%d (created)" % flood.stat("flow.total"),
            baseline_kb=base.peak_anon_kb, peak_kb=flood.peak_anon_kb, bound_kb=bound_kb,
            vmhwm_kb=flood.maxrss_kb, baseline_vmhwm_kb=base.maxrss_kb,
            legit_expected=sum(legit.legit_alerts().values()),
            legit_fired=sum(flood.legit_alerts().values()),
            legit_by_sid={str(k): v for k, v in flood.legit_alerts().items()},
            flood_alerts=sum(flood.flood_alerts().values()),
            sets=sets,
            stats={k: flood.stat(k) for k in fr.REPORTED[kind] + list(fr.GAUGES)},
            gauges_max={k: flood.stats_max.get(k, 0) for k in list(fr.GAUGES) + fr.APP_GAUGES},
            wall_sec=round(flood.wall_sec, 1), ok=ok,
            failed=[n for n, c_ok, _ in checks if not c_ok], cmd=" ".join(flood.cmd)))
    cmd_line = "bench/floods/run_floods.py --build BUILD --scale %s --rules %s%s" % (
        a.scale, a.rules, "".join(" --set " + x for x in a.sets))
    md = table(results, caps, limits, workers, rules_label, cmd_line)
    print(md)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(md)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(caps=caps, limits=limits, workers=workers, rules=rules_label,
                           baseline_kb=base.maxrss_kb, results=results), f, indent=1)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
