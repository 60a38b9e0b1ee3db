#!/usr/bin/env python3
"""HTTP response evasions carrying the EICAR test file, built here from the families of the HTTP
evader corpus (noxxi's App::DubiousHTTP: chunked, compressed, clen, broken, mime,
messagerfc822, range), written from the variant descriptions in our own terms.

Each variant is one HTTP/1.1 GET and the server's (odd) answer. `variants()` lists them all;
`write_pcap(variants, path)` writes one TCP connection per variant into one pcap (client port
PORT_BASE + index, so an alert's src/dest port names its variant). Only the standard library.

A variant's `libhtp` is None when libhtp (Suricata's HTTP parser) decodes the file from it,
else the reason it does not: those are not failures of an engine that follows libhtp (a
browser may still see the file; libhtp does not).

    python3 tests/e2e/http_evasions.py --list              # family, name, description
    python3 tests/e2e/http_evasions.py --pcap out.pcap     # every variant, one pcap
    python3 tests/e2e/http_evasions.py --family chunked --pcap out.pcap
"""
import argparse
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zlib

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pcapcraft as pc  # noqa: E402

EICAR = b"X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*"
# The two rules of the corpus's cases: each must alert once per variant.
RULES = (
    'alert http any any -> any any (msg:"EICAR file data"; file_data; '
    'content:"EICAR-STANDARD-ANTIVIRUS-TEST-FILE"; sid:1;)\n'
    'alert http any any -> any any (msg:"EICAR file data X"; file_data; '
    'content:"X5O!P%@AP[4"; sid:2;)\n')
# The corpus's run settings (besides -k none).
SETS = ("app-layer.protocols.http.libhtp.default-config.response-body-decompress-layer-limit=3",
        "app-layer.protocols.http.libhtp.default-config.lzma-enabled=yes")
HOST = "evader.example.com"
PORT_BASE = 20000
# What the file's answer always says about itself.
FILE_FIELDS = (b"Content-type: application/octet-stream\r\n"
               b'Content-disposition: attachment; filename="eicar.txt"\r\n')


class Variant:
    def __init__(self, family, name, desc, response, libhtp=None, split=None):
        self.family = family
        self.name = name
        self.desc = desc
        self.response = response  # the server's bytes; the server closes after them
        self.libhtp = libhtp  # None: libhtp decodes it; else why it does not
        self.split = split  # offsets where the answer is cut into segments (None: 1400 bytes)

    @property
    def key(self):
        return "%s/%s" % (self.family, self.name)


# --------------------------------------------------------------------------- encoders

def gzip_of(data, level=-1):
    c = zlib.compressobj(level, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def raw_deflate_of(data):
    c = zlib.compressobj(-1, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def zlib_of(data):
    return zlib.compress(data)


def compress_as(kind, data):
    return {"gzip": gzip_of, "deflate": raw_deflate_of, "zlib": zlib_of}[kind](data)


def two_part(kind, data, flush):
    """data compressed in two halves with a flush of the given kind between them; "finish"
    ends the first stream and starts a second one (two members back to back)."""
    wbits = {"gzip": 31, "deflate": -15, "zlib": 15}[kind]
    half = len(data) // 2
    c = zlib.compressobj(-1, zlib.DEFLATED, wbits)
    out = c.compress(data[:half])
    if flush == "finish":
        out += c.flush()
        c = zlib.compressobj(-1, zlib.DEFLATED, wbits)
    else:
        out += c.flush({"partial": zlib.Z_PARTIAL_FLUSH, "block": zlib.Z_BLOCK,
                        "sync": zlib.Z_SYNC_FLUSH, "full": zlib.Z_FULL_FLUSH}[flush])
    return out + c.compress(data[half:]) + c.flush()


def lzma_alone_of(data):
    import lzma
    return lzma.compress(data, format=lzma.FORMAT_ALONE)


def chunks_of(data, piece=5, size_fmt="%x", ext=b"", eol=b"\r\n", final=b"0\r\n\r\n",
              last_cut=False):
    """Chunked body: `piece`-byte chunks, each size written with size_fmt (bytes around the
    size included), ext after the size, eol after size line and data. final: the last-chunk
    bytes (None: none). last_cut: the last data chunk announces 10 bytes more than it has and
    the stream ends inside it."""
    parts = [data[i:i + piece] for i in range(0, len(data), piece)]
    out = b""
    for i, p in enumerate(parts):
        if last_cut and i == len(parts) - 1:
            return out + (b"%x" % (len(p) + 10)) + ext + eol + p
        size = (size_fmt % len(p)).encode("latin-1") if isinstance(size_fmt, str) \
            else size_fmt.replace(b"%x", b"%x" % len(p)).replace(b"%X", b"%X" % len(p))
        out += size + ext + eol + p + eol
    return out + (final or b"")


def response(status=b"HTTP/1.1 200 ok", fields=b"", body=b"", end=b"\r\n"):
    """status line CRLF, the fields (each with its own line end), the head's end, the body."""
    return status + b"\r\n" + fields + end + body


def variants(family=None):
    import http_evasion_families as fam  # the families use this module's helpers
    out = fam.chunked() + fam.compressed() + fam.clen() + fam.broken() + fam.others()
    seen = set()
    for v in out:
        assert v.key not in seen, v.key
        seen.add(v.key)
        v.libhtp = fam.LIBHTP_NO_DECODE.get(v.key)
    assert not set(fam.LIBHTP_NO_DECODE) - seen, set(fam.LIBHTP_NO_DECODE) - seen
    return [v for v in out if family is None or v.family == family]


def write_pcap(vs, path):
    """One connection per variant: client port PORT_BASE + index, the GET, the answer in
    segments of at most 1400 bytes (or cut at the variant's `split` offsets, each piece
    acknowledged by the client), then both sides close."""
    w = pc.PcapWriter()
    for i, v in enumerate(vs):
        c = pc.TcpConn(w, "10.22.0.1", PORT_BASE + i, "10.22.0.2", 80)
        c.handshake()
        target = "/%s/eicar.txt/%s" % (v.family, re.sub(r"[^A-Za-z0-9._-]", "_", v.name))
        c.send(b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target.encode(), HOST.encode()))
        c.ack_client()
        if v.split:
            cuts = [0] + list(v.split) + [len(v.response)]
            for a, b in zip(cuts, cuts[1:]):
                c.reply(v.response[a:b])
                c.ack_server()  # the app layer gets each piece on its own (IDS timing)
        else:
            c.reply_segments(v.response)
        c.close()
    w.save(path)
    return w


class Outcome:
    """What the sensor made of one variant: alerts of sid 1 and 2, fileinfo filenames."""

    def __init__(self):
        self.sid1 = 0
        self.sid2 = 0
        self.files = []

    @property
    def alerted(self):
        return self.sid1 == 1 and self.sid2 == 1


def run_sensor(sensor, vs, workdir=None):
    """Runs picket-sensor once on all variants (one pcap) with the corpus's rules and settings.
    Returns (process, [Outcome per variant], path of eve.json)."""
    own = workdir is None
    d = workdir or tempfile.mkdtemp(prefix="picket-evasions-")
    try:
        pcap = os.path.join(d, "evasions.pcap")
        write_pcap(vs, pcap)
        rules = os.path.join(d, "test.rules")
        with open(rules, "w") as f:
            f.write(RULES)
        log = os.path.join(d, "log")
        os.makedirs(log, exist_ok=True)
        args = [sensor, "-r", pcap, "-S", rules, "-l", log, "-k", "none"]
        for s in SETS:
            args += ["--set", s]
        proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
        outs = [Outcome() for _ in vs]
        eve = os.path.join(log, "eve.json")
        if os.path.exists(eve):
            with open(eve) as f:
                for line in f:
                    ev = json.loads(line)
                    ports = {ev.get("src_port"), ev.get("dest_port")} - {80, None}
                    if len(ports) != 1:
                        continue
                    i = ports.pop() - PORT_BASE
                    if not 0 <= i < len(vs):
                        continue
                    if ev.get("event_type") == "alert":
                        sid = ev["alert"]["signature_id"]
                        if sid == 1:
                            outs[i].sid1 += 1
                        elif sid == 2:
                            outs[i].sid2 += 1
                    elif ev.get("event_type") == "fileinfo":
                        outs[i].files.append(ev["fileinfo"].get("filename"))
        return proc, outs, eve
    finally:
        if own:
            shutil.rmtree(d, ignore_errors=True)


def report(vs, outs, out=sys.stdout):
    """Per family: variants, how many alert, how many of those libhtp does not decode."""
    fams = {}
    for v, o in zip(vs, outs):
        f = fams.setdefault(v.family, [0, 0, 0, 0])
        f[0] += 1
        f[1] += o.alerted
        f[2] += v.libhtp is not None
        f[3] += (v.libhtp is None) != o.alerted
    print("%-14s %8s %7s %16s %10s" % ("family", "variants", "alerts", "libhtp-no-decode",
                                        "unexpected"), file=out)
    for name, (n, a, nd, bad) in fams.items():
        print("%-14s %8d %7d %16d %10d" % (name, n, a, nd, bad), file=out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--family")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--pcap")
    ap.add_argument("--sensor", help="run this picket-sensor on the variants and report")
    ap.add_argument("-v", action="store_true", help="with --sensor: list every unexpected one")
    a = ap.parse_args()
    vs = variants(a.family)
    if a.list:
        for v in vs:
            print("%-12s %-40s %s%s" % (v.family, v.name, v.desc,
                                        "" if v.libhtp is None else "  [libhtp: %s]" % v.libhtp))
    if a.pcap:
        write_pcap(vs, a.pcap)
        print("%d variants -> %s" % (len(vs), a.pcap))
    if a.sensor:
        proc, outs, _ = run_sensor(a.sensor, vs)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
        report(vs, outs)
        if a.v:
            for v, o in zip(vs, outs):
                if (v.libhtp is None) != o.alerted:
                    print("%-40s sid1=%d sid2=%d files=%s  %s" % (v.key, o.sid1, o.sid2,
                                                                 o.files, v.desc))


if __name__ == "__main__":
    main()
