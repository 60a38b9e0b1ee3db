#!/usr/bin/env python3
"""End-to-end: protocol-detection-only rules and how pass and alert finalise on one packet,
through the real pipeline on an HTTP flow and a DNS exchange built here with pcapcraft.py.

Protocol-detection-only rules (Suricata's pd_only: app-layer-protocol and nothing else but
flow:to_server/to_client) match once per direction, on the packet where that direction's
protocol detection finished: inline (--simulate-ips) the request and the response themselves;
passive (IDS), where TCP data reaches the app layer when it is acknowledged, the first packet of
each direction after that; UDP (DNS) the query and the answer. A rule with another condition
(ttl:64) matches every packet once its direction's protocol is known.

Pass and alert, IPS mode: the alerts of one packet are one queue ordered by action-order; a
pass in it ends the queue, and the alerts before it are logged with
"verdict": {"action": "pass"}; the pass of an app-layer rule then passes the flow, whose later
packets are not inspected. action-order: [alert, pass, drop, reject] and the rules

    alert http any any -> any any (sid:1;)                 app-layer rule, per packet
    drop http any any -> any any (content:"OK"; sid:2;)    would match the response
    alert tcp any any -> any any (sid:3;)                  IP-only: first packet each way
    pass http any any -> any any (content:"GET"; sid:4;)   matches the request

give: sid 3 on the SYN and the SYN/ACK (verdict alert), sid 1 on the request with verdict pass
(sid 4 matched there and is not logged), nothing on the response (the flow is passed: sid 2
neither alerts nor drops), the flow record with action pass, no packet blocked. With the
default action-order (pass first) the request has no alert at all. Without the pass rule sid 1
alerts on each packet where the flow is HTTP, with verdict alert, and sid 2 drops the response.

    picket-sensor -r FILE.pcap -S RULES -l OUTDIR -k none --workers 1 [--simulate-ips] -c CONFIG

Usage: pdonly_pass_test.py --build BUILD_DIR   (or --sensor PATH, or $PICKET_SENSOR)
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


PD_RULES = """\
alert tcp any any -> any any (msg:"pd http"; app-layer-protocol:http; sid:10;)
alert tcp any any -> any any (msg:"pd http to server"; flow:to_server; \
app-layer-protocol:http; sid:11;)
alert ip any any -> any any (msg:"pd not tls"; app-layer-protocol:!tls; sid:12;)
alert tcp any any -> any any (msg:"not pd"; ttl:64; app-layer-protocol:http; sid:13;)
alert udp any any -> any any (msg:"pd dns"; app-layer-protocol:dns; sid:14;)
"""

PD_CONFIG = """\
outputs:
  - eve-log:
      enabled: yes
      filetype: regular
      filename: eve.json
      types:
        - alert
"""

# A DNS query for example.test (id 0x4242, one question, type A class IN) and its answer.
DNS_QUERY = (b"\x42\x42\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
             b"\x07example\x04test\x00\x00\x01\x00\x01")
DNS_ANSWER = (b"\x42\x42\x81\x80\x00\x01\x00\x01\x00\x00\x00\x00"
              b"\x07example\x04test\x00\x00\x01\x00\x01"
              b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04\x0a\x00\x05\x09")


def build_pcap(with_dns=False):
    """One HTTP flow (and a DNS exchange); returns the writer and the pcap_cnt of each packet
    that matters."""
    w = pc.PcapWriter()
    conn = pc.TcpConn(w, "10.0.5.1", 40123, "10.0.5.2", 80)
    at = {}
    conn.handshake()
    at["syn"], at["synack"] = 1, 2
    at["request"] = conn.send(REQUEST)
    at["ack"] = conn.ack_client()
    at["response"] = conn.reply(RESPONSE)
    at["last"] = conn.close()
    at["client_fin"], at["server_fin"] = at["last"] - 2, at["last"] - 1
    if with_dns:
        at["query"] = w.udp("10.0.6.1", 53001, "10.0.6.2", 53, DNS_QUERY)
        at["answer"] = w.udp("10.0.6.2", 53, "10.0.6.1", 53001, DNS_ANSWER, to_server=False)
    at["total"] = len(w.frames)
    return w, at


def run_sensor(tmp, name, w, rules, config, ips=True):
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
            "-c", cfg] + (["--simulate-ips"] if ips else [])
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    eve = []
    path = os.path.join(logdir, "eve.json")
    if os.path.exists(path):
        with open(path) as f:
            eve = [json.loads(line) for line in f]
    return proc, eve


def sids_at(eve):
    """{sid: [pcap_cnt, ...]} of the alerts."""
    out = {}
    for e in eve:
        if e["event_type"] == "alert":
            out.setdefault(e["alert"]["signature_id"], []).append(e["pcap_cnt"])
    return out


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


class PdOnlyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-pdonly-")
        cls.w, cls.at = build_pcap(with_dns=True)
        cls.runs = {
            "ips": run_sensor(cls.tmp, "ips", cls.w, PD_RULES, PD_CONFIG, ips=True),
            "ids": run_sensor(cls.tmp, "ids", cls.w, PD_RULES, PD_CONFIG, ips=False),
        }

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def sids(self, name):
        proc, eve = self.runs[name]
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return sids_at(eve)

    def test_inline_each_direction_once_where_detection_finished(self):
        at = self.at
        got = self.sids("ips")
        self.assertEqual(got[10], [at["request"], at["response"]])
        self.assertEqual(got[11], [at["request"]])
        # Every protocol but tls: the HTTP flow's two directions and the DNS exchange's.
        self.assertEqual(got[12], [at["request"], at["response"], at["query"], at["answer"]])
        self.assertEqual(got[14], [at["query"], at["answer"]])

    def test_passive_the_next_packet_of_the_direction_after_acknowledgement(self):
        # The request reaches the app layer with the server's ACK (a to-client packet): the
        # next to-server packet (the client's FIN) carries the to-server detection; the
        # response reaches it with that FIN, and the server's FIN carries the to-client one.
        at = self.at
        got = self.sids("ids")
        self.assertEqual(got[10], [at["client_fin"], at["server_fin"]])
        self.assertEqual(got[11], [at["client_fin"]])
        self.assertEqual(got[14], [at["query"], at["answer"]])

    def test_with_another_condition_every_packet_once_known(self):
        at = self.at
        self.assertEqual(self.sids("ips")[13],
                         [at["request"], at["response"], at["client_fin"], at["server_fin"],
                          at["last"]])
        # Passive: the server's ACK before the response has its direction still unknown.
        self.assertEqual(self.sids("ids")[13], [at["client_fin"], at["server_fin"], at["last"]])


if __name__ == "__main__":
    SENSOR, argv = picket_e2e.sensor_from_args()
    picket_test.main(argv)
