#!/usr/bin/env python3
"""Writes the seed corpus of detect_fuzz (tests/fuzz/detect_fuzz.cc) into corpus/detect/.

An input is [rule bytes length, 2 bytes LE][rule bytes][events]. The rule bytes drive the
fuzzer's grammar: every choice is one byte taken modulo the size of a table, so this script
encodes a rule by the index of each choice in copies of the same tables (keep them in step
with detect_fuzz.cc; `DETECT_FUZZ_PRINT=1 detect_fuzz SEED` prints the rules a seed makes).
Each seed pairs a few rules with traffic that matches them, so fuzzing starts from alerts:
contents with modifiers, pcre, byte_* keywords, a pattern split across stream chunks, HTTP,
DNS and TLS transactions through sticky buffers and transforms, flowbits, pass rules.
"""
import hashlib
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "detect")

ACTIONS = ["alert", "alert", "alert", "alert", "drop", "reject", "pass", "alert"]
PROTOS = ["tcp", "tcp", "tcp", "udp", "ip", "http", "tcp-pkt", "tcp-stream", "dns", "tls",
          "icmp", "ipv6"]
ADDRS = ["any", "any", "any", "10.0.0.1", "10.0.0.0/24", "!10.0.0.1",
         "[10.0.0.1,192.168.1.0/24]", "$HOME_NET", "$EXTERNAL_NET", "2001:db8::1",
         "[!10.0.0.2,10.0.0.0/8]", "192.168.1.5", "[2001:db8::/64,8.8.8.8]", "!2001:db8::2"]
PORTS = ["any", "any", "any", "80", "!80", "[80,443]", "1024:", "1:1023", "53",
         "[40000:40010,8080]", "!53", "443"]
STICKY = ["pkt_data", "http.uri", "http.uri.raw", "http.method", "http.header",
          "http.request_body", "file.data", "http.user_agent", "http.host", "http.cookie",
          "dns.query", "tls.sni", "http.stat_code", "tls.cert_subject", "ja3.hash"]
TRANSFORMS = ["to_lowercase", "to_uppercase", "strip_whitespace", "compress_whitespace",
              "url_decode", "dotprefix"]
MODIFIERS = ["http_uri", "http_raw_uri", "http_method", "http_header", "http_client_body",
             "http_cookie", "http_user_agent", "http_host", "http_stat_code"]
FLOWS = ["flow:established", "flow:to_server", "flow:to_client", "flow:established,to_server",
         "flow:only_stream", "flow:no_stream", "flow:not_established", "flow:stateless",
         "flow:from_server,established"]
FLOWBITS = ["flowbits:set,a", "flowbits:isset,a", "flowbits:isnotset,a", "flowbits:toggle,b",
            "flowbits:unset,a", "flowbits:isset,b", "flowbits:set,b", "flowbits:noalert"]
HEADER_OPTS = ["ttl:64", "ttl:<100", "flags:S", "flags:AP+", "tos:0", "sameip", "urilen:>3",
               "urilen:<5,raw", "dns.opcode:0", "tls.version:1.2", "ip_proto:6", "window:>1000"]
BYTE_OPS = ["<", ">", "=", "!=", "<=", ">=", "&", "^", "!<"]
PORTS_USED = [80, 443, 53, 8080, 40000, 40001, 1234, 22]
# Option kinds (the fuzzer's option(): one byte % 20).
CONTENT, PCRE, BYTE_TEST, BYTE_JUMP, BYTE_EXTRACT, BYTE_MATH, ISDATAAT, DSIZE, BSIZE = (
    0, 4, 6, 7, 8, 9, 10, 11, 12)
STICKY_KIND, FLOW, FLOWBIT, NOALERT_OR_HEADER, THRESHOLD, HEADER = 13, 15, 16, 17, 18, 19
# Event kinds.
TCP, TCP_STREAM, STREAM_ONLY, UDP, HTTP_TX, DNS_TX, TLS_TX, ICMP = range(8)
APPS = {"unknown": 0, "http": 1, "dns": 2, "tls": 3}


def content(pattern, negated=False, nocase=False, offset=None, depth=None, distance=None,
            within=None, fast_pattern=None, startswith=False, endswith=False, modifier=None):
    """content: the numbers are the fuzzer's (value = lo + byte % span)."""
    assert 1 <= len(pattern) <= 8
    flags = (1 if negated else 0) | (2 if startswith else 0)
    mods = ((1 if nocase else 0) | (2 if offset is not None else 0) |
            (4 if depth is not None else 0) | (8 if distance is not None else 0) |
            (16 if within is not None else 0) | (32 if fast_pattern is not None else 0) |
            (64 if (startswith or endswith) else 0) | (128 if modifier else 0))
    b = bytes([CONTENT, flags, mods, len(pattern) - 1]) + pattern
    if offset is not None:
        b += bytes([offset])
    if depth is not None:
        b += bytes([depth - 1])
    if distance is not None:
        b += bytes([distance + 4])
    if within is not None:
        b += bytes([within - 1])
    if fast_pattern is not None:
        b += bytes([{"plain": 0, "only": 1, "rawbytes": 3}[fast_pattern]])
    if modifier:
        b += bytes([MODIFIERS.index(modifier)])
    return b


def pcre(atoms, flags=0):
    """atoms: literal bytes (each a literal atom without quantifier)."""
    b = bytes([PCRE, flags, len(atoms) - 1])
    for ch in atoms:
        b += bytes([0, ch, 0])
    return b


def sticky(name, transforms=()):
    b = bytes([STICKY_KIND, STICKY.index(name), len(transforms)])
    return b + bytes(TRANSFORMS.index(t) for t in transforms)


def byte_test(nbytes, op, value, offset, flags=0, base=None):
    """value < 64; flags: 1 relative, 2 little, 4 string (then base: dec, hex or oct)."""
    assert value < 64 and bool(flags & 4) == (base is not None)
    b = bytes([BYTE_TEST, flags, nbytes - 1, BYTE_OPS.index(op), value, offset + 2])
    return b + (bytes([["dec", "hex", "oct"].index(base)]) if base else b"")


def byte_jump(nbytes, offset, flags=0):
    return bytes([BYTE_JUMP, flags, nbytes, offset + 2])


def byte_extract(nbytes, offset, flags=0):
    return bytes([BYTE_EXTRACT, flags, nbytes - 1, offset + 1])


def isdataat(n, relative=False, negated=False):
    return bytes([ISDATAAT, (1 if negated else 0) | (2 if relative else 0), n])


def dsize(cmp_index, n):
    return bytes([DSIZE, cmp_index, n])


def rule(options, action="alert", proto="tcp", src="any", sport="any", dst="any", dport="any",
         bidir=False):
    b = bytes([ACTIONS.index(action), PROTOS.index(proto), ADDRS.index(src), PORTS.index(sport),
               0 if bidir else 1, ADDRS.index(dst), PORTS.index(dport), len(options)])
    return b + b"".join(options)


def event(kind, data=b"", client=0, server=1, v6=False, to_client=False, established=True,
          in_stream=False, sport=80, cport=40000, app="unknown", arg=0x18):
    ep = (client | (server << 2) | (0x10 if v6 else 0) | (0x20 if to_client else 0) |
          (0x40 if established else 0) | (0x80 if in_stream else 0))
    pp = PORTS_USED.index(sport) | (PORTS_USED.index(cport) << 3) | (APPS[app] << 6)
    assert len(data) < 256
    return bytes([kind, ep, pp, arg, len(data)]) + data


def seed(rules, events):
    rb = bytes([len(rules) - 1]) + b"".join(rules)
    return struct.pack("<H", len(rb)) + rb + b"".join(events)


def seeds():
    get = b"GET /Admin/login.php?x=%41 HTTP/1.1\r\nHost: example.com\r\n\r\n"
    yield seed([rule([content(b"GET ", offset=0, depth=4), content(b"admin", nocase=True,
                                                                   distance=0, within=12)]),
                rule([content(b"HTTP", fast_pattern="plain"), pcre(b"Host", flags=8)],
                     dport="80"),
                rule([content(b"nothere", negated=True), dsize(4, 20)])],
               [event(TCP, get), event(TCP, b"HTTP/1.1 200 OK\r\n\r\n", to_client=True)])
    # A pattern split across two stream chunks, only_stream / no_stream, tcp-pkt.
    yield seed([rule([content(b"ATTACK")]),
                rule([bytes([FLOW, FLOWS.index("flow:only_stream")]), content(b"ATTACK")]),
                rule([content(b"ATTACK")], proto="tcp-pkt"),
                rule([content(b"ATTACK")], proto="tcp-stream")],
               [event(TCP_STREAM, b"xxATT"), event(TCP_STREAM, b"ACKyy", arg=16),
                event(STREAM_ONLY, b"zzATTACK", arg=2), event(TCP_STREAM, b"ATTACK", in_stream=True)])
    # byte_test / byte_jump / byte_extract / isdataat on a binary payload.
    yield seed([rule([content(b"\x00\x01"), byte_test(2, ">", 4, 0, flags=1),
                      byte_jump(2, 2, flags=1), isdataat(1, relative=True)]),
                rule([byte_extract(1, 0), content(b"\xff", distance=0)]),
                rule([byte_test(3, "=", 42, 0, flags=4, base="dec")], proto="udp")],
               [event(TCP, b"\x00\x01\x00\x08\x00\x02abcdef\xff"),
                event(UDP, b"042abc", sport=53, cport=1234),
                event(TCP, b"\x02\x00\xff")])
    # HTTP transaction: sticky buffers with transforms, a content modifier, urilen.
    tx = b"/Admin/%41b\x00/Admin/%41b\x00GET\x00Host: x\r\n\x00\x00body data\x00\x00Mozilla 5"
    yield seed([rule([sticky("http.uri", ["to_lowercase", "url_decode"]), content(b"admin/ab")],
                     proto="http"),
                rule([sticky("http.method"), content(b"GET", startswith=True)], proto="http"),
                rule([content(b"body", modifier="http_client_body")], proto="http"),
                rule([sticky("http.user_agent", ["compress_whitespace"]), content(b"zilla 5")],
                     proto="http"),
                rule([bytes([HEADER, HEADER_OPTS.index("urilen:>3")])], proto="http")],
               [event(HTTP_TX, tx, app="http", arg=0), event(HTTP_TX, tx, app="http", arg=1),
                event(TCP, get, app="http")])
    # DNS and TLS transactions.
    yield seed([rule([sticky("dns.query", ["dotprefix"]), content(b".example", nocase=True)],
                     proto="dns"),
                rule([sticky("tls.sni"), content(b"evil")], proto="tls"),
                rule([bytes([HEADER, HEADER_OPTS.index("dns.opcode:0")])], proto="dns")],
               [event(DNS_TX, b"www.Example.com", sport=53, cport=1234, app="dns", arg=0),
                event(TLS_TX, b"evil.example\x00CN=x\x00CN=y", sport=443, app="tls", arg=4)])
    # Flowbits, noalert, pass, drop, addresses, bidirectional rules, IPv6.
    yield seed([rule([content(b"login"), bytes([FLOWBIT, FLOWBITS.index("flowbits:set,a")]),
                      bytes([FLOWBIT, FLOWBITS.index("flowbits:noalert")])]),
                rule([bytes([FLOWBIT, FLOWBITS.index("flowbits:isset,a")]), content(b"secret")],
                     action="drop"),
                rule([content(b"ok")], action="pass", src="10.0.0.1"),
                rule([], proto="ip", src="10.0.0.0/24", dst="any", bidir=True),
                rule([content(b"v6")], proto="ipv6", dst="2001:db8::1", dport="[80,443]")],
               [event(TCP, b"login"), event(TCP, b"secret", to_client=True),
                event(TCP, b"ok", client=0), event(TCP, b"v6", v6=True, server=0),
                event(ICMP, b"ping", arg=8)])
    # pcre alone (no fast pattern), relative pcre after content, dsize range.
    yield seed([rule([pcre(b"abc", flags=8)]),
                rule([content(b"key="), pcre(b"v1", flags=64)]),
                rule([bytes([DSIZE, 6, 2, 8])])],
               [event(TCP, b"xxABCxx"), event(TCP, b"key=v1"), event(UDP, b"1234567",
                                                                    sport=53, cport=1234)])


def main():
    os.makedirs(OUT, exist_ok=True)
    n = 0
    for s in seeds():
        path = os.path.join(OUT, hashlib.sha1(s).hexdigest())
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(s)
            n += 1
    print("detect: %d new seed(s) in %s" % (n, OUT))


if __name__ == "__main__":
    main()
