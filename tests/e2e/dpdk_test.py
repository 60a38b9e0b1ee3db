#!/usr/bin/env python3
"""End-to-end: picket-sensor --capture dpdk on net_pcap virtual devices (no hugepages, no PCI).

The pcap is crafted here (pcapcraft.py): a benign TCP flow, a flow whose payload matches a
drop rule (the server's reply and the close follow it), and another benign flow.

- Inline (dpdk.copy-mode ips): net_pcap0 reads IN (rx_pcap) and its copy-iface net_pcap1
  writes OUT (tx_pcap); the reverse direction is an empty pcap. OUT must hold every frame of
  IN, byte for byte and in order, except the dropped flow's frames from the drop onwards, and
  eve.json the blocked alert.
- Passive (copy-mode none): every frame of IN is read (decoder.pkts exact).

net_pcap has no end of file (it just stops delivering), so the sensor runs with
dpdk.stop-after-idle: 2 and ends by itself; a timeout guards the run. Each run uses its own
EAL --file-prefix and removes /var/run/dpdk/PREFIX afterwards. Needs root (DPDK's EAL) and a
build with DPDK; skips otherwise.

Usage: dpdk_test.py --build BUILD_DIR   (or --sensor PATH, or $PICKET_SENSOR)
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
RULES = 'drop tcp any any -> any any (msg:"dpdk e2e drop"; content:"EVIL-DPDK-PAYLOAD"; ' \
        'sid:9101; rev:1;)\n'


def craft(path):
    """Writes the pcap; returns (frames, index of the first dropped frame, dropped flow's
    frame indexes from there on)."""
    w = pc.PcapWriter()
    flows = {}

    def conn(name, cport, payload):
        before = len(w.frames)
        c = pc.TcpConn(w, "10.9.0.1", cport, "10.9.0.2", 80)
        c.handshake()
        at = c.send(payload) - 1  # pcap_cnt -> index
        c.reply(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        c.close()
        flows[name] = (list(range(before, len(w.frames))), at)

    conn("benign1", 47001, b"GET /one HTTP/1.1\r\nHost: a.example\r\n\r\n")
    conn("evil", 47002, b"GET /x HTTP/1.1\r\nHost: b.example\r\nX: EVIL-DPDK-PAYLOAD\r\n\r\n")
    conn("benign2", 47003, b"GET /two HTTP/1.1\r\nHost: c.example\r\n\r\n")
    w.save(path)
    idx, drop_at = flows["evil"]
    return [f for _, f in w.frames], drop_at, {i for i in idx if i >= drop_at}


def empty_pcap(path):
    pc.PcapWriter().save(path)


class DpdkCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("DPDK's EAL needs root")
        cls.tmp = tempfile.mkdtemp(prefix="picket-dpdk-e2e-")
        cls.inp = os.path.join(cls.tmp, "in.pcap")
        cls.frames, cls.drop_at, cls.dropped = craft(cls.inp)
        cls.empty = os.path.join(cls.tmp, "empty.pcap")
        empty_pcap(cls.empty)
        with open(os.path.join(cls.tmp, "drop.rules"), "w") as f:
            f.write(RULES)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_sensor(self, name, vdevs, interfaces, copy_mode):
        out = os.path.join(self.tmp, name)
        os.makedirs(out)
        prefix = "picket-e2e-%d-%s" % (os.getpid(), name)
        eal = ["--no-huge", "--no-pci", "-m", "1024", "--file-prefix", prefix]
        eal += ["--vdev=" + v for v in vdevs]
        cfg = os.path.join(out, "sensor.yaml")
        with open(cfg, "w") as f:
            f.write("dpdk:\n  eal-params: %s\n  interfaces: %s\n  copy-mode: %s\n"
                    "  stop-after-idle: 2\n" % (json.dumps(eal), json.dumps(interfaces),
                                                copy_mode))
        args = [SENSOR, "--capture", "dpdk", "-c", cfg, "-l", out, "-k", "none",
                "--workers", "1", "-S", os.path.join(self.tmp, "drop.rules"),
                "--set", "stats-picket-counters=yes"]
        try:
            proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
        finally:
            shutil.rmtree("/var/run/dpdk/" + prefix, ignore_errors=True)
        if "no DPDK support" in proc.stderr:
            self.skipTest("picket-sensor was built without DPDK")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        alerts, stats = [], None
        with open(os.path.join(out, "eve.json")) as f:
            for line in f:
                ev = json.loads(line)
                if ev.get("event_type") == "alert":
                    alerts.append(ev)
                elif ev.get("event_type") == "stats":
                    stats = ev["stats"]
        return out, alerts, stats

    def test_inline_forwards_all_but_the_dropped_flow(self):
        out_path = os.path.join(self.tmp, "out.pcap")
        rev_path = os.path.join(self.tmp, "rev.pcap")
        out, alerts, stats = self.run_sensor(
            "inline",
            ["net_pcap0,rx_pcap=%s,tx_pcap=%s" % (self.inp, rev_path),
             "net_pcap1,rx_pcap=%s,tx_pcap=%s" % (self.empty, out_path)],
            [{"interface": "net_pcap0", "copy-iface": "net_pcap1"}], "ips")
        expected = [f for i, f in enumerate(self.frames) if i not in self.dropped]
        got = pc.pcap_frames(out_path)
        self.assertEqual(len(got), len(expected))
        self.assertEqual(got, expected)  # byte for byte, in order
        self.assertEqual(pc.pcap_frames(rev_path), [])
        self.assertEqual(len(alerts), 1, alerts)
        a = alerts[0]
        self.assertEqual(a["alert"]["signature_id"], 9101)
        self.assertEqual(a["alert"]["action"], "blocked")
        self.assertEqual(a["src_port"], 47002)
        self.assertEqual(stats["decoder"]["pkts"], len(self.frames))
        self.assertEqual(stats["ips"]["blocked"], len(self.dropped))
        self.assertEqual(stats["ips"]["accepted"], len(self.frames) - len(self.dropped))
        self.assertEqual(stats["capture"]["inline"]["accepted"],
                         len(self.frames) - len(self.dropped))
        self.assertEqual(stats["capture"]["inline"]["dropped"], len(self.dropped))

    def test_passive_reads_every_packet(self):
        out, alerts, stats = self.run_sensor(
            "passive", ["net_pcap0,rx_pcap=%s" % self.inp], [{"interface": "net_pcap0"}],
            "none")
        self.assertEqual(stats["decoder"]["pkts"], len(self.frames))
        self.assertEqual(stats["decoder"]["bytes"], sum(len(f) for f in self.frames))
        # IDS: the drop rule only alerts.
        self.assertEqual([a["alert"]["action"] for a in alerts], ["allowed"])
        self.assertNotIn("ips", stats)


if __name__ == "__main__":
    SENSOR, argv = picket_e2e.sensor_from_args()
    picket_test.main(argv)
