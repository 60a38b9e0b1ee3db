"""Runs picket-sensor on a flood pcap and checks it: peak memory within the memcaps, the
legitimate alerts all fired, and every shed packet or flow counted by reason.

Used by run_floods.py (the bench, full size, ET Open) and tests/e2e/flood_test.py (CI size,
local rules). Only the standard library and python3-yaml.
"""
import json
import os
import re
import subprocess
import sys
import threading
import time

import yaml

_HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(_HERE, "..", ".."))
DEFAULT_CONFIG = os.path.join(REPO, "deploy", "sensor.yaml")
ET_OPEN_DIR = "/work/shared/data/rules/et-open"

sys.path.insert(0, _HERE)
import floodlib as fl  # noqa: E402

_UNITS = {"": 1, "b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30}


def parse_size(v):
    m = re.fullmatch(r"\s*(\d+)\s*([kmg]?b?)\s*", str(v).lower())
    if not m:
        raise ValueError("bad size %r" % v)
    return int(m.group(1)) * _UNITS[m.group(2)]


def _get(cfg, dotted, default=None):
    cur = cfg
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return default
        cur = cur[part]
    return cur


def _apply_sets(cfg, sets):
    """--set KEY=VALUE overrides, as the sensor applies them (dotted path, YAML value)."""
    for s in sets:
        key, _, value = s.partition("=")
        cur = cfg
        parts = key.split(".")
        for part in parts[:-1]:
            cur = cur.setdefault(part, {})
        cur[parts[-1]] = yaml.safe_load(value)


def memcaps(config_path=DEFAULT_CONFIG, sets=()):
    """The configured memory limits (bytes) and the app-layer limits of sensor.yaml, with the
    --set overrides applied."""
    with open(config_path) as f:
        cfg = yaml.safe_load(f)
    _apply_sets(cfg, sets)
    http = "app-layer.protocols.http.libhtp.default-config."
    caps = {
        "flow.memcap": parse_size(_get(cfg, "flow.memcap", "128mb")),
        "defrag.memcap": parse_size(_get(cfg, "defrag.memcap", "32mb")),
        "stream.memcap": parse_size(_get(cfg, "stream.memcap", "64mb")),
        "stream.reassembly.memcap": parse_size(_get(cfg, "stream.reassembly.memcap", "256mb")),
        "app-layer.memcap": parse_size(_get(cfg, "app-layer.memcap", "64mb")),
    }
    limits = {
        "flow.hash-size": int(_get(cfg, "flow.hash-size", 65536)),
        "defrag.trackers": int(_get(cfg, "defrag.trackers", 65535)),
        "defrag.max-frags": int(_get(cfg, "defrag.max-frags", 256)),
        "stream.reassembly.depth": parse_size(_get(cfg, "stream.reassembly.depth", "1mb")),
        "http.request-body-limit": parse_size(_get(cfg, http + "request-body-limit", "4kb")),
        "http.response-body-limit": parse_size(_get(cfg, http + "response-body-limit", "4kb")),
        "http.decompression-limit": parse_size(_get(cfg, http + "decompression-limit", "1mb")),
        "http.decompress-layer-limit":
            int(_get(cfg, http + "response-body-decompress-layer-limit", 2)),
        "capture.queue-size": parse_size(_get(cfg, "capture.queue-size", "8mb")),
        "outputs.alert-queue-size": parse_size(_get(cfg, "outputs.alert-queue-size", "4mb")),
    }
    return caps, limits


def rules_file(tmp, use_et_open):
    """One rules file: ET Open (every *.rules of /work/shared, when present and wanted) plus the
    local rules of the legitimate traffic. Returns (path, classification file or None, label)."""
    path = os.path.join(tmp, "flood.rules")
    with open(path, "w") as out:
        label = "local"
        classification = None
        if use_et_open and os.path.isdir(ET_OPEN_DIR):
            for name in sorted(os.listdir(ET_OPEN_DIR)):
                if name.endswith(".rules"):
                    with open(os.path.join(ET_OPEN_DIR, name), errors="replace") as f:
                        out.write(f.read())
                        out.write("\n")
            label = "ET Open + local"
            c = os.path.join(ET_OPEN_DIR, "classification.config")
            classification = c if os.path.exists(c) else None
        out.write(fl.LOCAL_RULES)
    return path, classification, label


def _flatten(d, prefix="", out=None):
    out = {} if out is None else out
    for k, v in d.items():
        key = prefix + k
        if isinstance(v, dict):
            _flatten(v, key + ".", out)
        elif isinstance(v, (int, float)):
            out[key] = v
    return out


class Run:
    """One sensor run: exit status, peak RSS, alerts and stats (last and max of each gauge)."""

    def __init__(self):
        self.rc = None
        self.timed_out = False
        self.maxrss_kb = 0        # ru_maxrss of the process (= VmHWM at exit)
        self.rss_samples = []     # (seconds since start, VmRSS kB, RssAnon kB)
        self.peak_anon_kb = 0     # largest RssAnon sampled (every 0.1 s)
        self.wall_sec = 0.0
        self.alerts = []
        self.stats = {}           # last stats event, flattened
        self.stats_max = {}       # max over every stats event, flattened
        self.stdout = ""
        self.stderr = ""
        self.cmd = []

    def legit_alerts(self):
        out = {}
        for a in self.alerts:
            if fl.is_legit_addr(a.get("src_ip", "")) or fl.is_legit_addr(a.get("dest_ip", "")):
                sid = a["alert"]["signature_id"]
                out[sid] = out.get(sid, 0) + 1
        return out

    def flood_alerts(self):
        out = {}
        for a in self.alerts:
            if not (fl.is_legit_addr(a.get("src_ip", "")) or
                    fl.is_legit_addr(a.get("dest_ip", ""))):
                sid = a["alert"]["signature_id"]
                out[sid] = out.get(sid, 0) + 1
        return out

    def stat(self, key, default=0):
        return self.stats.get(key, default)


def _sample_rss(pid, samples, stop, t0):
    """VmRSS and RssAnon every 0.1 s. RssAnon is the sensor's own memory: VmRSS (and VmHWM,
    ru_maxrss) also count the pages of the pcap, which the file reader maps (file-backed,
    reclaimable, as large as the pcap)."""
    path = "/proc/%d/status" % pid
    while not stop.is_set():
        try:
            rss = anon = 0
            with open(path) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss = int(line.split()[1])
                    elif line.startswith("RssAnon:"):
                        anon = int(line.split()[1])
                        break
            samples.append((round(time.time() - t0, 2), rss, anon))
        except (OSError, ValueError, IndexError):
            return
        stop.wait(0.1)


def run_sensor(sensor, pcap, rules, classification, logdir, config=DEFAULT_CONFIG, sets=(),
               timeout=900):
    """picket-sensor -c CONFIG -r PCAP -S RULES -l LOGDIR [--set ...]; waits with wait4 for the
    peak RSS; kills it (and reports timed_out) after `timeout` seconds."""
    os.makedirs(logdir, exist_ok=True)
    cmd = [sensor, "-c", config, "-r", pcap, "-S", rules, "-l", logdir,
           "--set", "stats-interval=1", "--set", "stats-picket-counters=yes"]
    if classification:
        cmd += ["--set", "classification-file=" + classification]
    for s in sets:
        cmd += ["--set", s]
    r = Run()
    r.cmd = cmd
    out_path = os.path.join(logdir, "sensor.stdout")
    err_path = os.path.join(logdir, "sensor.stderr")
    t0 = time.time()
    with open(out_path, "w") as out, open(err_path, "w") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        stop = threading.Event()
        sampler = threading.Thread(target=_sample_rss, args=(proc.pid, r.rss_samples, stop, t0),
                                   daemon=True)
        sampler.start()
        deadline = t0 + timeout
        status = None
        usage = None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                break
            if time.time() > deadline:
                r.timed_out = True
                proc.kill()
                _, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped: keep Popen quiet
        stop.set()
        sampler.join()
    r.wall_sec = time.time() - t0
    r.rc = proc.returncode
    r.maxrss_kb = usage.ru_maxrss
    r.peak_anon_kb = max((a for _, _, a in r.rss_samples), default=0)
    with open(out_path) as f:
        r.stdout = f.read()
    with open(err_path) as f:
        r.stderr = f.read()
    eve = os.path.join(logdir, "eve.json")
    if os.path.exists(eve):
        with open(eve) as f:
            for line in f:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                t = ev.get("event_type")
                if t == "alert":
                    r.alerts.append(ev)
                elif t == "stats":
                    flat = _flatten(ev["stats"])
                    r.stats = flat
                    for k, v in flat.items():
                        if v > r.stats_max.get(k, v - 1):
                            r.stats_max[k] = v
    return r


# What each flood must make the sensor shed, and the counter that names it. A check passes
# when the counter is > 0 (the shedding happened and was counted).
EXPECTED_SHED = {
    "syn": ["flow.emerg_mode_entered", "flow.evicted", "tcp.ssn_memcap_reclaimed"],
    "frag": ["defrag.evicted", "defrag.overlaps",
             "defrag.ipv4.reassembled", "defrag.ipv6.reassembled"],
    "tiny": ["tcp.segment_memcap_drop", "tcp.reassembly_gap", "tcp.reassembly_memcap_no_tail"],
    # With the default 4 KB body limits, inflating stops once the kept body is full: a bomb
    # costs 4 KB and raises nothing. The "http-bomb" variant raises the body limits so that
    # decompression-limit (1 MB) is what stops it.
    "http": ["app_layer.http.events.line_too_long", "app_layer.http.events.header_too_long",
             "tcp.reassembly_depth_reached"],
    "http-bomb": ["app_layer.http.events.decompression_bomb"],
    "dns": ["app_layer.dns.events.compression_loop", "app_layer.dns.events.invalid_pointer",
            "app_layer.dns.events.label_too_long", "app_layer.dns.events.name_too_long",
            "app_layer.memcap_evicted"],
}

# Variants: another run of a flood's pcap with overrides (key, the pcap's kind, --set list).
VARIANTS = {
    "http-bomb": ("http", [
        "app-layer.protocols.http.libhtp.default-config.response-body-limit=2mb",
        "app-layer.protocols.http.libhtp.default-config.request-body-limit=2mb"]),
}

# Counters reported in the table for each flood (whether or not they are > 0).
REPORTED = {
    "syn": ["flow.total", "flow.evicted", "flow.timed_out", "flow.emerg_mode_entered",
            "flow.memcap_drops", "tcp.sessions", "tcp.ssn_memcap_drop",
            "tcp.ssn_memcap_reclaimed"],
    "frag": ["defrag.ipv4.fragments", "defrag.ipv6.fragments", "defrag.ipv4.reassembled",
             "defrag.ipv6.reassembled", "defrag.memcap_drops", "defrag.max_trackers_reached",
             "defrag.evicted", "defrag.timeouts", "defrag.overlaps", "defrag.invalid",
             "defrag.max_frag_hits"],
    "tiny": ["tcp.sessions", "tcp.segment_memcap_drop", "tcp.reassembly_memcap_no_tail",
             "tcp.reassembly_gap", "tcp.overlap",
             "tcp.out_of_window", "tcp.ssn_memcap_drop"],
    "http": ["app_layer.http.transactions", "app_layer.http.events.line_too_long",
             "app_layer.http.events.header_too_long",
             "app_layer.http.events.decompression_bomb", "app_layer.http.flows_abandoned",
             "tcp.reassembly_depth_reached", "tcp.segment_memcap_drop",
             "app_layer.memcap_evicted", "app_layer.memcap_drop"],
    "http-bomb": ["app_layer.http.transactions", "app_layer.http.events.decompression_bomb",
                  "app_layer.http.events.line_too_long", "app_layer.http.events.header_too_long",
                  "app_layer.memcap_evicted", "app_layer.memcap_drop"],
    "dns": ["flow.total", "app_layer.dns.queries", "app_layer.dns.events.compression_loop",
            "app_layer.dns.events.invalid_pointer", "app_layer.dns.events.label_too_long",
            "app_layer.dns.events.name_too_long", "app_layer.dns.events.truncated",
            "app_layer.dns.events.flooded", "app_layer.flow.failed_udp",
            "app_layer.memcap_evicted", "app_layer.memcap_drop"],
}

# Gauges that the memcaps bound, and the memcap that bounds each.
GAUGES = {
    "flow.memuse": "flow.memcap",
    "defrag.memuse": "defrag.memcap",
    "tcp.memuse": "stream.memcap",
    "tcp.reassembly_memuse": "stream.reassembly.memcap",
    # Per-flow app state (parsers, buffers). The flow being parsed may take it past the memcap
    # by its own growth within one call (the others are evicted after the call; its own parser
    # limits bound it): see sensor/applayer/README.md.
    "app_layer.memuse": "app-layer.memcap",
}
# Gauges reported with no memcap of their own (part of app_layer.memuse).
APP_GAUGES = ["app_layer.http.memuse"]


def overhead_bytes(limits, workers):
    """The stated overhead on top of baseline + memcaps: the reader->worker queues and the
    alert queues (allocated once, per worker, not in any memcap; the app-layer state is in
    app-layer.memcap since the memcap was added), and 64 MB of allocator slack (glibc
    arenas per thread; freed memory is not always returned)."""
    return (workers * (limits["capture.queue-size"] + limits["outputs.alert-queue-size"]) +
            (64 << 20))


def check(kind, flood, legit, baseline, caps, limits, workers, want=None):
    """Returns (ok, list of (check, ok, detail)). The legitimate alerts expected are `want`
    ({sid: count}) when given, else those of the `legit` run (the legitimate frames alone)."""
    checks = []
    mem_sum = sum(caps.values())
    over = overhead_bytes(limits, workers)
    bound_kb = baseline.peak_anon_kb + (mem_sum + over) // 1024
    checks.append(("exit", flood.rc == 0 and not flood.timed_out,
                   "rc %s%s" % (flood.rc, ", killed after timeout" if flood.timed_out else "")))
    checks.append(("peak RSS (anon)", flood.peak_anon_kb <= bound_kb,
                   "%d MB <= %d MB (baseline %d + memcaps %d + overhead %d); VmHWM %d MB "
                   "with the mapped pcap" % (
                       flood.peak_anon_kb >> 10, bound_kb >> 10, baseline.peak_anon_kb >> 10,
                       mem_sum >> 20, over >> 20, flood.maxrss_kb >> 10)))
    for g, cap in GAUGES.items():
        v = flood.stats_max.get(g, 0)
        # flow.memuse also counts the hash buckets (8 bytes each, per worker), which the
        # memcap does not cover: the memcap sizes the flow pool (sensor/flow/README.md).
        extra = limits["flow.hash-size"] * 8 * workers if g == "flow.memuse" else 0
        checks.append(("gauge " + g, v <= caps[cap] + extra,
                       "max %.1f MB <= %s %d MB%s" % (
                           v / 1048576, cap, caps[cap] >> 20,
                           " + buckets %.1f MB" % (extra / 1048576) if extra else "")))
    want = want if want is not None else legit.legit_alerts()
    got = flood.legit_alerts()
    checks.append(("legit alerts", want == got and sum(want.values()) > 0,
                   "expected %d (%s), fired %d (%s)" % (
                       sum(want.values()), _sids(want), sum(got.values()), _sids(got))))
    for c in EXPECTED_SHED.get(kind, []):
        checks.append(("counted " + c, flood.stat(c) > 0, str(flood.stat(c))))
    # Conservation: every flow created is still active, timed out, evicted or recycled.
    s = flood.stats
    total = s.get("flow.total", 0)
    parts = (s.get("flow.active", 0) + s.get("flow.timed_out", 0) + s.get("flow.evicted", 0) +
             s.get("flow.tcp_reuse", 0))
    checks.append(("flows accounted", total == parts,
                   "total %d = active + timed_out + evicted + tcp_reuse %d" % (total, parts)))
    checks.append(("packets accounted", s.get("decoder.pkts", -1) ==
                   s.get("capture.kernel_packets", -2),
                   "decoder.pkts %d, read %d" % (s.get("decoder.pkts", -1),
                                                 s.get("capture.kernel_packets", -2))))
    return all(ok for _, ok, _ in checks), checks


def _sids(d):
    return ", ".join("%d x%d" % (k, d[k]) for k in sorted(d)) or "none"


def workers_of(run):
    m = re.search(r"with (\d+) workers?", run.stdout)
    return int(m.group(1)) if m else os.cpu_count()
