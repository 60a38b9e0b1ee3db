"""Hand-built pcap files for end-to-end tests: Ethernet / IPv4 or IPv6 / TCP or UDP frames with
correct checksums, and TCP connections with a real handshake and consistent seq/ack numbers.

Only the standard library. Every frame gets a timestamp one millisecond after the previous one,
so pcap_cnt (1-based record number) is the only ordering the tests need.

    w = PcapWriter()
    c = TcpConn(w, "10.0.0.1", 40000, "10.0.0.2", 80)
    c.handshake()
    n = c.send(b"GET / HTTP/1.1\\r\\n\\r\\n")   # n: pcap_cnt of that frame
    c.reply(b"HTTP/1.1 200 OK\\r\\n\\r\\n")
    c.close()
    w.save(path)
"""
import ipaddress
import struct

ETH_IPV4 = 0x0800
ETH_IPV6 = 0x86DD
PROTO_TCP = 6
PROTO_UDP = 17

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10

CLIENT_MAC = bytes.fromhex("020000000001")
SERVER_MAC = bytes.fromhex("020000000002")


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def _pseudo(src, dst, proto, length):
    s = ipaddress.ip_address(src)
    d = ipaddress.ip_address(dst)
    if s.version == 4:
        return s.packed + d.packed + struct.pack("!BBH", 0, proto, length)
    return s.packed + d.packed + struct.pack("!I3xB", length, proto)


def tcp_segment(src, dst, sport, dport, seq, ack, flags, payload=b"", window=65535,
                options=b""):
    if len(options) % 4:
        options += b"\0" * (4 - len(options) % 4)
    off = (20 + len(options)) // 4
    hdr = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, off << 4,
                      flags, window, 0, 0) + options
    seg = hdr + payload
    csum = checksum(_pseudo(src, dst, PROTO_TCP, len(seg)) + seg)
    return seg[:16] + struct.pack("!H", csum) + seg[18:]


def udp_datagram(src, dst, sport, dport, payload):
    length = 8 + len(payload)
    dgram = struct.pack("!HHHH", sport, dport, length, 0) + payload
    csum = checksum(_pseudo(src, dst, PROTO_UDP, length) + dgram) or 0xFFFF
    return dgram[:6] + struct.pack("!H", csum) + dgram[8:]


_ip_id = [0x1000]


def ip_packet(src, dst, proto, l4, ttl=64):
    s = ipaddress.ip_address(src)
    d = ipaddress.ip_address(dst)
    if s.version == 4:
        _ip_id[0] = (_ip_id[0] + 1) & 0xFFFF
        hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), _ip_id[0], 0x4000, ttl, proto,
                          0, s.packed, d.packed)
        hdr = hdr[:10] + struct.pack("!H", checksum(hdr)) + hdr[12:]
        return ETH_IPV4, hdr + l4
    hdr = struct.pack("!IHBB16s16s", 0x60000000, len(l4), proto, ttl, s.packed, d.packed)
    return ETH_IPV6, hdr + l4


def ethernet(ethertype, l3, src_mac=CLIENT_MAC, dst_mac=SERVER_MAC):
    return dst_mac + src_mac + struct.pack("!H", ethertype) + l3


class PcapWriter:
    """Collects frames in memory; save() writes a classic little-endian pcap (Ethernet)."""

    def __init__(self, start_sec=1700000000):
        self.frames = []
        self.t_us = start_sec * 1000000

    def add(self, frame):
        self.t_us += 1000
        self.frames.append((self.t_us, frame))
        return len(self.frames)  # pcap_cnt of this frame

    def ip(self, src, dst, proto, l4, to_server=True):
        et, l3 = ip_packet(src, dst, proto, l4)
        macs = (CLIENT_MAC, SERVER_MAC) if to_server else (SERVER_MAC, CLIENT_MAC)
        return self.add(ethernet(et, l3, *macs))

    def udp(self, src, sport, dst, dport, payload, to_server=True):
        return self.ip(src, dst, PROTO_UDP, udp_datagram(src, dst, sport, dport, payload),
                       to_server)

    def save(self, path):
        with open(path, "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
            for t_us, frame in self.frames:
                f.write(struct.pack("<IIII", t_us // 1000000, t_us % 1000000, len(frame),
                                    len(frame)))
                f.write(frame)


def read_pcap(path):
    """(linktype, [(ts_sec, ts_usec, frame, orig_len)]) of a classic pcap file in either byte
    order, as picket-trafficgen, PcapWriter and the sensor write it; (None, []) when the file
    is shorter than its header. A last record cut short keeps what is there."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return None, []
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    records, off = [], 24
    while off + 16 <= len(data):
        sec, usec, incl, orig = struct.unpack(endian + "IIII", data[off:off + 16])
        records.append((sec, usec, data[off + 16:off + 16 + incl], orig))
        off += 16 + incl
    return linktype, records


def pcap_frames(path):
    """The frames of a classic pcap file, without their timestamps."""
    return [frame for _, _, frame, _ in read_pcap(path)[1]]


class TcpConn:
    """One TCP connection. Stream offsets (`off`) count from the byte after the SYN, as the
    sensor's reassembly does; send()/reply() without `off` continue in order."""

    def __init__(self, w, client, cport, server, sport, client_isn=1000, server_isn=500000,
                 window=65535):
        self.w = w
        self.client, self.cport, self.server, self.sport = client, cport, server, sport
        self.cisn, self.sisn = client_isn, server_isn
        self.window = window
        self.cnext = 0  # next in-order client offset
        self.snext = 0  # next in-order server offset
        self.cack = 0  # server offset the client acknowledges
        self.sack = 0  # client offset the server acknowledges

    def _c(self, seq_off, flags, payload=b"", ack=True):
        seg = tcp_segment(self.client, self.server, self.cport, self.sport,
                          self.cisn + 1 + seq_off, self.sisn + 1 + self.cack if ack else 0, flags,
                          payload, self.window)
        return self.w.ip(self.client, self.server, PROTO_TCP, seg, True)

    def _s(self, seq_off, flags, payload=b""):
        seg = tcp_segment(self.server, self.client, self.sport, self.cport,
                          self.sisn + 1 + seq_off, self.cisn + 1 + self.sack, flags, payload,
                          self.window)
        return self.w.ip(self.server, self.client, PROTO_TCP, seg, False)

    def handshake(self):
        # The SYN's sequence number is the ISN: offset -1.
        self._c(-1, SYN, ack=False)
        seg = tcp_segment(self.server, self.client, self.sport, self.cport, self.sisn,
                          self.cisn + 1, SYN | ACK, b"", self.window)
        self.w.ip(self.server, self.client, PROTO_TCP, seg, False)
        return self._c(0, ACK)

    def send(self, data, off=None, flags=PSH | ACK):
        """Client data at stream offset `off` (default: in order). Returns its pcap_cnt."""
        if off is None:
            off = self.cnext
        self.cnext = max(self.cnext, off + len(data))
        self.cack = self.snext  # the client has everything the server sent
        return self._c(off, flags, data)

    def reply(self, data, off=None, flags=PSH | ACK):
        if off is None:
            off = self.snext
        self.snext = max(self.snext, off + len(data))
        self.sack = self.cnext  # the server has everything the client sent
        return self._s(off, flags, data)

    def ack_client(self):
        """Server acknowledges all client data sent so far."""
        self.sack = self.cnext
        return self._s(self.snext, ACK)

    def ack_server(self):
        self.cack = self.snext
        return self._c(self.cnext, ACK)

    def send_segments(self, data, sizes):
        """Client data in order, cut into pieces of the given sizes (the rest in the last)."""
        cnts = []
        pos = 0
        for n in sizes:
            cnts.append(self.send(data[pos:pos + n]))
            pos += n
        if pos < len(data):
            cnts.append(self.send(data[pos:]))
        return cnts

    def reply_segments(self, data, size=1400):
        cnts = []
        for pos in range(0, len(data), size):
            cnts.append(self.reply(data[pos:pos + size]))
        return cnts

    def close(self):
        """Both sides acknowledge everything, then FIN/ACK from the client, FIN/ACK from the
        server and the final ACK (both FINs acknowledged: the session is closed)."""
        self.sack = self.cnext
        self.cack = self.snext
        self._c(self.cnext, FIN | ACK)
        self.sack = self.cnext + 1
        self._s(self.snext, FIN | ACK)
        self.cack = self.snext + 1
        return self._c(self.cnext + 1, ACK)


def _tcp_of(frame):
    """(src, sport, dst, dport, seq, ack, flags, payload length) of an Ethernet TCP frame, or
    None."""
    et = struct.unpack("!H", frame[12:14])[0]
    if et == 0x0800:
        ihl = (frame[14] & 15) * 4
        total = struct.unpack("!H", frame[16:18])[0]
        proto, src, dst = frame[23], frame[26:30], frame[30:34]
        l4 = frame[14 + ihl:14 + total]
    elif et == 0x86DD:
        plen = struct.unpack("!H", frame[18:20])[0]
        proto, src, dst = frame[20], frame[22:38], frame[38:54]
        l4 = frame[54:54 + plen]
    else:
        return None
    if proto != PROTO_TCP:
        return None
    sport, dport, seq, ack = struct.unpack("!HHII", l4[:12])
    return src, sport, dst, dport, seq, ack, l4[13], len(l4) - (l4[12] >> 4) * 4


def ids_inspected_at(w, cnt):
    """The pcap_cnt at which Suricata's IDS timing (and the sensor's) inspects a transaction
    completed by the data of packet `cnt`: the app layer gets that data on the first later
    packet of the other side that acknowledges all of it (or any later RST, which closes the
    session), and detection inspects the transaction on the next packet of the data's own
    direction after that. None when there is no such packet (the flow's end inspects it,
    on a pseudo packet without pcap_cnt). Not TCP: the packet itself."""
    info = _tcp_of(w.frames[cnt - 1][1])
    if info is None:
        return cnt
    src, sport, dst, dport, seq, _, _, n = info
    end = (seq + n) & 0xFFFFFFFF
    j = None
    for i in range(cnt, len(w.frames)):
        t = _tcp_of(w.frames[i][1])
        if t is None or {(t[0], t[1]), (t[2], t[3])} != {(src, sport), (dst, dport)}:
            continue
        reverse = (t[0], t[1]) == (dst, dport)
        if (t[6] & RST) or (reverse and (t[6] & ACK) and ((t[5] - end) & 0xFFFFFFFF) < 2**31):
            j = i
            break
    if j is None:
        return None
    for i in range(j + 1, len(w.frames)):
        t = _tcp_of(w.frames[i][1])
        if t is not None and (t[0], t[1], t[2], t[3]) == (src, sport, dst, dport):
            return i + 1
    return None
