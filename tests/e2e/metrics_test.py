#!/usr/bin/env python3
"""End-to-end metrics: a real picket-manager with --metrics-listen, two real picket-sensor
processes replaying generated traffic in a loop (one with a 2-packet worker queue so it really
drops), and a real Prometheus server scraping the manager every second, all on loopback.

Checks: the exposition passes `promtool check metrics`; exact fleet values (sensors up, bundle
version, deployment targets); every query of every dashboard panel returns data from
Prometheus; the dashboard's drop-ratio query is 0 for the healthy sensor and above 0 for the
dropping one; `promtool check config` accepts deploy/prometheus.yml; the alerting rules of
deploy/prometheus/picket-alerts.yml load and evaluate with health "ok".

Usage: metrics_test.py --build BUILD_DIR --source SOURCE_DIR
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
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleetlib  # noqa: E402
from fleetlib import binary  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)

SOURCE = None
PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
RATE_INTERVAL = "15s"


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.headers.get("Content-Type", ""), r.read().decode()


def wait_for_line(proc, pattern, timeout=30):
    """Polls the log file of `proc` (its stderr) until a line matches; returns the match."""
    deadline = time.time() + timeout
    rx = re.compile(pattern)
    text = ""
    while time.time() < deadline:
        with open(proc.log_path) as f:
            text = f.read()
        m = rx.search(text)
        if m:
            return m
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    raise AssertionError("no line matching %r; got:\n%s" % (pattern, text))


@unittest.skipUnless(PROMETHEUS and PROMTOOL, "needs Debian's prometheus package")
class Metrics(fleetlib.FleetCase, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-metrics-")
        cls.procs = []
        cls.pcap = os.path.join(cls.tmp, "demo.pcap")
        fleetlib.trafficgen(cls.pcap, "--seed", "5", "--sessions", "300", "--attack",
                            "/etc/passwd", "--attack-share", "0.2")
        cls.rules = os.path.join(cls.tmp, "local.rules")
        with open(cls.rules, "w") as f:
            f.write('alert tcp any any -> any any (msg:"passwd"; content:"/etc/passwd"; '
                    'sid:1001; rev:1;)\n'
                    'alert tcp any any -> any any (msg:"slow"; pcre:"/(a|b|c)+x[^y]{3,}z/"; '
                    'sid:1002; rev:1;)\n')

        cls.manager = cls.start([binary("manager", "picket-manager"), "--listen",
                                 "127.0.0.1:0", "--db", os.path.join(cls.tmp, "fleet.db"),
                                 "--insecure", "--metrics-listen", "127.0.0.1:0"])
        port = wait_for_line(cls.manager, r"serving on .* \(port (\d+)\)").group(1)
        cls.addr = "127.0.0.1:" + port
        cls.ctl_flags = ["--manager", cls.addr, "--insecure"]
        cls.metrics_url = wait_for_line(cls.manager, r"metrics on (http://\S+)").group(1)
        cls.metrics_target = urllib.parse.urlparse(cls.metrics_url).netloc

        common = [binary("sensor", "picket-sensor"), "-r", cls.pcap, "--pcap-loop", "0",
                  "--manager", cls.addr, "--insecure", "--metrics-interval", "1",
                  "-S", cls.rules]
        for d in ("s1", "s2"):
            os.makedirs(os.path.join(cls.tmp, d), exist_ok=True)
        # s1: paced, default queue: no drops. s2: unpaced, one worker, a 2-packet queue: drops.
        cls.start(common + ["--name", "s1", "--pcap-rate", "3000", "--labels", "site=lab",
                            "--state-dir", os.path.join(cls.tmp, "s1"), "-l",
                            os.path.join(cls.tmp, "s1")])
        cls.start(common + ["--name", "s2", "--workers", "1", "--set", "capture.queue-size=2",
                            "--labels", "site=lab", "--state-dir", os.path.join(cls.tmp, "s2"),
                            "-l", os.path.join(cls.tmp, "s2")])

        cls.prom_port = cls.free_port()
        cls.prom_config = os.path.join(cls.tmp, "prometheus.yml")
        with open(cls.prom_config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "rule_files: ['%s']\n"
                    "scrape_configs:\n  - job_name: picket-manager\n"
                    "    static_configs:\n      - targets: ['%s']\n"
                    % (os.path.join(SOURCE, "deploy", "prometheus", "picket-alerts.yml"),
                       cls.metrics_target))
        cls.prom = cls.start([PROMETHEUS, "--config.file=" + cls.prom_config,
                              "--storage.tsdb.path=" + os.path.join(cls.tmp, "tsdb"),
                              "--web.listen-address=127.0.0.1:%d" % cls.prom_port],
                             stderr=subprocess.DEVNULL)
        cls.prom_url = "http://127.0.0.1:%d" % cls.prom_port

    @classmethod
    def free_port(cls):
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        return port

    @classmethod
    def start(cls, args, stderr=None):
        log_path = os.path.join(cls.tmp, "proc-%d.log" % len(cls.procs))
        with open(log_path, "w") as log:
            p = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                 stderr=log if stderr is None else stderr)
        p.log_path = log_path
        cls.procs.append(p)
        return p

    @classmethod
    def tearDownClass(cls):
        fleetlib.stop_all(cls.procs)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def query(self, expr):
        url = self.prom_url + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        _, _, body = http_get(url)
        doc = json.loads(body)
        self.assertEqual(doc["status"], "success", expr)
        return doc["data"]["result"]

    def wait_query(self, expr, pred, timeout=60):
        deadline = time.time() + timeout
        result = None
        while time.time() < deadline:
            try:
                result = self.query(expr)
            except OSError:
                result = None
            if result is not None and pred(result):
                return result
            time.sleep(0.5)
        self.fail("query %r never satisfied the condition; last result %r" % (expr, result))

    @staticmethod
    def scalar(result):
        return float(result[0]["value"][1])

    def test_fleet_metrics_and_dashboards(self):
        # Both sensors connect and report; Prometheus has scraped them.
        self.wait_query('picket_sensors{state="connected"}',
                        lambda r: len(r) == 1 and self.scalar(r) == 2)
        self.wait_query("picket_sensor_packets_total > 0", lambda r: len(r) == 2)

        # A bundle pushed and deployed to both: version and targets are exact.
        with open(self.rules) as f:
            d = fleetlib.write_bundle(os.path.join(self.tmp, "bundle"), f.read())
        version = self.ctl("bundle", "push", d, "--name", "demo", "-m", "metrics test")["version"]
        self.ctl("deploy", str(version), "--to", "all", "--wait", "--timeout", "60")
        self.wait_query("picket_bundle_latest_version",
                        lambda r: len(r) == 1 and self.scalar(r) == version)
        self.wait_query('picket_deployment_targets{state="applied"}',
                        lambda r: len(r) == 1 and self.scalar(r) == 2)
        info = self.wait_query('picket_sensor_bundle_info{version="%d"}' % version,
                               lambda r: len(r) == 2)
        self.assertEqual(sorted(x["metric"]["sensor"] for x in info), ["s1", "s2"])
        self.assertTrue(all(len(x["metric"]["sha"]) == 64 for x in info), info)
        rules = self.query("picket_sensor_rules_loaded")
        self.assertEqual(sorted(self.scalar([x]) for x in rules), [2.0, 2.0])

        # A rules update from a local source (manager/rules): its series are exact.
        feed = os.path.join(self.tmp, "feed")
        os.makedirs(feed)
        shutil.copy(self.rules, os.path.join(feed, "site.rules"))
        self.ctl("rules", "source", "add", "site-feed", feed)
        update = self.ctl("rules", "update")
        self.assertEqual(update["version"], version + 1, update)
        self.wait_query('picket_rules_source_rules{source="site-feed"}',
                        lambda r: len(r) == 1 and self.scalar(r) == 2)
        self.wait_query('picket_rules_source_fetch_failing{source="site-feed"}',
                        lambda r: len(r) == 1 and self.scalar(r) == 0)
        self.wait_query('picket_rules_updates_total{result="new_version"}',
                        lambda r: len(r) == 1 and self.scalar(r) == 1)
        self.wait_query("picket_rules_update_last_success_timestamp_seconds",
                        lambda r: len(r) == 1 and self.scalar(r) > 0)

        # The exposition itself: content type and promtool's linter.
        status, ctype, body = http_get(self.metrics_url)
        self.assertEqual(status, 200)
        self.assertTrue(ctype.startswith("text/plain; version=0.0.4"), ctype)
        r = subprocess.run([PROMTOOL, "check", "metrics"], input=body, capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn('picket_manager_grpc_request_duration_seconds_count{method="Deploy"} ',
                      body)

        # Let the rate windows fill (scrape every 1 s, windows of RATE_INTERVAL).
        time.sleep(int(RATE_INTERVAL.rstrip("s")) + 3)

        sys.path.insert(0, os.path.join(SOURCE, "dashboards"))
        import queries  # noqa: E402  (dashboards/queries.py)
        empty = []
        checked = 0
        for name in sorted(os.listdir(os.path.join(SOURCE, "dashboards"))):
            if not name.endswith(".json"):
                continue
            path = os.path.join(SOURCE, "dashboards", name)
            for title, expr in queries.extract_queries(path, rate_interval=RATE_INTERVAL):
                checked += 1
                if not self.query(expr):
                    empty.append("%s / %s: %s" % (name, title, expr))
        self.assertGreater(checked, 10)
        self.assertEqual(empty, [], "dashboard queries without data:\n" + "\n".join(empty))

        # The dashboard's drop ratio: exactly 0 for the paced sensor, above 0 for the other.
        ratio = None
        for title, expr in queries.extract_queries(
                os.path.join(SOURCE, "dashboards", "fleet-overview.json"),
                rate_interval=RATE_INTERVAL):
            if "drop ratio" in title.lower() and "top" not in title.lower():
                ratio = expr
                break
        self.assertIsNotNone(ratio, "no drop ratio panel in fleet-overview.json")
        by_sensor = {x["metric"]["sensor"]: float(x["value"][1]) for x in self.query(ratio)}
        self.assertEqual(by_sensor.get("s1"), 0.0, by_sensor)
        self.assertGreater(by_sensor.get("s2", 0.0), 0.0, by_sensor)
        self.assertLess(by_sensor["s2"], 1.0, by_sensor)

    def test_alerting_rules_load_and_evaluate(self):
        # deploy/prometheus/picket-alerts.yml in a real Prometheus: every group is there and
        # every rule evaluates without error against the manager's real series.
        def groups():
            _, _, body = http_get(self.prom_url + "/api/v1/rules?type=alert")
            return {g["name"]: g for g in json.loads(body)["data"]["groups"]}

        deadline = time.time() + 30
        got, health = {}, {}
        while True:
            try:  # Prometheus may still be starting
                got = groups()
                health = {r["name"]: r["health"] for g in got.values() for r in g["rules"]}
            except OSError:
                pass
            if (set(health.values()) == {"ok"} and len(health) == 16) or time.time() > deadline:
                break
            time.sleep(0.5)
        self.assertEqual(sorted(got), ["picket-manager", "picket-rules", "picket-sensors"])
        self.assertEqual(len(health), 16, health)
        self.assertEqual({n: h for n, h in health.items() if h != "ok"}, {})

    def test_promtool_accepts_the_shipped_prometheus_config(self):
        path = os.path.join(SOURCE, "deploy", "prometheus.yml")
        r = subprocess.run([PROMTOOL, "check", "config", path], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


class ManagerConfig(unittest.TestCase):
    """picket-manager -c FILE: flags override the file; bad files are usage errors that name
    the file, the line and the key."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="picket-mgrconf-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_manager(self, config_text, *flags):
        path = os.path.join(self.tmp, "manager.yaml")
        with open(path, "w") as f:
            f.write(config_text)
        return subprocess.run([binary("manager", "picket-manager"), "-c", path] + list(flags),
                              capture_output=True, text=True, timeout=30), path

    def test_unknown_key_names_file_line_and_key(self):
        r, path = self.run_manager("listen: 127.0.0.1:0\ntls:\n  cert: a.crt\n  cer: b\n")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("%s:4: unknown key 'tls.cer'" % path, r.stderr)

    def test_rules_schedule_values_are_checked(self):
        r, path = self.run_manager("rules:\n  update-interval: often\n", "--db", "x.db")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("%s: rules.update-interval: expected a duration" % path, r.stderr)
        r, path = self.run_manager("rules:\n  soak: 60\n", "--db", "x.db")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("rules.soak: a soak needs a canary stage (rules.canary)", r.stderr)
        r, path = self.run_manager("rules:\n  deploy-to: label=x\n", "--db", "x.db")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("rules.deploy-to", r.stderr)

    def test_bad_value_is_a_usage_error(self):
        r, path = self.run_manager("target-timeout: soon\n", "--db", "x.db")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(path, r.stderr)
        self.assertIn("target-timeout", r.stderr)

    def test_missing_tls_file_from_the_shipped_example_is_named(self):
        r = subprocess.run([binary("manager", "picket-manager"), "-c",
                            os.path.join(SOURCE, "deploy", "manager.yaml"),
                            "--db", os.path.join(self.tmp, "m.db")],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("/etc/picket/pki/", r.stderr)

    def test_flags_override_the_file(self):
        # The file says a non-loopback insecure listener (refused); the flag wins.
        db = os.path.join(self.tmp, "m.db")
        path = os.path.join(self.tmp, "manager.yaml")
        with open(path, "w") as f:
            f.write("listen: 0.0.0.0:7443\ninsecure: true\ndb: %s\n"
                    "metrics-listen: 127.0.0.1:0\n" % db)
        p = subprocess.Popen([binary("manager", "picket-manager"), "-c", path, "--listen",
                              "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
        try:
            line = ""
            deadline = time.time() + 20
            while "metrics on" not in line and time.time() < deadline:
                line = p.stderr.readline()
                if not line and p.poll() is not None:
                    break
            self.assertIn("metrics on http://127.0.0.1:", line)
            self.assertTrue(os.path.exists(db))
        finally:
            p.send_signal(signal.SIGTERM)
            p.communicate(timeout=20)
        self.assertEqual(p.returncode, 0)


if __name__ == "__main__":
    paths, argv = fleetlib.parse_args("--source")
    SOURCE = paths["source"]
    picket_test.main(argv)
