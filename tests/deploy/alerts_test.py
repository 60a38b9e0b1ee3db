#!/usr/bin/env python3
"""Checks of the Prometheus alerting rules in deploy/prometheus/picket-alerts.yml.

- promtool check rules accepts the file, and promtool test rules passes
  tests/deploy/picket-alerts.test.yml (every alert's firing and non-firing cases).
- Coverage: every alert of the rule file has a test case in which it fires (a non-empty
  exp_alerts) and one in which it must not (an empty exp_alerts), and no test names an alert
  that does not exist.
- Shape: groups are named picket-*; every alert has `for:`, severity critical|warning|info,
  component sensor|manager|rules, and the annotations summary, description, dashboard_url (a
  dashboard uid that exists in dashboards/) and runbook_url (a heading of docs/metrics.md).
- Names: every metric an expression selects is a string literal of the exporters' C++
  sources (manager/, sensor/, common/), or Prometheus' own `up`: renaming a metric in the code
  fails here.
- Kubernetes: the PrometheusRule in deploy/k8s/monitoring/ holds exactly the same groups.

promtool missing is a skip (77) of the promtool cases; the rest needs only Python.

Usage: alerts_test.py --source SOURCE_DIR
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)

sys.path.insert(0, os.path.join(HERE, "..", "dashboards"))
from dashboards_test import metric_names  # noqa: E402  (the same PromQL name extractor)

SOURCE = None
PROMTOOL = shutil.which("promtool")
RULES = ("deploy", "prometheus", "picket-alerts.yml")
TESTS = ("tests", "deploy", "picket-alerts.test.yml")
PROMETHEUS_RULE = ("deploy", "k8s", "monitoring", "picket-alerts.prometheusrule.yaml")
# Series Prometheus makes itself for every target.
PROMETHEUS_SERIES = {"up"}


def path(*parts):
    return os.path.join(SOURCE, *parts)


def load_yaml(*parts):
    with open(path(*parts), encoding="utf-8") as f:
        return yaml.safe_load(f)


def alerts(doc):
    return [r for g in doc["groups"] for r in g["rules"] if "alert" in r]


def exported_names():
    """Every "picket_..." string literal in the exporters' sources, histograms expanded."""
    names = set()
    for top in ("manager", "sensor", "common"):
        for f in glob.glob(path(top, "**", "*.cc"), recursive=True) + \
                glob.glob(path(top, "**", "*.h"), recursive=True):
            with open(f, encoding="utf-8", errors="replace") as fh:
                names.update(re.findall(r'"(picket_[a-z0-9_]+)"', fh.read()))
    for n in list(names):
        if n.endswith("_seconds") or n.endswith("_bytes"):
            names.update(n + s for s in ("_bucket", "_sum", "_count"))
    return names


class Shape(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.doc = load_yaml(*RULES)
        cls.alerts = alerts(cls.doc)
        cls.anchors = set()
        fenced = False
        with open(path("docs", "metrics.md"), encoding="utf-8") as f:
            for line in f:
                fenced ^= line.startswith("```")
                if line.startswith("#") and not fenced:
                    # GitHub's anchor of a heading: lower case, punctuation out, spaces to -.
                    cls.anchors.add(re.sub(r"[^a-z0-9 _-]", "", line.lstrip("#").strip()
                                           .lower()).replace(" ", "-"))
        cls.uids = set()
        for f in glob.glob(path("dashboards", "*.json")):
            with open(f, encoding="utf-8") as fh:
                cls.uids.add(json.load(fh)["uid"])

    def test_groups(self):
        names = [g["name"] for g in self.doc["groups"]]
        self.assertEqual(names, ["picket-sensors", "picket-manager", "picket-rules"])
        self.assertEqual(len(self.alerts), 16)
        self.assertEqual(len({a["alert"] for a in self.alerts}), len(self.alerts))

    def test_every_alert_is_complete(self):
        for a in self.alerts:
            with self.subTest(alert=a["alert"]):
                self.assertTrue(a["alert"].startswith("Picket"))
                self.assertRegex(a["for"], r"^\d+[smh]$")
                self.assertIn(a["labels"]["severity"], ("critical", "warning", "info"))
                self.assertIn(a["labels"]["component"], ("sensor", "manager", "rules"))
                ann = a["annotations"]
                self.assertEqual(sorted(ann),
                                 ["dashboard_url", "description", "runbook_url", "summary"])
                m = re.match(r"^/d/([a-z0-9-]+)(\?var-sensor=\{\{ \$labels\.sensor \}\})?$",
                             ann["dashboard_url"])
                self.assertTrue(m, ann["dashboard_url"])
                self.assertIn(m.group(1), self.uids)
                self.assertEqual(ann["runbook_url"], "docs/metrics.md#" + a["alert"].lower())
                self.assertIn(a["alert"].lower(), self.anchors,
                              "docs/metrics.md has no heading for it")
                if "sensor" in a["expr"] and a["labels"]["component"] == "sensor":
                    self.assertIn("{{ $labels.sensor }}", ann["description"])

    def test_every_metric_is_exported(self):
        exported = exported_names()
        # The extraction must see the families the rules lean on, or the check is empty.
        for n in ("picket_sensor_up", "picket_rules_source_fetch_failing",
                  "picket_manager_sensor_clock_offset_seconds"):
            self.assertIn(n, exported)
        self.assertNotIn("picket_sensor_no_such_metric", exported)
        for a in self.alerts:
            names = metric_names(a["expr"])
            self.assertTrue(names, a["alert"])
            for n in names:
                with self.subTest(alert=a["alert"], metric=n):
                    self.assertTrue(n in exported or n in PROMETHEUS_SERIES,
                                    "%s is not exported by manager/, sensor/ or common/" % n)


class Coverage(unittest.TestCase):
    def test_every_alert_fires_and_stays_quiet_in_a_test(self):
        rules = {a["alert"] for a in alerts(load_yaml(*RULES))}
        tests = load_yaml(*TESTS)
        self.assertEqual(tests["rule_files"], ["../../deploy/prometheus/picket-alerts.yml"])
        fires, quiet = set(), set()
        for group in tests["tests"]:
            for case in group.get("alert_rule_test", []):
                self.assertIn(case["alertname"], rules, "a test of an alert that does not exist")
                (fires if case.get("exp_alerts") else quiet).add(case["alertname"])
        self.assertEqual(sorted(rules - fires), [], "alerts no test makes fire")
        self.assertEqual(sorted(rules - quiet), [], "alerts no test expects to stay quiet")


class Kubernetes(unittest.TestCase):
    def test_prometheus_rule_holds_the_same_groups(self):
        rule = load_yaml(*PROMETHEUS_RULE)
        self.assertEqual(rule["apiVersion"], "monitoring.coreos.com/v1")
        self.assertEqual(rule["kind"], "PrometheusRule")
        self.assertEqual(rule["spec"], {"groups": load_yaml(*RULES)["groups"]},
                         "regenerate it: deploy/k8s/monitoring/generate.py")


@unittest.skipUnless(PROMTOOL, "needs promtool (Debian package prometheus)")
class Promtool(unittest.TestCase):
    def run_promtool(self, *args):
        r = subprocess.run([PROMTOOL] + list(args), capture_output=True, text=True, timeout=120)
        return r.returncode, r.stdout + r.stderr

    def test_check_rules(self):
        code, out = self.run_promtool("check", "rules", path(*RULES))
        self.assertEqual(code, 0, out)
        self.assertIn("SUCCESS: 16 rules found", out)

    def test_unit_tests_pass(self):
        code, out = self.run_promtool("test", "rules", path(*TESTS))
        self.assertEqual(code, 0, out)
        self.assertIn("SUCCESS", out)

    def test_unit_tests_can_fail(self):
        # The same tests against a copy whose drop threshold is 5% instead of 1%: the 4.762%
        # case must no longer fire, so a wrong threshold cannot pass unnoticed.
        tmp = tempfile.mkdtemp(prefix="picket-alerts-")
        try:
            with open(path(*RULES), encoding="utf-8") as f:
                text = f.read()
            self.assertEqual(text.count("> 0.01\n"), 1)
            os.makedirs(os.path.join(tmp, "deploy", "prometheus"))
            os.makedirs(os.path.join(tmp, "tests", "deploy"))
            with open(os.path.join(tmp, *RULES), "w") as f:
                f.write(text.replace("> 0.01\n", "> 0.05\n"))
            shutil.copy(path(*TESTS), os.path.join(tmp, *TESTS))
            code, out = self.run_promtool("test", "rules", os.path.join(tmp, *TESTS))
            self.assertNotEqual(code, 0, out)
            self.assertIn("alertname: PicketSensorDropping, time: 20m", out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def main():
    global SOURCE
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True, help="the source tree (holds deploy/)")
    args, rest = ap.parse_known_args()
    SOURCE = os.path.abspath(args.source)
    picket_test.main([sys.argv[0]] + rest)


if __name__ == "__main__":
    main()
