#!/usr/bin/env python3
"""picket-sensor --profile-configs end to end: exit codes and messages for bad ladders and
arguments, and the default ladder (deploy/profile-ladder.yaml) over a generated pcap in every
table format. Never asserts on speed."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)
import picket_e2e  # noqa: E402
from picket_e2e import sensor_bin, trafficgen_bin  # noqa: E402

SOURCE = None


def sensor(*args, cwd=None):
    p = subprocess.run([sensor_bin(), *args], cwd=cwd,
                       capture_output=True, text=True, timeout=240)
    return p.returncode, p.stdout, p.stderr


class ProfileCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="picket-profile-cli-")
        cls.pcap = os.path.join(cls.dir, "t.pcap")
        subprocess.run([trafficgen_bin(), "-o",
                        cls.pcap, "--seed", "3", "--sessions", "200", "--attack", "/etc/passwd",
                        "--attack-share", "0.2"], check=True, capture_output=True)
        with open(cls.pcap + ".json") as f:
            cls.record = json.load(f)
        cls.rules = os.path.join(cls.dir, "a.rules")
        with open(cls.rules, "w") as f:
            f.write('alert tcp any any -> any any (msg:"a"; content:"/etc/passwd"; sid:1;)\n')
        cls.ladder = os.path.join(SOURCE, "deploy", "profile-ladder.yaml")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_bad_ladder_exits_2_with_file_line_key(self):
        bad = self.write("bad.yaml", "- name: a\n  set:\n    workers: 1\n    engine.stage: read\n")
        code, out, err = sensor("--profile-configs", bad, "-r", self.pcap)
        self.assertEqual(code, 2)
        self.assertEqual(out, "")
        self.assertEqual(err, "picket-sensor: %s:4: step 1 (a): engine.stage: not a key "
                              "picket-sensor reads (see deploy/sensor.yaml)\n" % bad)
        bad = self.write("bad2.yaml", "- name: a\n  set: {engine.stages: fast}\n")
        code, _, err = sensor("--profile-configs", bad, "-r", self.pcap)
        self.assertEqual(code, 2)
        self.assertEqual(err, "picket-sensor: %s:2: step 1 (a): engine.stages: expected one of "
                              "read, decode, flow, stream, app-layer, detect, got 'fast'\n" % bad)
        code, _, err = sensor("--profile-configs", os.path.join(self.dir, "none.yaml"), "-r",
                              self.pcap)
        self.assertEqual(code, 2)
        self.assertEqual(err, "picket-sensor: %s: cannot open the ladder file\n"
                         % os.path.join(self.dir, "none.yaml"))

    def test_argument_errors_exit_2(self):
        code, _, err = sensor("--profile-configs", self.ladder)
        self.assertEqual(code, 2)
        self.assertEqual(err, "picket-sensor: --profile-configs needs -r FILE: the traffic to "
                              "run through every step\n")
        for extra, name in ((["-i", "lo"], "-i"), (["--pcap-loop", "2"], "--pcap-loop"),
                            (["--metrics-listen", "127.0.0.1:0"], "--metrics-listen"),
                            (["-T"], "-T")):
            code, _, err = sensor("--profile-configs", self.ladder, "-r", self.pcap, *extra)
            self.assertEqual(code, 2, name)
            self.assertEqual(err, "picket-sensor: --profile-configs cannot be combined with %s\n"
                             % name)
        code, _, err = sensor("--profile-repeat", "2", "-r", self.pcap)
        self.assertEqual(code, 2)
        self.assertIn("--profile-repeat requires --profile-configs", err)
        code, _, err = sensor("--profile-configs", self.ladder, "-r", self.pcap,
                              "--profile-repeat", "0")
        self.assertEqual(code, 2)
        code, _, err = sensor("--profile-configs", self.ladder, "-r", self.pcap,
                              "--profile-var", "nope=1")
        self.assertEqual(code, 2)
        self.assertEqual(err, "picket-sensor: --profile-var nope=1: %s has no ${nope}\n"
                         % self.ladder)
        code, _, err = sensor("--profile-configs", self.ladder, "-r", self.pcap,
                              "--profile-var", "novalue")
        self.assertEqual(code, 2)
        self.assertEqual(err, "picket-sensor: --profile-var novalue: expected NAME=VALUE\n")
        only_rules = self.write("rules-only.yaml", "- name: r\n  set:\n    rule-files: ${rules}\n")
        code, _, err = sensor("--profile-configs", only_rules, "-r", self.pcap)
        self.assertEqual(code, 2)
        self.assertEqual(err, "picket-sensor: profile: no step can run: every step uses a "
                              "variable that is not set (step 1: ${rules} is not set)\n")

    def test_default_ladder_text(self):
        code, out, err = sensor("--profile-configs", self.ladder, "-r", self.pcap, "--workers",
                                "1", "--profile-repeat", "2", "-S", self.rules, cwd=self.dir)
        self.assertEqual(code, 0, err)
        lines = out.splitlines()
        # title, legend, blank, header, 10 steps
        self.assertEqual(len(lines), 14, out)
        self.assertTrue(lines[0].startswith("Configuration profile of %s: " % self.pcap), out)
        self.assertIn("1 worker; 2 runs per step.", lines[0])
        for column in ("packets/s", "Mbit/s", "Δ packets/s", "Δ %", "worker ns/packet",
                       "Δ worker ns/packet"):
            self.assertIn(column, lines[3])
        names = [line.split("  ")[0].strip() for line in lines[4:]]
        self.assertEqual(names, ["null (read only)", "decode", "+flow", "+stream", "+http",
                                 "+dns +tls", "+web rules", "+all rules", "+eve alerts",
                                 "+eve (http dns tls flow fileinfo)"])
        self.assertIn("skipped: ${web-rules} is not set", lines[10])
        self.assertIn("1 rules", lines[11])
        self.assertIn("steps were skipped", err)
        # Outputs are off until the EVE steps, which write eve.json (records of every type
        # they turn on) to the log directory (here the working directory); fast.log stays off.
        with open(os.path.join(self.dir, "eve.json")) as f:
            types = {json.loads(line)["event_type"] for line in f}
        self.assertIn("flow", types)
        self.assertIn("stats", types)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "fast.log")))

    def test_default_ladder_json_and_markdown(self):
        code, out, err = sensor("--profile-configs", self.ladder, "-r", self.pcap, "--workers",
                                "1", "--profile-repeat", "1", "--profile-format", "json",
                                "--profile-var", "web-rules=" + self.rules, "-S", self.rules,
                                cwd=self.dir)
        self.assertEqual(code, 0, err)
        j = json.loads(out)
        self.assertEqual(j["repeat"], 1)
        self.assertEqual([s["name"] for s in j["steps"]],
                         ["null (read only)", "decode", "+flow", "+stream", "+http", "+dns +tls",
                          "+web rules", "+all rules", "+eve alerts",
                          "+eve (http dns tls flow fileinfo)"])
        self.assertEqual([s["stages"] for s in j["steps"]],
                         ["read", "decode", "flow", "stream", "app-layer", "app-layer", "detect",
                          "detect", "detect", "detect"])
        for s in j["steps"]:
            self.assertNotIn("skipped", s)
            self.assertEqual(s["packets"], self.record["packets"])
            self.assertEqual(s["bytes"], self.record["bytes"])
            self.assertEqual(len(s["runs"]), 1)
        self.assertEqual(j["steps"][6]["rules_loaded"], 1)
        self.assertNotIn("delta_percent", j["steps"][0])
        self.assertIn("delta_percent", j["steps"][7])
        self.assertNotIn("steps were skipped", err)

        code, out, err = sensor("--profile-configs", self.ladder, "-r", self.pcap, "--workers",
                                "1", "--profile-repeat", "1", "--profile-format", "markdown",
                                cwd=self.dir)
        self.assertEqual(code, 0, err)
        rows = [line for line in out.splitlines() if line.startswith("|")]
        self.assertEqual(len(rows), 2 + 10)
        self.assertEqual(rows[1], "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")

    def test_truncated_pcap_exits_1(self):
        cut = os.path.join(self.dir, "cut.pcap")
        with open(self.pcap, "rb") as f:
            data = f.read()
        with open(cut, "wb") as f:
            f.write(data[:-7])
        code, out, err = sensor("--profile-configs", self.ladder, "-r", cut, "--workers", "1")
        self.assertEqual(code, 1)
        self.assertEqual(out, "")
        self.assertIn("picket-sensor: profile: warm-up (null (read only)): %s: truncated or "
                      "corrupt capture" % cut, err)


if __name__ == "__main__":
    paths, argv = picket_e2e.parse_args("--source")
    SOURCE = paths["source"]
    picket_test.main(argv)
