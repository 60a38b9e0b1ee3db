#!/usr/bin/env python3
"""Checks of the Grafana dashboards in dashboards/ that need no Grafana and no fleet.

- Structure: both files parse; uid/title/schemaVersion 38; the `datasource` variable (type
  datasource, query prometheus) and the `sensor` variable (label_values(picket_sensor_up,
  sensor), multi, include all); every panel has a unique id and a gridPos inside the 24-column
  grid, panels do not overlap, and every panel, target and annotation uses ${datasource};
  docs/dashboards.md has a heading for every panel.
- Names: every metric a query references is one the exporters serve: the per-sensor families
  parsed from common/metrics/sensor_series.h (so the list cannot drift from the exporter) plus
  the manager's fleet families listed below; rate()/increase() only ever see counters.
- Meaning (with promtool, offline): the drop-ratio, up/down, bundle-mismatch and bundle-table
  queries, exactly as extracted from the dashboards, give the expected numbers on fixed input
  series (a 37.5% drop burst shows as 0.375 in its interval, not as the cumulative 9%).
- PromQL (with a real Prometheus on 127.0.0.1, when /usr/bin/prometheus exists): every panel
  and annotation query returns status "success"; after Prometheus has scraped a fake exporter
  serving every family (a stand-in for a healthy fleet), every query returns data.

Usage: dashboards_test.py --source SOURCE_DIR
"""
import argparse
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)

SOURCE = None
DS = {"type": "prometheus", "uid": "${datasource}"}
DASHBOARDS = ("fleet-overview.json", "sensor-detail.json")
PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"

# The manager's fleet families (manager /metrics), name -> type.
MANAGER_FAMILIES = {
    "picket_sensors": "gauge",
    "picket_deployment_targets": "gauge",
    "picket_bundle_latest_version": "gauge",
    "picket_deployments_total": "counter",
    "picket_deployment_last_timestamp_seconds": "gauge",
    "picket_rollbacks_total": "counter",
    "picket_manager_grpc_request_duration_seconds": "histogram",
    "picket_manager_sensor_messages_total": "counter",
    "picket_manager_store_op_duration_seconds": "histogram",
    "picket_manager_store_transaction_duration_seconds": "histogram",
    "picket_manager_alerts_received_total": "counter",
    "picket_manager_replica_info": "gauge",
    "picket_sensor_replica_info": "gauge",
    "picket_rules_updates_total": "counter",
    "picket_rules_update_last_success_timestamp_seconds": "gauge",
    "picket_rules_source_rules": "gauge",
    "picket_rules_source_fetch_failing": "gauge",
    "picket_manager_sensor_clock_offset_seconds": "gauge",
}


def dashboard_path(name):
    return os.path.join(SOURCE, "dashboards", name)


def load_queries_module():
    sys.path.insert(0, os.path.join(SOURCE, "dashboards"))
    import queries  # noqa: E402
    return queries


def sensor_families():
    """name -> type of the per-sensor families documented in sensor_series.h."""
    path = os.path.join(SOURCE, "common", "metrics", "sensor_series.h")
    families = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"//\s{2,}(picket_\w+)\s*(\{[^}]*\})?\s+(counter|gauge)\b", line)
            if m:
                families[m.group(1)] = m.group(3)
    return families


def series_names(families):
    """Every series name Prometheus can hold for `families` (histograms expanded), -> type."""
    names = {}
    for name, kind in families.items():
        if kind == "histogram":
            for suffix in ("_bucket", "_sum", "_count"):
                names[name + suffix] = "counter"
        else:
            names[name] = kind
    return names


_TOKEN = re.compile(r'''"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`|\[[^\]]*\]|\{[^}]*\}'''
                    r"|(?:\d+(?:ms|[smhdwy]))+(?![\w.])|(?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)"
                    r"|(?P<id>[A-Za-z_:][A-Za-z0-9_:]*)|(?P<other>\S)")
_KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
             "group_right", "bool", "offset", "atan2", "inf", "nan"}
_LABEL_LISTS = {"by", "without", "on", "ignoring", "group_left", "group_right"}


def metric_names(expr):
    """Metric names a PromQL expression selects (no full parser: strings, label matchers,
    ranges and label lists are skipped; an identifier followed by "(" or by/without is a
    function or aggregation)."""
    tokens = [(m.group("id"), m.group(0)) for m in _TOKEN.finditer(expr)]
    names = []
    i = 0
    while i < len(tokens):
        ident = tokens[i][0]
        nxt = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if ident in _LABEL_LISTS and nxt == "(":
            i += 2
            while i < len(tokens) and tokens[i][1] != ")":
                i += 1
        elif ident and ident not in _KEYWORDS and nxt != "(" and nxt not in ("by", "without"):
            names.append(ident)
        i += 1
    return names


class Structure(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.boards = {}
        for name in DASHBOARDS:
            with open(dashboard_path(name), encoding="utf-8") as f:
                cls.boards[name] = json.load(f)

    def all_panels(self, board):
        def walk(panels):
            for p in panels:
                yield p
                yield from walk(p.get("panels", []))
        return list(walk(board["panels"]))

    def test_top_level_fields(self):
        uids = set()
        for name, b in self.boards.items():
            with self.subTest(dashboard=name):
                self.assertEqual(b["schemaVersion"], 38)
                self.assertTrue(b["uid"])
                self.assertTrue(b["title"].startswith("Picket / "), b["title"])
                self.assertIn("time", b)
                self.assertTrue(b["panels"])
                uids.add(b["uid"])
        self.assertEqual(len(uids), len(self.boards))

    def test_variables(self):
        for name, b in self.boards.items():
            with self.subTest(dashboard=name):
                v = {t["name"]: t for t in b["templating"]["list"]}
                self.assertEqual(v["datasource"]["type"], "datasource")
                self.assertEqual(v["datasource"]["query"], "prometheus")
                s = v["sensor"]
                self.assertEqual(s["type"], "query")
                self.assertEqual(s["datasource"], DS)
                self.assertEqual(s["definition"], "label_values(picket_sensor_up, sensor)")
                self.assertEqual(s["query"]["query"], "label_values(picket_sensor_up, sensor)")
                self.assertIs(s["multi"], True)
                self.assertIs(s["includeAll"], True)
                # "All" must be a regex matching every sensor for sensor=~"$sensor".
                self.assertEqual(s["allValue"], ".*")

    def test_panels_ids_grid_and_datasource(self):
        for name, b in self.boards.items():
            panels = self.all_panels(b)
            ids = [p["id"] for p in panels]
            self.assertEqual(len(ids), len(set(ids)), name)
            cells = {}
            for p in panels:
                with self.subTest(dashboard=name, panel=p.get("title")):
                    g = p["gridPos"]
                    self.assertEqual(sorted(g), ["h", "w", "x", "y"])
                    self.assertTrue(g["w"] > 0 and g["h"] > 0 and g["x"] >= 0 and g["y"] >= 0)
                    self.assertLessEqual(g["x"] + g["w"], 24)
                    for x in range(g["x"], g["x"] + g["w"]):
                        for y in range(g["y"], g["y"] + g["h"]):
                            self.assertNotIn((x, y), cells, "overlaps %s" % cells.get((x, y)))
                            cells[(x, y)] = p["title"]
                    if p["type"] == "row":
                        continue
                    self.assertTrue(p["title"])
                    self.assertEqual(p["datasource"], DS)
                    self.assertTrue(p["targets"])
                    refs = [t["refId"] for t in p["targets"]]
                    self.assertEqual(len(refs), len(set(refs)))
                    for t in p["targets"]:
                        self.assertEqual(t["datasource"], DS)
                        self.assertTrue(t["expr"].strip())

    def test_annotations(self):
        for name, b in self.boards.items():
            annotations = [a for a in b["annotations"]["list"] if not a.get("builtIn")]
            self.assertTrue(annotations, name)
            for a in annotations:
                with self.subTest(dashboard=name, annotation=a["name"]):
                    self.assertEqual(a["datasource"], DS)
                    self.assertTrue(a["expr"].strip())
                    self.assertTrue(a["titleFormat"])
        fleet = {a["name"]: a.get("expr")
                 for a in self.boards[DASHBOARDS[0]]["annotations"]["list"]}
        self.assertIn("changes(picket_deployment_last_timestamp_seconds[", fleet["Deployments"])
        self.assertIn("changes(picket_sensor_last_reload_timestamp_seconds{",
                      fleet["Rule reloads"])


    def test_every_panel_is_documented(self):
        with open(os.path.join(SOURCE, "docs", "dashboards.md"), encoding="utf-8") as f:
            headings = {line[4:].strip() for line in f if line.startswith("### ")}
        for name, b in self.boards.items():
            for p in self.all_panels(b):
                title = ('Row "%s"' % p["title"]) if p["type"] == "row" else p["title"]
                self.assertIn(title, headings, "docs/dashboards.md has no heading for it")


class Names(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.queries = load_queries_module()
        cls.families = sensor_families()
        cls.families.update(MANAGER_FAMILIES)
        cls.series = series_names(cls.families)
        cls.exprs = []
        for name in DASHBOARDS:
            cls.exprs += [(name, title, e) for title, e in cls.queries.extract_queries(
                dashboard_path(name), include_annotations=True)]

    def test_header_parsed(self):
        # A change of the header's layout must fail here, not silently shrink the list.
        sensor = {n: k for n, k in sensor_families().items() if n.startswith("picket_sensor_")}
        self.assertEqual(len(sensor), 25, sorted(sensor))
        self.assertEqual(sensor["picket_sensor_up"], "gauge")
        self.assertEqual(sensor["picket_sensor_drops_total"], "counter")
        self.assertEqual(sensor["picket_sensor_worker_max_batch_seconds"], "gauge")
        self.assertEqual(sensor["picket_sensor_memuse_bytes"], "gauge")
        self.assertEqual(sensor["picket_sensor_app_layer_flows_total"], "counter")

    def test_tokenizer(self):
        self.assertEqual(metric_names(
            'histogram_quantile(0.99, sum by (le, method) (rate(a_bucket{x="b c"}[1m]))) / '
            'on (sensor) group_left (version) count_values("version", b) * 8 > bool 1e-9 '
            'or sum(c) without (d) and vector(0) unless e offset 5m'), ["a_bucket", "b", "c", "e"])

    def test_every_metric_is_exported(self):
        self.assertGreater(len(self.exprs), 30)
        for name, title, expr in self.exprs:
            with self.subTest(dashboard=name, panel=title):
                names = metric_names(expr)
                self.assertTrue(names, expr)
                for metric in names:
                    self.assertTrue(metric in self.series,
                                    "%s is not an exported series: %s" % (metric, expr))

    def test_rate_only_over_counters(self):
        for name, title, expr in self.exprs:
            for fn, metric in re.findall(r"\b(rate|irate|increase)\(\s*([A-Za-z_:][\w:]*)", expr):
                with self.subTest(dashboard=name, panel=title, metric=metric):
                    self.assertEqual(self.series[metric], "counter")

    def test_no_variable_left(self):
        for name, title, expr in self.exprs:
            self.assertNotIn("$", expr, "%s: %s" % (name, title))

    def test_substitution(self):
        q = dict(self.queries.extract_queries(dashboard_path(DASHBOARDS[0]), "30s", "s1|s2",
                                              range_="6h"))
        self.assertEqual(q["Throughput per sensor"], 'sum by (sensor) (rate('
                         'picket_sensor_bytes_total{sensor=~"s1|s2"}[30s])) * 8')
        self.assertIn("[6h]", q["Deployments / rollbacks in range"])
        with self.assertRaises(ValueError):
            self.queries._substitute("rate(x[$__rate_intervall])", {"__rate_interval": "1m"},
                                     "test")
        self.assertEqual(self.queries._substitute('label_replace(x, "a", "$1", "b", "(.*)")',
                                                  {}, "test"),
                         'label_replace(x, "a", "$1", "b", "(.*)")')

    def test_drop_ratio_query_is_per_interval(self):
        q = dict(self.queries.extract_queries(dashboard_path(DASHBOARDS[0])))
        d = 'sum by (sensor) (rate(picket_sensor_drops_total{sensor=~".*"}[1m]))'
        p = 'sum by (sensor) (rate(picket_sensor_packets_total{sensor=~".*"}[1m]))'
        self.assertEqual(q["Drop ratio per sensor (per interval)"], "%s / (%s + %s)" % (d, p, d))


def promtool_test(case, tests):
    """Runs `promtool test rules` on promql_expr_test cases; returns (ok, output)."""
    path = os.path.join(case.tmp, "test.yml")
    with open(path, "w") as f:
        json.dump({"rule_files": [], "evaluation_interval": "15s", "tests": tests}, f)
    r = subprocess.run([PROMTOOL, "test", "rules", path], capture_output=True, text=True,
                       timeout=60)
    return r.returncode == 0, r.stdout + r.stderr


@unittest.skipUnless(os.access(PROMTOOL, os.X_OK), "needs " + PROMTOOL)
class Meaning(unittest.TestCase):
    """The dashboards' own expressions evaluated by promtool on fixed series."""

    @classmethod
    def setUpClass(cls):
        queries = load_queries_module()
        cls.q = {}
        for name in DASHBOARDS:
            for title, expr in queries.extract_queries(dashboard_path(name)):
                cls.q.setdefault(title, expr)
        cls.tmp = tempfile.mkdtemp(prefix="picket-dash-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_case(self, series, checks):
        test = {"interval": "15s", "input_series": [{"series": s, "values": v}
                                                     for s, v in series],
                "promql_expr_test": [{"expr": e, "eval_time": t, "exp_samples": exp}
                                     for e, t, exp in checks]}
        ok, out = promtool_test(self, [test])
        self.assertTrue(ok, out)

    def test_drop_ratio_burst(self):
        # 900 packets per 15 s throughout; 540 kernel drops per 15 s between 5m and 6m only.
        # At 6m the last minute lost 37.5%, while the cumulative ratio is 2160/23760 = 9%.
        series = [('picket_sensor_packets_total{sensor="s1"}', "0+900x40"),
                  ('picket_sensor_drops_total{sensor="s1",reason="kernel"}',
                   "0x20 540+540x3 2160x15"),
                  ('picket_sensor_drops_total{sensor="s1",reason="queue"}', "0x40")]
        ratio = self.q["Drop ratio per sensor (per interval)"]
        top = self.q["Top sensors by drop ratio"]
        self.run_case(series, [
            (ratio, "4m", [{"labels": '{sensor="s1"}', "value": 0}]),
            (ratio, "6m", [{"labels": '{sensor="s1"}', "value": 0.375}]),
            (top, "6m", [{"labels": '{sensor="s1"}', "value": 0.375}]),
            (ratio, "8m", [{"labels": '{sensor="s1"}', "value": 0}]),
            (self.q["Drop ratio (per interval)"], "6m",
             [{"labels": '{sensor="s1"}', "value": 0.375}]),
        ])

    def test_up_down_and_bundles(self):
        # s1 is exported twice (manager and its own /metrics): still one sensor.
        series = [('picket_sensor_up{sensor="s1",job="manager"}', "1x10"),
                  ('picket_sensor_up{sensor="s1",job="sensor"}', "1x10"),
                  ('picket_sensor_up{sensor="s2",job="manager"}', "1x10"),
                  ('picket_sensor_up{sensor="s3",job="manager"}', "0x10"),
                  ('picket_sensor_bundle_info{sensor="s1",version="3",sha="c3",job="manager"}',
                   "1x10"),
                  ('picket_sensor_bundle_info{sensor="s1",version="3",sha="c3",job="sensor"}',
                   "1x10"),
                  ('picket_sensor_bundle_info{sensor="s2",version="2",sha="b2",job="manager"}',
                   "1x10"),
                  ('picket_sensor_bundle_info{sensor="s3",version="0",sha="",job="manager"}',
                   "1x10"),
                  ('picket_bundle_latest_version{job="manager"}', "3x10")]
        self.run_case(series, [
            (self.q["Sensors up"], "1m", [{"labels": "{}", "value": 2}]),
            (self.q["Sensors down"], "1m", [{"labels": "{}", "value": 1}]),
            (self.q["Sensors not on the latest bundle"], "1m", [{"labels": "{}", "value": 2}]),
            (self.q["Bundle per sensor"], "1m", [
                {"labels": '{sensor="s1",version="3",sha="c3"}', "value": 1},
                {"labels": '{sensor="s2",version="2",sha="b2"}', "value": 0},
                {"labels": '{sensor="s3",version="0"}', "value": 0}]),
            (self.q["Connected"], "1m", [{"labels": '{sensor="s1"}', "value": 1},
                                         {"labels": '{sensor="s2"}', "value": 1},
                                         {"labels": '{sensor="s3"}', "value": 0}]),
        ])

    def test_all_on_latest_counts_zero(self):
        series = [('picket_sensor_up{sensor="s1"}', "1x10"),
                  ('picket_sensor_bundle_info{sensor="s1",version="12",sha="x"}', "1x10"),
                  ("picket_bundle_latest_version", "12x10")]
        self.run_case(series, [
            (self.q["Sensors down"], "1m", [{"labels": "{}", "value": 0}]),
            (self.q["Sensors not on the latest bundle"], "1m", [{"labels": "{}", "value": 0}]),
        ])


class FakeFleet:
    """A /metrics serving every family with plausible values; counters grow on each scrape,
    and deployment/reload timestamps move so that the annotation queries match too."""

    def __init__(self, families):
        self.families = families
        self.scrapes = 0
        self.lock = threading.Lock()

    def render(self):
        with self.lock:
            self.scrapes += 1
            n = self.scrapes
        lines = []
        seen = set()

        def add(name, labels, value):
            family = re.sub(r"_(bucket|sum|count)$", "", name)
            family = family if family in self.families else name
            if family not in seen:
                seen.add(family)
                lines.append("# TYPE %s %s" % (family, self.families[family]))
            label_text = ",".join('%s="%s"' % kv for kv in labels.items())
            lines.append("%s{%s} %s" % (name, label_text, value))

        def histogram(name, labels, per_scrape):
            for le in ("0.001", "0.01", "0.1", "1", "+Inf"):
                add(name + "_bucket", dict(labels, le=le), n * per_scrape if le != "0.001" else 0)
            add(name + "_sum", labels, n * per_scrape * 0.005)
            add(name + "_count", labels, n * per_scrape)

        sensors = (("s1", 1, "3", "c3"), ("s2", 1, "2", "b2"), ("s3", 0, "0", ""))
        for i, (s, up, version, sha) in enumerate(sensors):
            grow = n if up else 1  # a disconnected sensor's counters stay frozen
            add("picket_sensor_up", {"sensor": s}, up)
            add("picket_sensor_info", {"sensor": s, "host": "h" + s, "version": "0.1.0",
                                       "capture": "af-packet:eth0", "ips": "false",
                                       "label_site": "lab"}, 1)
            add("picket_sensor_last_report_timestamp_seconds", {"sensor": s}, time.time())
            add("picket_sensor_packets_total", {"sensor": s}, grow * 1000)
            add("picket_sensor_bytes_total", {"sensor": s}, grow * 600000)
            for reason in ("kernel", "queue", "flow_memcap", "defrag_memcap"):
                add("picket_sensor_drops_total", {"sensor": s, "reason": reason},
                    grow * 50 * i if reason == "kernel" else 0)
            for name in ("alerts_total", "alerts_suppressed_total",
                         "alert_queue_overflow_total", "flows_total"):
                add("picket_sensor_" + name, {"sensor": s}, grow * 3)
            add("picket_sensor_flows_active", {"sensor": s}, 120)
            add("picket_sensor_rules_loaded", {"sensor": s}, 30000)
            add("picket_sensor_rules_failed", {"sensor": s}, 4)
            add("picket_sensor_bundle_info", {"sensor": s, "version": version, "sha": sha}, 1)
            for result in ("ok", "failed"):
                add("picket_sensor_reloads_total", {"sensor": s, "result": result}, grow)
            if up:
                add("picket_sensor_last_reload_timestamp_seconds", {"sensor": s}, n)
            add("picket_sensor_reload_duration_seconds", {"sensor": s}, 0.25)
            for verdict in ("pass", "drop", "reject"):
                add("picket_sensor_ips_verdicts_total", {"sensor": s, "verdict": verdict}, 0)
            for w in ("0", "1"):
                add("picket_sensor_worker_packets_total", {"sensor": s, "worker": w}, grow * 500)
                add("picket_sensor_worker_bytes_total", {"sensor": s, "worker": w},
                    grow * 300000)
            add("picket_sensor_worker_max_batch_seconds", {"sensor": s}, 0.002)
            for t in ("flow", "http", "dns"):
                add("picket_sensor_eve_records_total", {"sensor": s, "type": t}, grow * 40)
                add("picket_sensor_eve_dropped_total", {"sensor": s, "type": t}, 0)
            for pool in ("flow", "defrag", "stream", "reassembly", "app_layer"):
                add("picket_sensor_memuse_bytes", {"sensor": s, "pool": pool}, 1 << 20)
            for proto in ("http", "tls", "dns_tcp", "dns_udp", "failed_tcp", "failed_udp"):
                add("picket_sensor_app_layer_flows_total", {"sensor": s, "protocol": proto},
                    grow * 5)
            add("picket_manager_sensor_clock_offset_seconds", {"sensor": s}, 0.002 * (i + 1))
        for state, count in (("connected", 2), ("disconnected", 1)):
            add("picket_sensors", {"state": state}, count)
        for state in ("pending", "sent", "applied", "rejected", "timed_out", "rolled_back"):
            add("picket_deployment_targets", {"state": state}, 2 if state == "applied" else 0)
        add("picket_bundle_latest_version", {}, 3)
        add("picket_deployments_total", {}, n)
        add("picket_deployment_last_timestamp_seconds", {}, n)
        add("picket_rollbacks_total", {}, n)
        histogram("picket_manager_grpc_request_duration_seconds",
                  {"method": "Deploy"}, 1)
        for kind in ("hello", "metrics", "alerts", "apply_result", "pong"):
            add("picket_manager_sensor_messages_total", {"kind": kind}, n * 2)
        histogram("picket_manager_store_op_duration_seconds", {}, 4)
        histogram("picket_manager_store_transaction_duration_seconds", {}, 2)
        add("picket_manager_alerts_received_total", {}, n * 6)
        add("picket_manager_replica_info", {"replica": "mgr-a", "role": "leader"}, 1)
        for i, s in enumerate(("s1", "s2", "s3")):
            add("picket_sensor_replica_info", {"sensor": s, "replica": "mgr-" + "ab"[i % 2]}, 1)
        for result in ("new_version", "unchanged", "failed"):
            add("picket_rules_updates_total", {"result": result}, n)
        add("picket_rules_update_last_success_timestamp_seconds", {}, n)
        for source, rules in (("et-open", 48000), ("talos", 4000)):
            add("picket_rules_source_rules", {"source": source}, rules)
            add("picket_rules_source_fetch_failing", {"source": source}, 0)
        missing = set(self.families) - seen
        assert not missing, "fake fleet does not serve %s" % sorted(missing)
        return ("\n".join(lines) + "\n").encode()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@unittest.skipUnless(os.access(PROMETHEUS, os.X_OK), "needs " + PROMETHEUS)
class RealPrometheus(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        queries = load_queries_module()
        cls.exprs = []
        for name in DASHBOARDS:
            cls.exprs += [(name, t, e) for t, e in queries.extract_queries(
                dashboard_path(name), include_annotations=True)]
        families = sensor_families()
        families.update(MANAGER_FAMILIES)
        fleet = FakeFleet(families)
        fleet.render()  # asserts that it serves every family, before anything starts

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = fleet.render()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        cls.exporter = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=cls.exporter.serve_forever, daemon=True).start()
        cls.tmp = tempfile.mkdtemp(prefix="picket-dash-prom-")
        config = os.path.join(cls.tmp, "prometheus.yml")
        with open(config, "w") as f:
            json.dump({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                       "scrape_configs": [{"job_name": "fake-fleet", "static_configs": [
                           {"targets": ["127.0.0.1:%d" % cls.exporter.server_address[1]]}]}]},
                      f)
        cls.port = free_port()
        cls.log = open(os.path.join(cls.tmp, "prometheus.log"), "w")
        cls.prom = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + config, "--storage.tsdb.path=" + cls.tmp + "/data",
             "--web.listen-address=127.0.0.1:%d" % cls.port], stdout=cls.log,
            stderr=subprocess.STDOUT)
        try:
            cls.wait_ready()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def wait_ready(cls):
        deadline = time.time() + 30
        while True:
            try:
                if cls.query("vector(1)")["status"] == "success":
                    return
            except OSError:
                pass
            if time.time() > deadline or cls.prom.poll() is not None:
                raise RuntimeError("prometheus did not start, see its log above")
            time.sleep(0.2)

    @classmethod
    def tearDownClass(cls):
        cls.prom.terminate()
        try:
            cls.prom.wait(timeout=10)
        except subprocess.TimeoutExpired:
            cls.prom.kill()
            cls.prom.wait()
        cls.exporter.shutdown()
        cls.exporter.server_close()
        cls.log.close()
        if cls.prom.returncode not in (0, -signal.SIGTERM):
            with open(cls.log.name) as f:
                sys.stderr.write(f.read())
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def query(cls, expr):
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (
            cls.port, urllib.parse.urlencode({"query": expr}))
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:  # 400 = the query does not parse
            body = e.read()
        try:
            return json.loads(body)
        except ValueError:  # e.g. 503 while Prometheus starts
            return {"status": "error", "error": body.decode(errors="replace")}

    def test_1_every_query_parses(self):
        for name, title, expr in self.exprs:
            with self.subTest(dashboard=name, panel=title):
                r = self.query(expr)
                self.assertEqual(r["status"], "success", "%s\n%s" % (expr, r.get("error")))

    def test_2_every_query_returns_data_on_a_fleet(self):
        # rate() needs two samples inside [1m]; changes() > 0 needs a change in the window.
        deadline = time.time() + 60
        while len(self.query('count(rate(picket_sensor_packets_total[1m]) > 0)')["data"]
                  ["result"]) == 0 and time.time() < deadline:
            time.sleep(0.5)
        for name, title, expr in self.exprs:
            with self.subTest(dashboard=name, panel=title):
                r = self.query(expr)
                self.assertEqual(r["status"], "success")
                self.assertTrue(r["data"]["result"], expr)


def main():
    global SOURCE
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True, help="the source tree (holds dashboards/)")
    args, rest = ap.parse_known_args()
    SOURCE = os.path.abspath(args.source)
    picket_test.main([sys.argv[0]] + rest)


if __name__ == "__main__":
    main()
