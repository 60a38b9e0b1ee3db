#!/usr/bin/env python3
"""End-to-end: TCP stream reassembly and the HTTP / DNS / TLS app layer of picket-sensor.

Every pcap is built here, byte by byte (pcapcraft.py: Ethernet, IPv4/IPv6, TCP/UDP with correct
checksums, TCP handshakes with consistent seq/ack), and the sensor runs offline on it:

    picket-sensor -r FILE.pcap -S RULES -l OUTDIR -k none [--set key=value ...]

The tests assert the exact alerts (sid, count, pcap_cnt, direction, app_proto, the EVE http /
dns / tls objects) and the exact counters of the final stats event.

- Stream: patterns split over 2 and 3 segments, tcp-pkt / tcp-stream / flow:no_stream /
  flow:only_stream, out-of-order, retransmission, overlaps with different data under every
  target policy (stream.reassembly.policy and host-os-policy), reassembly depth, midstream,
  data behind two holes that one ACK skips (each run inspected, in IDS and IPS timing).
- HTTP: detection on a non-standard port, URI normalisation, urilen, the sticky buffers and the
  Snort content modifiers, chunked and compressed bodies, pipelining, IPv6, EVE http object.
- DNS: dns.query (with dotprefix/endswith), dns.opcode, DNS over TCP, EVE dns object.
- TLS: tls.sni, ja3.hash (computed here from the bytes we wrote), tls.version,
  tls.cert_subject (certificate made by the openssl command line), EVE tls object.
- Malformed input: the sensor survives, counts the event and still alerts on a later flow.
- Flow counters per app-layer protocol.

Usage: stream_applayer_test.py --build BUILD_DIR   (or --sensor PATH, or $PICKET_SENSOR)
"""
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pcapcraft as pc  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402  (tests/support: how a suite exits, skips apart)
import picket_e2e  # noqa: E402

SENSOR = None

# Cases that show a sensor bug: they assert the correct (Suricata) behaviour and are run as
# expected failures until the engine is fixed. Key: test id (method name, or
# "policy:<policy>:<shape>"); value: the reason. Empty when the engine passes everything.
KNOWN_ENGINE_BUGS = {}
known_bug = picket_e2e.known_bugs(KNOWN_ENGINE_BUGS)


# --------------------------------------------------------------------------- running the sensor

class Run:
    """One sensor run: its exit status, alerts (in file order) and final stats."""

    def __init__(self, proc, logdir, n_rules):
        self.n_rules = n_rules
        self.rc = proc.returncode
        self.stderr = proc.stderr
        self.alerts = []
        self.stats = None
        path = os.path.join(logdir, "eve.json")
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    ev = json.loads(line)
                    if ev.get("event_type") == "alert":
                        self.alerts.append(ev)
                    elif ev.get("event_type") == "stats":
                        self.stats = ev["stats"]

    def sid(self, sid):
        return [a for a in self.alerts if a["alert"]["signature_id"] == sid]

    def cnts(self, sid):
        return sorted(a.get("pcap_cnt") for a in self.sid(sid))

    def stat(self, dotted):
        cur = self.stats
        for part in dotted.split("."):
            if not isinstance(cur, dict) or part not in cur:
                return None
            cur = cur[part]
        return cur


# An alert's "stream" flag (matched on reassembled data) is printed with its payload, which is
# off by default (as in Suricata): the runs whose tests read it turn payload-printable on.
WITH_STREAM_FLAG = "outputs.eve.alert.payload-printable=yes"


def run_sensor(tmp, name, writer, rules, sets=()):
    d = tempfile.mkdtemp(prefix=name + "-", dir=tmp)
    pcap = os.path.join(d, name + ".pcap")
    writer.save(pcap)
    rules_path = os.path.join(d, "test.rules")
    with open(rules_path, "w") as f:
        f.write(rules)
    logdir = os.path.join(d, "log")
    os.makedirs(logdir)
    # Picket's own counters (detect.rules_*, tcp.retransmissions, app_layer.dns.*) in EVE stats.
    args = [SENSOR, "-r", pcap, "-S", rules_path, "-l", logdir, "-k", "none",
            "--set", "stats-picket-counters=yes"]
    for s in sets:
        args += ["--set", s]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    n_rules = sum(1 for line in rules.splitlines() if line.strip() and not line.startswith("#"))
    return Run(proc, logdir, n_rules)


class SensorCase(unittest.TestCase):
    """Base: one temp dir per class, removed at the end."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-stream-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def assert_ok(self, run):
        self.assertEqual(run.rc, 0, run.stderr)
        self.assertIsNotNone(run.stats, "no stats event")
        # Every rule loaded: a rule the parser rejects would make its "no alert" cases vacuous.
        self.assertEqual(run.stat("detect.rules_failed"), 0, run.stderr)
        self.assertEqual(run.stat("detect.rules_loaded"), run.n_rules, run.stderr)

    def assert_sid(self, run, sid, cnts, msg=None):
        """Exactly these alerts (pcap_cnt of each, any order) for the sid."""
        self.assertEqual(run.cnts(sid), sorted(cnts),
                         msg or "sid %d: %s" % (sid, [a.get("pcap_cnt") for a in run.alerts]))


# --------------------------------------------------------------------------- protocol builders

def http_request(method, target, headers=(), body=b"", version="HTTP/1.1"):
    head = "%s %s %s\r\n" % (method, target, version)
    for k, v in headers:
        head += "%s: %s\r\n" % (k, v)
    return head.encode() + b"\r\n" + body


def http_response(status, reason, headers=(), body=b"", length=True):
    head = "HTTP/1.1 %d %s\r\n" % (status, reason)
    for k, v in headers:
        head += "%s: %s\r\n" % (k, v)
    if length:
        head += "Content-Length: %d\r\n" % len(body)
    return head.encode() + b"\r\n" + body


def gzip_bytes(data):
    c = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: gzip wrapper
    return c.compress(data) + c.flush()


def dns_name(name):
    out = b""
    for label in name.split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def dns_query(qid, name, qtype=1, opcode=0):
    flags = (opcode << 11) | 0x0100  # RD
    return struct.pack("!HHHHHH", qid, flags, 1, 0, 0, 0) + dns_name(name) + \
        struct.pack("!HH", qtype, 1)


def dns_response_a(qid, name, ip):
    q = dns_name(name) + struct.pack("!HH", 1, 1)
    ans = struct.pack("!HHHIH", 0xC00C, 1, 1, 300, 4) + bytes(int(x) for x in ip.split("."))
    return struct.pack("!HHHHHH", qid, 0x8180, 1, 1, 0, 0) + q + ans


def dns_response_loop(qid, name):
    """A response whose answer name is a label followed by a pointer back to that label."""
    msg = struct.pack("!HHHHHH", qid, 0x8180, 1, 1, 0, 0) + dns_name(name) + \
        struct.pack("!HH", 1, 1)
    loop_at = len(msg)
    msg += b"\x03abc" + struct.pack("!H", 0xC000 | loop_at)
    return msg + struct.pack("!HHIH", 1, 1, 300, 4) + b"\xc0\x00\x02\x01"


def is_grease(v):
    return (v & 0x0F0F) == 0x0A0A and (v >> 8) == (v & 0xFF)


def u8(n):
    return struct.pack("!B", n)


def u16(n):
    return struct.pack("!H", n)


def u24(n):
    return struct.pack("!I", n)[1:]


def tls_record(content_type, body, version=0x0301):
    return u8(content_type) + u16(version) + u16(len(body)) + body


def tls_handshake(msg_type, body):
    return u8(msg_type) + u24(len(body)) + body


class ClientHello:
    """A TLS 1.2 ClientHello with GREASE values, and its JA3 computed per the salesforce/ja3
    definition: SSLVersion,Ciphers,Extensions,EllipticCurves,EllipticCurvePointFormats (decimal,
    '-' joined, GREASE removed, extensions in the order sent)."""

    def __init__(self, sni):
        self.version = 0x0303
        self.ciphers = [0x0A0A, 0xC02F, 0xC030, 0x009E, 0x00FF]
        self.groups = [0x2A2A, 29, 23, 24]
        self.point_formats = [0]
        sni_b = sni.encode()
        server_name = u16(len(sni_b) + 3) + u8(0) + u16(len(sni_b)) + sni_b
        groups = u16(2 * len(self.groups)) + b"".join(u16(g) for g in self.groups)
        points = u8(len(self.point_formats)) + bytes(self.point_formats)
        sigalgs = u16(6) + u16(0x0403) + u16(0x0804) + u16(0x0401)
        self.extensions = [
            (0x1A1A, b""),  # GREASE
            (0, server_name),
            (10, groups),
            (11, points),
            (13, sigalgs),
            (35, b""),  # session_ticket
        ]
        exts = b"".join(u16(t) + u16(len(d)) + d for t, d in self.extensions)
        body = (u16(self.version) + bytes(range(32)) + u8(32) + bytes(range(100, 132)) +
                u16(2 * len(self.ciphers)) + b"".join(u16(c) for c in self.ciphers) +
                u8(1) + u8(0) + u16(len(exts)) + exts)
        self.bytes = tls_record(22, tls_handshake(1, body))

    def ja3_string(self):
        def join(vals):
            return "-".join(str(v) for v in vals if not is_grease(v))
        return "%d,%s,%s,%s,%s" % (self.version, join(self.ciphers),
                                   join(t for t, _ in self.extensions), join(self.groups),
                                   join(self.point_formats))

    def ja3_hash(self):
        return hashlib.md5(self.ja3_string().encode()).hexdigest()


def server_flight(cert_der):
    """ServerHello (TLS 1.2, ECDHE-RSA-AES128-GCM-SHA256) + Certificate + ServerHelloDone in
    one handshake record."""
    exts = u16(0xFF01) + u16(1) + b"\0" + u16(11) + u16(2) + u8(1) + u8(0)
    sh = (u16(0x0303) + bytes(range(200, 232)) + u8(32) + bytes(32) + u16(0xC02F) + u8(0) +
          u16(len(exts)) + exts)
    certs = u24(len(cert_der)) + cert_der
    cert = u24(len(certs)) + certs
    hs = tls_handshake(2, sh) + tls_handshake(11, cert) + tls_handshake(14, b"")
    return tls_record(22, hs, 0x0303)


def make_cert(tmp):
    key = os.path.join(tmp, "key.pem")
    der = os.path.join(tmp, "cert.der")
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-outform",
                        "DER", "-out", der, "-days", "30", "-subj",
                        "/C=US/O=Picket/CN=test.example"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with open(der, "rb") as f:
        return f.read()


# =========================================================================== 1. stream

STREAM_RULES = """
alert tcp any any -> any any (msg:"two segments"; content:"TWOSEGMENTS"; sid:101;)
alert tcp any any -> any any (msg:"three segments"; content:"THREESEGMENTS"; sid:102;)
alert tcp-pkt any any -> any any (msg:"tcp-pkt split"; content:"TWOSEGMENTS"; sid:103;)
alert tcp any any -> any any (msg:"no_stream split"; flow:no_stream; content:"TWOSEGMENTS"; sid:104;)
alert tcp any any -> any any (msg:"only_stream split"; flow:only_stream; content:"TWOSEGMENTS"; sid:105;)
alert tcp-stream any any -> any any (msg:"tcp-stream split"; content:"TWOSEGMENTS"; sid:106;)
alert tcp any any -> any any (msg:"no_stream whole"; flow:no_stream; content:"WHOLEPACKET"; sid:107;)
alert tcp any any -> any any (msg:"only_stream whole"; flow:only_stream; content:"WHOLEPACKET"; sid:108;)
alert tcp any any -> any any (msg:"plain whole"; content:"WHOLEPACKET"; sid:109;)
alert tcp any any -> any any (msg:"out of order"; content:"OUTOFORDERDATA"; sid:110;)
alert tcp any any -> any any (msg:"retransmitted"; content:"RETRANSMITTED"; sid:111;)
alert tcp any any -> any any (msg:"early"; content:"EARLYPATTERN"; sid:112;)
alert tcp any any -> any any (msg:"late"; content:"LATEPATTERN"; sid:113;)
alert tcp any any -> any any (msg:"midstream"; content:"MIDSTREAMDATA"; sid:114;)
"""


def stream_pcap():
    """Returns the writer and the pcap_cnt of the frames the alerts must name. Raw stream
    content is inspected as Suricata does in IDS mode: on the client's packets once 2,560
    acknowledged bytes wait or the session closes, so for these short connections on the
    client's final ACK (close()), and at the flow's end (None) for the one never closed."""
    w = pc.PcapWriter()
    at = {}
    # Split over two segments.
    c = pc.TcpConn(w, "10.0.0.1", 40001, "10.0.0.2", 20001)
    c.handshake()
    c.send(b"aaTWOSEG")
    c.send(b"MENTSbb")
    at["two"] = c.close()
    # Split over three segments.
    c = pc.TcpConn(w, "10.0.0.1", 40002, "10.0.0.2", 20002)
    c.handshake()
    c.send_segments(b"aaTHREESEGMENTSbb", [7, 5])
    at["three"] = c.close()
    # A whole pattern in one packet.
    c = pc.TcpConn(w, "10.0.0.1", 40003, "10.0.0.2", 20003)
    c.handshake()
    at["whole_pkt"] = c.send(b"xxWHOLEPACKETyy")
    at["whole"] = c.close()
    # Out of order: the second half first, then the first half fills the hole.
    c = pc.TcpConn(w, "10.0.0.1", 40004, "10.0.0.2", 20004)
    c.handshake()
    c.send(b"RDERDATAzz", off=8)
    c.send(b"xxOUTOFO", off=0)
    at["ooo"] = c.close()
    # Retransmission of both segments, same data.
    c = pc.TcpConn(w, "10.0.0.1", 40005, "10.0.0.2", 20005)
    c.handshake()
    c.send(b"xxRETRANS")
    c.send(b"MITTEDyy")
    c.send(b"MITTEDyy", off=9)
    c.send(b"xxRETRANS", off=0)
    at["retrans"] = c.close()
    # Depth: 3 x 600 bytes; EARLYPATTERN straddles offset 600, LATEPATTERN offset 1200.
    c = pc.TcpConn(w, "10.0.0.1", 40006, "10.0.0.2", 20006)
    c.handshake()
    data = bytearray(b"." * 1800)
    data[594:606] = b"EARLYPATTERN"
    data[1195:1206] = b"LATEPATTERN"
    c.send_segments(bytes(data), [600, 600])
    at["early"] = at["late"] = c.close()
    # Midstream: no handshake, the client's data only (ACK set, as mid-connection).
    c = pc.TcpConn(w, "10.0.0.1", 40007, "10.0.0.2", 20007, client_isn=7000000)
    c.send(b"xxMIDSTR")
    c.send(b"EAMDATAyy")
    at["mid"] = None
    return w, at


class Stream(SensorCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.w, cls.at = stream_pcap()
        cls.default = run_sensor(cls.tmp, "stream", cls.w, STREAM_RULES, [WITH_STREAM_FLAG])
        cls.depth = run_sensor(cls.tmp, "stream-depth", cls.w, STREAM_RULES,
                               ["stream.reassembly.depth=1000", WITH_STREAM_FLAG])
        cls.mid = run_sensor(cls.tmp, "stream-mid", cls.w, STREAM_RULES,
                             ["stream.midstream=true", WITH_STREAM_FLAG])

    def test_runs_ok(self):
        for r in (self.default, self.depth, self.mid):
            self.assert_ok(r)

    def test_split_two_segments(self):
        self.assert_sid(self.default, 101, [self.at["two"]])
        a = self.default.sid(101)[0]
        self.assertEqual(a["direction"], "to_server")
        self.assertEqual(a["dest_port"], 20001)
        self.assertEqual(a["stream"], 1)  # matched on the reassembled data

    def test_split_three_segments(self):
        self.assert_sid(self.default, 102, [self.at["three"]])

    def test_packet_only_rules_miss_split_content(self):
        self.assert_sid(self.default, 103, [])  # tcp-pkt
        self.assert_sid(self.default, 104, [])  # flow:no_stream

    def test_stream_only_rules_match_split_content(self):
        self.assert_sid(self.default, 105, [self.at["two"]])  # flow:only_stream
        self.assert_sid(self.default, 106, [self.at["two"]])  # tcp-stream

    def test_whole_packet_content(self):
        # flow:no_stream needs the packet: it alerts on the packet itself.
        self.assert_sid(self.default, 107, [self.at["whole_pkt"]])
        self.assert_sid(self.default, 108, [self.at["whole"]])
        self.assert_sid(self.default, 109, [self.at["whole"]])

    def test_out_of_order(self):
        self.assert_sid(self.default, 110, [self.at["ooo"]])

    def test_retransmission_alerts_once(self):
        self.assert_sid(self.default, 111, [self.at["retrans"]])
        self.assertEqual(self.default.stat("tcp.retransmissions"), 2)
        self.assertEqual(self.default.stat("tcp.overlap_diff_data"), 0)

    def test_default_depth_sees_both(self):
        self.assert_sid(self.default, 112, [self.at["early"]])
        self.assert_sid(self.default, 113, [self.at["late"]])
        self.assertEqual(self.default.stat("tcp.reassembly_depth_reached"), 0)

    def test_depth_cuts_late_pattern(self):
        self.assert_sid(self.depth, 112, [self.at["early"]])
        self.assert_sid(self.depth, 113, [])
        self.assertEqual(self.depth.stat("tcp.reassembly_depth_reached"), 1)

    def test_midstream_off_by_default(self):
        self.assert_sid(self.default, 114, [])
        self.assertEqual(self.default.stat("tcp.midstream_pickups"), 0)
        self.assertEqual(self.default.stat("tcp.sessions"), 6)

    def test_midstream_on(self):
        self.assert_sid(self.mid, 114, [self.at["mid"]])
        self.assertEqual(self.mid.stat("tcp.midstream_pickups"), 1)
        self.assertEqual(self.mid.stat("tcp.sessions"), 7)

    def test_other_runs_unchanged(self):
        for sid in (101, 102, 105, 106, 107, 108, 109, 110, 111):
            self.assertEqual(self.depth.cnts(sid), self.default.cnts(sid), sid)
            self.assertEqual(self.mid.cnts(sid), self.default.cnts(sid), sid)


# --------------------------------------------------------------------------- skipped holes

HOLES_RULES = """
alert tcp any any -> any any (msg:"behind the first hole"; content:"HOLEATTACKONE"; sid:201;)
alert tcp any any -> any any (msg:"behind the second hole"; content:"HOLEATTACKTWO"; sid:202;)
"""


def holes_pcap():
    """Data behind two holes that the receiver acknowledges (segments the sensor missed), each
    pattern split over two segments so that only the stream can match it: the client's data
    on the first connection, the server's on the second. Returns the writer and the pcap_cnt
    that IDS-timing alerts name: the data's direction's first packet after the ACK (both holes
    are skipped then, and every run up to the last one is due) and, for the run after the last
    hole (fewer than 2,560 bytes wait), that direction's packet at the close: the client's
    final ACK, the server's FIN."""
    w = pc.PcapWriter()
    at = {}
    c = pc.TcpConn(w, "10.0.0.1", 40101, "10.0.0.2", 20101)
    c.handshake()
    c.send(b"a" * 100, off=0)
    c.send(b"bbHOLEATT", off=200)
    c.send(b"ACKONEbb", off=209)
    c.send(b"ccHOLEATT", off=400)
    c.send(b"ACKTWOcc", off=409)
    c.ack_client()
    at["c_next"] = c.send(b"dddd")
    at["c_close"] = c.close()
    c = pc.TcpConn(w, "10.0.0.1", 40102, "10.0.0.2", 20102)
    c.handshake()
    c.send(b"GET")
    c.reply(b"s" * 100, off=0)
    c.reply(b"bbHOLEATT", off=200)
    c.reply(b"ACKONEbb", off=209)
    c.reply(b"ccHOLEATT", off=400)
    c.reply(b"ACKTWOcc", off=409)
    c.ack_server()
    at["s_next"] = c.reply(b"zz")
    at["s_close"] = len(w.frames) + 2
    c.close()
    return w, at


class Holes(SensorCase):
    """Every run of stream data after a skipped hole is inspected, however many holes one
    packet skips and whichever direction's packet skips them."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.w, cls.at = holes_pcap()
        cls.ids = run_sensor(cls.tmp, "holes", cls.w, HOLES_RULES, [WITH_STREAM_FLAG])
        cls.no_ack = run_sensor(cls.tmp, "holes-no-ack", cls.w, HOLES_RULES,
                                ["stream.raw-on-ack=false", WITH_STREAM_FLAG])
        cls.inline = run_sensor(cls.tmp, "holes-inline", cls.w, HOLES_RULES,
                                ["stream.inline=true", WITH_STREAM_FLAG])

    def test_runs_ok(self):
        for r in (self.ids, self.no_ack, self.inline):
            self.assert_ok(r)
            self.assertEqual(r.stat("tcp.reassembly_gap"), 4)

    def test_ids_timing_each_run_on_its_own_direction(self):
        # Before: only the first run of the packet was inspected; HOLEATTACKONE, between the
        # two holes, never alerted.
        self.assert_sid(self.ids, 201, [self.at["c_next"], self.at["s_next"]])
        self.assert_sid(self.ids, 202, [self.at["c_close"], self.at["s_close"]])
        for sid in (201, 202):
            self.assertEqual([(a["direction"], a["stream"]) for a in self.ids.sid(sid)],
                             [("to_server", 1), ("to_client", 1)])

    def test_other_direction_released_by_ack(self):
        # Without raw-on-ack the ACK of the other side delivers the runs at once: each is
        # inspected on a pseudo packet of its own direction (no pcap_cnt). Before: never.
        for r in (self.no_ack, self.inline):
            for sid in (201, 202):
                self.assertEqual(
                    [(a.get("pcap_cnt"), a["direction"], a["src_port"], a["stream"])
                     for a in r.sid(sid)],
                    [(None, "to_server", 40101, 1), (None, "to_client", 20102, 1)])


# --------------------------------------------------------------------------- overlap policies
#
# Each shape is a list of (stream offset, bytes) sent in that order, after the handshake; the
# first 5 bytes (offset 0) come last, so every overlap happens among held (out-of-order)
# segments, where the target policy decides. "ATTACK" is never inside one packet: it exists
# only in the reassembled stream, and only when the policy lets the right bytes win.

HOLE = (0, b"abcde")
SHAPES = {
    # new starts before the held segment, ends at its end
    1: [(6, b"xxxx"), (5, b"ATTAC"), (10, b"K-tail")],
    # same start, new ends after
    2: [(5, b"Axxx"), (5, b"ATTAC"), (10, b"K-tail")],
    # new starts after and ends after
    3: [(5, b"Axxx"), (6, b"TTAC"), (10, b"K-tail")],
    # new starts before and ends before the held end
    4: [(6, b"xxxxK-"), (5, b"ATTAC"), (12, b"tail")],
    # same start, same end
    5: [(5, b"A"), (6, b"xxxx"), (6, b"TTAC"), (10, b"K-tail")],
    # the held segments spell ATTACK; one new segment covers them all
    6: [(5, b"A"), (6, b"TTAC"), (10, b"K"), (5, b"zzzzzz"), (11, b"-tail")],
}

POLICIES = ["first", "last", "bsd", "windows", "linux", "old-linux", "solaris"]


def new_wins(policy, s, e, ls, le):
    """sensor/stream/README.md, "Overlap policies": when the new segment [s, e) takes the bytes
    it shares with the held segment [ls, le)."""
    if policy in ("first", "vista"):
        return False
    if policy == "last":
        return True
    if policy in ("bsd", "windows", "hpux10", "irix", "macos"):
        return s < ls
    if policy == "linux":
        return s < ls or (s == ls and e > le)
    if policy == "old-linux":
        return s < ls or (s == ls and e >= le)
    if policy in ("solaris", "hpux11"):
        return (e >= le and s <= ls) or (s > ls and e > le)
    raise ValueError(policy)


def reassemble(policy, segments):
    """The documented model: a byte takes the new value only if every held segment covering it
    yields; an exact duplicate is not held twice."""
    buf = {}
    held = []
    for s, data in segments:
        e = s + len(data)
        for i in range(s, e):
            cover = [(ls, le) for ls, le in held if ls <= i < le]
            if all(new_wins(policy, s, e, ls, le) for ls, le in cover):
                buf[i] = data[i - s]
        if (s, e) not in held:
            held.append((s, e))
    return bytes(buf[i] for i in range(len(buf)))


# What the model gives, written out: each policy must differ from the others in at least one
# shape, else the test could not tell them apart.
POLICY_TABLE = {
    "first": {6},
    "last": {1, 2, 3, 4, 5},
    "bsd": {1, 4},
    "windows": {1, 4},
    "linux": {1, 2, 4},
    "old-linux": {1, 2, 4, 5},
    "solaris": {1, 2, 3, 5},
}

OVERLAP_RULES = 'alert tcp any any -> any any (msg:"overlap"; content:"ATTACK"; sid:300;)\n'


def overlap_pcap(servers):
    """One connection per (server, shape); the server never acknowledges before the end (an
    ACK past the hole would make it a gap). Returns the writer and {(server, shape): cnt},
    cnt the packet the pattern alerts on: raw stream content is inspected as Suricata does in
    IDS mode, on the client's packets once acknowledged data reaches 2,560 bytes or the
    session closes; here, the client's final ACK."""
    w = pc.PcapWriter()
    fill = {}
    port = 41000
    for server in servers:
        for shape, segs in SHAPES.items():
            port += 1
            c = pc.TcpConn(w, "10.9.0.1", port, server, 7000 + shape)
            c.handshake()
            for off, data in segs:
                c.send(data, off=off)
            c.send(HOLE[1], off=HOLE[0])
            fill[(server, shape)] = c.close()
    return w, fill


class OverlapPolicy(SensorCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # Global policy: one server, one run per policy.
        cls.w1, cls.fill1 = overlap_pcap(["10.9.1.1"])
        cls.global_runs = {
            p: run_sensor(cls.tmp, "policy-" + p, cls.w1, OVERLAP_RULES,
                          ["stream.reassembly.policy=" + p]) for p in POLICIES}
        # host-os-policy: one server per policy (10.9.2.N), plus one in no list (10.9.3.1) that
        # gets the global policy, in one run; 10.9.2.0/24 (bsd) is shorter than the /32s.
        cls.host_ip = {p: "10.9.2.%d" % (i + 1) for i, p in enumerate(POLICIES)}
        cls.w2, cls.fill2 = overlap_pcap(list(cls.host_ip.values()) + ["10.9.3.1"])
        sets = ["stream.reassembly.policy=first", "host-os-policy.bsd=[10.9.2.0/24]"]
        by_policy = {}
        for p, ip in cls.host_ip.items():
            by_policy.setdefault(p, []).append(ip + "/32")
        for p, nets in by_policy.items():
            if p == "bsd":
                continue  # covered by the /24
            sets.append("host-os-policy.%s=[%s]" % (p, ",".join(nets)))
        cls.host_run = run_sensor(cls.tmp, "policy-host", cls.w2, OVERLAP_RULES, sets)

    def test_model_matches_table(self):
        # The expectations below come from the README's rules through reassemble(); this pins
        # them so that a mistake in the model shows.
        for p in POLICIES:
            got = {k for k, segs in SHAPES.items()
                   if b"ATTACK" in reassemble(p, segs + [HOLE])}
            self.assertEqual(got, POLICY_TABLE[p], p)
        # No packet carries the pattern on its own.
        for segs in SHAPES.values():
            for _, data in segs + [HOLE]:
                self.assertNotIn(b"ATTACK", data)

    def check(self, run, fill, server, policy):
        self.assert_ok(run)
        expected = POLICY_TABLE[policy]
        for shape in SHAPES:
            key = "policy:%s:%d" % (policy, shape)
            got = [a["pcap_cnt"] for a in run.sid(300) if a["dest_ip"] == server and
                   a["dest_port"] == 7000 + shape]
            want = [fill[(server, shape)]] if shape in expected else []
            with self.subTest(policy=policy, shape=shape, via=server):
                if key in KNOWN_ENGINE_BUGS:
                    self.assertNotEqual(got, want, "fixed? remove %s from KNOWN_ENGINE_BUGS" % key)
                else:
                    self.assertEqual(got, want, "policy %s shape %d (%s)" %
                                     (policy, shape, reassemble(policy, SHAPES[shape] + [HOLE])))

    def test_global_policy(self):
        for p in POLICIES:
            self.check(self.global_runs[p], self.fill1, "10.9.1.1", p)

    def test_host_os_policy(self):
        for p, ip in self.host_ip.items():
            self.check(self.host_run, self.fill2, ip, p)
        # Not in any list: the global policy (first).
        self.check(self.host_run, self.fill2, "10.9.3.1", "first")

    def test_overlap_counted(self):
        s = self.global_runs["bsd"]
        self.assertGreater(s.stat("tcp.overlap"), 0)
        self.assertGreater(s.stat("tcp.overlap_diff_data"), 0)


# =========================================================================== 2. HTTP

HTTP_RULES = """
alert http any any -> any any (msg:"uri"; http.uri; content:"/index.html"; sid:201;)
alert http any any -> any any (msg:"method"; http.method; content:"GET"; http.uri; content:"/index.html"; sid:202;)
alert http any any -> any any (msg:"host"; http.host; content:"www.example.com"; startswith; endswith; sid:203;)
alert http any any -> any any (msg:"host raw"; http.host.raw; content:"WWW.Example.COM:8081"; sid:204;)
alert http any any -> any any (msg:"ua"; http.user_agent; content:"PicketTest/1.0"; sid:205;)
alert http any any -> any any (msg:"header"; http.header; content:"X-Custom: foo-bar|0d 0a|"; sid:206;)
alert http any any -> any any (msg:"cookie not in header"; http.header; content:"session=abc123"; sid:207;)
alert http any any -> any any (msg:"cookie"; http.cookie; content:"session=abc123"; sid:208;)
alert http any any -> any any (msg:"stat code"; http.stat_code; content:"202"; sid:209;)
alert http any any -> any any (msg:"file.data"; file.data; content:"plain-secret"; sid:210;)
alert http any any -> any any (msg:"response body"; http.response_body; content:"plain-secret"; sid:211;)
alert http any any -> any any (msg:"ipv6"; http.uri; content:"/ipv6-path"; sid:213;)
alert http any any -> any any (msg:"pct norm"; http.uri; content:"/percent-enc"; sid:220;)
alert http any any -> any any (msg:"pct raw no"; http.uri.raw; content:"/percent-enc"; sid:221;)
alert http any any -> any any (msg:"pct raw"; http.uri.raw; content:"/%70ercent-enc"; sid:222;)
alert http any any -> any any (msg:"u norm"; http.uri; content:"/iis-u-enc"; sid:223;)
alert http any any -> any any (msg:"u raw"; http.uri.raw; content:"/%u0069is-u-enc"; sid:224;)
alert http any any -> any any (msg:"dotdot norm"; http.uri; content:"/dotdot/x"; startswith; sid:225;)
alert http any any -> any any (msg:"dotdot raw"; http.uri.raw; content:"/a/b/../../dotdot/./x"; sid:226;)
alert http any any -> any any (msg:"dotdot norm no"; http.uri; content:"/../"; sid:227;)
alert http any any -> any any (msg:"double slash"; http.uri; content:"/double/slash"; sid:228;)
alert http any any -> any any (msg:"double slash raw"; http.uri.raw; content:"/double//slash"; sid:229;)
alert http any any -> any any (msg:"backslash"; http.uri; content:"/back/slash"; sid:230;)
alert http any any -> any any (msg:"backslash raw"; http.uri.raw; content:"/back|5c|slash"; sid:231;)
alert http any any -> any any (msg:"urilen 8"; http.uri; content:"/len-raw"; urilen:8; sid:232;)
alert http any any -> any any (msg:"urilen 10 norm"; http.uri; content:"/len-raw"; urilen:10; sid:233;)
alert http any any -> any any (msg:"urilen 10 raw"; http.uri; content:"/len-raw"; urilen:10,raw; sid:234;)
alert http any any -> any any (msg:"urilen range"; http.uri; content:"/len-raw"; urilen:5<>9; sid:235;)
alert http any any -> any any (msg:"query kept raw"; http.uri; content:"/qA?x=%41&y=../z"; startswith; endswith; sid:236;)
alert http any any -> any any (msg:"pipelined"; http.uri; content:"/pipe"; sid:240;)
alert http any any -> any any (msg:"pipelined bodies"; file.data; content:"body-of-pipe-"; sid:241;)
alert http any any -> any any (msg:"chunked"; file.data; content:"chunked-secret"; sid:250;)
alert tcp any any -> any any (msg:"chunked raw stream"; content:"chunked-secret"; sid:251;)
alert http any any -> any any (msg:"gzip"; file.data; content:"gzip-hidden-marker"; sid:252;)
alert http any any -> any any (msg:"deflate"; file.data; content:"deflate-hidden-marker"; sid:253;)
alert tcp any any -> any any (msg:"gzip raw"; content:"gzip-hidden-marker"; sid:254;)
alert http any any -> any any (msg:"snort uri"; content:"/snort-mod"; http_uri; sid:260;)
alert http any any -> any any (msg:"sticky uri"; http.uri; content:"/snort-mod"; sid:261;)
alert http any any -> any any (msg:"snort method+uri"; content:"POST"; http_method; content:"/snort-mod"; http_uri; sid:262;)
alert http any any -> any any (msg:"snort host"; content:"snort.example"; http_host; sid:263;)
alert http any any -> any any (msg:"snort client body"; content:"client-body"; http_client_body; sid:264;)
alert http any any -> any any (msg:"sticky client body"; http.request_body; content:"client-body"; sid:265;)
alert http any any -> any any (msg:"snort stat code"; content:"404"; http_stat_code; sid:266;)
alert http any any -> any any (msg:"snort cookie"; content:"session=abc123"; http_cookie; sid:267;)
alert http any any -> any any (msg:"snort ua"; content:"PicketTest"; http_user_agent; sid:268;)
"""


def http_pcap():
    w = pc.PcapWriter()
    at = {}
    # F1: HTTP on port 8081, every header buffer.
    c = pc.TcpConn(w, "10.1.0.1", 41001, "10.1.0.2", 8081)
    c.handshake()
    # The request in three segments, cut inside the request line and inside a header.
    req = http_request("GET", "/index.html?q=1", [
        ("Host", "WWW.Example.COM:8081"), ("User-Agent", "PicketTest/1.0"), ("Accept", "*/*"),
        ("Cookie", "session=abc123"), ("X-Custom", "foo-bar")])
    # The server acknowledges each segment: the app layer gets the request as the server
    # received it (Suricata's IDS timing), so its progress is visible.
    cnts = []
    for piece in (req[:9], req[9:49], req[49:]):
        cnts.append(c.send(piece))
        c.ack_client()
    # The request line is whole after the second segment (progress "request line": uri and
    # method are inspected then), the headers after the third.
    at["f1_line"], at["f1_req"] = cnts[1], cnts[2]
    at["f1_resp"] = c.reply(http_response(202, "Accepted", [("Content-Type", "text/html")],
                                          b"<html>plain-secret</html>"))
    c.close()
    # F2: IPv6.
    c = pc.TcpConn(w, "fd00::1", 41002, "fd00::2", 80)
    c.handshake()
    at["f2_req"] = c.send(http_request("GET", "/ipv6-path", [("Host", "v6.example")]))
    c.reply(http_response(200, "OK", body=b"v6"))
    c.close()
    # F3: URI normalisation, one request after the other on a keep-alive connection.
    c = pc.TcpConn(w, "10.1.0.1", 41003, "10.1.0.2", 80)
    c.handshake()
    for key, uri in [("pct", "/%70ercent-enc"), ("u", "/%u0069is-u-enc"),
                     ("dotdot", "/a/b/../../dotdot/./x"), ("dslash", "/double//slash"),
                     ("bslash", "/back\\slash"), ("len", "/l%65n-raw"),
                     ("query", "/q%41?x=%41&y=../z")]:
        at[key] = c.send(http_request("GET", uri, [("Host", "norm.example")]))
        c.reply(http_response(200, "OK"))
    c.close()
    # F4: three pipelined requests in one segment, three responses in one segment.
    c = pc.TcpConn(w, "10.1.0.1", 41004, "10.1.0.2", 80)
    c.handshake()
    at["pipe_req"] = c.send(b"".join(http_request("GET", "/pipe%d" % i, [("Host", "p.example")])
                                     for i in (1, 2, 3)))
    at["pipe_resp"] = c.reply(b"".join(http_response(200, "OK", body=b"body-of-pipe-%d" % i)
                                       for i in (1, 2, 3)))
    c.close()
    # F5: chunked response; the pattern straddles a chunk boundary, and the TCP segments are
    # cut inside a chunk's data.
    c = pc.TcpConn(w, "10.1.0.1", 41005, "10.1.0.2", 80)
    c.handshake()
    c.send(http_request("GET", "/chunked", [("Host", "c.example")]))
    resp = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"6\r\nchunke\r\n8\r\nd-secret\r\n3\r\n!!!\r\n0\r\n\r\n")
    cut = resp.index(b"d-se") + 4
    c.reply(resp[:cut])
    at["chunked"] = c.reply(resp[cut:])
    c.close()
    # F6: gzip and deflate (zlib-wrapped) bodies.
    c = pc.TcpConn(w, "10.1.0.1", 41006, "10.1.0.2", 80)
    c.handshake()
    c.send(http_request("GET", "/gzip", [("Host", "z.example")]))
    at["gzip"] = c.reply(http_response(200, "OK", [("Content-Encoding", "gzip")],
                                       gzip_bytes(b"<p>gzip-hidden-marker</p>" * 3)))
    c.send(http_request("GET", "/deflate", [("Host", "z.example")]))
    at["deflate"] = c.reply(http_response(200, "OK", [("Content-Encoding", "deflate")],
                                          zlib.compress(b"<p>deflate-hidden-marker</p>")))
    c.close()
    # F7: Snort-style modifiers on a POST.
    c = pc.TcpConn(w, "10.1.0.1", 41007, "10.1.0.2", 80)
    c.handshake()
    at["post"] = c.send(http_request("POST", "/snort-mod", [
        ("Host", "snort.example"), ("Content-Length", "11")], b"client-body"))
    at["post_resp"] = c.reply(http_response(404, "Not Found", body=b"nope"))
    c.close()
    return w, at


class Http(SensorCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.w, at = http_pcap()
        # Each key names the packet whose data completes what a rule needs; the alert comes
        # where Suricata's IDS timing inspects that transaction.
        cls.at = {k: pc.ids_inspected_at(cls.w, v) for k, v in at.items()}
        cls.r = run_sensor(cls.tmp, "http", cls.w, HTTP_RULES)

    def test_runs_ok(self):
        self.assert_ok(self.r)
        self.assertEqual(self.r.stat("app_layer.flow.http"), 7)

    def test_port_8081_is_http(self):
        self.assert_sid(self.r, 201, [self.at["f1_line"]])
        a = self.r.sid(201)[0]
        self.assertEqual(a["app_proto"], "http")
        self.assertEqual(a["dest_port"], 8081)
        self.assertEqual(a["direction"], "to_server")
        self.assertEqual(a["tx_id"], 0)
        # At the request line the transaction has no header fields yet.
        # "length" 0 before any response, as Suricata writes it.
        self.assertEqual(a["http"], {"url": "/index.html?q=1", "http_method": "GET",
                                     "protocol": "HTTP/1.1", "length": 0})
        # After the headers: hostname lowercased, without the port (that is http_port).
        a = self.r.sid(205)[0]
        # Inspected on the client's FIN, which acknowledged the response: as in Suricata, the
        # request's alert already carries the response's fields.
        self.assertEqual(a["http"], {"hostname": "www.example.com", "http_port": 8081,
                                     "url": "/index.html?q=1",
                                     "http_user_agent": "PicketTest/1.0", "http_method": "GET",
                                     "protocol": "HTTP/1.1", "status": 202,
                                     "http_content_type": "text/html", "length": 25})

    def test_request_buffers(self):
        req = [self.at["f1_req"]]
        self.assert_sid(self.r, 202, [self.at["f1_line"]])
        self.assert_sid(self.r, 203, req)
        self.assert_sid(self.r, 204, req)
        self.assert_sid(self.r, 205, req)
        self.assert_sid(self.r, 206, req)
        self.assert_sid(self.r, 207, [])  # the Cookie field is not part of http.header
        self.assert_sid(self.r, 208, req)

    def test_response_buffers_and_eve(self):
        resp = [self.at["f1_resp"]]
        self.assert_sid(self.r, 209, resp)
        self.assert_sid(self.r, 210, resp)
        self.assert_sid(self.r, 211, resp)
        a = self.r.sid(209)[0]
        self.assertEqual(a["direction"], "to_client")
        self.assertEqual(a["app_proto"], "http")
        self.assertEqual(a["http"]["status"], 202)
        self.assertEqual(a["http"]["url"], "/index.html?q=1")
        self.assertEqual(a["http"]["hostname"], "www.example.com")
        self.assertEqual(a["http"]["http_content_type"], "text/html")
        self.assertEqual(a["http"]["length"], len(b"<html>plain-secret</html>"))

    def test_ipv6(self):
        self.assert_sid(self.r, 213, [self.at["f2_req"]])
        a = self.r.sid(213)[0]
        self.assertEqual(a["src_ip"], "fd00:0000:0000:0000:0000:0000:0000:0001")  # as Suricata
        self.assertEqual(a["app_proto"], "http")

    def test_percent_encoding(self):
        self.assert_sid(self.r, 220, [self.at["pct"]])
        self.assert_sid(self.r, 221, [])
        self.assert_sid(self.r, 222, [self.at["pct"]])

    def test_u_encoding(self):
        self.assert_sid(self.r, 223, [self.at["u"]])
        self.assert_sid(self.r, 224, [self.at["u"]])

    def test_dot_segments(self):
        self.assert_sid(self.r, 225, [self.at["dotdot"]])
        self.assert_sid(self.r, 226, [self.at["dotdot"]])
        self.assert_sid(self.r, 227, [])

    def test_slashes(self):
        self.assert_sid(self.r, 228, [self.at["dslash"]])
        self.assert_sid(self.r, 229, [self.at["dslash"]])
        self.assert_sid(self.r, 230, [self.at["bslash"]])
        self.assert_sid(self.r, 231, [self.at["bslash"]])

    def test_urilen(self):
        self.assert_sid(self.r, 232, [self.at["len"]])
        self.assert_sid(self.r, 233, [])
        self.assert_sid(self.r, 234, [self.at["len"]])
        self.assert_sid(self.r, 235, [self.at["len"]])

    def test_query_not_normalised(self):
        self.assert_sid(self.r, 236, [self.at["query"]])

    def test_pipelined_each_once(self):
        self.assert_sid(self.r, 240, [self.at["pipe_req"]] * 3)
        alerts = sorted(self.r.sid(240), key=lambda a: a["tx_id"])
        self.assertEqual([a["tx_id"] for a in alerts], [0, 1, 2])
        self.assertEqual([a["http"]["url"] for a in alerts], ["/pipe1", "/pipe2", "/pipe3"])
        self.assert_sid(self.r, 241, [self.at["pipe_resp"]] * 3)
        self.assertEqual(sorted(a["tx_id"] for a in self.r.sid(241)), [0, 1, 2])
        self.assertEqual({a["direction"] for a in self.r.sid(241)}, {"to_client"})

    def test_chunked_body(self):
        self.assert_sid(self.r, 250, [self.at["chunked"]])
        self.assert_sid(self.r, 251, [])  # the raw stream has the chunk framing in between

    def test_compressed_bodies(self):
        self.assert_sid(self.r, 252, [self.at["gzip"]])
        self.assert_sid(self.r, 253, [self.at["deflate"]])
        self.assert_sid(self.r, 254, [])

    def test_snort_modifiers_equal_sticky_buffers(self):
        self.assert_sid(self.r, 260, [self.at["post"]])
        self.assert_sid(self.r, 261, [self.at["post"]])
        self.assertEqual(self.r.sid(260)[0]["tx_id"], self.r.sid(261)[0]["tx_id"])
        self.assert_sid(self.r, 262, [self.at["post"]])
        self.assert_sid(self.r, 263, [self.at["post"]])
        self.assert_sid(self.r, 264, [self.at["post"]])
        self.assert_sid(self.r, 265, [self.at["post"]])
        self.assert_sid(self.r, 266, [self.at["post_resp"]])
        self.assert_sid(self.r, 267, [self.at["f1_req"]])
        self.assert_sid(self.r, 268, [self.at["f1_req"]])
        a = self.r.sid(262)[0]
        self.assertEqual(a["http"]["http_method"], "POST")
        self.assertEqual(a["http"]["hostname"], "snort.example")

    def test_no_unexpected_alerts(self):
        sids = {a["alert"]["signature_id"] for a in self.r.alerts}
        self.assertEqual(sids - {201, 202, 203, 204, 205, 206, 208, 209, 210, 211, 213, 220, 222,
                                 223, 224, 225, 226, 228, 229, 230, 231, 232, 234, 235, 236, 240, 241,
                                 250, 252, 253, 260, 261, 262, 263, 264, 265, 266, 267, 268},
                         set())


# =========================================================================== 3. DNS

DNS_RULES = """
alert dns any any -> any any (msg:"www.evil"; dns.query; content:"www.evil.example"; sid:301;)
alert dns any any -> any any (msg:"dotprefix"; dns.query; dotprefix; content:".evil.example"; endswith; sid:302;)
alert dns any any -> any any (msg:"substring"; dns.query; content:"evil.example"; sid:303;)
alert dns any any -> any any (msg:"notify"; dns.opcode:4; sid:304;)
alert dns any any -> any any (msg:"opcode 4 www"; dns.opcode:4; dns.query; content:"www.evil"; sid:305;)
alert dns any any -> any any (msg:"tcp"; dns.query; content:"evil-tcp"; sid:306;)
alert dns any any -> any any (msg:"alias"; dns_query; content:"notevil"; sid:307;)
alert dns any any -> any any (msg:"opcode 0 www"; dns.opcode:0; dns.query; content:"www.evil"; sid:308;)
"""


def dns_pcap():
    w = pc.PcapWriter()
    at = {}
    at["www"] = w.udp("10.2.0.1", 33001, "10.2.0.53", 53, dns_query(0x1234, "www.evil.example"))
    w.udp("10.2.0.53", 53, "10.2.0.1", 33001, dns_response_a(0x1234, "www.evil.example",
                                                             "192.0.2.1"), to_server=False)
    at["notevil"] = w.udp("10.2.0.1", 33002, "10.2.0.53", 53,
                          dns_query(0x2222, "notevil.example"))
    at["notify"] = w.udp("10.2.0.1", 33003, "10.2.0.53", 53,
                         dns_query(0x3333, "notify.example", qtype=6, opcode=4))
    c = pc.TcpConn(w, "10.2.0.1", 33004, "10.2.0.53", 53)
    c.handshake()
    q = dns_query(0x4444, "tcp.evil-tcp.example", qtype=16)
    at["tcp"] = c.send(u16(len(q)) + q)
    # A second query on the connection, cut after one byte of the length prefix and inside
    # the name.
    q = dns_query(0x4545, "split.evil-tcp.example", qtype=16)
    at["tcp_split"] = c.send_segments(u16(len(q)) + q, [1, 15])[-1]
    c.close()
    return w, at


class Dns(SensorCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.w, at = dns_pcap()
        cls.at = {k: pc.ids_inspected_at(cls.w, v) for k, v in at.items()}  # see Http
        cls.r = run_sensor(cls.tmp, "dns", cls.w, DNS_RULES)

    def test_runs_ok(self):
        self.assert_ok(self.r)
        self.assertEqual(self.r.stat("app_layer.flow.dns_udp"), 3)
        self.assertEqual(self.r.stat("app_layer.flow.dns_tcp"), 1)
        self.assertEqual(self.r.stat("app_layer.dns.queries"), 5)
        self.assertEqual(self.r.stat("app_layer.dns.responses"), 1)

    def test_query_content(self):
        self.assert_sid(self.r, 301, [self.at["www"]])
        a = self.r.sid(301)[0]
        self.assertEqual(a["app_proto"], "dns")
        self.assertEqual(a["proto"], "UDP")
        self.assertEqual(a["direction"], "to_server")
        q = a["dns"]["query"][0]
        self.assertEqual(q["type"], "query")
        self.assertEqual(q["id"], 0x1234)
        self.assertEqual(q["rrname"], "www.evil.example")
        self.assertEqual(q["rrtype"], "A")
        self.assertEqual(q["opcode"], 0)

    def test_dotprefix_endswith(self):
        self.assert_sid(self.r, 302, [self.at["www"]])  # not notevil.example

    def test_plain_substring(self):
        self.assert_sid(self.r, 303, [self.at["www"], self.at["notevil"]])
        self.assert_sid(self.r, 307, [self.at["notevil"]])

    def test_opcode(self):
        self.assert_sid(self.r, 304, [self.at["notify"]])
        self.assert_sid(self.r, 305, [])
        self.assert_sid(self.r, 308, [self.at["www"]])
        self.assertEqual(self.r.sid(304)[0]["dns"]["query"][0]["opcode"], 4)
        self.assertEqual(self.r.sid(304)[0]["dns"]["query"][0]["rrtype"], "SOA")

    def test_dns_over_tcp(self):
        self.assert_sid(self.r, 306, [self.at["tcp"], self.at["tcp_split"]])
        a = self.r.sid(306)[0]
        self.assertEqual(a["proto"], "TCP")
        self.assertEqual(a["app_proto"], "dns")
        self.assertEqual(a["dns"]["query"][0]["rrname"], "tcp.evil-tcp.example")
        self.assertEqual(a["dns"]["query"][0]["rrtype"], "TXT")
        b = self.r.sid(306)[1]
        self.assertEqual(b["dns"]["query"][0]["rrname"], "split.evil-tcp.example")
        self.assertEqual(b["dns"]["query"][0]["id"], 0x4545)
        self.assertEqual(b["tx_id"], 1)


# =========================================================================== 4. TLS

def tls_rules(ch):
    return """
alert tls any any -> any any (msg:"sni"; tls.sni; content:"secure.picket.test"; sid:401;)
alert tls any any -> any any (msg:"ja3"; ja3.hash; content:"%s"; sid:402;)
alert tls any any -> any any (msg:"tls 1.2"; tls.version:1.2; sid:403;)
alert tls any any -> any any (msg:"subject CN"; tls.cert_subject; content:"CN=test.example"; sid:404;)
alert tls any any -> any any (msg:"subject exact"; tls.cert_subject; content:"C=US, O=Picket, CN=test.example"; startswith; endswith; sid:405;)
alert tls any any -> any any (msg:"ja3 other"; ja3.hash; content:"00000000000000000000000000000000"; sid:406;)
alert tls any any -> any any (msg:"sni other"; tls.sni; content:"other.test"; sid:407;)
alert tls any any -> any any (msg:"tls 1.3"; tls.version:1.3; sid:408;)
alert tls any any -> any any (msg:"ja3 string"; ja3.string; content:"%s"; startswith; endswith; sid:409;)
alert tls any any -> any any (msg:"split sni"; tls.sni; content:"split.picket.test"; sid:410;)
""" % (ch.ja3_hash(), ch.ja3_string())


class Tls(SensorCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ch = ClientHello("secure.picket.test")
        der = make_cert(cls.tmp)
        w = pc.PcapWriter()
        at = {}
        c = pc.TcpConn(w, "10.3.0.1", 44001, "10.3.0.2", 443)
        c.handshake()
        at["ch"] = c.send(cls.ch.bytes)
        flight = server_flight(der)
        # The server's flight in two segments, cut inside the certificate.
        half = len(flight) // 2
        c.reply(flight[:half])
        at["cert"] = c.reply(flight[half:])
        c.close()
        # A ClientHello in three segments (cut inside the record header and inside the SNI).
        c = pc.TcpConn(w, "10.3.0.1", 44002, "10.3.0.2", 443)
        c.handshake()
        hello = ClientHello("split.picket.test").bytes
        at["split"] = c.send_segments(hello, [3, hello.index(b"split.picket") + 5 - 3])[-1]
        c.close()
        cls.at = {k: pc.ids_inspected_at(w, v) for k, v in at.items()}  # see Http
        cls.r = run_sensor(cls.tmp, "tls", w, tls_rules(cls.ch))

    def test_runs_ok(self):
        self.assert_ok(self.r)
        self.assertEqual(self.r.stat("app_layer.flow.tls"), 2)
        self.assertEqual(self.r.stat("app_layer.tls.client_hellos"), 2)
        self.assertEqual(self.r.stat("app_layer.tls.server_hellos"), 1)
        self.assertEqual(self.r.stat("app_layer.tls.certificates"), 1)

    def test_sni(self):
        self.assert_sid(self.r, 401, [self.at["ch"]])
        self.assert_sid(self.r, 407, [])
        self.assert_sid(self.r, 410, [self.at["split"]])
        a = self.r.sid(401)[0]
        self.assertEqual(a["app_proto"], "tls")
        self.assertEqual(a["direction"], "to_server")
        self.assertEqual(a["tls"]["sni"], "secure.picket.test")
        self.assertEqual(a["tls"]["ja3"]["hash"], self.ch.ja3_hash())
        self.assertEqual(a["tls"]["ja3"]["string"], self.ch.ja3_string())

    def test_ja3(self):
        self.assertEqual(self.ch.ja3_string(), "771,49199-49200-158-255,0-10-11-13-35,29-23-24,0")
        # Both hellos have the same fields but the SNI, which JA3 leaves out.
        self.assert_sid(self.r, 402, [self.at["ch"], self.at["split"]])
        self.assert_sid(self.r, 409, [self.at["ch"], self.at["split"]])
        self.assert_sid(self.r, 406, [])

    def test_version(self):
        # Once per flow, at the ClientHello (the ServerHello's 1.2 does not alert again).
        self.assert_sid(self.r, 403, [self.at["ch"], self.at["split"]])
        self.assert_sid(self.r, 408, [])

    def test_cert_subject(self):
        self.assert_sid(self.r, 404, [self.at["cert"]])
        self.assert_sid(self.r, 405, [self.at["cert"]])
        a = self.r.sid(404)[0]
        self.assertEqual(a["direction"], "to_client")
        self.assertEqual(a["tls"]["subject"], "C=US, O=Picket, CN=test.example")
        self.assertEqual(a["tls"]["issuerdn"], "C=US, O=Picket, CN=test.example")
        self.assertEqual(a["tls"]["version"], "TLS 1.2")
        self.assertEqual(a["tls"]["sni"], "secure.picket.test")


# =========================================================================== 5. malformed input

MALFORMED_RULES = """
alert http any any -> any any (msg:"benign http"; http.uri; content:"/benign-after"; sid:501;)
alert dns any any -> any any (msg:"benign dns"; dns.query; content:"benign-after.example"; sid:502;)
alert tls any any -> any any (msg:"benign tls"; tls.sni; content:"benign.after.test"; sid:503;)
"""

# The kept body (4 KiB by default) is full long before the bomb guard (1 MiB of output): the
# parser stops inflating there, so the bomb is only noticed with a body limit above 1 MiB.
MALFORMED_SETS = ["app-layer.protocols.http.libhtp.default-config.response-body-limit=4mb"]


def malformed_pcap():
    w = pc.PcapWriter()
    at = {}
    # Bad chunk size.
    c = pc.TcpConn(w, "10.4.0.1", 45001, "10.4.0.2", 80)
    c.handshake()
    c.send(http_request("GET", "/badchunk", [("Host", "m.example")]))
    c.reply(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\nhello\r\n0\r\n\r\n")
    c.close()
    # One 100 KB header line, in 1400-byte segments.
    c = pc.TcpConn(w, "10.4.0.1", 45002, "10.4.0.2", 80)
    c.handshake()
    req = http_request("GET", "/longheader", [("Host", "m.example"), ("X-Long", "a" * 100000)])
    for i, pos in enumerate(range(0, len(req), 1400)):
        c.send(req[pos:pos + 1400])
        if i % 16 == 15:
            c.ack_client()  # keep the client inside the server's 64 KiB window
    c.reply(http_response(400, "Bad Request"))
    c.close()
    # Decompression bomb: 10 MB of zeros, gzip.
    c = pc.TcpConn(w, "10.4.0.1", 45003, "10.4.0.2", 80)
    c.handshake()
    c.send(http_request("GET", "/bomb", [("Host", "m.example")]))
    c.reply_segments(http_response(200, "OK", [("Content-Encoding", "gzip")],
                                   gzip_bytes(b"\0" * (10 * 1024 * 1024))))
    c.close()
    # DNS: a valid query, and a response whose answer name loops on itself.
    w.udp("10.4.0.1", 35001, "10.4.0.53", 53, dns_query(0x5151, "loop.example"))
    w.udp("10.4.0.53", 53, "10.4.0.1", 35001, dns_response_loop(0x5151, "loop.example"),
          to_server=False)
    # TLS: a ClientHello record cut short, then the connection closes.
    c = pc.TcpConn(w, "10.4.0.1", 45004, "10.4.0.2", 443)
    c.handshake()
    c.send(ClientHello("cut.example").bytes[:60])
    c.close()
    # Benign flows after all of it.
    c = pc.TcpConn(w, "10.4.0.1", 45005, "10.4.0.2", 80)
    c.handshake()
    at["http"] = c.send(http_request("GET", "/benign-after", [("Host", "m.example")]))
    c.reply(http_response(200, "OK", body=b"ok"))
    c.close()
    at["dns"] = w.udp("10.4.0.1", 35002, "10.4.0.53", 53,
                      dns_query(0x5252, "benign-after.example"))
    c = pc.TcpConn(w, "10.4.0.1", 45006, "10.4.0.2", 443)
    c.handshake()
    at["tls"] = c.send(ClientHello("benign.after.test").bytes)
    c.close()
    return w, at


class TimedOut(SensorCase):
    """A request the server acknowledged, then silence: the flow times out while the sensor
    runs. Its transaction, waiting for a client packet that never comes, is inspected when the
    flow table frees the flow (a pseudo packet: no pcap_cnt), as Suricata's flow-timeout
    pseudo packets do; so is the request whose server never answered."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        w = pc.PcapWriter()
        c = pc.TcpConn(w, "10.5.0.1", 45001, "10.5.0.2", 80)
        c.handshake()
        c.send(http_request("GET", "/index.html?acked", [("Host", "www.example.com")]))
        c.ack_client()
        c = pc.TcpConn(w, "10.5.0.1", 45002, "10.5.0.2", 80)
        c.handshake()
        c.send(http_request("GET", "/index.html?unanswered", [("Host", "www.example.com")]))
        # Filler on one UDP flow so that the flow table's timer runs (once a second of packet
        # time, between batches) before and after the jump past flow-timeouts.tcp.established
        # (600 s); one worker, whose clock is these packets'.
        for _ in range(300):
            w.udp("10.5.0.9", 40000, "10.5.0.10", 9999, b"filler")
        w.t_us += 3600 * 1000000
        for _ in range(300):
            w.udp("10.5.0.9", 40000, "10.5.0.10", 9999, b"filler")
        cls.r = run_sensor(cls.tmp, "timedout", w, HTTP_RULES, sets=["workers=1"])

    def test_timed_out_flows_are_inspected(self):
        self.assert_ok(self.r)
        self.assertEqual(self.r.stat("flow.timed_out"), 3)  # the two TCP flows, the filler
        self.assertEqual([a.get("pcap_cnt") for a in self.r.sid(201)], [None, None])
        self.assertEqual(sorted(a["http"]["url"] for a in self.r.sid(201)),
                         ["/index.html?acked", "/index.html?unanswered"])


class Malformed(SensorCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.w, at = malformed_pcap()
        cls.at = {k: pc.ids_inspected_at(cls.w, v) for k, v in at.items()}  # see Http
        cls.r = run_sensor(cls.tmp, "malformed", cls.w, MALFORMED_RULES, MALFORMED_SETS)

    def test_exit_status(self):
        self.assert_ok(self.r)
        self.assertEqual(self.r.stat("tcp.out_of_window"), 0)  # the pcap itself is sound

    def test_bad_chunk_size(self):
        self.assertEqual(self.r.stat("app_layer.http.events.invalid_chunk_size"), 1)

    def test_long_header_line(self):
        self.assertEqual(self.r.stat("app_layer.http.events.line_too_long"), 1)

    def test_decompression_bomb(self):
        self.assertEqual(self.r.stat("app_layer.http.events.decompression_bomb"), 1)

    def test_dns_compression_loop(self):
        self.assertEqual(self.r.stat("app_layer.dns.events.compression_loop"), 1)

    @known_bug("test_truncated_tls")
    def test_truncated_tls(self):
        self.assertEqual(self.r.stat("app_layer.tls.events.truncated_message"), 1)

    def test_benign_flows_still_alert(self):
        self.assert_sid(self.r, 501, [self.at["http"]])
        self.assert_sid(self.r, 502, [self.at["dns"]])
        self.assert_sid(self.r, 503, [self.at["tls"]])
        self.assertEqual(len(self.r.alerts), 3)


# =========================================================================== 6. counters

class Counters(SensorCase):
    """Two HTTP flows (IPv4 and IPv6), a DNS query/response over UDP, a TLS handshake, one TCP
    flow of no known protocol and one UDP flow of no known protocol."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        w = pc.PcapWriter()
        for client, server, port in [("10.5.0.1", "10.5.0.2", 46001),
                                     ("fd00::5:1", "fd00::5:2", 46002)]:
            c = pc.TcpConn(w, client, port, server, 80)
            c.handshake()
            c.send(http_request("GET", "/c", [("Host", "c.example")]))
            c.reply(http_response(200, "OK", body=b"ok"))
            c.close()
        w.udp("10.5.0.1", 36001, "10.5.0.53", 53, dns_query(0x6161, "count.example"))
        w.udp("10.5.0.53", 53, "10.5.0.1", 36001,
              dns_response_a(0x6161, "count.example", "192.0.2.9"), to_server=False)
        c = pc.TcpConn(w, "10.5.0.1", 46003, "10.5.0.2", 443)
        c.handshake()
        c.send(ClientHello("count.example").bytes)
        c.close()
        c = pc.TcpConn(w, "10.5.0.1", 46004, "10.5.0.2", 9999)
        c.handshake()
        c.send(b"\x00\x01\x02 not a protocol we know \xff" * 4)
        c.reply(b"\xfe\xfd nor this \x00" * 4)
        c.close()
        w.udp("10.5.0.1", 36002, "10.5.0.2", 9999, b"\xff\xfe random datagram")
        cls.r = run_sensor(cls.tmp, "counters", w, "")

    def test_counters(self):
        r = self.r
        self.assert_ok(r)
        expected = {
            "tcp.sessions": 4,
            "tcp.midstream_pickups": 0,
            "tcp.reassembly_gap": 0,
            "app_layer.flow.http": 2,
            "app_layer.flow.dns_udp": 1,
            "app_layer.flow.dns_tcp": 0,
            "app_layer.flow.tls": 1,
            "app_layer.flow.failed_tcp": 1,
            "app_layer.flow.failed_udp": 1,
            "app_layer.tx.dns_udp": 1,
            "app_layer.tx.tls": 1,
            "app_layer.http.transactions": 2,
            "flow.tcp": 4,
            "flow.udp": 2,
        }
        got = {k: r.stat(k) for k in expected}
        self.assertEqual(got, expected)


RAW_RULES = """\
alert tcp any any -> any 80 (msg:"raw req"; flow:to_server; content:"secret-req"; sid:901;)
alert tcp any 80 -> any any (msg:"raw resp"; flow:to_client; content:"secret-resp"; sid:902;)
alert tcp any any -> any 80 (msg:"raw req dsize"; dsize:>10; content:"secret-req"; sid:903;)
alert tcp any any -> any 9000 (msg:"raw other"; content:"secret-other"; sid:904;)
"""


def raw_pcap():
    """An HTTP exchange and a flow of a protocol Picket does not parse; returns the writer
    and the packets the alerts name."""
    w = pc.PcapWriter()
    at = {}
    c = pc.TcpConn(w, "10.7.0.1", 42001, "10.7.0.2", 80)
    c.handshake()
    at["req_pkt"] = c.send(b"GET /secret-req HTTP/1.1\r\nHost: a\r\n\r\n")
    c.ack_client()  # the request acknowledged: the app layer sees it end (trigger)
    at["resp_pkt"] = c.reply(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nsecret-resp")
    at["req"] = c.ack_server()  # the client's next packet: its request is inspected
    at["resp"] = c.close() - 1  # the server's FIN, its first packet after the response ended
    # Not a protocol of ours: once detection gives up on both directions (the client's
    # acknowledgement of the server's bytes), the data held goes out on the client's next
    # packet, and later data packet by packet.
    c = pc.TcpConn(w, "10.7.0.1", 42002, "10.7.0.2", 9000)
    c.handshake()
    at["other_pkt"] = c.send(b"\x01\x02secret-other\x03")
    c.reply(b"\x00\x07\x00\x00binary")
    c.ack_server()
    at["other"] = c.send(b"\x04\x05")
    at["other2"] = c.send(b"\x06secret-other")
    c.close()
    return w, at


class RawTiming(SensorCase):
    """Raw stream content with Suricata's IDS timing (stream.raw-on-ack, the default)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.w, cls.at = raw_pcap()
        cls.r = run_sensor(cls.tmp, "raw", cls.w, RAW_RULES, [WITH_STREAM_FLAG])
        cls.guess = run_sensor(cls.tmp, "raw-guess", cls.w, RAW_RULES,
                               ["detect.guess-applayer-tx=true", WITH_STREAM_FLAG])
        cls.pkt = run_sensor(cls.tmp, "raw-pkt", cls.w, RAW_RULES,
                             ["stream.raw-on-ack=false", WITH_STREAM_FLAG])

    def test_runs_ok(self):
        for r in (self.r, self.guess, self.pkt):
            self.assert_ok(r)

    def test_request_and_response_on_the_senders_packet_after_the_message_ended(self):
        self.assert_sid(self.r, 901, [self.at["req"]])
        self.assert_sid(self.r, 902, [self.at["resp"]])
        a = self.r.sid(901)[0]
        self.assertEqual(a["stream"], 1)
        self.assertNotIn("http", a)  # not a transaction's alert
        self.assertNotIn("tx_id", a)

    def test_dsize_rules_still_see_the_packet(self):
        self.assert_sid(self.r, 903, [self.at["req_pkt"]])

    def test_unparsed_protocol_goes_back_to_each_packet(self):
        self.assert_sid(self.r, 904, [self.at["other"], self.at["other2"]])

    def test_guess_applayer_tx_logs_the_single_transaction(self):
        self.assertEqual(self.guess.cnts(902), self.r.cnts(902))
        a = self.guess.sid(902)[0]
        self.assertEqual(a["tx_id"], 0)
        self.assertEqual(a["http"]["url"], "/secret-req")
        self.assertEqual(a["http"]["status"], 200)
        self.assertEqual(a["app_proto"], "http")

    def test_off_matches_each_packet(self):
        self.assert_sid(self.pkt, 901, [self.at["req_pkt"]])
        self.assert_sid(self.pkt, 902, [self.at["resp_pkt"]])
        self.assert_sid(self.pkt, 903, [self.at["req_pkt"]])
        self.assert_sid(self.pkt, 904, [self.at["other_pkt"], self.at["other2"]])


if __name__ == "__main__":
    SENSOR, argv = picket_e2e.sensor_from_args()
    picket_test.main(argv)
