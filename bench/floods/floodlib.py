"""Fast pcap writing and packet building for the flood rig (bench/floods, tests/e2e/flood_test).

Millions of frames have to be written in seconds, so nothing here builds per-packet objects:
headers are packed with struct into bytes, checksums are summed over native-order 16-bit words
with array('H') (RFC 1071: the one's-complement sum is byte-order independent, so a checksum
computed and stored in native order is correct on the wire), and records go straight to a
buffered file.

The legitimate traffic mixed into every flood is built with tests/e2e/pcapcraft.py (TcpConn's
handshakes and seq/ack bookkeeping), collected as frames and spread through the flood.
"""
import array
import gzip
import ipaddress
import os
import struct
import sys
import zlib

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "..", "tests", "e2e"))
import pcapcraft as pc  # noqa: E402

M32 = 0xFFFFFFFF
FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10
ETH_V4 = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00"
ETH_V6 = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x86\xdd"
_REC = struct.Struct("<IIII")
_TCP = struct.Struct("!HHIIBBHHH")
_IP4 = struct.Struct("!BBHHHBBH4s4s")
_IP6 = struct.Struct("!IHBB16s16s")
_UDP = struct.Struct("!HHHH")


def csum(data):
    """Internet checksum of data in native byte order (store it with '=H')."""
    if len(data) & 1:
        data = bytes(data) + b"\0"
    s = sum(array.array("H", bytes(data)))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ip4(a):
    return ipaddress.IPv4Address(a).packed


def ip6(a):
    return ipaddress.IPv6Address(a).packed


def ipv4_header(src, dst, proto, l4_len, ident, frag=0x4000, ttl=64):
    h = bytearray(_IP4.pack(0x45, 0, 20 + l4_len, ident & 0xFFFF, frag, ttl, proto, 0, src, dst))
    struct.pack_into("=H", h, 10, csum(h))
    return bytes(h)


def tcp_v4(src, dst, sport, dport, seq, ack, flags, payload=b"", win=65535, opts=b""):
    """An Ethernet/IPv4/TCP frame (src, dst: 4-byte packed addresses), checksums filled."""
    hl = 20 + len(opts)
    seg = bytearray(_TCP.pack(sport, dport, seq & M32, ack & M32, (hl // 4) << 4, flags, win, 0,
                              0))
    seg += opts
    seg += payload
    struct.pack_into("=H", seg, 16, csum(src + dst + struct.pack("!BBH", 0, 6, len(seg)) + seg))
    return ETH_V4 + ipv4_header(src, dst, 6, len(seg), seq >> 7) + bytes(seg)


def udp_dgram(src, dst, sport, dport, payload):
    """UDP header + payload with the checksum over the v4 or v6 pseudo header."""
    n = 8 + len(payload)
    d = bytearray(_UDP.pack(sport, dport, n, 0))
    d += payload
    if len(src) == 4:
        pseudo = src + dst + struct.pack("!BBH", 0, 17, n)
    else:
        pseudo = src + dst + struct.pack("!IxxxB", n, 17)
    c = csum(pseudo + d)
    struct.pack_into("=H", d, 6, c if c else 0xFFFF)
    return bytes(d)


def udp_v4(src, dst, sport, dport, payload, ident=0):
    d = udp_dgram(src, dst, sport, dport, payload)
    return ETH_V4 + ipv4_header(src, dst, 17, len(d), ident) + d


def frag_v4(src, dst, proto, ident, off8, more, data):
    """One IPv4 fragment: data at fragment offset off8 (8-byte units)."""
    return ETH_V4 + ipv4_header(src, dst, proto, len(data), ident,
                                frag=(0x2000 if more else 0) | (off8 & 0x1FFF)) + data


def frag_v6(src, dst, nh, ident, off8, more, data):
    """One IPv6 fragment (Fragment header right after the fixed header)."""
    fh = struct.pack("!BBHI", nh, 0, (off8 << 3) | (1 if more else 0), ident)
    return ETH_V6 + _IP6.pack(0x60000000, 8 + len(data), 44, 64, src, dst) + fh + data


def fragment_v4(src, dst, proto, ident, l4, size):
    """A whole transport datagram cut into IPv4 fragments of `size` bytes (multiple of 8)."""
    out = []
    for pos in range(0, len(l4), size):
        out.append(frag_v4(src, dst, proto, ident, pos // 8, pos + size < len(l4),
                           l4[pos:pos + size]))
    return out


def fragment_v6(src, dst, proto, ident, l4, size):
    out = []
    for pos in range(0, len(l4), size):
        out.append(frag_v6(src, dst, proto, ident, pos // 8, pos + size < len(l4),
                           l4[pos:pos + size]))
    return out


class PcapOut:
    """Classic little-endian pcap (Ethernet, microseconds), written through a 4 MB buffer."""

    def __init__(self, path):
        self.f = open(path, "wb", buffering=4 << 20)
        self.f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        self.count = 0
        self.bytes = 0

    def add(self, ts_us, frame):
        self.f.write(_REC.pack(ts_us // 1000000, ts_us % 1000000, len(frame), len(frame)))
        self.f.write(frame)
        self.count += 1
        self.bytes += len(frame)

    def close(self):
        self.f.close()


# ------------------------------------------------------------------ legitimate attack traffic

# Addresses of the legitimate traffic; no flood packet uses them, so an alert belongs to the
# legitimate traffic exactly when one of its addresses is in these networks.
LEGIT_NETS = [ipaddress.ip_network(n) for n in
              ("198.51.100.0/24", "10.200.0.0/16", "192.0.2.0/24", "2001:db8:200::/48")]


def is_legit_addr(a):
    try:
        ip = ipaddress.ip_address(a)
    except ValueError:
        return False
    return any(ip in n for n in LEGIT_NETS)


class _Frames:
    """pcapcraft's writer interface, collecting Ethernet frames instead of writing them."""

    def __init__(self):
        self.frames = []

    def ip(self, src, dst, proto, l4, to_server=True):
        et, l3 = pc.ip_packet(src, dst, proto, l4)
        macs = (pc.CLIENT_MAC, pc.SERVER_MAC) if to_server else (pc.SERVER_MAC, pc.CLIENT_MAC)
        self.frames.append(pc.ethernet(et, l3, *macs))
        return len(self.frames)


PASSWD = (b"root:x:0:0:root:/root:/bin/bash\n"
          b"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n")


def dns_query(qid, name, qtype=1):
    q = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    return struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0) + q + struct.pack("!HH", qtype, 1)


def dns_answer(query, addr="192.0.2.1"):
    """The response to `query` (one question) with one A record pointing at the question."""
    hdr = struct.pack("!HHHHHH", struct.unpack("!H", query[:2])[0], 0x8180, 1, 1, 0, 0)
    return hdr + query[12:] + struct.pack("!HHHIH", 0xC00C, 1, 1, 60, 4) + ip4(addr)


def legit_http(i, gz=False):
    """An inbound HTTP request for /legit/flood-check answered with a passwd file (ET Open
    2002034 "Possible /etc/passwd via HTTP", local sids 9100001, 9100002 and 9100004, whose
    raw stream content makes the tracker keep a tail, as ET Open's stream rules do)."""
    w = _Frames()
    c = pc.TcpConn(w, "198.51.100.%d" % (10 + i % 200), 20000 + i, "10.200.0.1", 80,
                   client_isn=1000 + i * 7919, server_isn=500000 + i * 104729)
    c.handshake()
    c.send(b"GET /legit/flood-check?id=%d HTTP/1.1\r\nHost: www.example.org\r\n"
           b"User-Agent: Mozilla/5.0\r\nAccept: */*\r\n\r\n" % i)
    body = PASSWD
    enc = b""
    if gz:
        body = gzip.compress(PASSWD, mtime=0)
        enc = b"Content-Encoding: gzip\r\n"
    c.reply(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" + enc +
            b"Content-Length: %d\r\n\r\n" % len(body) + body)
    c.close()
    return w.frames


def legit_dns_udp(i):
    """A DNS query for flood-check-N.su and its answer (ET Open 2014169, local 9100003)."""
    q = dns_query(0x4000 + i, "flood-check-%d.su" % i)
    cli, srv = ip4("10.200.1.%d" % (1 + i % 250)), ip4("192.0.2.53")
    return [udp_v4(cli, srv, 30000 + i, 53, q, ident=i),
            udp_v4(srv, cli, 53, 30000 + i, dns_answer(q), ident=i)]


def legit_dns_tcp(i):
    w = _Frames()
    c = pc.TcpConn(w, "10.200.2.%d" % (1 + i % 250), 31000 + i, "192.0.2.53", 53,
                   client_isn=7000 + i, server_isn=900000 + i)
    q = dns_query(0x5000 + i, "flood-check-tcp-%d.su" % i)
    c.handshake()
    c.send(struct.pack("!H", len(q)) + q)
    a = dns_answer(q)
    c.reply(struct.pack("!H", len(a)) + a)
    c.close()
    return w.frames


def legit_dns_frag(i, v6=False):
    """A DNS query cut into 16-byte fragments, the last one sent first (IPv4 or IPv6)."""
    q = dns_query(0x6000 + i, "flood-check-frag-%d.su" % i)
    if v6:
        cli, srv = ip6("2001:db8:200::%x" % (0x100 + i)), ip6("2001:db8:200::53")
        frags = fragment_v6(cli, srv, 17, 0x70000 + i, udp_dgram(cli, srv, 32000 + i, 53, q), 16)
    else:
        cli, srv = ip4("10.200.3.%d" % (1 + i % 250)), ip4("192.0.2.53")
        frags = fragment_v4(cli, srv, 17, 0x7000 + i, udp_dgram(cli, srv, 32000 + i, 53, q), 16)
    return frags[-1:] + frags[:-1]


# Local rules for the legitimate traffic (tests/e2e/flood_test.py and the bench without ET Open).
LOCAL_RULES = """\
alert http any any -> any any (msg:"FLOOD legit request"; flow:established,to_server; \
http.uri; content:"/legit/flood-check"; classtype:attempted-recon; sid:9100001; rev:1;)
alert http any any -> any any (msg:"FLOOD legit passwd in response"; flow:established,from_server; \
file_data; content:"root|3a|x|3a|0|3a|0|3a|"; classtype:successful-recon-limited; \
sid:9100002; rev:1;)
alert dns any any -> any any (msg:"FLOOD legit DNS query"; dns.query; content:"flood-check"; \
classtype:bad-unknown; sid:9100003; rev:1;)
alert tcp any any -> any 80 (msg:"FLOOD legit request in the stream"; flow:established,to_server; \
content:"GET /legit/flood-check"; classtype:attempted-recon; sid:9100004; rev:1;)
"""


def legit_sessions(kind, n):
    """n legitimate sessions for a flood: a list of frame lists, and the local-rule alerts they
    must raise ({sid: count})."""
    sessions = []
    want = {9100001: 0, 9100002: 0, 9100003: 0, 9100004: 0}
    for i in range(n):
        k = i % 4
        if kind == "frag" and i % 2 == 1:
            sessions.append(legit_dns_frag(i, v6=(i % 4 == 3)))
            want[9100003] += 1
        elif k in (0, 1):
            sessions.append(legit_http(i, gz=(k == 1)))
            want[9100001] += 1
            want[9100002] += 1
            want[9100004] += 1
        elif k == 2:
            sessions.append(legit_dns_udp(i))
            want[9100003] += 1
        else:
            sessions.append(legit_dns_tcp(i))
            want[9100003] += 1
    return sessions, want


def gzip_zeros(mbytes, layers=1, raw_deflate=False):
    """gzip (or raw deflate) of mbytes MB of zeros, compressed `layers` times."""
    if raw_deflate:
        co = zlib.compressobj(9, zlib.DEFLATED, -15)
    else:
        co = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(1 << 20)
    parts = [co.compress(chunk) for _ in range(mbytes)]
    parts.append(co.flush())
    data = b"".join(parts)
    for _ in range(layers - 1):
        data = gzip.compress(data, compresslevel=9, mtime=0)
    return data
