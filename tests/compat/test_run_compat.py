#!/usr/bin/env python3
"""Unit tests of run_compat.py: filter operators, requires, and the pass / fail / skip /
regression logic end to end against fake_sensor.py."""

import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run_compat as rc  # noqa: E402

FAKE = os.path.join(HERE, "fake_sensor.py")

EVENT = {
    "event_type": "alert",
    "src_ip": "10.0.0.1",
    "src_port": 1030,
    "vlan": [100, 200],
    "alert": {"signature_id": 7, "signature": "ET POLICY curl UA", "severity": 2,
              "metadata": {"tag": ["a", "b"]}},
    "payload_printable": "GET / HTTP/1.1",
    "flow": {"alerted": True},
}


class FindValue(unittest.TestCase):
    def test_paths(self):
        self.assertEqual(rc.find_value("alert.signature_id", EVENT), 7)
        self.assertEqual(rc.find_value("vlan[1]", EVENT), 200)
        self.assertEqual(rc.find_value("alert.metadata.tag[0]", EVENT), "a")
        self.assertIsNone(rc.find_value("vlan[2]", EVENT))
        self.assertIsNone(rc.find_value("alert.nothing", EVENT))
        self.assertIsNone(rc.find_value("src_ip.deeper", EVENT))

    def test_len(self):
        self.assertEqual(rc.find_value("vlan.__len", EVENT), 2)
        self.assertEqual(rc.find_value("alert.signature.__len", EVENT), 17)
        self.assertEqual(rc.find_value("src_port.__len", EVENT), -1)


class MatchEvent(unittest.TestCase):
    def check(self, match, expected):
        self.assertEqual(rc.match_event(match, EVENT), expected, match)

    def test_equality(self):
        self.check({"event_type": "alert", "alert.signature_id": 7}, True)
        self.check({"event_type": "alert", "alert.signature_id": 8}, False)
        self.check({"src_port": "1030"}, False)  # types matter, as upstream
        self.check({"alert.metadata": {"tag": ["a", "b"]}}, True)
        self.check({"flow.alerted": True}, True)

    def test_has_key(self):
        self.check({"has-key": "alert.metadata"}, True)
        self.check({"has-key": "alert.engine"}, False)
        self.check({"not-has-key": "alert.engine"}, True)
        self.check({"not-has-key": "vlan[0]"}, False)

    def test_string_operators(self):
        self.check({"alert.signature.__find": "curl"}, True)
        self.check({"alert.signature.__find": "wget"}, False)
        self.check({"alert.signature.__startswith": "ET POLICY"}, True)
        self.check({"alert.signature.__startswith": "POLICY"}, False)
        self.check({"alert.signature.__endswith": "UA"}, True)
        self.check({"alert.signature.__endswith": "ET"}, False)
        self.check({"vlan.__contains": 200}, True)
        self.check({"vlan.__contains": 300}, False)
        self.check({"missing.__find": "x"}, False)
        self.check({"src_port.__startswith": "1"}, False)

    def test_number_operators(self):
        self.check({"src_port.__gt": 1029}, True)
        self.check({"src_port.__gt": 1030}, False)
        self.check({"src_port.__gte": 1030}, True)
        self.check({"src_port.__lt": 1030}, False)
        self.check({"src_port.__lte": 1030}, True)
        self.check({"src_ip.__gt": 1}, False)
        self.check({"missing.__lt": 1}, False)

    def test_len_operator(self):
        self.check({"vlan.__len": 2}, True)
        self.check({"vlan.__len": 1}, False)


class Requires(unittest.TestCase):
    V = rc.parse_version("9.0.0")

    def test_versions(self):
        self.assertEqual(rc.parse_version("7.0.3-dev"), (7, 0, 3))
        self.assertEqual(rc.parse_version(8), (8, None, None))
        self.assertIsNone(rc.unmet_requirement({"min-version": "8.0.0"}, self.V))
        self.assertIsNone(rc.unmet_requirement({"min-version": 9}, self.V))
        self.assertEqual(rc.unmet_requirement({"min-version": "9.1"}, self.V),
                         "requires min-version 9.1")
        self.assertEqual(rc.unmet_requirement({"lt-version": "8.0.5"}, self.V),
                         "requires lt-version 8.0.5")
        self.assertIsNone(rc.unmet_requirement({"version": "9"}, self.V))
        self.assertIsNotNone(rc.unmet_requirement({"version": "9.1"}, self.V))

    def test_features_and_unknown(self):
        self.assertEqual(rc.unmet_requirement({"features": ["HAVE_LUA"]}, self.V),
                         "requires feature HAVE_LUA")
        self.assertEqual(rc.unmet_requirement({"pcap": False}, self.V),
                         "test runs without a pcap")
        self.assertEqual(rc.unmet_requirement({"script": ["true"]}, self.V),
                         "unsupported requirement 'script'")

    def test_alert_filters_keep_only_alert_checks_with_requires_met(self):
        checks = [
            {"filter": {"count": 1, "match": {"event_type": "alert"}}},
            {"filter": {"count": 1, "match": {"event_type": "flow"}}},
            {"shell": {"args": "true"}},
            {"filter": {"count": 1, "requires": {"lt-version": "8"},
                        "match": {"event_type": "alert"}}},
            {"filter": {"count": 2, "min-version": "7", "match": {"event_type": "alert"}}},
            {"filter": {"count": 3, "filename": "other.json",
                        "match": {"event_type": "alert"}}},
            {"filter": {"count": 0, "match": {"alert.signature_id": 1}}},
            {"filter": {"count": 1, "match": {"has-key": "alert.xff"}}},
            {"filter": {"count": 1, "match": {"pcap_cnt": 1}}},
            {"filter": {"count": 1, "match": {"event_type": "drop", "alert.signature_id": 1}}},
        ]
        got = rc.alert_filters(checks, self.V)
        self.assertEqual([n for n, _ in got], [1, 5, 7, 8])

    def test_evaluate_reports_check_number_expected_and_got(self):
        events = [EVENT, {"event_type": "flow"}]
        ok = [(1, {"count": 1, "match": {"event_type": "alert", "alert.signature_id": 7}})]
        self.assertIsNone(rc.evaluate(ok, events))
        bad = ok + [(3, {"count": 0, "match": {"event_type": "alert"}})]
        self.assertEqual(rc.evaluate(bad, events),
                         'check #3 {"event_type": "alert"}: expected 0, got 1')


# ---------------------------------------------------------------------------------------
# End to end with the fake sensor


ALERT_1 = {"event_type": "alert", "src_ip": "10.0.0.1", "alert": {"signature_id": 1}}
ALERT_2 = {"event_type": "alert", "src_ip": "10.0.0.1", "alert": {"signature_id": 2}}


class EndToEnd(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="test-run-compat-")
        self.cases = os.path.join(self.tmp, "cases")
        etc = os.path.join(self.cases, "_upstream-etc")
        os.makedirs(etc)
        for name in ("classification.config", "reference.config"):
            with open(os.path.join(etc, name), "w") as f:
                f.write("# test\n")
        with open(os.path.join(etc, "base.yaml"), "w") as f:
            f.write('vars:\n  address-groups:\n    HOME_NET: "[10.0.0.0/8]"\n'
                    '    EXTERNAL_NET: "!$HOME_NET"\n')
        os.environ.pop("FAKE_SENSOR_IPS", None)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
        os.environ.pop("FAKE_SENSOR_IPS", None)

    def add_case(self, name, checks, events=(), rules="alert ip any any -> any any (sid:1;)\n",
                 test_extra=None, pcap_name="input.pcap", suricata_yaml=None,
                 rules_name="test.rules"):
        d = os.path.join(self.cases, name)
        os.makedirs(d)
        test = {"checks": [{"filter": c} for c in checks]}
        test.update(test_extra or {})
        with open(os.path.join(d, "test.yaml"), "w") as f:
            json.dump(test, f)  # JSON is YAML
        with open(os.path.join(d, pcap_name), "wb") as f:
            f.write(b"\xd4\xc3\xb2\xa1")
        with open(os.path.join(d, rules_name), "w") as f:
            f.write(rules)
        with open(os.path.join(d, "fake-eve.json"), "w") as f:
            for ev in events:
                f.write(json.dumps(ev) + "\n")
        if suricata_yaml is not None:
            with open(os.path.join(d, "suricata.yaml"), "w") as f:
                f.write(suricata_yaml)
        return d

    def run_main(self, *extra):
        out = io.StringIO()
        err = io.StringIO()
        argv = ["--sensor", FAKE, "--cases", self.cases,
                "--outdir", os.path.join(self.tmp, "out")] + list(extra)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = rc.main(argv)
        return status, out.getvalue().splitlines(), err.getvalue()

    def argv_of(self, name):
        with open(os.path.join(self.tmp, "out", name, "argv.json")) as f:
            return json.load(f)

    def test_pass_fail_skip_lines_and_summary(self):
        one = {"count": 1, "match": {"event_type": "alert", "alert.signature_id": 1}}
        self.add_case("a-pass", [one, {"count": 0, "match": {"event_type": "alert",
                                                              "alert.signature_id": 3}}],
                      events=[ALERT_1, {"event_type": "flow"}])
        self.add_case("b-fail", [one], events=[ALERT_1, ALERT_1])
        self.add_case("c-unsupported", [one], events=[ALERT_1],
                      rules="alert ip any any -> any any (sid:1;)\n"
                            "alert ip any any -> any any (lua:x.lua; sid:9;)\n")
        self.add_case("d-no-alert-checks", [{"count": 1, "match": {"event_type": "flow"}}])
        self.add_case("e-feature", [one], test_extra={"requires": {"features": ["HAVE_LUA"]}})
        self.add_case("f-crash", [one], rules="alert ip any any -> any any (sid:1;) run-crash\n")
        self.add_case("g-bad-check", [one], rules="check-crash\n")
        self.add_case("nested/h-pass", [{"count": 2, "match": {"event_type": "alert"}}],
                      events=[ALERT_1, ALERT_2])
        status, lines, _ = self.run_main()
        self.assertEqual(lines, [
            "PASS a-pass",
            'FAIL b-fail: check #1 {"alert.signature_id": 1, "event_type": "alert"}: '
            "expected 1, got 2",
            "SKIP c-unsupported: unsupported: unknown keyword 'lua'",
            "SKIP d-no-alert-checks: no alert checks",
            "SKIP e-feature: requires feature HAVE_LUA",
            "FAIL f-crash: sensor exited with 2: fake_sensor: error: boom",
            "FAIL g-bad-check: rule check exited with 3: (no output)",
            "PASS nested/h-pass",
            "2 passed, 3 failed, 3 skipped",
        ])
        self.assertEqual(status, 0)

    def test_command_line_passed_to_the_sensor(self):
        d = self.add_case(
            "args", [{"count": 1, "match": {"event_type": "alert"}}], events=[ALERT_1],
            test_extra={"args": ["-k none --set stream.midstream=true"],
                        "pcap": "../../other-test/shared.pcap"},
            pcap_name="shared.pcap",
            suricata_yaml='%YAML 1.1\n---\ninclude: ../../etc/base.yaml\n'
                          'vars:\n  port-groups:\n    HTTP_PORTS: "[80,8080]"\n'
                          'packet-alert-max: 20\n'
                          'outputs:\n  - eve-log:\n      types:\n        - alert:\n'
                          '            packet: yes\n')
        status, lines, _ = self.run_main("-k", "args")
        self.assertEqual(lines, ["PASS args", "1 passed, 0 failed, 0 skipped"])
        etc = os.path.join(self.cases, "_upstream-etc")
        out = os.path.join(self.tmp, "out", "args")
        self.assertEqual(self.argv_of("args"), [
            "-r", os.path.join(d, "shared.pcap"), "-S", os.path.join(d, "test.rules"),
            "-l", out,
            "--set", "classification-file=" + os.path.join(etc, "classification.config"),
            "--set", "reference-config-file=" + os.path.join(etc, "reference.config"),
            "--set", 'vars.address-groups.HOME_NET="[10.0.0.0/8]"',
            "--set", 'vars.address-groups.EXTERNAL_NET="!$HOME_NET"',
            "--set", 'vars.port-groups.HTTP_PORTS="[80,8080]"',
            "--set", "packet-alert-max=20",
            "--set", "outputs.eve.alert.packet=yes",
            "-k", "none", "--set", "stream.midstream=true",
        ])
        self.assertEqual(status, 0)

    def test_eve_alert_xff_settings_become_sets(self):
        d = os.path.join(self.cases, "xff")
        os.makedirs(d)
        with open(os.path.join(d, "suricata.yaml"), "w") as f:
            f.write('%YAML 1.1\n---\noutputs:\n  - eve-log:\n      types:\n        - alert:\n'
                    '            metadata: no\n            xff:\n              enabled: yes\n'
                    '              mode: overwrite\n              deployment: forward\n'
                    '              header: X-Real-IP\n')
        self.assertEqual(rc.suricata_yaml_sets(d, os.path.join(self.cases, "_upstream-etc")), [
            "--set", "outputs.eve.alert.xff.enabled=yes",
            "--set", 'outputs.eve.alert.xff.mode="overwrite"',
            "--set", 'outputs.eve.alert.xff.deployment="forward"',
            "--set", 'outputs.eve.alert.xff.header="X-Real-IP"',
        ])

    def test_eve_alert_verdict_setting_becomes_a_set(self):
        d = os.path.join(self.cases, "verdict-ids")
        os.makedirs(d)
        with open(os.path.join(d, "suricata.yaml"), "w") as f:
            f.write('%YAML 1.1\n---\noutputs:\n  - eve-log:\n      types:\n        - alert:\n'
                    '            verdict: yes\n            payload: no\n')
        self.assertEqual(rc.suricata_yaml_sets(d, os.path.join(self.cases, "_upstream-etc")), [
            "--set", "outputs.eve.alert.payload=no",
            "--set", "outputs.eve.alert.verdict=yes",
        ])

    def test_ips_cases_skip_until_the_sensor_supports_simulate_ips(self):
        check = [{"count": 1, "match": {"event_type": "alert"}}]
        self.add_case("bug-ips-1", check, events=[ALERT_1])
        self.add_case("verdict", check, events=[ALERT_1],
                      test_extra={"args": ["--simulate-ips"]})
        status, lines, _ = self.run_main()
        self.assertEqual(lines, [
            "SKIP bug-ips-1: ips mode (--simulate-ips) not supported by the sensor",
            "SKIP verdict: ips mode (--simulate-ips) not supported by the sensor",
            "0 passed, 0 failed, 2 skipped",
        ])
        os.environ["FAKE_SENSOR_IPS"] = "1"
        status, lines, _ = self.run_main()
        self.assertEqual(lines, ["PASS bug-ips-1", "PASS verdict", "2 passed, 0 failed, 0 skipped"])
        self.assertEqual(self.argv_of("verdict")[-1], "--simulate-ips")

    def test_unknown_argument_skips(self):
        self.add_case("odd", [{"count": 1, "match": {"event_type": "alert"}}],
                      test_extra={"args": ["--engine-analysis"]})
        _, lines, _ = self.run_main()
        self.assertEqual(lines[0], "SKIP odd: unsupported argument --engine-analysis")

    def test_regression_fails_the_run_and_new_passes_update_the_list(self):
        check = [{"count": 1, "match": {"event_type": "alert"}}]
        self.add_case("good", check, events=[ALERT_1])
        self.add_case("broken", check, events=[])
        self.add_case("later", check, events=[ALERT_1])
        pass_list = os.path.join(self.tmp, "pass-list.txt")
        with open(pass_list, "w") as f:
            f.write("# comment\nbroken\ngood\nnot-run-here\n")

        status, lines, err = self.run_main("--pass-list", pass_list)
        self.assertEqual(status, 1)
        self.assertEqual(lines[-1], "2 passed, 1 failed, 0 skipped")
        self.assertIn("regression: broken is in the pass list but did not pass", err)
        self.assertIn("new passes (not in the pass list): later", err)

        # A pass-listed case outside the -k selection is not a regression.
        status, _, _ = self.run_main("--pass-list", pass_list, "-k", "good,later")
        self.assertEqual(status, 0)

        status, _, _ = self.run_main("--pass-list", pass_list, "-k", "later",
                                     "--update-pass-list")
        self.assertEqual(status, 0)
        self.assertEqual(rc.read_pass_list(pass_list), ["broken", "good", "later",
                                                         "not-run-here"])

    def test_parallel_jobs_print_in_name_order(self):
        check = [{"count": 1, "match": {"event_type": "alert"}}]
        for n in ("c1", "c2", "c3", "c4"):
            self.add_case(n, check, events=[ALERT_1])
        _, lines, _ = self.run_main("-j", "3")
        self.assertEqual(lines, ["PASS c1", "PASS c2", "PASS c3", "PASS c4",
                                 "4 passed, 0 failed, 0 skipped"])

    def test_bad_eve_line_fails(self):
        d = self.add_case("badjson", [{"count": 1, "match": {"event_type": "alert"}}])
        with open(os.path.join(d, "fake-eve.json"), "w") as f:
            f.write('{"event_type": "alert"}\n{not json\n')
        _, lines, _ = self.run_main()
        self.assertTrue(lines[0].startswith("FAIL badjson: eve.json line 2 is not JSON"), lines[0])


if __name__ == "__main__":
    unittest.main()
