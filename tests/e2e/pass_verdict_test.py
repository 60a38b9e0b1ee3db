#!/usr/bin/env python3
"""End-to-end: how pass and alert finalise on one packet, through the real pipeline in IPS mode
(--simulate-ips) on an HTTP flow built here with pcapcraft.py. As Suricata, the alerts of one
packet are one queue ordered by action-order; a pass in it ends the queue, and the alerts
before it are logged with "verdict": {"action": "pass"}; the pass of an app-layer rule then
passes the flow, whose later packets are not inspected.

action-order: [alert, pass, drop, reject] and the rules

    alert http any any -> any any (sid:1;)                 app-layer rule, per packet
    drop http any any -> any any (content:"OK"; sid:2;)    would match the response
    alert tcp any any -> any any (sid:3;)                  IP-only: first packet each way
    pass http any any -> any any (content:"GET"; sid:4;)   matches the request

give: sid 3 on the SYN and the SYN/ACK (verdict alert), sid 1 on the request with verdict pass
(sid 4 matched there and is not logged), nothing on the response (the flow is passed: sid 2
neither alerts nor drops), the flow record with action pass, no packet blocked. With the
default action-order (pass first) the request has no alert at all. A flow without the pass
rule keeps alerting sid 1 on each packet where the flow is HTTP, with verdict alert, and sid 2
drops the response.

    picket-sensor -r FILE.pcap -S RULES -l OUTDIR -k none --workers 1 --simulate-ips -c CONFIG

Usage: pass_verdict_test.py --build BUILD_DIR   (or --sensor PATH, or $PICKET_SENSOR)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pcapcraft as pc  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402
import picket_e2e  # noqa: E402

SENSOR = None

RULES = """\
alert http any any -> any any (sid:1;)
drop http any any -> any any (content:"OK"; sid:2;)
alert tcp any any -> any any (sid:3;)
pass http any any -> any any (content:"GET"; sid:4;)
"""

RULES_NO_PASS = "\n".join(RULES.splitlines()[:3]) + "\n"

CONFIG = """\
action-order:
  - alert
  - pass
  - drop
  - reject
outputs:
  - eve-log:
      enabled: yes
      filetype: regular
      filename: eve.json
      types:
        - alert:
            verdict: yes
        - drop:
            alerts: yes
        - flow
        - stats
"""

DEFAULT_ORDER_CONFIG = "\n".join(CONFIG.splitlines()[5:]) + "\n"

REQUEST = b"GET / HTTP/1.1\r\nHost: example.test\r\nUser-Agent: e2e\r\nAccept: */*\r\n\r\n"
RESPONSE = (b"HTTP/1.1 200 OK\r\nServer: e2e\r\nContent-Type: text/plain\r\n"
            b"Content-Length: 5\r\n\r\nhello")


def build_pcap():
    """One HTTP flow; returns the writer and the pcap_cnt of each packet that matters."""
    w = pc.PcapWriter()
    conn = pc.TcpConn(w, "10.0.5.1", 40123, "10.0.5.2", 80)
    at = {}
    conn.handshake()
    at["syn"], at["synack"] = 1, 2
    at["request"] = conn.send(REQUEST)
    at["ack"] = conn.ack_client()
    at["response"] = conn.reply(RESPONSE)
    conn.close()
    at["total"] = len(w.frames)
    return w, at


def run_sensor(tmp, name, w, rules, config):
    d = tempfile.mkdtemp(prefix=name + "-", dir=tmp)
    pcap = os.path.join(d, "http.pcap")
    w.save(pcap)
    rules_path = os.path.join(d, "t.rules")
    with open(rules_path, "w") as f:
        f.write(rules)
    cfg = os.path.join(d, "sensor.yaml")
    with open(cfg, "w") as f:
        f.write(config)
    logdir = os.path.join(d, "log")
    os.makedirs(logdir)
    args = [SENSOR, "-r", pcap, "-S", rules_path, "-l", logdir, "-k", "none", "--workers", "1",
            "--simulate-ips", "-c", cfg]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    eve = []
    path = os.path.join(logdir, "eve.json")
    if os.path.exists(path):
        with open(path) as f:
            eve = [json.loads(line) for line in f]
    return proc, eve


def alerts_of(eve):
    return [(e["pcap_cnt"], e["alert"]["signature_id"], e["verdict"]["action"])
            for e in eve if e["event_type"] == "alert"]


class PassVerdictTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-pass-verdict-")
        cls.w, cls.at = build_pcap()
        cls.runs = {
            "alert-first": run_sensor(cls.tmp, "alert-first", cls.w, RULES, CONFIG),
            "default-order": run_sensor(cls.tmp, "default-order", cls.w, RULES,
                                        DEFAULT_ORDER_CONFIG),
            "no-pass": run_sensor(cls.tmp, "no-pass", cls.w, RULES_NO_PASS, CONFIG),
        }

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def eve(self, name):
        proc, eve = self.runs[name]
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return eve

    def test_alert_queued_before_the_pass_carries_the_pass_verdict(self):
        at = self.at
        self.assertEqual(alerts_of(self.eve("alert-first")),
                         [(at["syn"], 3, "alert"), (at["synack"], 3, "alert"),
                          (at["request"], 1, "pass")])

    def test_passed_flow_neither_alerts_nor_drops_later(self):
        eve = self.eve("alert-first")
        self.assertEqual([e for e in eve if e["event_type"] == "drop"], [])
        flows = [e for e in eve if e["event_type"] == "flow"]
        self.assertEqual(len(flows), 1)
        self.assertEqual(flows[0]["flow"]["action"], "pass")
        self.assertEqual(flows[0]["app_proto"], "http")
        stats = [e for e in eve if e["event_type"] == "stats"][-1]["stats"]
        self.assertEqual(stats["ips"]["blocked"], 0)
        self.assertEqual(stats["ips"]["accepted"], self.at["total"])

    def test_default_order_pass_first_leaves_no_alert_on_the_request(self):
        at = self.at
        self.assertEqual(alerts_of(self.eve("default-order")),
                         [(at["syn"], 3, "alert"), (at["synack"], 3, "alert")])

    def test_without_the_pass_the_app_layer_rule_alerts_per_packet(self):
        # sid 1 is Suricata's app_layer type (protocol in the header, no other condition):
        # matched on every packet once the flow is HTTP, not once per direction.
        at = self.at
        got = alerts_of(self.eve("no-pass"))
        self.assertEqual(got[:4], [(at["syn"], 3, "alert"), (at["synack"], 3, "alert"),
                                   (at["request"], 1, "alert"), (at["ack"], 1, "alert")])
        self.assertEqual(got[4:6], [(at["response"], 1, "drop"), (at["response"], 2, "drop")])
        self.assertEqual(len(got), 6)


if __name__ == "__main__":
    SENSOR, argv = picket_e2e.sensor_from_args()
    picket_test.main(argv)
