#!/usr/bin/env python3
"""End-to-end: one-sided captures and midstream pickup (issue #22), HTTP and raw stream rules
alike, on pcaps built here with pcapcraft.py, for every combination of stream.async-oneside
and stream.midstream, as Suricata 7's TCP state machine (stream-tcp.c) treats them:

- client side only (a one-way tap): the client's SYN, its ACK of a SYN/ACK the tap never saw,
  two HTTP requests. With async-oneside the ACK establishes the session and every rule alerts
  at the request's own packet (pcap_cnt 3 and 4). Without it (midstream or not) the session
  stays in SYN_SENT: nothing is reassembled, no app layer, no flow:established; only a rule
  on the packet's own payload (sid 7) alerts, at packet 3.
- client data only, no handshake at all: nothing but sid 7 without midstream (no session is
  picked up); with midstream alone the data waits for an acknowledgement that never comes and
  every rule alerts at the flow's end (no pcap_cnt); with both, at each request.
- server side only (SYN/ACK and the response, no request seen): neither option: only sid 8 on
  the packet; async-oneside (with or without midstream) picks the session up from the SYN/ACK
  and parses the response on its own at its packet; midstream alone establishes it (the
  server's ISN is "after" the client's: Suricata compares the two) and the response waits
  for the flow's end.

    picket-sensor -r FILE.pcap -S RULES -l OUTDIR -k none [--set stream.async-oneside=yes]
                  [--set stream.midstream=yes]

Usage: oneside_test.py --build BUILD_DIR   (or --sensor PATH, or $PICKET_SENSOR)
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
CLIENT, SERVER = "10.0.0.1", "10.0.0.2"
REQ1 = b"GET /oneside-evil HTTP/1.1\r\nHost: a\r\n\r\n"
REQ2 = b"GET /second HTTP/1.1\r\nHost: a\r\n\r\n"

CLIENT_RULES = """\
alert http any any -> any any (msg:"uri"; http.uri; content:"/oneside-evil"; sid:1;)
alert tcp any any -> any 80 (msg:"raw"; flow:established,to_server; content:"oneside-evil"; sid:2;)
alert http any any -> any any (msg:"second uri"; http.uri; content:"/second"; sid:3;)
alert tcp any any -> any 80 (msg:"raw, any state"; content:"oneside-evil"; sid:7;)
"""
SERVER_RULES = """\
alert http any any -> any any (msg:"body"; file.data; content:"server-evil"; sid:4;)
alert tcp any 80 -> any any (msg:"raw"; flow:established,to_client; content:"server-evil"; sid:5;)
alert http any any -> any any (msg:"status"; http.stat_code; content:"200"; sid:6;)
alert tcp any 80 -> any any (msg:"raw, any state"; content:"server-evil"; sid:8;)
"""
ASYNC = ["--set", "stream.async-oneside=yes"]
MIDSTREAM = ["--set", "stream.midstream=yes"]


def client_only(w):
    c = pc.TcpConn(w, CLIENT, 40000, SERVER, 80)
    c._c(-1, pc.SYN, ack=False)  # the SYN
    c._c(0, pc.ACK)  # the ACK of a SYN/ACK the tap did not see
    c.send(REQ1)
    c.send(REQ2)


def client_data_only(w):
    c = pc.TcpConn(w, CLIENT, 40001, SERVER, 80)
    c.send(REQ1)
    c.send(REQ2)


def server_only(w):
    c = pc.TcpConn(w, CLIENT, 40002, SERVER, 80)
    seg = pc.tcp_segment(SERVER, CLIENT, 80, 40002, c.sisn, c.cisn + 1, pc.SYN | pc.ACK, b"",
                         c.window)
    w.ip(SERVER, CLIENT, pc.PROTO_TCP, seg, False)
    c.cnext = len(REQ2)  # the request the tap did not see, acknowledged
    c.reply(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nserver-evil!")
    c.reply(b"more")


def alerts(tmp, name, build, rules, extra):
    """(pcap_cnt or None, sid) of every alert, in file order."""
    w = pc.PcapWriter()
    build(w)
    pcap = os.path.join(tmp, name + ".pcap")
    w.save(pcap)
    rules_path = os.path.join(tmp, name + ".rules")
    with open(rules_path, "w") as f:
        f.write(rules)
    out = os.path.join(tmp, "out-%s-%d" % (name, len(os.listdir(tmp))))
    os.makedirs(out)
    r = subprocess.run([SENSOR, "-r", pcap, "-S", rules_path, "-l", out, "-k", "none"] + extra,
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError("picket-sensor failed (%d): %s" % (r.returncode, r.stderr))
    got = []
    with open(os.path.join(out, "eve.json")) as f:
        for line in f:
            ev = json.loads(line)
            if ev.get("event_type") == "alert":
                got.append((ev.get("pcap_cnt"), ev["alert"]["signature_id"]))
    return got


class OneSided(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-oneside-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check(self, name, build, rules, extra, want):
        got = alerts(self.tmp, name, build, rules, extra)
        self.assertEqual(sorted(got, key=lambda a: (a[0] or 0, a[1])), want, extra)

    def test_client_side_only_with_async_oneside_alerts_at_each_request(self):
        want = [(3, 1), (3, 2), (3, 7), (4, 3)]
        self.check("client", client_only, CLIENT_RULES, ASYNC, want)
        self.check("client", client_only, CLIENT_RULES, ASYNC + MIDSTREAM, want)

    def test_client_side_only_without_async_oneside_is_never_established(self):
        # Suricata's SYN_SENT ignores the ACK without async-oneside: only the packet's own
        # payload is matched, by the rule that needs no established flow.
        self.check("client", client_only, CLIENT_RULES, [], [(3, 7)])
        self.check("client", client_only, CLIENT_RULES, MIDSTREAM, [(3, 7)])

    def test_no_handshake_needs_midstream(self):
        self.check("mid", client_data_only, CLIENT_RULES, [], [(1, 7)])
        self.check("mid", client_data_only, CLIENT_RULES, ASYNC, [(1, 7)])
        # flow:established is not true yet on the packet that picked the session up (sid 2).
        self.check("mid", client_data_only, CLIENT_RULES, ASYNC + MIDSTREAM,
                   [(1, 1), (1, 7), (2, 3)])
        # Without async-oneside nothing acknowledges the data: all of it at the flow's end.
        self.check("mid", client_data_only, CLIENT_RULES, MIDSTREAM,
                   [(None, 1), (None, 2), (None, 3), (None, 7)])

    def test_server_side_only_is_parsed_as_a_response(self):
        want = [(2, 4), (2, 5), (2, 6), (2, 8)]
        self.check("server", server_only, SERVER_RULES, ASYNC + MIDSTREAM, want)
        # async-oneside alone picks a session up from a SYN/ACK.
        self.check("server", server_only, SERVER_RULES, ASYNC, want)

    def test_server_side_only_without_async_oneside(self):
        self.check("server", server_only, SERVER_RULES, [], [(2, 8)])
        self.check("server", server_only, SERVER_RULES, MIDSTREAM,
                   [(None, 4), (None, 5), (None, 6), (None, 8)])


if __name__ == "__main__":
    SENSOR, argv = picket_e2e.sensor_from_args()
    picket_test.main(argv)
