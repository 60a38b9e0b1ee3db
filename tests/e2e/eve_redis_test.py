#!/usr/bin/env python3
"""End-to-end: picket-sensor writes EVE to a real Redis server (eve-log filetype: redis).

The test starts Debian's redis-server on a free loopback port and runs the real sensor over
a generated pcap with Suricata's configuration layout (`outputs: - eve-log: filetype: redis`),
then reads what arrived: in list mode (rpush) the list holds exactly the records the sensor
counted as written, in order of writing, each one JSON object; with the server away the
sensor still runs to the end, says once that Redis is away, and counts the records dropped;
a second sensor run with the server back delivers again without anything else changing.

Usage: eve_redis_test.py --build BUILD_DIR
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import picket_test  # noqa: E402
import picket_e2e  # noqa: E402
from picket_e2e import poll, sensor_bin, trafficgen_bin  # noqa: E402

REDIS = shutil.which("redis-server") or "/usr/bin/redis-server"
CONFIG = """\
stats-picket-counters: yes
outputs:
  - eve-log:
      enabled: yes
      filetype: redis
      redis:
        server: 127.0.0.1
        port: {port}
        mode: rpush
        key: picket-eve
      types:
        - flow
        - http
        - dns
        - stats
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def redis_cmd(port, *args):
    """One RESP command over a socket (no redis-cli dependency); returns the parsed reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        req = "*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(a.encode()), a)
                                              for a in args)
        s.sendall(req.encode())
        f = s.makefile("rb")

        def read():  # noqa: C901
            line = f.readline().rstrip(b"\r\n")
            t, rest = line[:1], line[1:]
            if t in (b"+", b"-"):
                return rest.decode()
            if t == b":":
                return int(rest)
            if t == b"$":
                n = int(rest)
                if n < 0:
                    return None
                data = f.read(n + 2)[:-2]
                return data.decode()
            if t == b"*":
                return [read() for _ in range(int(rest))]
            raise AssertionError("unexpected reply %r" % line)
        try:
            return read()
        finally:
            f.close()


@unittest.skipUnless(os.path.exists(REDIS), "redis-server not installed")
class EveRedis(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="picket-redis-")
        self.pcap = os.path.join(self.tmp, "gen.pcap")
        r = subprocess.run([trafficgen_bin(), "-o", self.pcap, "--seed", "5", "--sessions",
                            "200"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.port = free_port()
        self.conf = os.path.join(self.tmp, "sensor.yaml")
        with open(self.conf, "w") as f:
            f.write(CONFIG.format(port=self.port))
        self.redis = None

    def tearDown(self):
        self.stop_redis()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start_redis(self):
        self.redis = subprocess.Popen(
            [REDIS, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.tmp],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        poll(lambda: self.ping(), "redis-server up", 20)

    def ping(self):
        try:
            return redis_cmd(self.port, "PING") == "PONG"
        except OSError:
            return False

    def stop_redis(self):
        if self.redis is not None:
            self.redis.terminate()
            self.redis.wait(timeout=20)
            self.redis = None

    def run_sensor(self):
        logdir = tempfile.mkdtemp(dir=self.tmp)
        r = subprocess.run([sensor_bin(), "-c", self.conf, "-r", self.pcap, "-l", logdir,
                            "-k", "none"], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def test_records_reach_a_redis_list_and_survive_redis_away(self):
        self.start_redis()
        self.run_sensor()
        items = redis_cmd(self.port, "LRANGE", "picket-eve", "0", "-1")
        self.assertGreater(len(items), 0)
        events = [json.loads(x) for x in items]
        types = [e["event_type"] for e in events]
        for t in ("flow", "http", "dns", "stats"):
            self.assertIn(t, types)
        self.assertNotIn("alert", types)  # not in types:
        stats = [e for e in events if e["event_type"] == "stats"][-1]["stats"]
        written = stats["eve"]["records"]
        for t in ("flow", "http", "dns"):
            self.assertEqual(types.count(t), written[t], t)
        # rpush: oldest first; the final stats record comes last.
        self.assertEqual(types[-1], "stats")
        first_run = len(items)

        # Redis away: the sensor finishes, says so once, drops (and counts) the records.
        self.stop_redis()
        r = self.run_sensor()
        away = [line for line in r.stderr.splitlines() if "redis" in line.lower()]
        self.assertGreaterEqual(len(away), 1, r.stderr)
        self.assertLessEqual(len(away), 2, r.stderr)  # "away" once (and nothing per record)
        # Every line went nowhere: the records (first run's count, less its final stats
        # record, which the summary is printed before) and the stats; none lost in the queues.
        m = re.search(r"eve: (\d+) records besides alerts and stats, 0 dropped \(record queues "
                      r"full\), (\d+) lines not delivered \(sink away\)", r.stdout)
        self.assertIsNotNone(m, r.stdout)
        records = sum(1 for t in types if t != "stats")
        self.assertEqual(int(m.group(1)), records)
        self.assertGreaterEqual(int(m.group(2)), records)

        # Back: the next run delivers again.
        self.start_redis()
        self.run_sensor()
        items = redis_cmd(self.port, "LRANGE", "picket-eve", "0", "-1")
        # A fresh server (no persistence): just the third run's records, as many as the first.
        self.assertEqual(len(items), first_run)


if __name__ == "__main__":
    _, argv = picket_e2e.parse_args()
    picket_test.main(argv)
