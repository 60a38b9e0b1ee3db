#!/usr/bin/env python3
"""End-to-end: rule keywords of issue #22 through the real pipeline (decode, flow, stream,
detect, EVE) on pcaps built here with pcapcraft.py, each with a near miss that must not alert:

- asn1: an SMB Session Setup AndX request on port 445 shaped as the ET Open / GPL NTLMSSP rules
  expect it (NetBIOS header, |FF|SMBs, the byte_tests, no NTLMSSP), carrying a BER BIT STRING
  whose unused-bits count overflows, or a REAL in decimal form longer than 256 bytes, or an
  element longer than 2048 bytes; the near miss carries well-formed elements.
- ftpbounce: an FTP control connection whose PORT command names a third host; the near miss
  names the client itself.

The local rules are written here in the shape of ET Open's; when ../shared/data/rules/et-open
is present, ET Open's own rules for these keywords (sids 2102383 and 2103441) run too.

    picket-sensor -r FILE.pcap -S RULES -l OUTDIR -k none

Usage: rule_keywords_test.py --build BUILD_DIR   (or --sensor PATH, or $PICKET_SENSOR)
"""
import glob
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
ET_OPEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                       "data", "rules", "et-open")

ATTACKER = "203.0.113.5"  # outside the default $HOME_NET
SERVER = "10.0.0.2"
THIRD = "198.51.100.7"

LOCAL_RULES = """\
alert tcp $EXTERNAL_NET any -> $HOME_NET 445 (msg:"asn1 overflow after SMB session setup"; \
flow:established,to_server; content:"|00|"; depth:1; content:"|FF|SMBs"; within:5; distance:3; \
byte_test:1,!&,128,6,relative; byte_test:4,&,2147483648,48,relative,little; \
content:!"NTLMSSP"; within:7; distance:54; \
asn1:double_overflow, bitstring_overflow, relative_offset 54, oversize_length 2048; sid:1001;)
alert tcp any any -> any 445 (msg:"asn1 oversize only"; flow:established,to_server; \
content:"|FF|SMBs"; asn1:oversize_length 2048, relative_offset 54; sid:1002;)
alert tcp $EXTERNAL_NET any -> $HOME_NET 21 (msg:"FTP PORT bounce"; flow:to_server,established; \
content:"PORT"; nocase; ftpbounce; pcre:"/^PORT/smi"; sid:1003;)
"""

ET_SIDS = (2102383, 2103441)


def smb_session_setup(asn1):
    """A NetBIOS session message holding an SMB Session Setup AndX request whose security blob
    starts 54 bytes after |FF|SMBs (where the ET rules point asn1), with the bits the rules'
    byte_tests want: flags2 byte 6 after the command without 0x80 (not Unicode), the 32-bit
    word 48 bytes after it with 0x80000000 (extended security)."""
    body = bytearray(54)
    body[6] = 0x00
    body[48:52] = struct.pack("<I", 0x80000000)
    smb = b"\xffSMBs" + bytes(body) + asn1
    return b"\x00" + struct.pack("!I", len(smb))[1:] + smb


def bitstring_overflow():
    # SPNEGO-like wrapper (APPLICATION 0, SEQUENCE) around a BIT STRING: 1 byte, 255 unused bits.
    inner = b"\x03\x01\xff"
    return b"\x60" + bytes([len(inner) + 2]) + b"\x30" + bytes([len(inner)]) + inner


def double_overflow():
    return b"\x09\x82\x01\x2c" + b"\x05" * 300  # REAL, decimal form, 300 bytes


def oversize():
    return b"\x04\x82\x08\x01" + b"A" * 2049  # OCTET STRING of 2049 bytes


def well_formed():
    inner = b"\x03\x02\x07\x80" + b"\x04\x04abcd" + b"\x09\x03\x01\x31\x30"
    return b"\x60" + bytes([len(inner) + 2]) + b"\x30" + bytes([len(inner)]) + inner


class Run:
    def __init__(self, proc, logdir):
        self.rc = proc.returncode
        self.stderr = proc.stderr
        self.alerts = []
        path = os.path.join(logdir, "eve.json")
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    ev = json.loads(line)
                    if ev.get("event_type") == "alert":
                        self.alerts.append(ev)

    def ports(self, sid):
        """The client port of each alert of sid, sorted."""
        return sorted(a["src_port"] for a in self.alerts
                      if a["alert"]["signature_id"] == sid)


def run_sensor(tmp, name, writer, rules):
    d = tempfile.mkdtemp(prefix=name + "-", dir=tmp)
    pcap = os.path.join(d, name + ".pcap")
    writer.save(pcap)
    rules_path = os.path.join(d, "test.rules")
    with open(rules_path, "w") as f:
        f.write(rules)
    logdir = os.path.join(d, "log")
    os.makedirs(logdir)
    proc = subprocess.run([SENSOR, "-r", pcap, "-S", rules_path, "-l", logdir, "-k", "none"],
                          capture_output=True, text=True, timeout=120)
    return Run(proc, logdir)


def et_rules():
    """ET Open's rules of ET_SIDS, from the shared data ("" when absent)."""
    out = []
    for path in sorted(glob.glob(os.path.join(ET_OPEN, "*.rules"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("alert") and any("sid:%d;" % s in line for s in ET_SIDS):
                    out.append(line)
    return "".join(out)


# One flow per case, told apart by the client port.
ASN1_CASES = {
    40001: ("bitstring", bitstring_overflow()),
    40002: ("double", double_overflow()),
    40003: ("oversize", oversize()),
    40004: ("well-formed", well_formed()),
    # A bit string overflow, but the blob holds NTLMSSP where the rules refuse it.
    40005: ("ntlmssp", b"NTLMSSP\x00" + bitstring_overflow()),
}
FTP_CASES = {
    41001: ("bounce", "PORT %s,4,1\r\n" % THIRD.replace(".", ",")),
    41002: ("own address", "PORT %s,4,1\r\n" % ATTACKER.replace(".", ",")),
    41003: ("bounce, lower case, after other commands",
            "NOOP\r\nport %s,4,2\r\n" % THIRD.replace(".", ",")),
    41004: ("not an address", "PORT 198,51,100,256,4,1\r\n"),
}


def build_pcap():
    w = pc.PcapWriter()
    for port, (_, blob) in ASN1_CASES.items():
        c = pc.TcpConn(w, ATTACKER, port, SERVER, 445)
        c.handshake()
        data = smb_session_setup(blob)
        c.send_segments(data, [1400] * (len(data) // 1400))
        c.ack_client()
        c.close()
    for port, (_, line) in FTP_CASES.items():
        c = pc.TcpConn(w, ATTACKER, port, SERVER, 21)
        c.handshake()
        c.reply(b"220 ready\r\n")
        c.send(b"USER anonymous\r\n")
        c.reply(b"331 password\r\n")
        c.send(line.encode())
        c.reply(b"200 PORT command successful\r\n")
        c.close()
    return w


class RuleKeywordsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-keywords-")
        w = build_pcap()
        cls.local = run_sensor(cls.tmp, "local", w, LOCAL_RULES)
        cls.et_text = et_rules()
        cls.et = run_sensor(cls.tmp, "et", w, cls.et_text) if cls.et_text else None

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_runs_ok(self):
        self.assertEqual(self.local.rc, 0, self.local.stderr)

    def test_asn1_alerts_on_the_overflows_only(self):
        self.assertEqual(self.local.ports(1001), [40001, 40002, 40003])
        self.assertEqual(self.local.ports(1002), [40003])

    def test_ftpbounce_alerts_on_a_third_host_only(self):
        self.assertEqual(self.local.ports(1003), [41001, 41003])

    def test_et_open_rules(self):
        if self.et is None:
            self.skipTest("no ET Open rules in the shared data")
        self.assertEqual(self.et.rc, 0, self.et.stderr)
        self.assertEqual(self.et_text.count("\n"), 2)
        self.assertNotIn("unsupported keyword", self.et.stderr)
        self.assertEqual(self.et.ports(2102383), [40001, 40002, 40003])
        self.assertEqual(self.et.ports(2103441), [41001, 41003])


if __name__ == "__main__":
    SENSOR, argv = picket_e2e.sensor_from_args()
    picket_test.main(argv)
