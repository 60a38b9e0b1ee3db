#!/usr/bin/env python3
"""End-to-end: FTP and ftp-data in picket-sensor on a crafted pcap.

The pcap (pcapcraft.py) holds one FTP control session and the two data connections it
announces:

- control 10.8.0.1:40000 -> 93.184.216.34:21: greeting, USER / PASS, PASV (227, port 50000),
  RETR evil.vbs (150 / 226), PORT 10,8,0,1,157,0 (the client itself, port 40192), STOR
  upload.txt (150 / 226), PORT 192,0,2,9,4,1 (a third host: a bounce), QUIT;
- passive data 10.8.0.1:40001 -> 93.184.216.34:50000: the server sends evil.vbs;
- active data 93.184.216.34:20 -> 10.8.0.1:40192: the client sends upload.txt.

Checked: exact alert counts of rules on ftp.command, ftp.command_data, ftpbounce, file.data and
file.name on ftp-data, and packet content on an ftp-data rule (ET 2034695's shape); the EVE ftp,
ftp_data and fileinfo records; app_proto of the flows; and, when ../shared/data has ET Open,
that ET's sid 2034695 loads and alerts.

    picket-sensor -c sensor.yaml -r FILE.pcap -S RULES -l OUTDIR -k none --workers 1

One worker: offline, the workers do not run in step, and a data connection on another worker
than its control connection could be looked at before the transfer command that announces it
(live traffic leaves a round trip between the two).

Usage: ftp_applayer_test.py --build BUILD_DIR   (or --sensor PATH, or $PICKET_SENSOR)
"""
import glob
import hashlib
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
ET_OPEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                       "data", "rules", "et-open")

CLIENT = "10.8.0.1"
SERVER = "93.184.216.34"  # outside the default HOME_NET: ET's $EXTERNAL_NET

DOWNLOAD = (b'Set o = CreateObject("WScript.Shell")\r\n'
            b'o.Run "reg add HKCU\\Software\\x /d ftp://files.example/abcdefgh.exe"\r\n')
UPLOAD = b"UPLOAD-SECRET-CONTENT " * 10

RULES = "\n".join([
    'alert ftp any any -> any any (msg:"retr"; ftp.command; content:"RETR"; sid:1;)',
    'alert ftp any any -> any any (msg:"stor arg"; ftp.command_data; content:"upload.txt"; '
    'sid:2;)',
    'alert ftp-data any any -> any any (msg:"download"; file.data; content:"WScript.Shell"; '
    'sid:3;)',
    'alert ftp-data any any -> any any (msg:"upload"; file.data; content:"UPLOAD-SECRET"; '
    'file.name; content:"upload.txt"; sid:4;)',
    'alert ftp any any -> any any (msg:"bounce"; ftpbounce; sid:5;)',
    'alert ftp any any -> any 21 (msg:"pass"; flow:to_server; ftp.command; content:"PASS"; '
    'ftp.command_data; content:"secret"; bsize:6; sid:6;)',
    # ET 2034695's shape: packet content on the ftp-data flow.
    'alert ftp-data $EXTERNAL_NET any -> $HOME_NET any (msg:"vbs inbound"; '
    'flow:established,to_client; content:"CreateObject(|22|WScript.Shell|22|)"; '
    'content:"reg add"; nocase; fast_pattern; content:"ftp://"; distance:0; within:200; '
    'sid:7;)',
    'alert ftp any any -> any any (msg:"never"; ftp.command; content:"DELE"; sid:8;)',
    # file.data of the download is not the upload's file.name.
    'alert ftp-data any any -> any any (msg:"wrong name"; file.data; content:"WScript"; '
    'file.name; content:"upload.txt"; sid:9;)',
]) + "\n"


def build_pcap():
    w = pc.PcapWriter()
    c = pc.TcpConn(w, CLIENT, 40000, SERVER, 21)
    c.handshake()
    c.reply(b"220 ProFTPD Server ready\r\n")
    c.send(b"USER anonymous\r\n")
    c.reply(b"331 Password required\r\n")
    c.send(b"PASS secret\r\n")
    c.reply(b"230-Welcome\r\n230 Logged in\r\n")
    c.send(b"PASV\r\n")
    c.reply(b"227 Entering Passive Mode (93,184,216,34,195,80).\r\n")
    # The client connects to the passive port, then asks for the file.
    d = pc.TcpConn(w, CLIENT, 40001, SERVER, 50000)
    d.handshake()
    c.send(b"RETR evil.vbs\r\n")
    c.reply(b"150 Opening BINARY mode data connection\r\n")
    d.reply(DOWNLOAD)
    d.close()
    c.reply(b"226 Transfer complete\r\n")
    # Active: the server connects from port 20 to the port the client gave.
    c.send(b"PORT 10,8,0,1,157,0\r\n")
    c.reply(b"200 PORT command successful\r\n")
    c.send(b"STOR upload.txt\r\n")
    c.reply(b"150 Ok to send data\r\n")
    a = pc.TcpConn(w, SERVER, 20, CLIENT, 157 * 256)
    a.handshake()
    a.reply(UPLOAD)  # from the FTP client, the data connection's server
    a.close()
    c.reply(b"226 Transfer complete\r\n")
    c.send(b"PORT 192,0,2,9,4,1\r\n")
    c.reply(b"200 PORT command successful\r\n")
    c.send(b"QUIT\r\n")
    c.reply(b"221 Goodbye\r\n")
    c.close()
    return w


def et_rule(sid):
    """ET Open's rule sid from the shared data ("" when absent)."""
    for path in sorted(glob.glob(os.path.join(ET_OPEN, "*.rules"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("alert") and "sid:%d;" % sid in line:
                    return line
    return ""


# The EVE types the test reads, files with md5 and sha256.
CONFIG = """outputs:
  - eve-log:
      enabled: yes
      types:
        - alert
        - ftp
        - files:
            force-hash: [md5, sha256]
        - flow
        - stats
"""


def run(tmp, name, pcap, rules):
    d = os.path.join(tmp, name)
    os.makedirs(os.path.join(d, "log"))
    path = os.path.join(d, "test.rules")
    with open(path, "w") as f:
        f.write(rules)
    config = os.path.join(d, "sensor.yaml")
    with open(config, "w") as f:
        f.write(CONFIG)
    proc = subprocess.run(
        [SENSOR, "-c", config, "-r", pcap, "-S", path, "-l", os.path.join(d, "log"), "-k",
         "none", "--workers", "1", "--set", "stats-picket-counters=yes"],
        capture_output=True, text=True, timeout=120)
    events = []
    eve = os.path.join(d, "log", "eve.json")
    if os.path.exists(eve):
        with open(eve) as f:
            events = [json.loads(line) for line in f]
    return proc, events


class Ftp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-ftp-")
        cls.pcap = os.path.join(cls.tmp, "ftp.pcap")
        build_pcap().save(cls.pcap)
        cls.proc, cls.events = run(cls.tmp, "local", cls.pcap, RULES)

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
        self.assertEqual(stats["detect"]["rules_loaded"], 9, self.proc.stderr)
        self.assertEqual(stats["app_layer"]["flow"]["ftp"], 1)
        self.assertEqual(stats["app_layer"]["flow"]["ftp_data"], 2)

    def test_alert_counts(self):
        counts = {sid: len(self.alerts(sid)) for sid in range(1, 10)}
        self.assertEqual(counts, {1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1, 7: 1, 8: 0, 9: 0},
                         self.of_type("alert"))

    def test_alerts_are_on_the_right_flows(self):
        self.assertEqual(self.alerts(1)[0]["app_proto"], "ftp")
        self.assertEqual(self.alerts(5)[0]["dest_port"], 21)
        self.assertEqual(self.alerts(5)[0]["app_proto"], "ftp")
        down = self.alerts(3)[0]
        self.assertEqual(down["app_proto"], "ftp-data")
        self.assertEqual({down["src_port"], down["dest_port"]}, {40001, 50000})
        up = self.alerts(4)[0]
        self.assertEqual({up["src_port"], up["dest_port"]}, {20, 40192})
        self.assertEqual(self.alerts(7)[0]["src_port"], 50000)  # to_client: the server's

    def test_eve_ftp_records(self):
        recs = self.of_type("ftp")
        by_cmd = {r["ftp"].get("command", ""): r["ftp"] for r in recs}
        self.assertEqual(len(recs), 9, recs)  # the greeting and eight commands
        self.assertEqual(by_cmd[""], {"reply": ["ProFTPD Server ready"],
                                      "completion_code": ["220"], "reply_received": "yes",
                                      "command_truncated": False, "reply_truncated": False})
        self.assertEqual(by_cmd["PASS"]["reply"], ["Welcome", "Logged in"])
        self.assertEqual(by_cmd["PASS"]["completion_code"], ["230"])
        pasv = by_cmd["PASV"]
        self.assertEqual(pasv["dynamic_port"], 50000)
        self.assertEqual(pasv["mode"], "passive")
        self.assertEqual(pasv["completion_code"], ["227"])
        self.assertEqual(by_cmd["RETR"]["command_data"], "evil.vbs")
        self.assertEqual(by_cmd["RETR"]["completion_code"], ["150", "226"])
        ports = [r["ftp"] for r in recs if r["ftp"].get("command") == "PORT"]
        self.assertEqual([(p["dynamic_port"], p["mode"]) for p in ports],
                         [(40192, "active"), (1025, "active")])
        self.assertEqual(by_cmd["QUIT"]["completion_code"], ["221"])
        for r in recs:
            self.assertEqual(r["src_ip"], CLIENT)
            self.assertEqual(r["dest_port"], 21)
            self.assertIn("tx_id", r)

    def test_eve_ftp_data_and_fileinfo(self):
        data = sorted((r["ftp_data"]["command"], r["ftp_data"]["filename"])
                      for r in self.of_type("ftp_data"))
        self.assertEqual(data, [("RETR", "evil.vbs"), ("STOR", "upload.txt")])
        files = {f["fileinfo"]["filename"]: f for f in self.of_type("fileinfo")}
        self.assertEqual(sorted(files), ["evil.vbs", "upload.txt"])
        for name, body in (("evil.vbs", DOWNLOAD), ("upload.txt", UPLOAD)):
            f = files[name]
            self.assertEqual(f["app_proto"], "ftp-data")
            fi = f["fileinfo"]
            self.assertEqual(fi["size"], len(body))
            self.assertEqual(fi["state"], "CLOSED")
            self.assertFalse(fi["gaps"])
            self.assertEqual(fi["md5"], hashlib.md5(body).hexdigest())
            self.assertEqual(fi["sha256"], hashlib.sha256(body).hexdigest())
        # The download came from the server (src), the upload from the client.
        self.assertEqual(files["evil.vbs"]["src_ip"], SERVER)
        self.assertEqual(files["upload.txt"]["src_ip"], CLIENT)

    def test_flow_app_protos(self):
        protos = sorted((f["dest_port"], f.get("app_proto")) for f in self.of_type("flow"))
        self.assertEqual(protos, [(21, "ftp"), (40192, "ftp-data"), (50000, "ftp-data")])

    def test_et_open_ftp_data_rule(self):
        rule = et_rule(2034695)
        if not rule:
            self.skipTest("no ET Open rules in the shared data")
        proc, events = run(self.tmp, "et", self.pcap, rule)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("unsupported", proc.stderr)
        alerts = [e for e in events if e.get("event_type") == "alert"]
        self.assertEqual([a["alert"]["signature_id"] for a in alerts], [2034695])


if __name__ == "__main__":
    SENSOR, argv = picket_e2e.sensor_from_args()
    picket_test.main(argv)
