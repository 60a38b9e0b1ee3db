#!/usr/bin/env python3
"""End-to-end: the tag keyword (Suricata 7) through the real pipeline on a pcap built here with
pcapcraft.py. Each case has its own addresses, so that host tags of one case cannot tag
another's packets, and the exact tagged packets (pcap_cnt, frame bytes) are checked against
EVE "packet" records (outputs.eve-log.types.alert.tagged-packets, on by default):

- session, 3 packets: the 3 packets after the alerting one on its flow, both directions; a
  packet of another flow between them is not tagged;
- session, 300 bytes: frames of 100 and 150 bytes are tagged, the next (60, 310 in all) ends
  the tag, and a later small frame is not tagged either;
- session, 2 seconds (packet time): packets up to 2 whole seconds after the alert;
- host src, 2 packets: packets from or to the alert's source on other flows; packets of the
  alert's destination are not;
- renewal: a second alert of the same rule counts 2 packets again from itself (it is itself
  tagged by the first);
- session without count over TCP: 256 packets after the alert (Suricata's default);
- tagged-packets: no writes no packet record, the alerts stay.

    picket-sensor -r FILE.pcap -S RULES -l OUTDIR -k none --workers 1 [-c CONFIG]

One worker: a host tag reaches other flows, and with several workers the order between
flows on different workers is not fixed (Suricata's own threads have the same race).

Usage: tag_test.py --build BUILD_DIR   (or --sensor PATH, or $PICKET_SENSOR)
"""
import base64
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
alert udp any any -> any 7001 (msg:"tag session 3 packets"; content:"TRIGGER"; \
tag:session,3,packets; sid:2001;)
alert udp any any -> any 7002 (msg:"tag session 300 bytes"; content:"TRIGGER"; \
tag:session,300,bytes; sid:2002;)
alert udp any any -> any 7003 (msg:"tag session 2 seconds"; content:"TRIGGER"; \
tag:session,2,seconds; sid:2003;)
alert udp any any -> any 7004 (msg:"tag host src 2 packets"; content:"TRIGGER"; \
tag:host,2,packets,src; sid:2004;)
alert udp any any -> any 7005 (msg:"tag renewed"; content:"TRIGGER"; tag:session,2,packets; \
sid:2005;)
alert tcp any any -> any 7006 (msg:"tag session default"; flow:established,to_server; \
content:"TRIGGER"; tag:session; sid:2006;)
"""

NO_TAGGED_CONFIG = """\
outputs:
  - eve-log:
      enabled: yes
      filetype: regular
      filename: eve.json
      types:
        - alert:
            tagged-packets: no
"""

UDP_HDR = 14 + 20 + 8  # Ethernet + IPv4 + UDP


def payload_for(frame_len, fill=b"x"):
    """A UDP payload that makes a frame of frame_len bytes."""
    return fill * (frame_len - UDP_HDR)


class Case:
    def __init__(self):
        self.alerts = []  # pcap_cnt of each alerting packet
        self.tagged = []  # pcap_cnt of each packet that must be tagged
        self.frames = {}  # pcap_cnt -> frame bytes


def build_pcap():
    w = pc.PcapWriter()
    cases = {}

    def udp(case, src, sport, dst, dport, data, tagged=False, alert=False, to_server=True):
        cnt = w.udp(src, sport, dst, dport, data, to_server)
        case.frames[cnt] = w.frames[cnt - 1][1]
        if tagged:
            case.tagged.append(cnt)
        if alert:
            case.alerts.append(cnt)
        return cnt

    # session, 3 packets
    c = cases[2001] = Case()
    a, b = "10.0.1.1", "10.0.1.2"
    udp(c, a, 5001, b, 7001, b"hello")
    udp(c, a, 5001, b, 7001, b"TRIGGER", alert=True)
    udp(c, b, 7001, a, 5001, b"reply 1", tagged=True, to_server=False)
    udp(c, "10.0.1.3", 5002, "10.0.1.4", 7001, b"other flow")
    udp(c, a, 5001, b, 7001, b"more 2", tagged=True)
    udp(c, b, 7001, a, 5001, b"reply 3", tagged=True, to_server=False)
    udp(c, a, 5001, b, 7001, b"past the limit")
    udp(c, b, 7001, a, 5001, b"past the limit", to_server=False)

    # session, 300 bytes
    c = cases[2002] = Case()
    a, b = "10.0.2.1", "10.0.2.2"
    udp(c, a, 5001, b, 7002, b"TRIGGER", alert=True)
    udp(c, a, 5001, b, 7002, payload_for(100), tagged=True)
    udp(c, b, 7002, a, 5001, payload_for(150), tagged=True, to_server=False)  # 250
    udp(c, a, 5001, b, 7002, payload_for(60))  # 310: ends the tag
    udp(c, a, 5001, b, 7002, payload_for(43))

    # session, 2 seconds: the alert at a whole second, then +1 s, +2.5 s (second 2), +3 s
    c = cases[2003] = Case()
    a, b = "10.0.3.1", "10.0.3.2"
    w.t_us = 1700000100 * 1000000 - 1000  # add() steps 1 ms: the trigger at 1700000100.000000
    udp(c, a, 5001, b, 7003, b"TRIGGER", alert=True)
    w.t_us = 1700000101 * 1000000 - 1000
    udp(c, b, 7003, a, 5001, b"after 1 s", tagged=True, to_server=False)
    w.t_us = 1700000102 * 1000000 + 500000 - 1000
    udp(c, a, 5001, b, 7003, b"after 2.5 s", tagged=True)
    w.t_us = 1700000103 * 1000000 - 1000
    udp(c, a, 5001, b, 7003, b"after 3 s")

    # host src, 2 packets: the alert's source is 10.0.4.1
    c = cases[2004] = Case()
    src, dst = "10.0.4.1", "10.0.4.2"
    udp(c, src, 5001, dst, 7004, b"TRIGGER", alert=True)
    udp(c, dst, 6000, "10.0.4.7", 6001, b"destination's traffic")
    udp(c, src, 6002, "10.0.4.9", 6003, b"from the source", tagged=True)
    udp(c, "10.0.4.8", 6004, src, 6005, b"to the source", tagged=True)
    udp(c, src, 6002, "10.0.4.9", 6003, b"past the limit")

    # renewal: T1, x1, T2 (tagged by T1's tag, then renews it), x2, x3, x4
    c = cases[2005] = Case()
    a, b = "10.0.5.1", "10.0.5.2"
    udp(c, a, 5001, b, 7005, b"TRIGGER", alert=True)
    udp(c, b, 7005, a, 5001, b"x1", tagged=True, to_server=False)
    udp(c, a, 5001, b, 7005, b"TRIGGER again", tagged=True, alert=True)
    udp(c, b, 7005, a, 5001, b"x2", tagged=True, to_server=False)
    udp(c, a, 5001, b, 7005, b"x3", tagged=True)
    udp(c, a, 5001, b, 7005, b"x4")

    # session without count over TCP: 256 packets after the alert's
    c = cases[2006] = Case()
    conn = pc.TcpConn(w, "10.0.6.1", 5001, "10.0.6.2", 7006)
    first = len(w.frames) + 1
    conn.handshake()
    conn.send(b"TRIGGER")
    for i in range(140):
        conn.reply(b"r%03d" % i)
        conn.send(b"s%03d" % i)
    conn.close()
    for cnt in range(first, len(w.frames) + 1):
        c.frames[cnt] = w.frames[cnt - 1][1]
    return w, cases


def read_eve(logdir):
    out = []
    path = os.path.join(logdir, "eve.json")
    if os.path.exists(path):
        with open(path) as f:
            out = [json.loads(line) for line in f]
    return out


def run_sensor(tmp, name, w, config=None):
    d = tempfile.mkdtemp(prefix=name + "-", dir=tmp)
    pcap = os.path.join(d, "tag.pcap")
    w.save(pcap)
    rules = os.path.join(d, "tag.rules")
    with open(rules, "w") as f:
        f.write(RULES)
    logdir = os.path.join(d, "log")
    os.makedirs(logdir)
    args = [SENSOR, "-r", pcap, "-S", rules, "-l", logdir, "-k", "none", "--workers", "1"]
    if config is not None:
        cfg = os.path.join(d, "sensor.yaml")
        with open(cfg, "w") as f:
            f.write(config)
        args += ["-c", cfg]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    return proc, read_eve(logdir), logdir


class TagTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-tag-")
        cls.w, cls.cases = build_pcap()
        cls.proc, cls.eve, cls.logdir = run_sensor(cls.tmp, "default", cls.w)
        cls.off_proc, cls.off_eve, _ = run_sensor(cls.tmp, "off", cls.w, NO_TAGGED_CONFIG)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def alerts(self, eve, sid):
        return [e for e in eve
                if e["event_type"] == "alert" and e["alert"]["signature_id"] == sid]

    def packets(self, eve, case):
        return [e for e in eve if e["event_type"] == "packet" and e["pcap_cnt"] in case.frames]

    def check_case(self, sid):
        case = self.cases[sid]
        self.assertEqual([a["pcap_cnt"] for a in self.alerts(self.eve, sid)], case.alerts)
        recs = self.packets(self.eve, case)
        self.assertEqual([r["pcap_cnt"] for r in recs], case.tagged)
        for r in recs:
            frame = case.frames[r["pcap_cnt"]]
            self.assertEqual(base64.b64decode(r["packet"]), frame, r["pcap_cnt"])
            self.assertEqual(r["packet_info"], {"linktype": 1, "linktype_name": "EN10MB"})
            self.assertEqual(r["pkt_src"], "wire/pcap")
            self.assertNotIn("alert", r)
        return recs

    def test_runs_ok(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        self.assertNotIn("tag", self.proc.stderr)  # every rule loads, no warning about tag

    def test_session_packets(self):
        recs = self.check_case(2001)
        flow_id = self.alerts(self.eve, 2001)[0]["flow_id"]
        self.assertEqual({r["flow_id"] for r in recs}, {flow_id})
        self.assertEqual(recs[0]["src_ip"], "10.0.1.2")  # the reply: as the packet went
        self.assertEqual(recs[0]["dest_port"], 5001)

    def test_session_bytes(self):
        recs = self.check_case(2002)
        self.assertEqual([len(base64.b64decode(r["packet"])) for r in recs], [100, 150])

    def test_session_seconds_in_packet_time(self):
        recs = self.check_case(2003)
        self.assertEqual([r["timestamp"] for r in recs],
                         ["2023-11-14T22:15:01.000000+0000", "2023-11-14T22:15:02.500000+0000"])

    def test_host_src(self):
        recs = self.check_case(2004)
        self.assertEqual([(r["src_ip"], r["dest_ip"]) for r in recs],
                         [("10.0.4.1", "10.0.4.9"), ("10.0.4.8", "10.0.4.1")])

    def test_renewal(self):
        self.check_case(2005)

    def test_session_default_256_packets_over_tcp(self):
        case = self.cases[2006]
        alerts = self.alerts(self.eve, 2006)
        self.assertEqual(len(alerts), 1)
        cnt = alerts[0]["pcap_cnt"]
        recs = self.packets(self.eve, case)
        later = sorted(c for c in case.frames if c > cnt)
        self.assertGreater(len(later), 256)
        self.assertEqual([r["pcap_cnt"] for r in recs], later[:256])
        for r in recs:
            self.assertEqual(base64.b64decode(r["packet"]), case.frames[r["pcap_cnt"]])
            self.assertEqual(r["flow_id"], alerts[0]["flow_id"])

    def test_exact_total_and_fast_log_has_alerts_only(self):
        expected = sum(len(c.tagged) for sid, c in self.cases.items() if sid != 2006) + 256
        self.assertEqual(sum(1 for e in self.eve if e["event_type"] == "packet"), expected)
        with open(os.path.join(self.logdir, "fast.log")) as f:
            fast = f.read().splitlines()
        self.assertEqual(len(fast), sum(1 for e in self.eve if e["event_type"] == "alert"))

    def test_tagged_packets_no(self):
        self.assertEqual(self.off_proc.returncode, 0, self.off_proc.stderr)
        self.assertEqual([e for e in self.off_eve if e["event_type"] == "packet"], [])
        self.assertEqual(len([e for e in self.off_eve if e["event_type"] == "alert"]),
                         len([e for e in self.eve if e["event_type"] == "alert"]))


if __name__ == "__main__":
    SENSOR, argv = picket_e2e.sensor_from_args()
    picket_test.main(argv)
