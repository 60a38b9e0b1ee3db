#!/usr/bin/env python3
"""End-to-end: flow and packet variables and hostbits of issue #22 through the real pipeline
(decode, flow, stream, detect, EVE) on a pcap built here with pcapcraft.py:

- a pcre named group (?P<flow_ua>...) stores the client's User-Agent in a flow variable; the
  alert's "metadata" carries it ("flowvars"), and flowvar:ua,"curl" matches the server's reply in
  the curl flow only (the near miss: a wget flow);
- a pcre capture list ("/uid=(\\d+)/, pkt:uid") stores a packet variable, shown as "pktvars" in
  that packet's alert;
- hostbits:set,scanner,src on one flow of a host marks the host: its later web flow alerts,
  another host's does not.

    picket-sensor -r FILE.pcap -S RULES -l OUTDIR -k none

Usage: rule_vars_test.py --build BUILD_DIR   (or --sensor PATH, or $PICKET_SENSOR)
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
SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                      "data", "eve-schema", "schema.json")

HOST_A = "203.0.113.5"
HOST_B = "203.0.113.6"
SERVER = "10.0.0.2"

RULES = r"""alert tcp any any -> any 80 (msg:"ua captured"; flow:established,to_server; \
content:"User-Agent: "; pcre:"/User-Agent: (?P<flow_ua>[^\r\n]+)/"; sid:2001;)
alert tcp any 80 -> any any (msg:"curl client answered"; flow:established,to_client; \
content:"200 OK"; flowvar:ua,"curl"; sid:2002;)
alert tcp any any -> any 80 (msg:"uid seen"; flow:established,to_server; content:"uid="; \
pcre:"/uid=(\d+)/, pkt:uid"; sid:2003;)
alert tcp any any -> any 22 (msg:"scanner"; flow:established,to_server; content:"SSH-"; \
hostbits:set,scanner,src,expire 300; noalert; sid:2004;)
alert tcp any any -> any 80 (msg:"scanner on the web"; flow:established,to_server; \
content:"GET"; hostbits:isset,scanner,src; sid:2005;)
"""


def http(w, client, port, agent, query):
    c = pc.TcpConn(w, client, port, SERVER, 80)
    c.handshake()
    c.send(("GET /%s HTTP/1.1\r\nHost: example.test\r\nUser-Agent: %s\r\n\r\n"
            % (query, agent)).encode())
    c.reply(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    c.close()


def build_pcap():
    w = pc.PcapWriter()
    ssh = pc.TcpConn(w, HOST_A, 42000, SERVER, 22)
    ssh.handshake()
    ssh.send(b"SSH-2.0-scanner\r\n")
    ssh.reply(b"SSH-2.0-OpenSSH_9.2\r\n")
    ssh.close()
    http(w, HOST_A, 42001, "curl/8.1.2", "?uid=0")
    http(w, HOST_B, 42002, "Wget/1.21", "?uid=1000")
    return w


class RuleVarsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-vars-")
        pcap = os.path.join(cls.tmp, "vars.pcap")
        build_pcap().save(pcap)
        rules = os.path.join(cls.tmp, "vars.rules")
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

    def ports(self, sid):
        """The client port of each alert of sid (the port that is not the server's)."""
        return sorted(a["src_port"] if a["dest_port"] in (22, 80) else a["dest_port"]
                      for a in self.of(sid))

    def test_loads_and_runs(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        self.assertNotIn("skipped", self.proc.stderr.replace("0 skipped", ""))

    def test_flowvar_in_the_alert_metadata(self):
        by_port = {a["src_port"]: a for a in self.of(2001)}
        self.assertEqual(sorted(by_port), [42001, 42002])
        self.assertEqual(by_port[42001]["metadata"]["flowvars"], [{"ua": "curl/8.1.2"}])
        self.assertEqual(by_port[42002]["metadata"]["flowvars"], [{"ua": "Wget/1.21"}])

    def test_flowvar_matches_the_same_flow_later(self):
        self.assertEqual(self.ports(2002), [42001])
        reply = self.of(2002)[0]
        self.assertEqual(reply["direction"], "to_client")
        self.assertEqual(reply["metadata"]["flowvars"], [{"ua": "curl/8.1.2"}])
        self.assertNotIn("pktvars", reply["metadata"])  # the request's, not the reply's

    def test_pktvar_in_its_packets_alert(self):
        by_port = {a["src_port"]: a for a in self.of(2003)}
        self.assertEqual(sorted(by_port), [42001, 42002])
        self.assertEqual(by_port[42001]["metadata"]["pktvars"], [{"uid": "0"}])
        self.assertEqual(by_port[42002]["metadata"]["pktvars"], [{"uid": "1000"}])

    def test_alerts_validate_against_the_eve_schema(self):
        try:
            import jsonschema
        except ImportError:  # python3-jsonschema (Debian)
            self.skipTest("no python3-jsonschema")
        if not os.path.exists(SCHEMA):
            self.skipTest("no ../shared/data/eve-schema")
        with open(SCHEMA) as f:
            schema = json.load(f)
        validator = jsonschema.Draft7Validator(schema)
        self.assertTrue(self.alerts)
        for a in self.alerts:
            errors = ["%s: %s" % ("/".join(map(str, e.absolute_path)), e.message)
                      for e in validator.iter_errors(a)]
            self.assertEqual(errors, [], json.dumps(a))

    def test_hostbits_mark_the_host_across_flows(self):
        self.assertEqual(self.of(2004), [])  # noalert
        self.assertEqual(self.ports(2005), [42001])


if __name__ == "__main__":
    SENSOR, argv = picket_e2e.sensor_from_args()
    picket_test.main(argv)
