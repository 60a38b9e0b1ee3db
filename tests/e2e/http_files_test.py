#!/usr/bin/env python3
"""End-to-end: HTTP uploads (multipart/form-data) as files in picket-sensor.

A crafted pcap (pcapcraft.py) holds a multipart POST with a form field and two files, cut into
TCP segments inside a delimiter and inside a file, then its response. The sensor runs offline
on it and the test asserts the exact alerts of file.data / file.name rules (each matches the
right file only, once per transaction) and one EVE fileinfo record per uploaded file with its
filename, size and sha256.

Usage: http_files_test.py --build BUILD_DIR   (or --sensor PATH, or $PICKET_SENSOR)
"""
import hashlib
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pcapcraft as pc  # noqa: E402
import stream_applayer_test as sat  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402
import picket_e2e  # noqa: E402

NOTES = b"harmless notes\r\nline two"
EVIL = b"MZ\x90\x00evil-payload-bytes"

BODY = (b"--XyZpicket\r\n"
        b"Content-Disposition: form-data; name=\"comment\"\r\n\r\n"
        b"just a field\r\n"
        b"--XyZpicket\r\n"
        b"Content-Disposition: form-data; name=\"f1\"; filename=\"notes.txt\"\r\n"
        b"Content-Type: text/plain\r\n\r\n" + NOTES + b"\r\n"
        b"--XyZpicket\r\n"
        b"Content-Disposition: form-data; name=\"f2\"; filename=\"C:\\\\tmp\\\\evil.exe\"\r\n"
        b"Content-Type: application/octet-stream\r\n\r\n" + EVIL + b"\r\n"
        b"--XyZpicket--\r\n")

RULES = "\n".join([
    'alert http any any -> any any (msg:"evil name"; file.name; content:"evil.exe"; '
    'sid:1;)',
    'alert http any any -> any any (msg:"evil data"; file.data; content:"evil-payload"; '
    'sid:2;)',
    'alert http any any -> any any (msg:"notes data"; file_data; content:"notes|0d 0a|line"; '
    'sid:3;)',
    # The name of one file with the data of the other: never one file.
    'alert http any any -> any any (msg:"mixed"; file.name; content:"evil.exe"; file.data; '
    'content:"harmless"; sid:4;)',
    # The raw multipart body stays http.request_body.
    'alert http any any -> any any (msg:"raw body"; http.request_body; content:"XyZpicket--"; '
    'sid:5;)',
    # to_server files are not the response body.
    'alert http any any -> any any (msg:"resp body"; http.response_body; content:"evil"; '
    'sid:6;)',
]) + "\n"


def upload_pcap():
    w = pc.PcapWriter()
    at = {}
    c = pc.TcpConn(w, "10.7.0.1", 42001, "10.7.0.2", 80)
    c.handshake()
    req = sat.http_request("POST", "/upload.php", [
        ("Host", "files.example"),
        ("Content-Type", "multipart/form-data; boundary=\"XyZpicket\""),
        ("Content-Length", str(len(BODY)))], BODY)
    # Cut inside the second delimiter and inside the evil file.
    cut1 = req.index(b"--XyZpicket\r\nContent-Disposition: form-data; name=\"f2\"") + 5
    cut2 = req.index(b"evil-payload") + 6
    for piece in (req[:cut1], req[cut1:cut2], req[cut2:]):
        at.setdefault("segs", []).append(c.send(piece))
        c.ack_client()
    at["resp"] = c.reply(sat.http_response(200, "OK", [("Content-Type", "text/plain")],
                                           b"stored"))
    c.close()
    return w, at


class HttpFiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-files-")
        w, cls.at = upload_pcap()
        cls.r = sat.run_sensor(cls.tmp, "upload", w, RULES)
        cls.fileinfo = []
        path = os.path.join(cls.r_logdir(), "eve.json")
        with open(path) as f:
            for line in f:
                ev = json.loads(line)
                if ev.get("event_type") == "fileinfo":
                    cls.fileinfo.append(ev)

    @classmethod
    def r_logdir(cls):
        for root, dirs, files in os.walk(cls.tmp):
            if "eve.json" in files:
                return root
        raise AssertionError("no eve.json")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_sensor_ran_every_rule(self):
        self.assertEqual(self.r.rc, 0, self.r.stderr)
        self.assertEqual(self.r.stat("detect.rules_failed"), 0, self.r.stderr)
        self.assertEqual(self.r.stat("detect.rules_loaded"), 6, self.r.stderr)

    def test_file_rules_alert_on_the_right_file_once(self):
        for sid in (1, 2, 3, 5):
            alerts = self.r.sid(sid)
            self.assertEqual(len(alerts), 1, "sid %d: %s" % (sid, self.r.alerts))
            a = alerts[0]
            self.assertEqual(a["app_proto"], "http")
            self.assertEqual(a["tx_id"], 0)
            self.assertEqual(a["http"]["url"], "/upload.php")
            self.assertEqual(a["http"]["http_method"], "POST")
        self.assertEqual(self.r.sid(4), [])
        self.assertEqual(self.r.sid(6), [])

    def test_one_fileinfo_per_uploaded_file(self):
        up = [ev for ev in self.fileinfo if ev["fileinfo"]["filename"] != "/upload.php"]
        self.assertEqual([ev["fileinfo"]["filename"] for ev in up],
                         ["notes.txt", "C:\\tmp\\evil.exe"], self.fileinfo)
        for ev, data in zip(up, (NOTES, EVIL)):
            fi = ev["fileinfo"]
            self.assertEqual(fi["size"], len(data))
            self.assertEqual(fi["state"], "CLOSED")
            self.assertEqual(fi["tx_id"], 0)
            self.assertEqual(ev["http"]["url"], "/upload.php")
            if "sha256" in fi:
                self.assertEqual(fi["sha256"], hashlib.sha256(data).hexdigest())
        # The rest is the response body's file.
        self.assertEqual(len(self.fileinfo), 3, self.fileinfo)


if __name__ == "__main__":
    sat.SENSOR, argv = picket_e2e.sensor_from_args()
    picket_test.main(argv)
