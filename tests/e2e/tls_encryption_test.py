#!/usr/bin/env python3
"""End-to-end: app-layer.protocols.tls.encryption-handling (default, full, bypass).

Suricata 7 stops inspecting the payload of a TLS session once its handshake is done (the
first application data record): rules with content on the packet or the raw stream no longer
match it, while tls.* rules and header-only rules still do (`default`); `full` inspects it like
any other protocol; `bypass` stops looking at the flow altogether. The pcap is built here
(pcapcraft.py), with a marker string in the handshake and in the encrypted records, and the
sensor runs on it once per setting. The assertions are the exact alerts of each run.

Usage: tls_encryption_test.py --build BUILD_DIR   (or --sensor PATH, or $PICKET_SENSOR)
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
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)
import picket_e2e  # noqa: E402

SENSOR = None


def u8(n):
    return bytes([n])


def u16(n):
    return n.to_bytes(2, "big")


def u24(n):
    return n.to_bytes(3, "big")


def record(content_type, body, version=0x0303):
    return u8(content_type) + u16(version) + u16(len(body)) + body


def handshake(msg_type, body):
    return u8(msg_type) + u24(len(body)) + body


def client_hello(sni, early_data=False):
    name = sni.encode()
    sni_ext = u16(len(name) + 3) + u8(0) + u16(len(name)) + name
    exts = u16(0) + u16(len(sni_ext)) + sni_ext
    if early_data:
        exts += u16(42) + u16(0)  # early_data (TLS 1.3 0-RTT), empty in a ClientHello
    body = (u16(0x0303) + bytes(range(32)) + u8(0) + u16(2) + u16(0xC02F) + u8(1) + u8(0) +
            u16(len(exts)) + exts)
    # A marker in the handshake itself: raw content rules still see the handshake.
    return record(22, handshake(1, body), 0x0301)


def server_hello():
    body = u16(0x0303) + bytes(range(100, 132)) + u8(0) + u16(0xC02F) + u8(0) + u16(0)
    return record(22, handshake(2, body) + handshake(14, b""))


CCS = record(20, b"\x01")


def app_data(marker):
    return record(23, b"\x00" * 16 + marker + b"\x00" * 16)


RULES = """
alert tcp any any -> any any (msg:"marker in the handshake"; content:"secure.tls.test"; sid:1;)
alert tcp any any -> any any (msg:"client app data"; content:"CLIENTSECRET"; sid:2;)
alert tcp any any -> any any (msg:"server app data"; content:"SERVERSECRET"; sid:3;)
alert tls any any -> any any (msg:"sni"; tls.sni; content:"secure.tls.test"; sid:4;)
alert tcp any any -> any 443 (msg:"header only, dsize"; dsize:>100; flow:to_server; sid:5;)
alert tcp any any -> any any (msg:"early data"; content:"EARLYDATA"; sid:6;)
"""


def build(path):
    """Returns the pcap_cnt of the interesting packets, by name."""
    w = pc.PcapWriter()
    at = {}
    # A TLS 1.2 session: hellos, CCS both ways, then application data both ways, twice.
    c = pc.TcpConn(w, "10.5.0.1", 45001, "10.5.0.2", 443)
    c.handshake()
    at["ch"] = c.send(client_hello("secure.tls.test"))
    c.reply(server_hello())
    c.send(CCS)
    c.reply(CCS)
    at["c1"] = c.send(app_data(b"CLIENTSECRET" + b"A" * 100))
    at["s1"] = c.reply(app_data(b"SERVERSECRET"))
    at["c2"] = c.send(app_data(b"CLIENTSECRET" + b"B" * 100))
    at["s2"] = c.reply(app_data(b"SERVERSECRET"))
    c.close()
    # TLS 1.3 0-RTT: early data right after a ClientHello offering it, before any ServerHello,
    # does not end the handshake; the ServerHello and the first record after it do.
    e = pc.TcpConn(w, "10.5.0.3", 45002, "10.5.0.2", 443)
    e.handshake()
    e.send(client_hello("early.tls.test", early_data=True))
    at["early"] = e.send(app_data(b"EARLYDATA"))
    e.reply(server_hello())
    at["early_srv"] = e.reply(app_data(b"SERVERSECRET"))
    at["late"] = e.send(app_data(b"EARLYDATA"))
    e.close()
    w.save(path)
    return {k: pc.ids_inspected_at(w, v) for k, v in at.items()}, {k: v for k, v in at.items()}


class Run:
    def __init__(self, tmp, pcap, rules, setting):
        self.logdir = tempfile.mkdtemp(prefix="log-", dir=tmp)
        args = [SENSOR, "-r", pcap, "-S", rules, "-l", self.logdir, "-k", "none"]
        if setting is not None:
            args += ["--set", "app-layer.protocols.tls.encryption-handling=" + setting]
        p = subprocess.run(args, capture_output=True, text=True, timeout=120)
        self.rc, self.stderr = p.returncode, p.stderr
        self.alerts = []
        path = os.path.join(self.logdir, "eve.json")
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    ev = json.loads(line)
                    if ev.get("event_type") == "alert":
                        self.alerts.append(ev)

    def cnts(self, sid):
        return sorted(a.get("pcap_cnt") for a in self.alerts
                      if a["alert"]["signature_id"] == sid)


class TlsEncryptionHandling(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-tlsenc-")
        pcap = os.path.join(cls.tmp, "tls.pcap")
        cls.stream_at, cls.pkt_at = build(pcap)
        rules = os.path.join(cls.tmp, "test.rules")
        with open(rules, "w") as f:
            f.write(RULES)
        cls.default = Run(cls.tmp, pcap, rules, None)
        cls.explicit_default = Run(cls.tmp, pcap, rules, "default")
        cls.full = Run(cls.tmp, pcap, rules, "full")
        cls.bypass = Run(cls.tmp, pcap, rules, "bypass")
        cls.bad = Run(cls.tmp, pcap, rules, "sometimes")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_runs_ok(self):
        for r in (self.default, self.explicit_default, self.full, self.bypass):
            self.assertEqual(r.rc, 0, r.stderr)

    def test_default_is_default(self):
        self.assertEqual([(a["alert"]["signature_id"], a.get("pcap_cnt"))
                          for a in self.default.alerts],
                         [(a["alert"]["signature_id"], a.get("pcap_cnt"))
                          for a in self.explicit_default.alerts])

    def test_default_inspects_the_handshake(self):
        # The ClientHello's SNI bytes: raw stream content, inspected when acknowledged (each
        # TLS record asks for the raw stream, as Suricata's parser does), and its transaction.
        self.assertEqual(self.default.cnts(1), [self.stream_at["ch"]])
        self.assertEqual(self.default.cnts(4), [self.stream_at["ch"]])

    def test_default_stops_payload_inspection_after_the_handshake(self):
        self.assertEqual(self.default.cnts(2), [])
        self.assertEqual(self.default.cnts(3), [])

    def test_default_keeps_header_only_rules(self):
        # dsize > 100 to port 443: both big client records, payload inspection off or not.
        self.assertEqual(self.default.cnts(5), [self.pkt_at["c1"], self.pkt_at["c2"]])

    def test_early_data_does_not_end_the_handshake(self):
        # 0-RTT data before the ServerHello is still inspected; after it, not any more.
        self.assertEqual(self.default.cnts(6), [self.stream_at["early"]])
        self.assertEqual(self.full.cnts(6), [self.stream_at["early"], self.stream_at["late"]])

    def test_full_inspects_everything(self):
        self.assertEqual(self.full.cnts(1), [self.stream_at["ch"]])
        self.assertEqual(self.full.cnts(2), [self.stream_at["c1"], self.stream_at["c2"]])
        self.assertEqual(self.full.cnts(3), [self.stream_at["s1"], self.stream_at["s2"],
                                             self.stream_at["early_srv"]])
        self.assertEqual(self.full.cnts(4), [self.stream_at["ch"]])
        self.assertEqual(self.full.cnts(5), [self.pkt_at["c1"], self.pkt_at["c2"]])

    def test_bypass_stops_looking_at_the_flow(self):
        self.assertEqual(self.bypass.cnts(1), [self.stream_at["ch"]])
        self.assertEqual(self.bypass.cnts(4), [self.stream_at["ch"]])
        self.assertEqual(self.bypass.cnts(2), [])
        self.assertEqual(self.bypass.cnts(3), [])
        # Nothing after the handshake, header-only rules included: the first client record
        # (whose data ends the handshake) is the last packet looked at.
        self.assertEqual(self.bypass.cnts(5), [self.pkt_at["c1"]])

    def test_bad_value_is_refused_by_name(self):
        self.assertNotEqual(self.bad.rc, 0)
        self.assertIn("encryption-handling", self.bad.stderr)
        self.assertIn("sometimes", self.bad.stderr)


if __name__ == "__main__":
    SENSOR, argv = picket_e2e.sensor_from_args()
    picket_test.main(argv)
