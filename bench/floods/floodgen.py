#!/usr/bin/env python3
"""Flood pcaps for the resource-limit rig: five floods, each with legitimate attack traffic
mixed in, plus the same legitimate frames alone (same timestamps) and a JSON manifest.

    floodgen.py KIND -o FLOOD.pcap [--scale ci|full] [--seed N]
        writes FLOOD.pcap, FLOOD.legit.pcap and FLOOD.json

KIND: syn | frag | tiny | http | dns | benign. Every flood is deterministic for a seed.

- syn:   SYNs from random IPv4 sources and ports to random 10.1.x.x:80, one flow each.
- frag:  IPv4 and IPv6 fragments: first fragments of datagrams that never complete, stray
         middle fragments, duplicated fragments, tiny 8-byte overlapping fragments, and whole
         datagrams whose fragments overlap with different data.
- tiny:  TCP connections (handshake) that then send 1-byte segments at random offsets past a
         hole at offset 0 that is never filled, never acknowledged.
- http:  HTTP requests with a 1,000,000-byte header line (within the 1 MiB stream
         depth), with 100,000 header fields, with a gzip bomb
         body; responses that are gzip / nested gzip / deflate bombs (hundreds of MB of zeros).
- dns:   DNS over UDP and TCP with compression pointer loops, self pointers, forward pointers,
         pointer chains longer than the jump limit, oversized labels, and unanswered queries.
- benign: the legitimate traffic only, repeated (the baseline run).

The legitimate traffic (floodlib.legit_sessions): inbound HTTP answered with a passwd file
(plain and gzip), DNS queries for *.su over UDP and TCP, and (frag flood) DNS queries cut into
16-byte IPv4 / IPv6 fragments. Session j starts at flood packet (j + 0.5) * N / sessions; its
frames go out every `gap` flood packets.
"""
import argparse
import json
import os
import random
import struct
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import floodlib as fl  # noqa: E402

T0_US = 1700000000 * 1000000

# Per kind and scale: the flood's size parameters, packet spacing (us of packet time) and
# the number of legitimate sessions.
SCALES = {
    "full": {
        "syn": dict(n=2000000, step_us=10, legit=40),
        "frag": dict(n=1000000, step_us=100, legit=40),
        "tiny": dict(conns=20000, segs=100, conc=4000, step_us=10, legit=40),
        "http": dict(conns=1200, conc=600, step_us=10, legit=40, bomb_mb=200),
        "dns": dict(udp=1000000, tcp_conns=2000, msgs=200, step_us=10, legit=40),
        "benign": dict(legit=400),
    },
    "ci": {
        "syn": dict(n=200000, step_us=10, legit=12),
        "frag": dict(n=60000, step_us=2000, legit=12),
        "tiny": dict(conns=1200, segs=60, conc=600, step_us=10, legit=12),
        "http": dict(conns=36, conc=18, step_us=10, legit=12, bomb_mb=20),
        "dns": dict(udp=100000, tcp_conns=200, msgs=50, step_us=10, legit=12),
        "benign": dict(legit=48),
    },
}


def rand_src(r):
    """A random IPv4 source in 20.0.0.0 - 99.255.255.255 (never a legitimate address)."""
    return ((20 + (r >> 24) % 80) << 24 | (r & 0xFFFFFF)).to_bytes(4, "big")


def rand_dst(r):
    return bytes((10, 1, (r >> 32) & 0xFF, (r >> 40) & 0xFF))


# ------------------------------------------------------------------------------------ floods

def syn_flood(p, rng):
    n = p["n"]
    mss = b"\x02\x04\x05\xb4"

    def gen():
        for _ in range(n):
            r = rng.getrandbits(64)
            yield fl.tcp_v4(rand_src(r), rand_dst(r), 1024 + (r >> 48) % 64000, 80,
                            rng.getrandbits(32), 0, fl.SYN, opts=mss)
    return n, n, gen()


def frag_flood(p, rng):
    n = p["n"]
    blob = bytes(range(256)) * 8
    udp_hdr = struct.pack("!HHHH", 40000, 9999, 3008, 0)  # checksum 0: none (IPv4)

    def gen():
        count = 0
        while True:
            r = rng.getrandbits(64)
            k = r % 20
            src, dst = rand_src(r >> 5), rand_dst(r >> 3)
            ident = (r >> 16) & 0xFFFF
            if k < 10:  # first fragment of a datagram that never completes
                out = [fl.frag_v4(src, dst, 17, ident, 0, True, udp_hdr + blob[:1472])]
            elif k < 13:  # a stray middle fragment
                out = [fl.frag_v4(src, dst, 17, ident, 185 + (r >> 40) % 7000, True,
                                  blob[:1480])]
            elif k < 15:  # a whole datagram whose second copy of the middle overlaps, new data
                dg = udp_hdr + blob[:2992]
                alt = bytes(255 - b for b in dg)
                out = [fl.frag_v4(src, dst, 17, ident, 0, True, dg[:1480]),
                       fl.frag_v4(src, dst, 17, ident, 125, True, alt[1000:2480]),
                       fl.frag_v4(src, dst, 17, ident, 185, True, dg[1480:2960]),
                       fl.frag_v4(src, dst, 17, ident, 370, False, dg[2960:3000])]
            elif k == 15:  # tiny overlapping 8/16-byte fragments, never complete
                out = [fl.frag_v4(src, dst, 6, ident, j, True, blob[j * 8:j * 8 + 16])
                       for j in range(1, 9)]
            elif k < 18:  # IPv6 first fragment that never completes
                s6 = b"\x20\x01\x0d\xb8\x00\x99" + src + bytes(6)
                d6 = b"\x20\x01\x0d\xb8\x00\x01" + dst + bytes(6)
                out = [fl.frag_v6(s6, d6, 17, r >> 32, 0, True,
                                  struct.pack("!HHHH", 40000, 9999, 2000, 0) + blob[:1224])]
            elif k == 18:  # IPv6 whole datagram with an overlap
                s6 = b"\x20\x01\x0d\xb8\x00\x99" + src + bytes(6)
                d6 = b"\x20\x01\x0d\xb8\x00\x01" + dst + bytes(6)
                dg = struct.pack("!HHHH", 40000, 9999, 2000, 0) + blob[:1992]
                out = [fl.frag_v6(s6, d6, 17, r >> 32, 0, True, dg[:1232]),
                       fl.frag_v6(s6, d6, 17, r >> 32, 100, True, bytes(400)),
                       fl.frag_v6(s6, d6, 17, r >> 32, 154, False, dg[1232:2000])]
            else:  # the same first fragment three times (duplicates), never complete
                f = fl.frag_v4(src, dst, 17, ident, 0, True, udp_hdr + blob[:1472])
                out = [f, f, f]
            for f in out:
                if count == n:
                    return
                count += 1
                yield f
    # Flows: only reassembled datagrams get one (k 13-14, 18): about 15% of groups.
    return n, None, gen()


class _Tcp:
    """A flood TCP connection: client/server addresses, ISNs, next offsets."""
    __slots__ = ("c", "s", "cp", "sp", "ci", "si", "co", "so", "acked")

    def __init__(self, c, s, cp, sp, ci, si):
        self.c, self.s, self.cp, self.sp, self.ci, self.si = c, s, cp, sp, ci, si
        self.co = self.so = self.acked = 0

    def handshake(self, wscale=False):
        o = b"\x02\x04\x05\xb4" + (b"\x01\x03\x03\x07" if wscale else b"")
        return [fl.tcp_v4(self.c, self.s, self.cp, self.sp, self.ci, 0, fl.SYN, opts=o),
                fl.tcp_v4(self.s, self.c, self.sp, self.cp, self.si, self.ci + 1,
                          fl.SYN | fl.ACK, opts=o),
                fl.tcp_v4(self.c, self.s, self.cp, self.sp, self.ci + 1, self.si + 1, fl.ACK)]

    def cdata(self, off, data):
        return fl.tcp_v4(self.c, self.s, self.cp, self.sp, self.ci + 1 + off,
                         self.si + 1 + self.so, fl.PSH | fl.ACK, data)

    def sdata(self, off, data):
        return fl.tcp_v4(self.s, self.c, self.sp, self.cp, self.si + 1 + off,
                         self.ci + 1 + self.co, fl.PSH | fl.ACK, data)

    def sack(self):
        return fl.tcp_v4(self.s, self.c, self.sp, self.cp, self.si + 1 + self.so,
                         self.ci + 1 + self.co, fl.ACK)

    def cack(self):
        return fl.tcp_v4(self.c, self.s, self.cp, self.sp, self.ci + 1 + self.co,
                         self.si + 1 + self.so, fl.ACK)


def _new_conn(rng, sport=80):
    r = rng.getrandbits(64)
    return _Tcp(rand_src(r), rand_dst(r), 1024 + (r >> 48) % 64000, sport, rng.getrandbits(32),
                rng.getrandbits(32))


def tiny_flood(p, rng):
    conns, segs, conc = p["conns"], p["segs"], p["conc"]
    n = conns * (3 + segs)

    def gen():
        for w0 in range(0, conns, conc):
            wave = [_new_conn(rng) for _ in range(min(conc, conns - w0))]
            for t in wave:
                yield from t.handshake()
            for _ in range(segs):
                for t in wave:
                    off = 1 + rng.getrandbits(16) % 60000  # offset 0 never comes
                    yield t.cdata(off, b"%c" % (65 + off % 26))
    return n, conns, gen()


def _stream_frames(t, data, to_server, mss=1448, ack_every=16):
    """data from one side in mss segments, the other side acknowledging every ack_every."""
    out = []
    for i, pos in enumerate(range(0, len(data), mss)):
        seg = data[pos:pos + mss]
        if to_server:
            out.append(t.cdata(t.co, seg))
            t.co += len(seg)
            if i % ack_every == ack_every - 1:
                out.append(t.sack())
        else:
            out.append(t.sdata(t.so, seg))
            t.so += len(seg)
            if i % ack_every == ack_every - 1:
                out.append(t.cack())
    out.append(t.sack() if to_server else t.cack())
    return out


def http_flood(p, rng):
    conns, conc, mb = p["conns"], p["conc"], p["bomb_mb"]
    t0 = time.time()
    gz = fl.gzip_zeros(mb)
    gz2 = fl.gzip_zeros(mb * 2, layers=2)
    defl = fl.gzip_zeros(mb, raw_deflate=True)
    print("  bombs: gzip %d MB -> %d bytes, nested gzip %d MB -> %d bytes, deflate -> %d bytes "
          "(%.1f s)" % (mb, len(gz), mb * 2, len(gz2), len(defl), time.time() - t0),
          file=sys.stderr)
    big_line = b"GET /big HTTP/1.1\r\nHost: www.example.com\r\nX-Big: " + b"A" * 1000000 + \
        b"\r\n\r\n"
    many = b"GET /many HTTP/1.1\r\nHost: www.example.com\r\n" + \
        b"".join(b"X-H%d: v\r\n" % i for i in range(100000)) + b"\r\n"
    get_bomb = b"GET /bomb HTTP/1.1\r\nHost: www.example.com\r\nAccept-Encoding: gzip\r\n\r\n"

    def response(enc, body):
        return (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: " + enc +
                b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    kinds = [
        (big_line, None),
        (many, None),
        (get_bomb, response(b"gzip", gz)),
        (get_bomb, response(b"gzip, gzip", gz2)),
        (get_bomb, response(b"deflate", defl)),
        (b"POST /upload HTTP/1.1\r\nHost: www.example.com\r\nContent-Encoding: gzip\r\n"
         b"Content-Length: %d\r\n\r\n" % len(gz) + gz, None),
    ]
    # One connection's frames are generated when its turn comes, so nothing large is kept.
    def nframes(data, mss=1448, ack_every=16):
        segs = (len(data) + mss - 1) // mss
        return segs + segs // ack_every + 1
    per_kind = [3 + nframes(req) + (nframes(resp) if resp else 0) for req, resp in kinds]
    n = sum(per_kind[i % len(kinds)] for i in range(conns))

    def conn_frames(i, t):
        req, resp = kinds[i % len(kinds)]
        yield from t.handshake()
        yield from _stream_frames(t, req, True)
        if resp:
            yield from _stream_frames(t, resp, False)

    def gen():
        # Connections run `conc` at a time, their frames interleaved round robin, so `conc`
        # parsers hold a partial head or an inflate state at once.
        for w0 in range(0, conns, conc):
            its = [conn_frames(i, _new_conn(rng)) for i in range(w0, min(conns, w0 + conc))]
            while its:
                alive = []
                for it in its:
                    f = next(it, None)
                    if f is not None:
                        yield f
                        alive.append(it)
                its = alive
    return n, conns, gen()


def _dns_bad(kind, qid, r):
    hdr = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    tail = struct.pack("!HH", 1, 1)
    if kind == 0:  # the question name is a pointer to itself
        return hdr + b"\xc0\x0c" + tail
    if kind == 1:  # a label, then a pointer back to the start of the name: a loop
        return hdr + b"\x05loopy\xc0\x0c" + tail
    if kind == 2:  # a pointer forward, past the message
        return hdr + b"\x01a\xc3\xff" + tail
    if kind == 3:  # a label length byte 0x7f (reserved label types)
        return hdr + b"\x7f" + b"x" * 127 + b"\0" + tail
    if kind == 6:  # five 63-byte labels: a name over 255 octets
        return hdr + (b"\x3f" + b"n" * 63) * 5 + b"\0" + tail
    if kind == 4:  # a response whose 100 answers chain pointers: answer k -> answer k-1
        body = bytearray(struct.pack("!HHHHHH", qid, 0x8180, 1, 100, 0, 0))
        body += b"\x05chain\x03com\0" + tail
        prev = 12
        for _ in range(100):
            here = len(body)
            body += struct.pack("!HHHIH", 0xC000 | prev, 1, 1, 60, 4) + bytes(4)
            prev = here
        return bytes(body)
    # kind 5: a valid query nobody answers
    return hdr + b"\x0aunanswered\x07example\x03net\0" + tail


def dns_flood(p, rng):
    nudp, nconn, msgs = p["udp"], p["tcp_conns"], p["msgs"]
    per_conn = 3 + msgs + msgs // 16 + 1 + 1  # handshake, messages, acks, final ack, cut one
    n = nudp + nconn * per_conn

    def gen():
        tcp_every = max(1, nudp // max(1, nconn))
        conn_i = 0
        for i in range(nudp):
            if i % 2 == 0:
                # A valid query opens each flow (protocol detection needs one), then one
                # malformed message of the same 5-tuple.
                r = rng.getrandbits(64)
                cli, srv, cport = rand_src(r), rand_dst(r), 1024 + (r >> 32) % 60000
                yield fl.udp_v4(cli, srv, cport, 53, _dns_bad(5, r >> 48, r))
                continue
            kind = (0, 1, 2, 3, 4, 6)[(r >> 8) % 6]
            msg = _dns_bad(kind, r >> 48, r)
            if kind == 4:  # responses come from the server
                yield fl.udp_v4(srv, cli, 53, cport, msg)
            else:
                yield fl.udp_v4(cli, srv, cport, 53, msg)
            if i % tcp_every == tcp_every - 1 and conn_i < nconn:
                conn_i += 1
                yield from tcp_conn()
        while conn_i < nconn:
            conn_i += 1
            yield from tcp_conn()

    def tcp_conn():
        t = _new_conn(rng, 53)
        yield from t.handshake()
        for j in range(msgs):
            # The first message is a valid query (protocol detection), then malformed ones.
            m = _dns_bad(5 if j == 0 else (0, 1, 2, 3, 6)[j % 5], j, 0)
            yield t.cdata(t.co, struct.pack("!H", len(m)) + m)
            t.co += 2 + len(m)
            if j % 16 == 15:
                yield t.sack()
        yield t.sack()
        # A message announced as 65,535 bytes of which only 1,000 arrive.
        yield t.cdata(t.co, b"\xff\xff" + bytes(1000))
        t.co += 1002
    return n, (nudp + 1) // 2 + nconn, gen()


FLOODS = {"syn": syn_flood, "frag": frag_flood, "tiny": tiny_flood, "http": http_flood,
          "dns": dns_flood}


# ------------------------------------------------------------------------------------ mixing

def write(kind, out_path, scale="full", seed=1, gap=20):
    """Writes OUT.pcap (flood + legitimate), OUT.legit.pcap (legitimate alone, same
    timestamps) and OUT.json (manifest); returns the manifest."""
    p = SCALES[scale][kind]
    rng = random.Random(seed)
    base = out_path[:-5] if out_path.endswith(".pcap") else out_path
    legit_path = base + ".legit.pcap"
    t_start = time.time()
    sessions, want = fl.legit_sessions(kind, p["legit"])
    if kind == "benign":
        out = fl.PcapOut(out_path)
        t = T0_US
        for s in sessions:
            for f in s:
                t += 1000
                out.add(t, f)
        out.close()
        man = dict(kind=kind, scale=scale, seed=seed, packets=out.count, bytes=out.bytes,
                   flood_packets=0, flood_flows=0, legit_packets=out.count,
                   legit_sessions=len(sessions), want_local=want, pcap=out_path,
                   legit_pcap=None, gen_sec=round(time.time() - t_start, 1))
        with open(base + ".json", "w") as f:
            json.dump(man, f, indent=1)
        return man
    n, flows, frames = FLOODS[kind](p, rng)
    step = p["step_us"]
    sched = []  # (flood index before which the frame goes, session, frame index)
    for j, s in enumerate(sessions):
        start = int((j + 0.5) * n / len(sessions))
        for k in range(len(s)):
            sched.append((min(n, start + k * gap), j, k))
    sched.sort()
    out = fl.PcapOut(out_path)
    lout = fl.PcapOut(legit_path)
    si = 0
    idx = 0
    for f in frames:
        ts = T0_US + idx * step
        while si < len(sched) and sched[si][0] <= idx:
            _, j, k = sched[si]
            out.add(ts, sessions[j][k])
            lout.add(ts, sessions[j][k])
            si += 1
        out.add(ts, f)
        idx += 1
    ts = T0_US + idx * step
    while si < len(sched):
        _, j, k = sched[si]
        out.add(ts, sessions[j][k])
        lout.add(ts, sessions[j][k])
        si += 1
    out.close()
    lout.close()
    if idx != n:
        raise RuntimeError("%s: generated %d flood packets, planned %d" % (kind, idx, n))
    man = dict(kind=kind, scale=scale, seed=seed, params=p, packets=out.count, bytes=out.bytes,
               flood_packets=n, flood_flows=flows, legit_packets=lout.count,
               legit_sessions=len(sessions), want_local=want, pcap=out_path,
               legit_pcap=legit_path, packet_time_sec=round(idx * step / 1e6, 3),
               gen_sec=round(time.time() - t_start, 1))
    with open(base + ".json", "w") as f:
        json.dump(man, f, indent=1)
    return man


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kind", choices=sorted(list(FLOODS) + ["benign"]))
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--scale", choices=sorted(SCALES), default="full")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    man = write(a.kind, a.output, a.scale, a.seed)
    print(json.dumps(man))


if __name__ == "__main__":
    main()
