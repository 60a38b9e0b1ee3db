#!/usr/bin/env python3
"""End-to-end: a real picket-sensor replaying a generated pcap as a live source
(--pcap-loop 0, --pcap-rate) serves Prometheus metrics (--metrics-listen 127.0.0.1:0), scraped
over HTTP.

Checks the exposition (Content-Type, HELP/TYPE of every family of
common/metrics/sensor_series.h, `promtool check metrics` when /usr/bin/promtool exists), the
values (up, exact rules loaded/failed, packets growing between scrapes, per-worker series summing
to the totals within one scrape, reloads after SIGUSR2), queue drops with a tiny worker queue,
the sensor and label identity with --manager (refused, then a real picket-manager pushing a
bundle: its version and sha on the sensor's own endpoint, the same as the manager's), bad and
busy listen addresses, and a clean exit (status 0) on SIGINT.

Usage: sensor_metrics_test.py --build BUILD_DIR
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)
import picket_e2e  # noqa: E402
from picket_e2e import binary, manager_bin, picketctl_bin, sensor_bin, trafficgen_bin  # noqa: E402

PROMTOOL = "/usr/bin/promtool"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Every family of common/metrics/sensor_series.h and its type.
FAMILIES = {
    "picket_sensor_up": "gauge",
    "picket_sensor_info": "gauge",
    "picket_sensor_last_report_timestamp_seconds": "gauge",
    "picket_sensor_packets_total": "counter",
    "picket_sensor_bytes_total": "counter",
    "picket_sensor_drops_total": "counter",
    "picket_sensor_alerts_total": "counter",
    "picket_sensor_alerts_suppressed_total": "counter",
    "picket_sensor_alert_queue_overflow_total": "counter",
    "picket_sensor_flows_active": "gauge",
    "picket_sensor_flows_total": "counter",
    "picket_sensor_rules_loaded": "gauge",
    "picket_sensor_rules_failed": "gauge",
    "picket_sensor_bundle_info": "gauge",
    "picket_sensor_reloads_total": "counter",
    "picket_sensor_last_reload_timestamp_seconds": "gauge",
    "picket_sensor_reload_duration_seconds": "gauge",
    "picket_sensor_ips_verdicts_total": "counter",
    "picket_sensor_worker_packets_total": "counter",
    "picket_sensor_worker_bytes_total": "counter",
    "picket_sensor_worker_max_batch_seconds": "gauge",
    "picket_sensor_eve_records_total": "counter",
    "picket_sensor_eve_dropped_total": "counter",
    "picket_sensor_memuse_bytes": "gauge",
    "picket_sensor_app_layer_flows_total": "counter",
}

# Three rules load, one is refused (unknown keyword).
RULES = (
    'alert tcp any any -> any any (msg:"passwd"; content:"/etc/passwd"; sid:1001;)\n'
    'alert tcp any any -> any any (msg:"get"; content:"GET "; sid:1002;)\n'
    'alert udp any any -> any 53 (msg:"dns"; content:"|00 01|"; sid:1003;)\n'
    'alert tcp any any -> any any (msg:"broken"; no_such_keyword; sid:1004;)\n'
)
RULES_LOADED = 3
RULES_FAILED = 1

SAMPLE_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


def parse_exposition(body):
    """{family: {"help": str, "type": str, "samples": [(name, {label: value}, float)]}}"""
    families = {}
    for line in body.splitlines():
        if not line:
            continue
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            kind, rest = line[2:6], line[7:]
            name, _, text = rest.partition(" ")
            families.setdefault(name, {"help": None, "type": None, "samples": []})
            families[name]["help" if kind == "HELP" else "type"] = text
            continue
        m = SAMPLE_RE.match(line)
        assert m, "unparsable line: %r" % line
        name, labels_text, value = m.group(1), m.group(3) or "", m.group(4)
        labels = {k: v for k, v in LABEL_RE.findall(labels_text)}
        family = name
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and name[:-len(suffix)] in families:
                family = name[:-len(suffix)]
        families.setdefault(family, {"help": None, "type": None, "samples": []})
        families[family]["samples"].append((name, labels, float(value)))
    return families


def value(families, name, **labels):
    """The one sample of `name` whose labels include `labels`."""
    found = [v for n, l, v in families[name]["samples"]
             if n == name and all(l.get(k) == w for k, w in labels.items())]
    assert len(found) == 1, "%s %s: %d samples" % (name, labels, len(found))
    return found[0]


def labels_of(families, name):
    samples = families[name]["samples"]
    assert len(samples) == 1, name
    return samples[0][1]


def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.headers.get("Content-Type"), r.read().decode("utf-8")


class Sensor:
    """A picket-sensor process with --metrics-listen 127.0.0.1:0; stdout/stderr go to files so
    that a chatty process never blocks on a full pipe."""

    def __init__(self, tmp, args):
        self.dir = tempfile.mkdtemp(dir=tmp)
        self.out_path = os.path.join(self.dir, "stdout")
        self.err_path = os.path.join(self.dir, "stderr")
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(
                [sensor_bin(), "-l", self.dir, "--metrics-listen", "127.0.0.1:0"] + args,
                stdout=out, stderr=err)
        self.url = None
        deadline = time.time() + 30
        while self.url is None:
            m = re.search(r"metrics: serving (http://\S+)", self.stderr())
            if m:
                self.url = m.group(1)
                break
            if self.proc.poll() is not None:
                raise AssertionError("sensor exited with %d before serving metrics: %s" %
                                     (self.proc.returncode, self.stderr()))
            if time.time() > deadline:
                self.kill()
                raise AssertionError("no 'metrics: serving' line: " + self.stderr())
            time.sleep(0.05)

    def stderr(self):
        with open(self.err_path) as f:
            return f.read()

    def stdout(self):
        with open(self.out_path) as f:
            return f.read()

    def scrape(self):
        status, ctype, body = scrape(self.url)
        assert status == 200, status
        return ctype, body, parse_exposition(body)

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self):
        """SIGINT, then the exit status (the process is killed after 30 s)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("sensor did not stop within 30 s of SIGINT")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class SensorMetrics(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-metrics-")
        cls.pcap = os.path.join(cls.tmp, "gen.pcap")
        r = subprocess.run([trafficgen_bin(), "-o", cls.pcap, "--seed", "21", "--sessions",
                            "400", "--attack", "/etc/passwd", "--attack-share", "0.2"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        with open(cls.pcap + ".json") as f:
            cls.rec = json.load(f)
        cls.rules = os.path.join(cls.tmp, "e2e.rules")
        with open(cls.rules, "w") as f:
            f.write(RULES)
        cls.sensors = []

    @classmethod
    def tearDownClass(cls):
        for s in cls.sensors:
            s.kill()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def start(self, *args):
        s = Sensor(self.tmp, list(args))
        self.sensors.append(s)
        return s

    def check_promtool(self, body):
        if not os.path.exists(PROMTOOL):
            return
        r = subprocess.run([PROMTOOL, "check", "metrics"], input=body, capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0,
                         "promtool check metrics:\n%s%s\n--- body ---\n%s" %
                         (r.stdout, r.stderr, body))

    def test_paced_loop_serves_every_series(self):
        started = time.time()
        s = self.start("-r", self.pcap, "--pcap-loop", "0", "--pcap-rate", "2000",
                       "--workers", "2", "-S", self.rules)
        packets = []
        for i in range(4):
            if i:
                time.sleep(0.6)
            ctype, body, fam = s.scrape()
            self.assertEqual(ctype, CONTENT_TYPE)
            for name, kind in FAMILIES.items():
                self.assertIn(name, fam, "family %s missing" % name)
                self.assertEqual(fam[name]["type"], kind, name)
                self.assertTrue(fam[name]["help"], "%s has no HELP" % name)
            self.assertEqual(value(fam, "picket_sensor_up"), 1)
            self.assertEqual(value(fam, "picket_sensor_rules_loaded"), RULES_LOADED)
            self.assertEqual(value(fam, "picket_sensor_rules_failed"), RULES_FAILED)
            total = value(fam, "picket_sensor_packets_total")
            workers = fam["picket_sensor_worker_packets_total"]["samples"]
            self.assertEqual(sorted(l["worker"] for _, l, _ in workers), ["0", "1"])
            self.assertEqual(sum(v for _, _, v in workers), total)
            self.assertEqual(
                sum(v for _, _, v in fam["picket_sensor_worker_bytes_total"]["samples"]),
                value(fam, "picket_sensor_bytes_total"))
            # Paced far below what two workers handle: nothing is dropped.
            self.assertEqual(value(fam, "picket_sensor_drops_total", reason="queue"), 0)
            self.assertEqual(value(fam, "picket_sensor_drops_total", reason="kernel"), 0)
            packets.append(total)
            self.check_promtool(body)
        for a, b in zip(packets, packets[1:]):
            self.assertGreater(b, a, "packets did not increase: %s" % packets)
        # The source counters exist under the names sensor_series.cc maps: flows are tracked
        # (flow table memory) and the generated HTTP sessions are recognised as such.
        self.assertGreater(value(fam, "picket_sensor_memuse_bytes", pool="flow"), 0)
        self.assertGreater(value(fam, "picket_sensor_app_layer_flows_total", protocol="http"), 0)
        # 2000 packets/s: after ~1.8 s of scrapes, far fewer than 2000 x elapsed time.
        self.assertLessEqual(packets[-1], 2000 * (time.time() - started) + 1)

        info = labels_of(fam, "picket_sensor_info")
        self.assertEqual(info["host"], socket.gethostname())
        self.assertEqual(info["sensor"], socket.gethostname())
        self.assertEqual(info["capture"], "pcap-file:" + self.pcap)
        self.assertEqual(info["ips"], "false")
        self.assertRegex(info["version"], r"^\d+\.\d+\.\d+")
        bundle = labels_of(fam, "picket_sensor_bundle_info")
        self.assertEqual((bundle["version"], bundle["sha"]), ("0", ""))
        self.assertEqual(value(fam, "picket_sensor_reloads_total", result="ok"), 0)
        self.assertEqual(value(fam, "picket_sensor_reloads_total", result="failed"), 0)
        loaded_at = value(fam, "picket_sensor_last_reload_timestamp_seconds")
        self.assertGreaterEqual(loaded_at, int(started) - 1)
        self.assertLessEqual(loaded_at, time.time() + 1)
        self.assertLess(abs(value(fam, "picket_sensor_last_report_timestamp_seconds") -
                            time.time()), 60)

        # SIGUSR2 reloads the rules: reloads_total{result="ok"} becomes 1, the counts stay.
        s.signal(signal.SIGUSR2)
        deadline = time.time() + 20
        while True:
            _, body, fam = s.scrape()
            if value(fam, "picket_sensor_reloads_total", result="ok") == 1:
                break
            self.assertLess(time.time(), deadline, "no reload seen after SIGUSR2")
            time.sleep(0.1)
        self.assertEqual(value(fam, "picket_sensor_rules_loaded"), RULES_LOADED)
        self.assertEqual(value(fam, "picket_sensor_reloads_total", result="failed"), 0)
        self.assertGreaterEqual(value(fam, "picket_sensor_last_reload_timestamp_seconds"),
                                loaded_at)
        self.assertGreater(value(fam, "picket_sensor_packets_total"), packets[-1])
        self.check_promtool(body)
        self.assertEqual(s.stop(), 0, s.stderr())
        # The start-up summary on stdout counts the same rules.
        self.assertIn("rules: %d loaded, %d skipped" % (RULES_LOADED, RULES_FAILED), s.stdout())

    def test_tiny_queue_counts_queue_drops(self):
        s = self.start("-r", self.pcap, "--pcap-loop", "0", "--workers", "1",
                       "--set", "capture.queue-size=2", "-S", self.rules)
        time.sleep(3)
        deadline = time.time() + 20
        while True:
            _, body, fam = s.scrape()
            drops = value(fam, "picket_sensor_drops_total", reason="queue")
            if drops > 0:
                break
            self.assertLess(time.time(), deadline, "no queue drops: " + body)
            time.sleep(0.2)
        self.assertEqual(value(fam, "picket_sensor_drops_total", reason="kernel"), 0)
        self.assertGreater(value(fam, "picket_sensor_packets_total"), 0)
        self.assertEqual(value(fam, "picket_sensor_rules_loaded"), RULES_LOADED)
        self.check_promtool(body)
        self.assertEqual(s.stop(), 0, s.stderr())
        # The end-of-run summary splits the drops by reason.
        self.assertRegex(s.stdout(), r"capture: \d+ packets, 0 kernel drops, [1-9]\d* queue drops")

    def test_managed_sensor_names_itself_and_its_labels(self):
        # A manager that refuses connections: the agent keeps retrying, metrics still serve.
        closed = socket.socket()
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        try:
            s = self.start("-r", self.pcap, "--pcap-loop", "0", "--pcap-rate", "1000",
                           "-S", self.rules, "--manager",
                           "127.0.0.1:%d" % closed.getsockname()[1], "--insecure",
                           "--name", "e2e-s1", "--labels", "site=lab-1,tier=edge",
                           "--state-dir", os.path.join(self.tmp, "state"))
            _, body, fam = s.scrape()
            info = labels_of(fam, "picket_sensor_info")
            self.assertEqual(info["sensor"], "e2e-s1")
            self.assertEqual(info["label_site"], "lab-1")
            self.assertEqual(info["label_tier"], "edge")
            self.assertEqual(labels_of(fam, "picket_sensor_up")["sensor"], "e2e-s1")
            bundle = labels_of(fam, "picket_sensor_bundle_info")
            self.assertEqual((bundle["version"], bundle["sha"]), ("0", ""))
            self.assertEqual(value(fam, "picket_sensor_rules_loaded"), RULES_LOADED)
            self.check_promtool(body)
            self.assertEqual(s.stop(), 0, s.stderr())
        finally:
            closed.close()

    def test_bundle_from_the_manager_shows_on_the_sensor(self):
        for tool in (("manager", "picket-manager"), ("manager", "cli", "picketctl")):
            if not os.path.exists(binary(*tool)):
                self.skipTest("%s is not built" % "/".join(tool))
        manager_log = os.path.join(self.tmp, "manager.log")
        with open(manager_log, "w") as log:
            manager = subprocess.Popen(
                [manager_bin(), "--listen", "127.0.0.1:0",
                 "--db", os.path.join(self.tmp, "fleet.db"), "--insecure", "--metrics-listen",
                 "127.0.0.1:0"], stdout=subprocess.DEVNULL, stderr=log)
        try:
            deadline = time.time() + 30
            m = mm = None
            # The "serving on" and "metrics on" lines are logged one after the other: wait for
            # both (reading between them found only the first).
            while m is None or mm is None:
                with open(manager_log) as f:
                    text = f.read()
                m = re.search(r"serving on .* \(port (\d+)\)", text)
                mm = re.search(r"metrics on (http://\S+)", text)
                self.assertIsNone(manager.poll(), text)
                self.assertLess(time.time(), deadline, "manager not serving: " + text)
                time.sleep(0.05)
            addr = "127.0.0.1:" + m.group(1)
            manager_metrics = mm.group(1)
            s = self.start("-r", self.pcap, "--pcap-loop", "0", "--pcap-rate", "2000",
                           "-S", self.rules, "--manager", addr, "--insecure", "--name", "e2e-m1",
                           "--metrics-interval", "0.5", "--state-dir",
                           os.path.join(self.tmp, "state-m1"))
            bundle = os.path.join(self.tmp, "bundle")
            os.makedirs(os.path.join(bundle, "rules"))
            with open(os.path.join(bundle, "rules", "local.rules"), "w") as f:
                f.write("".join(RULES.splitlines(True)[:2]))  # the first two rules
            with open(os.path.join(bundle, "config.yaml"), "w") as f:
                f.write("{}\n")

            def ctl(*args):
                r = subprocess.run([picketctl_bin(),
                                    "--manager", addr, "--insecure", "--json"] + list(args),
                                   capture_output=True, text=True, timeout=120)
                self.assertEqual(r.returncode, 0, "%s: %s %s" % (args, r.stdout, r.stderr))
                return json.loads(r.stdout) if r.stdout.strip() else None

            version = ctl("bundle", "push", bundle, "--name", "e2e", "-m", "e2e")["version"]
            ctl("deploy", str(version), "--to", "all", "--wait", "--timeout", "60")
            deadline = time.time() + 30
            while True:
                _, body, fam = s.scrape()
                info = labels_of(fam, "picket_sensor_bundle_info")
                if info["version"] == str(version):
                    break
                self.assertLess(time.time(), deadline, "bundle never showed: " + body)
                time.sleep(0.2)
            self.assertRegex(info["sha"], r"^[0-9a-f]{64}$")
            self.assertEqual(value(fam, "picket_sensor_rules_loaded"), 2)
            self.assertEqual(value(fam, "picket_sensor_rules_failed"), 0)
            self.assertEqual(value(fam, "picket_sensor_reloads_total", result="ok"), 1)
            self.assertEqual(value(fam, "picket_sensor_reloads_total", result="failed"), 0)
            self.check_promtool(body)
            # The manager exports the same bundle for this sensor.
            deadline = time.time() + 30
            while True:
                _, _, mbody = scrape(manager_metrics)
                mfam = parse_exposition(mbody)
                seen = [l for n, l, _ in mfam["picket_sensor_bundle_info"]["samples"]
                        if l.get("sensor") == "e2e-m1"]
                if seen and seen[0]["version"] == str(version):
                    break
                self.assertLess(time.time(), deadline, "manager never showed the bundle")
                time.sleep(0.2)
            self.assertEqual(seen[0]["sha"], info["sha"])
            self.assertEqual(s.stop(), 0, s.stderr())
        finally:
            if manager.poll() is None:
                manager.send_signal(signal.SIGTERM)
            try:
                manager.wait(timeout=20)
            except subprocess.TimeoutExpired:
                manager.kill()
                manager.wait()

    def test_bad_and_busy_listen_addresses(self):
        r = subprocess.run([sensor_bin(), "-r", self.pcap, "-l", self.tmp, "--metrics-listen",
                            "no-port-here"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("no-port-here", r.stderr)
        busy = socket.socket()
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        try:
            addr = "127.0.0.1:%d" % busy.getsockname()[1]
            r = subprocess.run([sensor_bin(), "-r", self.pcap, "-l", self.tmp,
                                "--metrics-listen", addr], capture_output=True, text=True,
                               timeout=60)
        finally:
            busy.close()
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(addr, r.stderr)


if __name__ == "__main__":
    _, argv = picket_e2e.parse_args()
    picket_test.main(argv)
