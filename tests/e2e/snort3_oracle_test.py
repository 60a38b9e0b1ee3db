#!/usr/bin/env python3
"""End-to-end: Picket against the Snort 3 oracle, Snort 3 community rules on the shared pcaps.

../shared/data/oracles/snort3-community/alerts.tsv holds what Snort 3.12.2 alerts (pcap, gid:sid,
count) with snort3-community.rules on each pcap of ../shared/data/pcaps; its README.md gives
the configuration. This test runs the real picket-sensor with the same rules and an equivalent
configuration (SNORT3_CONFIG below: Snort 3's snort_defaults.lua variables, HOME_NET and
EXTERNAL_NET any, midstream pickup as Snort 3's stream, -k none) over the same pcaps, and
prints per pcap the (gid:sid) pairs both engines alert on, those only Snort 3 or only Picket
does, and the shared pairs whose alert counts differ; then the agreement, pairs both / union
of pairs. It fails when the agreement drops below AGREEMENT_FLOOR (the figure reached when the
test was written) and prints the issue's 95% target beside it. Each difference is explained in
docs/rules.md, "Differences found with the Snort 3 oracle" (issue #20).
Skips (77) when the shared data is absent.

Usage: snort3_oracle_test.py --build BUILD_DIR
"""
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402
import picket_e2e  # noqa: E402
from picket_e2e import sensor_bin  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "data")
PCAPS = os.path.join(SHARED, "pcaps")
RULES = os.path.join(SHARED, "rules", "snort-community", "snort3-community.rules")
ORACLE = os.path.join(SHARED, "oracles", "snort3-community", "alerts.tsv")

# The agreement this test reached when written (both / union over every pcap): a lower figure
# is a regression. The target is TARGET.
AGREEMENT_FLOOR = 1.0
TARGET = 0.95

# Snort 3.12.2's snort_defaults.lua, as the oracle's README gives it (HOME_NET = EXTERNAL_NET =
# any, every *_SERVERS = HOME_NET). Picket's own defaults (Suricata's) would differ in
# HOME_NET, HTTP_PORTS, ORACLE_PORTS and FTP_PORTS, and have no SIP variables.
HTTP_PORTS = ("80 81 311 383 591 593 901 1220 1414 1741 1830 2301 2381 2809 3037 3128 3702 4343 "
              "4848 5250 6988 7000 7001 7144 7145 7510 7777 7779 8000 8008 8014 8028 8080 8085 "
              "8088 8090 8118 8123 8180 8181 8243 8280 8300 8800 8888 8899 9000 9060 9080 9090 "
              "9091 9443 9999 11371 34443 34444 41080 50002 55555").split()


def port_list(ports):
    return '"[%s]"' % ",".join(ports)


SNORT3_CONFIG = """\
vars:
  address-groups:
    HOME_NET: "any"
    EXTERNAL_NET: "any"
    HTTP_SERVERS: "$HOME_NET"
    SMTP_SERVERS: "$HOME_NET"
    SQL_SERVERS: "$HOME_NET"
    DNS_SERVERS: "$HOME_NET"
    TELNET_SERVERS: "$HOME_NET"
    SSH_SERVERS: "$HOME_NET"
    FTP_SERVERS: "$HOME_NET"
    SIP_SERVERS: "$HOME_NET"
  port-groups:
    HTTP_PORTS: {http}
    FTP_PORTS: "[21,2100,3535]"
    SIP_PORTS: "[5060,5061,5600]"
    SSH_PORTS: "22"
    ORACLE_PORTS: "1024:"
    FILE_DATA_PORTS: "[$HTTP_PORTS,110,143]"
    SHELLCODE_PORTS: "!80"
# Snort 3's stream inspector picks up sessions whose handshake it did not see.
stream:
  midstream: true
outputs:
  eve:
    enabled: yes
    filename: eve.json
    alert:
      payload: no
      payload-printable: no
      packet: no
  fast:
    enabled: no
""".format(http=port_list(HTTP_PORTS))


def read_oracle():
    """{pcap: {"gid:sid": alerts}} of alerts.tsv."""
    out = collections.defaultdict(dict)
    with open(ORACLE) as f:
        next(f)  # header
        for line in f:
            if not line.strip():
                continue
            pcap, sid, count = line.rstrip("\n").split("\t")
            out[pcap][sid] = int(count)
    return out


def picket_alerts(eve):
    """{"gid:sid": alerts} of an eve.json."""
    out = collections.Counter()
    for ev in picket_e2e.eve_events(eve, "alert"):
        out["%d:%d" % (ev["alert"].get("gid", 1), ev["alert"]["signature_id"])] += 1
    return dict(out)


def by_sid(pairs):
    return sorted(pairs, key=lambda s: tuple(int(x) for x in s.split(":")))


@unittest.skipUnless(os.path.isdir(PCAPS) and os.path.isfile(RULES) and os.path.isfile(ORACLE),
                     "shared data (pcaps, Snort 3 community rules, oracle) not present")
class Snort3Oracle(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="picket-e2e-snort3-oracle-")
        config = os.path.join(cls.tmp, "snort3.yaml")
        with open(config, "w") as f:
            f.write(SNORT3_CONFIG)
        cls.oracle = read_oracle()
        cls.pcaps = sorted(p for p in os.listdir(PCAPS) if p.endswith((".pcap", ".pcapng")))
        cls.picket = {}
        for name in cls.pcaps:
            logdir = os.path.join(cls.tmp, name)
            os.makedirs(logdir)
            args = [sensor_bin(), "-r", os.path.join(PCAPS, name), "-S", RULES, "-c", config,
                    "-l", logdir, "-k", "none", "--workers", "1"]
            r = subprocess.run(args, capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                raise AssertionError("%s: sensor failed (%d): %s"
                                     % (name, r.returncode, r.stderr[-2000:]))
            cls.picket[name] = picket_alerts(os.path.join(logdir, "eve.json"))
            shutil.rmtree(logdir, ignore_errors=True)
        cls.both = cls.union = 0
        for name in cls.pcaps:
            snort = cls.oracle.get(name, {})
            picket = cls.picket[name]
            both = set(snort) & set(picket)
            union = set(snort) | set(picket)
            cls.both += len(both)
            cls.union += len(union)
            counts = ["%s %d/%d" % (s, snort[s], picket[s]) for s in by_sid(both)
                      if snort[s] != picket[s]]
            print("%s: both %d, only Snort 3 %d, only Picket %d, agreement %s" % (
                name, len(both), len(set(snort) - set(picket)), len(set(picket) - set(snort)),
                "%d/%d" % (len(both), len(union)) if union else "-"))
            print("  both: %s" % " ".join(by_sid(both)))
            print("  only Snort 3: %s" % " ".join(
                "%s(%d)" % (s, snort[s]) for s in by_sid(set(snort) - set(picket))))
            print("  only Picket: %s" % " ".join(
                "%s(%d)" % (s, picket[s]) for s in by_sid(set(picket) - set(snort))))
            print("  counts differ (Snort 3/Picket): %s" % " ".join(counts), flush=True)
        cls.agreement = cls.both / cls.union if cls.union else 1.0
        print("agreement: %d/%d = %.4f (floor %.4f, issue target %.2f)"
              % (cls.both, cls.union, cls.agreement, AGREEMENT_FLOOR, TARGET), flush=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_every_oracle_pcap_was_run(self):
        self.assertEqual(sorted(set(self.oracle) - set(self.pcaps)), [])

    def test_agreement_at_least_floor(self):
        self.assertGreaterEqual(round(self.agreement, 4), AGREEMENT_FLOOR,
                                "agreement %d/%d fell below the floor" % (self.both, self.union))


if __name__ == "__main__":
    _, argv = picket_e2e.parse_args()
    picket_test.main(argv)
