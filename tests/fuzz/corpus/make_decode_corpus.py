#!/usr/bin/env python3
"""Writes the seed corpus of decode_fuzz into corpus/decode/.

Each file is one input: byte 0 selects the link type (index into LINK_TYPES, which must
match kLinkTypes in tests/fuzz/decode_fuzz.cc; bit 7 = snap-truncated), the rest is a valid
frame. Checksums are correct so the fuzzer starts from packets that decode all the way.
Run from anywhere: python3 tests/fuzz/corpus/make_decode_corpus.py
"""
import os
import struct
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "e2e"))
from pcapcraft import checksum as csum  # noqa: E402  (RFC 1071, shared with the e2e pcaps)

LINK_TYPES = [1, 113, 276, 12, 14, 101, 228, 229, 0, 108]
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "decode")

SRC4, DST4 = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
SRC6 = bytes.fromhex("20010db8000000000000000000000001")
DST6 = bytes.fromhex("20010db8000000000000000000000002")


def tcp(sport=1234, dport=80, flags=0x02, opts=b"", payload=b""):
    hlen = 20 + len(opts)
    return struct.pack("!HHIIBBHHH", sport, dport, 1000, 2000, (hlen // 4) << 4, flags,
                       65535, 0, 0) + opts + payload


def udp(sport=53, dport=5353, payload=b""):
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def icmp(t, code=0, ident=1, seq=1, payload=b""):
    return struct.pack("!BBHHH", t, code, 0, ident, seq) + payload


def fix_l4(proto, l4, pseudo):
    off = {6: 16, 17: 6}.get(proto, 2)
    l4 = bytearray(l4)
    l4[off:off + 2] = struct.pack("!H", csum(pseudo + bytes(l4)))
    return bytes(l4)


def ipv4(proto, l4, frag=0, opts=b"", ident=0x1234):
    hlen = 20 + len(opts)
    if frag & 0x3FFF == 0:
        pseudo = b"" if proto == 1 else SRC4 + DST4 + struct.pack("!BBH", 0, proto, len(l4))
        l4 = fix_l4(proto, l4, pseudo)
    hdr = bytearray(struct.pack("!BBHHHBBH4s4s", 0x40 | hlen // 4, 0, hlen + len(l4), ident,
                                frag, 64, proto, 0, SRC4, DST4) + opts)
    hdr[10:12] = struct.pack("!H", csum(bytes(hdr)))
    return bytes(hdr) + l4


def ipv6(nh, rest, l4_off=None, l4_proto=None):
    if l4_proto is not None:
        l4 = rest[l4_off:]
        pseudo = SRC6 + DST6 + struct.pack("!I3xB", len(l4), l4_proto)
        rest = rest[:l4_off] + fix_l4(l4_proto, l4, pseudo)
    return struct.pack("!IHBB16s16s", 0x60000000, len(rest), nh, 64, SRC6, DST6) + rest


def eth(ethertype, payload, tags=()):
    b = bytes(range(12))
    for tpid, vid in tags:
        b += struct.pack("!HH", tpid, vid)
    return b + struct.pack("!H", ethertype) + payload


TCP_OPTS = bytes([2, 4, 5, 0xB4, 1, 3, 3, 7, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0])
V4_TCP = ipv4(6, tcp(opts=TCP_OPTS, payload=b"GET / HTTP/1.0\r\n\r\n"))
V6_TCP = ipv6(6, tcp(payload=b"hello"), 0, 6)
EXT = lambda nh: bytes([nh, 0, 1, 4, 0, 0, 0, 0])  # noqa: E731
FRAG6 = lambda nh, off, m, i: struct.pack("!BBHI", nh, 0, off | m, i)  # noqa: E731

SEEDS = {
    "eth_ipv4_tcp_opts": (0, eth(0x0800, V4_TCP)),
    "eth_ipv4_udp_padded": (0, eth(0x0800, ipv4(17, udp(payload=b"q"))) + b"\0" * 17),
    "eth_ipv4_icmp_echo": (0, eth(0x0800, ipv4(1, icmp(8, payload=b"ping")))),
    "eth_ipv4_options": (0, eth(0x0800, ipv4(6, tcp(), opts=bytes([1, 7, 7, 4, 0, 0, 0, 0,
                                                                     148, 4, 0, 0])))),
    "eth_ipv4_frag_first": (0, eth(0x0800, ipv4(6, b"x" * 16, frag=0x2000))),
    "eth_ipv4_frag_last": (0, eth(0x0800, ipv4(6, b"y" * 8, frag=2))),
    "eth_vlan_ipv4_tcp": (0, eth(0x0800, V4_TCP, [(0x8100, 100)])),
    "eth_qinq_ipv6_tcp": (0, eth(0x86DD, V6_TCP, [(0x88A8, 200), (0x8100, 300)])),
    "eth_arp": (0, eth(0x0806, bytes.fromhex("0001080006040001000102030405" "0a000001"
                                             "000000000000" "0a000002"))),
    "eth_ipv6_exthdrs_udp": (0, eth(0x86DD, ipv6(0, EXT(60) + EXT(43) + EXT(17) + udp(payload=b"d"),
                                                 24, 17))),
    "eth_ipv6_frag": (0, eth(0x86DD, ipv6(0, EXT(44) + FRAG6(6, 0, 1, 7) + b"z" * 16))),
    "eth_ipv6_atomic_frag": (0, eth(0x86DD, ipv6(44, FRAG6(58, 0, 0, 9) + icmp(128), 8, 58))),
    "eth_ipv6_icmp_echo": (0, eth(0x86DD, ipv6(58, icmp(128, payload=b"ping6"), 0, 58))),
    "sll_ipv4_tcp": (1, bytes(14) + b"\x08\x00" + V4_TCP),
    "sll2_ipv6_tcp": (2, b"\x86\xdd" + bytes(18) + V6_TCP),
    "raw_ipv4_tcp": (3, V4_TCP),
    "raw101_ipv6_tcp": (5, V6_TCP),
    "null_ipv4_tcp": (8, struct.pack("<I", 2) + V4_TCP),
    "loop_ipv6_tcp": (9, struct.pack("!I", 30) + V6_TCP),
    "eth_ipv4_tcp_snapped": (0x80, eth(0x0800, V4_TCP)[:60]),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, (selector, frame) in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(bytes([selector]) + frame)
    print("wrote %d seeds to %s" % (len(SEEDS), OUT))


if __name__ == "__main__":
    main()
