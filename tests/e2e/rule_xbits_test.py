#!/usr/bin/env python3
"""End-to-end: xbits with track tx (Suricata 8's transaction bits) and hostbits with the
direction both (issue #22) through the real pipeline (decode, flow, stream, app layer, detect,
EVE) on a pcap built here with pcapcraft.py:

- one HTTP connection with two transactions: a rule sets a tx bit on the request of
  /admin/panel; the response of that transaction (tx_id 0) alerts on the bit, the second
  transaction's response (the near miss) does not; a checker written before the setter in the
  file still sees the bit on the same request (setters are ordered first);
- one UDP DNS flow with two queries: the bit set on the query for evil.example is seen by its
  answer only, not by the answer to good.example;
- hostbits:set,pivot,both marks both hosts of a flow: each host's later web flow alerts with
  hostbits:isset,pivot,src, a flow between the two with isset both, a third host's does not.

    picket-sensor -r FILE.pcap -S RULES -l OUTDIR -k none

Usage: rule_xbits_test.py --build BUILD_DIR   (or --sensor PATH, or $PICKET_SENSOR)
"""
import json
import os
import shutil
import struct
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

HOST_A = "203.0.113.5"
HOST_B = "203.0.113.6"
SERVER = "10.0.0.2"
WEB = "10.0.0.80"
RESOLVER = "10.0.0.53"

RULES = r"""alert http any any -> any any (msg:"admin request flagged"; http.uri; \
content:"/admin"; xbits:isset,admin,track tx; sid:3010;)
alert http any any -> any any (msg:"admin request"; http.uri; content:"/admin"; \
xbits:set,admin,track tx; noalert; sid:3011;)
alert http any any -> any any (msg:"admin answered"; http.stat_code; content:"200"; \
xbits:isset,admin,track tx; sid:3012;)
alert dns any any -> any any (msg:"evil query"; dns.query; content:"evil.example"; \
xbits:set,evil_q,track tx; noalert; sid:3013;)
alert dns any any -> any any (msg:"evil query answered"; flow:to_client; \
xbits:isset,evil_q,track tx; sid:3014;)
alert tcp any any -> any 445 (msg:"lateral"; flow:established,to_server; content:"lateral"; \
hostbits:set,pivot,both; noalert; sid:3020;)
alert tcp any any -> any 80 (msg:"pivot host on the web"; flow:established,to_server; \
content:"GET"; hostbits:isset,pivot,src; sid:3021;)
alert tcp any any -> any 80 (msg:"between pivot hosts"; flow:established,to_server; \
content:"GET"; hostbits:isset,pivot,both; sid:3022;)
"""


def dns_name(name):
    out = b""
    for label in name.split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def dns_query(qid, name):
    return struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0) + dns_name(name) + \
        struct.pack("!HH", 1, 1)


def dns_answer(qid, name, ip):
    q = dns_name(name) + struct.pack("!HH", 1, 1)
    ans = struct.pack("!HHHIH", 0xC00C, 1, 1, 300, 4) + bytes(int(x) for x in ip.split("."))
    return struct.pack("!HHHHHH", qid, 0x8180, 1, 1, 0, 0) + q + ans


def get(w, client, port, server, path="/"):
    c = pc.TcpConn(w, client, port, server, 80)
    c.handshake()
    c.send(("GET %s HTTP/1.1\r\nHost: example.test\r\n\r\n" % path).encode())
    c.reply(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    c.close()


def build_pcap():
    w = pc.PcapWriter()
    lateral = pc.TcpConn(w, HOST_A, 42000, SERVER, 445)
    lateral.handshake()
    lateral.send(b"lateral movement")
    lateral.reply(b"ok")
    lateral.close()
    get(w, SERVER, 43000, WEB)   # the destination host of the lateral flow
    get(w, HOST_A, 42001, WEB)   # its source host
    get(w, HOST_A, 42002, SERVER)  # from one marked host to the other
    get(w, HOST_B, 42003, WEB)   # near miss: an unmarked host
    # Two transactions on one connection of the unmarked host.
    c = pc.TcpConn(w, HOST_B, 42004, SERVER, 80)
    c.handshake()
    admin = c.send(b"GET /admin/panel HTTP/1.1\r\nHost: example.test\r\n\r\n")
    c.reply(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    c.send(b"GET /index.html HTTP/1.1\r\nHost: example.test\r\n\r\n")
    c.reply(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    c.close()
    # Two DNS transactions on one UDP flow.
    w.udp(HOST_B, 53000, RESOLVER, 53, dns_query(0x1111, "www.evil.example"))
    w.udp(RESOLVER, 53, HOST_B, 53000, dns_answer(0x1111, "www.evil.example", "192.0.2.1"),
          to_server=False)
    w.udp(HOST_B, 53000, RESOLVER, 53, dns_query(0x2222, "www.good.example"))
    w.udp(RESOLVER, 53, HOST_B, 53000, dns_answer(0x2222, "www.good.example", "192.0.2.2"),
          to_server=False)
    # The packet whose inspection first sees the whole /admin request (IDS timing).
    return w, pc.ids_inspected_at(w, admin)


class RuleXbitsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-xbits-")
        pcap = os.path.join(cls.tmp, "xbits.pcap")
        w, cls.admin_inspected = build_pcap()
        w.save(pcap)
        rules = os.path.join(cls.tmp, "xbits.rules")
        with open(rules, "w") as f:
            f.write(RULES)
        logdir = os.path.join(cls.tmp, "log")
        os.makedirs(logdir)
        cls.proc = subprocess.run([SENSOR, "-r", pcap, "-S", rules, "-l", logdir, "-k", "none"],
                                  capture_output=True, text=True, timeout=120)
        cls.alerts = []
        path = os.path.join(logdir, "eve.json")
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    ev = json.loads(line)
                    if ev.get("event_type") == "alert":
                        cls.alerts.append(ev)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def of(self, sid):
        return [a for a in self.alerts if a["alert"]["signature_id"] == sid]

    def client_ports(self, sid):
        return sorted(a["src_port"] if a["dest_port"] in (53, 80, 445) else a["dest_port"]
                      for a in self.of(sid))

    def test_loads_and_runs(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        self.assertNotIn("skipped", self.proc.stderr.replace("0 skipped", ""))

    def test_setters_alert_nothing(self):
        self.assertEqual(self.of(3011) + self.of(3013) + self.of(3020), [])

    def test_http_tx_bit_seen_by_its_response_only(self):
        answered = self.of(3012)
        self.assertEqual(len(answered), 1, answered)
        self.assertEqual(answered[0]["tx_id"], 0)
        self.assertEqual(answered[0]["src_port"], 80)
        self.assertEqual(answered[0]["dest_port"], 42004)
        self.assertEqual(answered[0]["direction"], "to_client")

    def test_checker_before_the_setter_sees_the_same_request(self):
        flagged = self.of(3010)
        self.assertEqual(len(flagged), 1, flagged)
        self.assertEqual(flagged[0]["tx_id"], 0)
        self.assertEqual(flagged[0]["http"]["url"], "/admin/panel")
        # On the request's first inspection, the pass in which the setter ran: not a later one.
        self.assertIsNotNone(self.admin_inspected)
        self.assertEqual(flagged[0]["pcap_cnt"], self.admin_inspected)

    def test_dns_tx_bit_seen_by_its_answer_only(self):
        answered = self.of(3014)
        self.assertEqual(len(answered), 1, answered)
        self.assertEqual(answered[0]["tx_id"], 0)
        self.assertEqual(answered[0]["src_port"], 53)

    def test_hostbits_both_mark_each_host(self):
        self.assertEqual(self.client_ports(3021), [42001, 42002, 43000])
        self.assertEqual(self.client_ports(3022), [42002])


if __name__ == "__main__":
    SENSOR, argv = picket_e2e.sensor_from_args()
    picket_test.main(argv)
