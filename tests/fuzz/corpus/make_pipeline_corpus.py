#!/usr/bin/env python3
"""Writes the seed corpus of pipeline_fuzz: sequences of packets in its record format
[link-type index][length, 2 bytes LE][frame]. Seeds: the decode corpus's Ethernet frames in
one sequence, a TCP handshake in both directions, and IPv4 / IPv6 UDP datagrams split into
fragments (in order, out of order, overlapping)."""
import os
import struct
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "e2e"))
from pcapcraft import checksum as csum  # noqa: E402  (RFC 1071, shared with the e2e pcaps)

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "pipeline")
ETH, RAW = 0, 1


def ipv4(src, dst, proto, payload, ident=1, frag=0):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident, frag, 64, proto, 0,
                    bytes(src), bytes(dst))
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return h + payload


def eth(l3, ethertype=0x0800):
    return b"\x00\x11\x22\x33\x44\x55" + b"\x66\x77\x88\x99\xaa\xbb" + struct.pack("!H", ethertype) + l3


def tcp(sport, dport, flags, seq=1, ack=0, payload=b""):
    return struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + payload


def rec(lt, frame):
    return bytes([lt]) + struct.pack("<H", len(frame)) + frame


def v4_frags(order, overlap=False):
    a, b = [10, 0, 0, 1], [10, 0, 0, 2]
    data = struct.pack("!HHHH", 5353, 53, 8 + 48, 0) + bytes(range(48))
    parts = [(0, data[:24], 1), (3, data[24:48], 1), (6, data[48:], 0)]
    if overlap:
        parts.append((2, b"X" * 16, 1))
    frames = [eth(ipv4(a, b, 17, p, ident=7, frag=(mf << 13) | off)) for off, p, mf in parts]
    return [frames[i] for i in order] + frames[len(order):]


def v6_frags():
    src = bytes(15) + b"\x01"
    dst = bytes(15) + b"\x02"
    data = struct.pack("!HHHH", 1000, 2000, 8 + 40, 0) + bytes(range(40))
    out = []
    for off, chunk, m in ((0, data[:24], 1), (24, data[24:], 0)):
        fh = struct.pack("!BBHI", 17, 0, off | m, 0x1234)
        l3 = struct.pack("!IHBB16s16s", 6 << 28, len(fh) + len(chunk), 44, 64, src, dst) + fh + chunk
        out.append(eth(l3, 0x86DD))
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = {}
    a, b = [192, 168, 1, 1], [192, 168, 1, 2]
    hs = [eth(ipv4(a, b, 6, tcp(40000, 80, 0x02))), eth(ipv4(b, a, 6, tcp(80, 40000, 0x12))),
          eth(ipv4(a, b, 6, tcp(40000, 80, 0x10, payload=b"GET / HTTP/1.1\r\n\r\n"))),
          eth(ipv4(a, b, 6, tcp(40000, 80, 0x11))), eth(ipv4(b, a, 6, tcp(80, 40000, 0x11)))]
    seeds["tcp_session"] = b"".join(rec(ETH, f) for f in hs)
    seeds["v4_frags_in_order"] = b"".join(rec(ETH, f) for f in v4_frags([0, 1, 2]))
    seeds["v4_frags_reversed"] = b"".join(rec(ETH, f) for f in v4_frags([2, 1, 0]))
    seeds["v4_frags_overlap"] = b"".join(rec(ETH, f) for f in v4_frags([0, 3, 1, 2], True))
    seeds["v6_frags"] = b"".join(rec(ETH, f) for f in v6_frags())
    raw = ipv4(a, b, 17, struct.pack("!HHHH", 1, 2, 12, 0) + b"abcd")
    seeds["raw_udp"] = rec(RAW, raw) * 3
    decode_dir = os.path.join(HERE, "decode")
    if os.path.isdir(decode_dir):
        seq = b""
        for name in sorted(os.listdir(decode_dir)):
            with open(os.path.join(decode_dir, name), "rb") as f:
                d = f.read()
            if d and d[0] == 0:  # Ethernet seeds of the decode corpus
                seq += rec(ETH, d[1:])
        seeds["decode_mix"] = seq
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
