#!/usr/bin/env python3
"""End-to-end: EVE records that must match Suricata 7's beyond the alerts, on pcaps built here
with pcapcraft.py and the real picket-sensor run offline on them:

    picket-sensor -r FILE.pcap -S RULES -l OUTDIR -k none --workers 1 [--set key=value ...]

- VLAN without tracking (`vlan.use-for-tracking: false`, the two directions on different
  VLANs): the client's packets are tagged, the server's are not. One flow; the flow record
  names the first packet's VLAN, the http and fileinfo records the VLAN of the packet that
  logged them (the client's ACK of the response), the alert on the server's packet none.
- Drop records of a noalert drop (`--simulate-ips`, `drop tcp any any -> any any (noalert;)`
  beside a pass rule for port 22): no alert; every packet of the dropped flow has a drop
  record (`flows: all`), the first names the rule in its `alert` object (`alerts: yes`), the
  flow record has `flow.action: drop`; the passed flow has no drop record.
- A response body that runs to the close (no Content-Length): the transaction completes, and
  its http and fileinfo records are written, on the packet that closes the session (both FINs
  acknowledged), as Suricata's IDS timing tells the app layer of a stream's end only then;
  with detect.guess-applayer-tx a raw stream rule's alert carries the transaction.
- DNS over TCP in the v3 format (`- dns: {version: 3}`): a message whose header and question
  come in two segments is one `request` record; a message the flow's end cuts short is none.

Usage: eve_parity_test.py --build BUILD_DIR   (or --sensor PATH, or $PICKET_SENSOR)
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


def run_sensor(tmp, name, w, rules, args=(), config=None):
    """Writes the pcap and rules under tmp/name-*, runs the sensor; (process, eve records)."""
    d = tempfile.mkdtemp(prefix=name + "-", dir=tmp)
    pcap = os.path.join(d, name + ".pcap")
    w.save(pcap)
    rules_path = os.path.join(d, name + ".rules")
    with open(rules_path, "w") as f:
        f.write(rules)
    logdir = os.path.join(d, "log")
    os.makedirs(logdir)
    cmd = [SENSOR, "-r", pcap, "-S", rules_path, "-l", logdir, "-k", "none", "--workers", "1"]
    if config is not None:
        cfg = os.path.join(d, "sensor.yaml")
        with open(cfg, "w") as f:
            f.write(config)
        cmd += ["-c", cfg]
    proc = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=120)
    eve = []
    path = os.path.join(logdir, "eve.json")
    if os.path.exists(path):
        with open(path) as f:
            eve = [json.loads(line) for line in f]
    return proc, eve


def of_type(eve, event_type):
    return [e for e in eve if e["event_type"] == event_type]


class VlanWriter(pc.PcapWriter):
    """Client-to-server frames carry an 802.1Q tag; server-to-client frames do not."""

    def __init__(self, vlan):
        super().__init__()
        self.vlan = vlan

    def ip(self, src, dst, proto, l4, to_server=True):
        et, l3 = pc.ip_packet(src, dst, proto, l4)
        if not to_server:
            return self.add(pc.ethernet(et, l3, pc.SERVER_MAC, pc.CLIENT_MAC))
        tagged = struct.pack("!HH", self.vlan, et) + l3
        return self.add(pc.ethernet(0x8100, tagged, pc.CLIENT_MAC, pc.SERVER_MAC))


VLAN_RULES = """\
alert http any any -> any any (flow:to_server; http.host; content:"vlan.example"; sid:1;)
alert http any any -> any any (flow:to_client; http.stat_code; content:"200"; sid:2;)
"""


class SensorRun:
    """Mixin (not collected as a test): each class makes its pcap in cls.tmp and runs the sensor once (cls.proc)."""

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_runs_ok(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)


class VlanWithoutTrackingTest(SensorRun, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-eveparity-")
        w = VlanWriter(3136)
        conn = pc.TcpConn(w, "10.1.0.1", 40000, "10.1.0.2", 80)
        conn.handshake()
        conn.send(b"GET /files/report.txt HTTP/1.1\r\nHost: vlan.example\r\n\r\n")
        body = b"x" * 3000
        conn.reply_segments(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        cls.ack_cnt = conn.ack_server()
        conn.close()
        cls.proc, cls.eve = run_sensor(cls.tmp, "vlan", w, VLAN_RULES,
                                       ["--set", "vlan.use-for-tracking=false"])
        cls.tracked_proc, cls.tracked_eve = run_sensor(cls.tmp, "vlan-tracked", w, VLAN_RULES)

    def test_one_flow_record_with_the_first_packets_vlan(self):
        flows = of_type(self.eve, "flow")
        self.assertEqual(len(flows), 1)
        self.assertEqual(flows[0]["vlan"], [3136])
        self.assertEqual(flows[0]["tcp"]["state"], "closed")
        self.assertEqual(flows[0]["flow"]["pkts_toclient"], 5)

    def test_http_and_fileinfo_carry_the_logging_packets_vlan(self):
        http = of_type(self.eve, "http")
        self.assertEqual(len(http), 1)
        self.assertEqual(http[0]["pcap_cnt"], self.ack_cnt)
        self.assertEqual(http[0]["vlan"], [3136])
        self.assertEqual(http[0]["http"]["hostname"], "vlan.example")
        self.assertEqual(http[0]["http"]["status"], 200)
        files = of_type(self.eve, "fileinfo")
        self.assertEqual(len(files), 1)
        self.assertEqual(files[0]["vlan"], [3136])
        self.assertEqual(files[0]["fileinfo"]["filename"], "/files/report.txt")
        self.assertEqual(files[0]["fileinfo"]["state"], "CLOSED")

    def test_alerts_carry_their_packets_vlan(self):
        by_sid = {a["alert"]["signature_id"]: a for a in of_type(self.eve, "alert")}
        self.assertEqual(sorted(by_sid), [1, 2])
        self.assertEqual(by_sid[1]["vlan"], [3136])
        self.assertNotIn("vlan", by_sid[2])  # logged on the server's untagged packet

    def test_with_tracking_the_directions_are_two_flows(self):
        # The default (use-for-tracking: true): the tagged and untagged halves do not meet.
        # Each is a one-sided session, which without stream.async-oneside Suricata's state
        # machine never establishes (the client's half stays in SYN_SENT): nothing reaches
        # the app layer, so there is no http record at all.
        self.assertEqual(self.tracked_proc.returncode, 0, self.tracked_proc.stderr)
        self.assertEqual([f.get("vlan") for f in of_type(self.tracked_eve, "flow")],
                         [[3136], None])
        self.assertEqual(of_type(self.tracked_eve, "http"), [])


DROP_RULES = """\
pass tcp any any -> any 22 (sid:2; gid:10000003;)
drop tcp any any -> any any (noalert; sid:1; rev:1;)
"""

DROP_CONFIG = """\
outputs:
  - eve-log:
      enabled: yes
      filetype: regular
      filename: eve.json
      types:
        - alert
        - drop:
            flows: all
            alerts: yes
        - flow
"""


class NoalertDropRecordsTest(SensorRun, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-eveparity-")
        w = pc.PcapWriter()
        web = pc.TcpConn(w, "10.2.0.1", 41000, "10.2.0.2", 80)
        web.handshake()
        web.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        web.reply(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        web.close()
        cls.web_packets = len(w.frames)
        ssh = pc.TcpConn(w, "10.2.0.1", 41001, "10.2.0.2", 22)
        ssh.handshake()
        ssh.send(b"SSH-2.0-test\r\n")
        ssh.close()
        cls.proc, cls.eve = run_sensor(cls.tmp, "drop", w, DROP_RULES, ["--simulate-ips"],
                                       DROP_CONFIG)

    def test_no_alert(self):
        self.assertEqual(of_type(self.eve, "alert"), [])

    def test_every_packet_of_the_dropped_flow_has_a_record(self):
        drops = of_type(self.eve, "drop")
        self.assertEqual([d["pcap_cnt"] for d in drops], list(range(1, self.web_packets + 1)))
        self.assertEqual({d["dest_port"] for d in drops if d["src_ip"] == "10.2.0.1"}, {80})

    def test_the_first_drop_names_the_noalert_rule(self):
        drops = of_type(self.eve, "drop")
        self.assertEqual(drops[0]["drop"]["reason"], "rules")
        self.assertEqual(drops[0]["alert"]["signature_id"], 1)
        self.assertEqual(drops[0]["alert"]["action"], "blocked")
        self.assertEqual([d["drop"]["reason"] for d in drops[1:]],
                         ["flow drop"] * (len(drops) - 1))
        self.assertEqual([d for d in drops[1:] if "alert" in d], [])

    def test_flow_records(self):
        flows = {f["dest_port"]: f for f in of_type(self.eve, "flow")}
        self.assertEqual(flows[80]["flow"]["action"], "drop")
        self.assertEqual(flows[22]["flow"]["action"], "pass")


CLOSE_RULES = """\
alert tcp any 80 -> any any (msg:"raw"; flow:to_client,established; content:"realm"; sid:5;)
"""


class BodyUntilCloseTest(SensorRun, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-eveparity-")
        w = pc.PcapWriter()
        conn = pc.TcpConn(w, "10.3.0.1", 42000, "10.3.0.2", 80)
        conn.handshake()
        conn.send(b"GET /page.html HTTP/1.1\r\nHost: close.example\r\n\r\n")
        conn.reply(b"HTTP/1.1 401 Unauthorized\r\nConnection: close\r\n"
                   b"WWW-Authenticate: Basic realm=\"x\"\r\n\r\n")
        conn.reply(b"b" * 700)
        # The server closes first (bug-130's shape): its FIN, the client's ACK of it (the
        # body's end is acknowledged here), the client's FIN, the server's ACK (closed).
        conn.sack = conn.cnext
        conn._s(conn.snext, pc.FIN | pc.ACK)
        conn.cack = conn.snext + 1
        cls.fin_acked_cnt = conn._c(conn.cnext, pc.ACK)
        conn._c(conn.cnext, pc.FIN | pc.ACK)
        conn.sack = conn.cnext + 1
        cls.closed_cnt = conn._s(conn.snext + 1, pc.ACK)
        cls.proc, cls.eve = run_sensor(cls.tmp, "close", w, CLOSE_RULES,
                                       ["--set", "detect.guess-applayer-tx=true"])

    def test_records_come_with_the_close(self):
        http = of_type(self.eve, "http")
        self.assertEqual(len(http), 1)
        self.assertEqual(http[0]["pcap_cnt"], self.closed_cnt)
        self.assertEqual(self.closed_cnt, self.fin_acked_cnt + 2)
        self.assertEqual(http[0]["http"]["status"], 401)
        self.assertEqual(http[0]["http"]["length"], 700)
        files = of_type(self.eve, "fileinfo")
        self.assertEqual([(f["pcap_cnt"], f["fileinfo"]["size"], f["fileinfo"]["state"])
                          for f in files], [(self.closed_cnt, 700, "CLOSED")])

    def test_guessed_transaction_in_the_raw_alert(self):
        alerts = of_type(self.eve, "alert")
        self.assertEqual(len(alerts), 1)
        self.assertEqual(alerts[0]["http"]["status"], 401)
        self.assertEqual(alerts[0]["http"]["url"], "/page.html")
        self.assertEqual(alerts[0]["app_proto"], "http")


DNS_CONFIG = """\
outputs:
  - eve-log:
      enabled: yes
      filetype: regular
      filename: eve.json
      types:
        - alert
        - dns:
            version: 3
"""

DNS_RULES = """\
alert dns any any -> any any (msg:"q"; dns.query; content:"split.example"; nocase; sid:6;)
"""


def dns_query(txid, name, qtype=16):
    q = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\x00"
    return struct.pack("!HHHHHH", txid, 0x0100, 1, 0, 0, 0) + q + struct.pack("!HH", qtype, 1)


class DnsTcpSplitAndCutShortTest(SensorRun, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-eveparity-")
        w = pc.PcapWriter()
        conn = pc.TcpConn(w, "10.4.0.1", 43000, "10.4.0.2", 53)
        conn.handshake()
        msg = dns_query(0x1032, "split.example")
        framed = struct.pack("!H", len(msg)) + msg
        conn.send(framed[:14])  # length and header only
        conn.ack_client()
        conn.send(framed[14:])  # the question
        conn.ack_client()
        conn.close()
        cut = pc.TcpConn(w, "10.4.0.1", 43001, "10.4.0.2", 53)
        cut.handshake()
        msg = dns_query(0x2042, "cut.example")
        framed = struct.pack("!H", len(msg)) + msg
        cut.send(framed[:20])  # the flow ends before the rest
        cut.close()
        cls.proc, cls.eve = run_sensor(cls.tmp, "dns", w, DNS_RULES, config=DNS_CONFIG)

    def test_split_message_is_one_request(self):
        dns = of_type(self.eve, "dns")
        self.assertEqual(len(dns), 1)
        self.assertEqual(dns[0]["dns"]["version"], 3)
        self.assertEqual(dns[0]["dns"]["type"], "request")
        self.assertEqual(dns[0]["dns"]["id"], 0x1032)
        self.assertEqual(dns[0]["dns"]["queries"], [{"rrname": "split.example", "rrtype": "TXT"}])
        self.assertEqual(dns[0]["src_port"], 43000)

    def test_alert_on_the_split_message(self):
        alerts = of_type(self.eve, "alert")
        self.assertEqual([a["alert"]["signature_id"] for a in alerts], [6])


if __name__ == "__main__":
    SENSOR, argv = picket_e2e.sensor_from_args()
    picket_test.main(argv)
