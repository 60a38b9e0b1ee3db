#!/usr/bin/env python3
"""End-to-end: the SSH app layer and app-layer-event of picket-sensor on crafted pcaps.

Every pcap is built here (pcapcraft.py) and the sensor runs offline on it:

    picket-sensor -r FILE.pcap -S RULES -l OUTDIR -k none

- SSH on a non-standard port (2222), detected by its banner: ssh.proto, ssh.software,
  ssh.hassh, ssh.hassh.server.string, ssh.protoversion, ssh_proto (ET 2019876 as written);
  the banner and KEXINIT split across segments; the EVE ssh record (client and server
  proto_version, software_version, hassh {hash, string}, the hashes computed here with hashlib)
  and app_proto "ssh" on the alerts and the flow record.
- A client banner that is not one: app-layer-event:ssh.invalid_banner alerts, nothing crashes.
- HTTP: ET 2048367 (app-layer-event:http.invalid_transfer_encoding_value_in_request) alerts on
  a request whose Transfer-Encoding is not chunked, and not on a chunked one.

Usage: ssh_applayer_test.py --build BUILD_DIR   (or --sensor PATH, or $PICKET_SENSOR)
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

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pcapcraft as pc  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402
import picket_e2e  # noqa: E402

SENSOR = None


def ssh_packet(msg_type, payload):
    """One binary packet (RFC 4253 6), padded to a multiple of 8 with 4+ bytes."""
    body = 2 + len(payload)
    pad = 8 - (4 + body) % 8
    if pad < 4:
        pad += 8
    return struct.pack("!IBB", body + pad, pad, msg_type) + payload + b"\0" * pad


def kexinit(lists):
    p = b"\x42" * 16
    for item in lists:
        p += struct.pack("!I", len(item)) + item.encode()
    return ssh_packet(20, p + b"\0" + struct.pack("!I", 0))


CLIENT_LISTS = ["curve25519-sha256,ext-info-c", "ssh-ed25519", "aes128-ctr,aes256-ctr",
                "aes256-ctr", "hmac-sha2-256", "hmac-sha1", "none", "zlib", "", ""]
SERVER_LISTS = ["curve25519-sha256,kex-strict-s-v00@openssh.com", "ssh-ed25519",
                "chacha20-poly1305@openssh.com", "aes128-ctr", "umac-64-etm@openssh.com",
                "hmac-sha2-512", "none,zlib@openssh.com", "none", "", ""]


def hassh(lists, column):
    s = ";".join([lists[0], lists[2 + column], lists[4 + column], lists[6 + column]])
    return s, hashlib.md5(s.encode()).hexdigest()


CLIENT_HASSH = hassh(CLIENT_LISTS, 0)
SERVER_HASSH = hassh(SERVER_LISTS, 1)

HTTP_SERVER = "93.184.216.34"  # outside the default HOME_NET: ET's $EXTERNAL_NET

RULES = "\n".join([
    'alert ssh any any -> any any (msg:"software"; flow:established,to_server; ssh.software; '
    'content:"PuTTY"; sid:1;)',
    'alert ssh any any -> any any (msg:"hassh"; ssh.hassh; content:"%s"; sid:2;)'
    % CLIENT_HASSH[1],
    'alert ssh any any -> any any (msg:"hassh server string"; flow:to_client; '
    'ssh.hassh.server.string; content:"kex-strict-s"; sid:3;)',
    'alert ssh any 2222 -> any any (msg:"proto to client"; flow:to_client; ssh.proto; '
    'content:"2.0"; bsize:3; sid:4;)',
    'alert ssh any any -> any any (msg:"protoversion"; ssh.protoversion:2_compat; '
    'flow:to_server; sid:5;)',
    'alert ssh any any -> any any (msg:"invalid banner"; flow:established; '
    'app-layer-event:ssh.invalid_banner; sid:6;)',
    # ET 2019876 as ET ships it: ssh_proto is the protocol version buffer, so "PUTTY" in the
    # software version does not match it (Suricata 7 alike).
    'alert ssh $EXTERNAL_NET any -> $HOME_NET any (msg:"ET SCAN SSH BruteForce Tool with fake '
    'PUTTY version"; flow:established,to_server; ssh_proto; content:"PUTTY"; threshold: type '
    'limit, track by_src, count 1, seconds 30; classtype:network-scan; sid:2019876; rev:6;)',
    # ET 2048367 as ET ships it.
    'alert http $HOME_NET any -> $EXTERNAL_NET any (msg:"ET WEB_SPECIFIC_APPS Possible '
    'DoubleQlik RCE via HTTP Request Tunneling with Malformed Transfer-Encoding '
    '(CVE-2023-41265)"; flow:established,to_server; app-layer-event:'
    'http.invalid_transfer_encoding_value_in_request; http.cookie; content:"X-Qlik-Session="; '
    'fast_pattern; classtype:web-application-attack; sid:2048367; rev:1;)',
]) + "\n"


def build_pcap():
    w = pc.PcapWriter()
    at = {}
    # 1: SSH on port 2222; the server speaks first, with a line before its banner.
    c = pc.TcpConn(w, "10.7.0.1", 50001, "10.7.0.2", 2222)
    c.handshake()
    c.reply(b"Authorized use only\r\nSSH-2.0-OpenSSH_9.2p1 Debian-2\r\n")
    client = b"SSH-2.0-PuTTY_Release_0.78\r\n" + kexinit(CLIENT_LISTS)
    # The client's banner and KEXINIT in three segments: inside the banner, inside the packet.
    at["client"] = c.send_segments(client, [9, 40])[-1]
    at["server_kex"] = c.reply(kexinit(SERVER_LISTS))
    c.send(ssh_packet(21, b""))   # NEWKEYS: the rest is encrypted
    c.reply(ssh_packet(21, b""))
    c.send(b"\x00\x00\x00\x20" + b"\xaa" * 32)
    c.close()
    # 2: a client "banner" that is not one.
    c = pc.TcpConn(w, "10.7.0.3", 50002, "10.7.0.2", 22)
    c.handshake()
    c.reply(b"SSH-2.0-dropbear\r\n")
    at["bad"] = c.send(b"hello there\r\n")
    c.close()
    # 3: HTTP with a Transfer-Encoding that is not chunked (and a Qlik cookie), then a chunked
    # one on another flow.
    for port, te, body in ((50003, b"chunked, identity", b"x"),
                           (50004, b"chunked", b"1\r\nx\r\n0\r\n\r\n")):
        c = pc.TcpConn(w, "10.7.0.4", port, HTTP_SERVER, 80)
        c.handshake()
        req = (b"POST /x HTTP/1.1\r\nHost: qlik.example\r\nCookie: X-Qlik-Session=1\r\n"
               b"Transfer-Encoding: " + te + b"\r\nContent-Length: 1\r\n\r\n" + body)
        at["te%d" % port] = c.send(req)
        c.reply(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        c.close()
    return w, at


class Ssh(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-ssh-")
        w, cls.at = build_pcap()
        pcap = os.path.join(cls.tmp, "ssh.pcap")
        w.save(pcap)
        rules = os.path.join(cls.tmp, "ssh.rules")
        with open(rules, "w") as f:
            f.write(RULES)
        logdir = os.path.join(cls.tmp, "log")
        os.makedirs(logdir)
        cls.proc = subprocess.run(
            [SENSOR, "-r", pcap, "-S", rules, "-l", logdir, "-k", "none",
             "--set", "stats-picket-counters=yes"],
            capture_output=True, text=True, timeout=120)
        cls.events = []
        path = os.path.join(logdir, "eve.json")
        if os.path.exists(path):
            with open(path) as f:
                cls.events = [json.loads(line) for line in f]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def of_type(self, t):
        return [e for e in self.events if e.get("event_type") == t]

    def alerts(self, sid):
        return [a for a in self.of_type("alert") if a["alert"]["signature_id"] == sid]

    def test_runs_and_loads_every_rule(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        stats = self.of_type("stats")[-1]["stats"]
        self.assertEqual(stats["detect"]["rules_failed"], 0, self.proc.stderr)
        self.assertEqual(stats["detect"]["rules_loaded"], 8, self.proc.stderr)
        self.assertEqual(stats["app_layer"]["flow"]["ssh"], 2)
        self.assertEqual(stats["app_layer"]["flow"]["http"], 2)

    def test_ssh_rules_alert_once_each_on_the_ssh_flow(self):
        for sid in (1, 2, 3, 4, 5):
            a = self.alerts(sid)
            self.assertEqual(len(a), 1, "sid %d: %s" % (sid, a))
            self.assertEqual(a[0]["app_proto"], "ssh")
            self.assertEqual(a[0]["dest_port"] if sid in (1, 2, 5) else a[0]["src_port"], 2222)
        # The alert carries the session's ssh object, as Suricata's alert metadata.
        self.assertEqual(self.alerts(2)[0]["ssh"]["client"]["hassh"]["hash"], CLIENT_HASSH[1])

    def test_ssh_proto_is_the_version_not_the_software(self):
        self.assertEqual(self.alerts(2019876), [])

    def test_invalid_banner_event(self):
        a = self.alerts(6)
        self.assertEqual(len(a), 1, a)
        # The second flow's; the client's bad line reaches the parser on the server's ACK, and
        # the alert is logged on that packet.
        self.assertEqual({a[0]["src_port"], a[0]["dest_port"]}, {50002, 22})
        self.assertEqual(a[0]["app_proto"], "ssh")

    def test_eve_ssh_record(self):
        recs = [r for r in self.of_type("ssh") if r["dest_port"] == 2222]
        self.assertEqual(len(recs), 1, self.of_type("ssh"))
        r = recs[0]
        self.assertEqual(r["src_ip"], "10.7.0.1")
        self.assertEqual(r["tx_id"], 0)
        self.assertEqual(r["ssh"], {
            "client": {"proto_version": "2.0", "software_version": "PuTTY_Release_0.78",
                       "hassh": {"hash": CLIENT_HASSH[1], "string": CLIENT_HASSH[0]}},
            "server": {"proto_version": "2.0", "software_version": "OpenSSH_9.2p1",
                       "hassh": {"hash": SERVER_HASSH[1], "string": SERVER_HASSH[0]}},
        })
        flows = [f for f in self.of_type("flow") if f["dest_port"] == 2222]
        self.assertEqual(len(flows), 1)
        self.assertEqual(flows[0]["app_proto"], "ssh")

    def test_http_invalid_transfer_encoding(self):
        a = self.alerts(2048367)
        self.assertEqual(len(a), 1, a)
        self.assertEqual(a[0]["src_port"], 50003)
        self.assertEqual(a[0]["app_proto"], "http")


if __name__ == "__main__":
    SENSOR, argv = picket_e2e.sensor_from_args()
    picket_test.main(argv)
