#!/usr/bin/env python3
"""End-to-end: every line of eve.json validates against Suricata's own EVE schema.

Runs the real picket-sensor over every pcap of ../shared/data/pcaps with the ET Open rules
and every EVE record type on (Suricata's `outputs: - eve-log: types: [...]` list form, with
payload, payload-printable, packet and http-body on for alerts; without a config when the
sensor rejects that form), validates each line with python3-jsonschema (the schema's draft,
Draft 7 when it names none) and reports the first failures with the pcap, line number,
event_type, schema path and message, plus the count of lines validated per event_type.
Skips (77) when the shared data or python3-jsonschema is absent.

Usage: eve_schema_test.py --build BUILD_DIR
"""
import collections
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402
import picket_e2e  # noqa: E402
from picket_e2e import sensor_bin  # noqa: E402

try:
    import jsonschema
except ImportError:  # python3-jsonschema (Debian)
    jsonschema = None

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "data")
PCAPS = os.path.join(SHARED, "pcaps")
SCHEMA = os.path.join(SHARED, "eve-schema", "schema.json")
ET_OPEN = os.path.join(SHARED, "rules", "et-open")

# Record types the pcaps must produce: http-mix has HTTP and files, app-mix and dns-malcolm
# DNS, tls-malcolm TLS, every pcap flows and app-layer anomalies.
REQUIRED_TYPES = ["alert", "stats", "http", "dns", "tls", "flow", "fileinfo", "anomaly"]

MAX_REPORTED = 20

SURICATA_CONFIG = """\
classification-file: {classification}
outputs:
  - eve-log:
      enabled: yes
      filetype: regular
      filename: eve.json
      types:
        - alert:
            payload: yes
            payload-printable: yes
            packet: yes
            http-body: yes
            http-body-printable: yes
        - anomaly
        - http
        - dns
        - tls
        - files
        - drop
        - flow
        - stats
"""


@unittest.skipUnless(os.path.isdir(PCAPS) and os.path.isfile(SCHEMA) and os.path.isdir(ET_OPEN),
                     "shared data (pcaps, eve-schema, ET Open rules) not present")
@unittest.skipIf(jsonschema is None, "python3-jsonschema not installed")
class EveSchema(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-eve-schema-")
        with open(SCHEMA) as f:
            schema = json.load(f)
        validator_cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
        cls.validator = validator_cls(schema)
        config = os.path.join(cls.tmp, "sensor.yaml")
        with open(config, "w") as f:
            f.write(SURICATA_CONFIG.format(
                classification=os.path.join(ET_OPEN, "classification.config")))
        rules = []
        for path in sorted(glob.glob(os.path.join(ET_OPEN, "*.rules"))):
            rules += ["-s", path]
        cls.pcaps = sorted(p for p in os.listdir(PCAPS) if p.endswith((".pcap", ".pcapng")))
        cls.config_rejected = False
        cls.per_type = collections.Counter()
        cls.alert_members = collections.Counter()
        cls.failures = []  # (pcap, line number, event_type, path, message)
        cls.lines = 0
        for name in cls.pcaps:
            logdir = os.path.join(cls.tmp, name)
            # The list form first; without a config when this sensor rejects it (the parser of
            # Suricata's list form may not be there yet).
            for cfg in ([] if cls.config_rejected else [config]) + [None]:
                shutil.rmtree(logdir, ignore_errors=True)
                os.makedirs(logdir)
                args = [sensor_bin(), "-r", os.path.join(PCAPS, name), "-l", logdir,
                        "--workers", "2", "-k", "none"] + rules
                if cfg:
                    args += ["-c", cfg]
                r = subprocess.run(args, capture_output=True, text=True, timeout=300)
                if r.returncode == 0:
                    break
                if cfg is None:
                    raise AssertionError("%s: sensor failed (%d): %s"
                                         % (name, r.returncode, r.stderr[-2000:]))
                cls.config_rejected = True
                print("config rejected, running without it: %s" % r.stderr.strip()[-500:],
                      flush=True)
            cls.validate(name, os.path.join(logdir, "eve.json"))
            shutil.rmtree(logdir, ignore_errors=True)
        print("config: %s" % ("none (list form rejected)" if cls.config_rejected else "Suricata list form"))
        print("lines validated per event_type: %s"
              % ", ".join("%s %d" % kv for kv in sorted(cls.per_type.items())), flush=True)
        print("alerts with: %s"
              % ", ".join("%s %d" % kv for kv in sorted(cls.alert_members.items())), flush=True)

    @classmethod
    def validate(cls, pcap, eve):
        with open(eve) as f:
            for number, line in enumerate(f, 1):
                cls.lines += 1
                try:
                    record = json.loads(line)
                except ValueError as e:
                    cls.failures.append((pcap, number, "?", "", "not JSON: %s" % e))
                    continue
                event_type = record.get("event_type", "?")
                cls.per_type[event_type] += 1
                if event_type == "alert":
                    # The alert members the options and the flow add, so that the schema
                    # is seen to check them.
                    http = record.get("http", {})
                    for member, present in (
                            ("metadata.flowbits", "flowbits" in record.get("metadata", {})),
                            ("http.http_request_body", "http_request_body" in http),
                            ("http.http_response_body_printable",
                             "http_response_body_printable" in http),
                            ("flow.src_ip", "src_ip" in record.get("flow", {})),
                            ("payload", "payload" in record)):
                        if present:
                            cls.alert_members[member] += 1
                for err in cls.validator.iter_errors(record):
                    path = "/".join(str(p) for p in err.absolute_path)
                    cls.failures.append((pcap, number, event_type, path, err.message[:300]))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @staticmethod
    def report(failures):
        lines = ["%d schema failure(s); the first %d:" % (len(failures), MAX_REPORTED)]
        for pcap, number, event_type, path, message in failures[:MAX_REPORTED]:
            lines.append("  %s line %d event_type=%s at /%s: %s"
                         % (pcap, number, event_type, path, message))
        return "\n".join(lines)

    def test_every_line_validates(self):
        self.assertGreater(self.lines, 0)
        self.assertEqual(self.failures, [], self.report(self.failures))

    def test_required_types_present(self):
        for t in REQUIRED_TYPES:
            self.assertGreater(self.per_type[t], 0, "no %s record in any pcap's eve.json" % t)

    def test_alert_options_were_written(self):
        if self.config_rejected:
            self.skipTest("the sensor rejected the list form: no alert options were on")
        for member in ("metadata.flowbits", "http.http_request_body",
                       "http.http_response_body_printable", "flow.src_ip", "payload"):
            self.assertGreater(self.alert_members[member], 0,
                               "no alert with %s in any pcap's eve.json" % member)


if __name__ == "__main__":
    _, argv = picket_e2e.parse_args()
    picket_test.main(argv)
