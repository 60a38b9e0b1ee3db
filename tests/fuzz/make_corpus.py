#!/usr/bin/env python3
"""Generates the seed corpus of every libFuzzer target in tests/fuzz from the project's own
tools and files, one directory per target under OUT_DIR (named as run.sh names corpora: the
fuzzer's name without "_fuzz"):

  traffic     picket-trafficgen pcaps (HTTP, DNS, TLS, fragments, VLAN, IPv6) and the
              tests/e2e/pcapcraft.py sessions, split into packets and flows:
              decode, pipeline, defrag, stream, http, dns, tls
  rules       ET Open (/work/shared/data/rules/et-open, skipped when absent) and the shipped
              configuration: rule_parser, threshold, acl, classification
  files       deploy/*.yaml, deploy/k8s/config/*.yaml: config; bundles built from the same
              files (encoded with protoc): bundle, bundle_archive; sensor messages: metrics;
              option values: cli

Usage: make_corpus.py --trafficgen PATH/picket-trafficgen OUT_DIR
Each seed is written once (file name = sha1 of its bytes), so re-running adds nothing new.
The checked-in tests/fuzz/corpus/<target>/ seeds are copied in as well.
"""
import argparse
import glob
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
ET_OPEN = "/work/shared/data/rules/et-open"
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
import pcapcraft  # noqa: E402

counts = {}


def put(out, target, data, limit=None):
    if limit is not None and counts.get(target, 0) >= limit:
        return
    if isinstance(data, str):
        data = data.encode()
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, hashlib.sha1(data).hexdigest())
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(data)
        counts[target] = counts.get(target, 0) + 1


# ---- pcap reading (classic pcap, as picket-trafficgen and pcapcraft write it)

def l3_of(frame):
    """(ethertype, l3 bytes) after Ethernet and up to two VLAN tags."""
    if len(frame) < 14:
        return None, b""
    et = struct.unpack("!H", frame[12:14])[0]
    off = 14
    while et in (0x8100, 0x88A8) and len(frame) >= off + 4:
        et = struct.unpack("!H", frame[off + 2:off + 4])[0]
        off += 4
    return et, frame[off:]


def parse_ip(frame):
    """Dict with src, dst, proto, l4 (bytes) and fragment info, or None."""
    et, l3 = l3_of(frame)
    if et == 0x0800 and len(l3) >= 20:
        ihl = (l3[0] & 15) * 4
        total = struct.unpack("!H", l3[2:4])[0]
        fl = struct.unpack("!H", l3[6:8])[0]
        return {"v6": False, "src": l3[12:16], "dst": l3[16:20], "proto": l3[9],
                "id": struct.unpack("!H", l3[4:6])[0], "mf": bool(fl & 0x2000),
                "off": (fl & 0x1FFF) * 8, "frag": bool(fl & 0x3FFF),
                "l4": l3[ihl:total]}
    if et == 0x86DD and len(l3) >= 40:
        nh = l3[6]
        plen = struct.unpack("!H", l3[4:6])[0]
        body = l3[40:40 + plen]
        if nh == 44 and len(body) >= 8:
            fo = struct.unpack("!H", body[2:4])[0]
            return {"v6": True, "src": l3[8:24], "dst": l3[24:40], "proto": body[0],
                    "id": struct.unpack("!I", body[4:8])[0], "mf": bool(fo & 1),
                    "off": fo & 0xFFF8, "frag": True, "l4": body[8:]}
        return {"v6": True, "src": l3[8:24], "dst": l3[24:40], "proto": nh, "frag": False,
                "l4": body}
    return None


def tcp_parts(l4):
    if len(l4) < 20:
        return None
    sport, dport, seq, ack, off, flags, win = struct.unpack("!HHIIBBH", l4[:16])
    return sport, dport, seq, ack, flags, win, l4[(off >> 4) * 4:]


# ---- per-target seeds from packets

def packet_seeds(out, frames):
    seen = set()
    for fr in frames:
        key = (len(fr) // 64, fr[12:14], fr[23:24], fr[34:38])
        if key in seen:
            continue
        seen.add(key)
        put(out, "decode", b"\x00" + fr, limit=400)
    for i in range(0, min(len(frames), 2400), 24):
        rec = b"".join(b"\x00" + struct.pack("<H", len(f)) + f for f in frames[i:i + 24])
        put(out, "pipeline", rec, limit=100)


def defrag_seeds(out, frames):
    dgrams = {}
    protos = {17: 0, 6: 1, 1: 2, 58: 3}
    for fr in frames:
        ip = parse_ip(fr)
        if ip is None or not ip["frag"]:
            continue
        k = (ip["v6"], ip["src"], ip["dst"], ip["id"])
        dgrams.setdefault(k, []).append(ip)
    for n, (k, frags) in enumerate(sorted(dgrams.items(), key=lambda kv: repr(kv[0]))):
        if n >= 60:
            break

        def rec(ip, key=0, shift=0):
            data = ip["l4"]
            words = (len(data) + 3) // 4
            ctl = (1 if ip["v6"] else 0) | key << 1 | (8 if ip["mf"] else 0)
            ctl |= protos.get(ip["proto"], 0) << 4 | 0x80
            off = (ip["off"] + shift) & 0xFFFF
            return (bytes([ctl]) + struct.pack("<H", off) + bytes([words & 0xFF, words >> 8 & 3])
                    + data)

        cfg = bytes([n % 4 | (n % 3) << 3, 3])
        put(out, "defrag", cfg + b"".join(rec(f) for f in frags))
        put(out, "defrag", cfg + b"".join(rec(f) for f in reversed(frags)))
        # Overlaps: every fragment again, 8 bytes later, as a second datagram interleaved.
        mixed = b"".join(rec(f) + rec(f, key=1, shift=8) for f in frags)
        put(out, "defrag", cfg + mixed)


def flows(frames):
    """TCP flows in packet order: key -> list of (from_client, seq, ack, flags, win, payload)."""
    out = {}
    for fr in frames:
        ip = parse_ip(fr)
        if ip is None or ip["frag"] or ip["proto"] != 6:
            continue
        t = tcp_parts(ip["l4"])
        if t is None:
            continue
        sport, dport, seq, ack, flags, win, payload = t
        a = (ip["src"], sport)
        b = (ip["dst"], dport)
        key = (a, b) if (a, b) in out else (b, a)
        lst = out.setdefault(key, [])
        lst.append((key[0] == a, seq, ack, flags, win, payload))
    return out


def stream_seeds(out, fl):
    for n, segs in enumerate(list(fl.values())[:80]):
        isn = [None, None]
        for from_client, seq, _, flags, _, _ in segs:
            side = 0 if from_client else 1
            if flags & 2 and isn[side] is None:
                isn[side] = seq
        if None in isn:
            continue
        rec = bytes([0, n % 12, 0, 3])
        for from_client, seq, ack, flags, win, payload in segs[:60]:
            me = 0 if from_client else 1
            rel_seq = (seq - isn[me]) & 0xFFFF
            rel_ack = (ack - isn[1 - me]) & 0xFFFF if flags & 0x10 else 0
            p = payload[:255]
            ctl = (0 if from_client else 1) | (0x20 if n % 2 else 0)
            rec += bytes([flags, ctl]) + struct.pack("<HH", rel_seq, rel_ack)
            rec += bytes([len(p), min(255, win >> 8)]) + p
        put(out, "stream", rec, limit=80)


def app_seeds(out, fl):
    for segs in fl.values():
        first = segs[0]
        payloads = [(fc, p) for fc, _, _, _, _, p in segs if p]
        if not payloads:
            continue
        text = b"".join(p for _, p in payloads[:2])
        if text[:4] in (b"GET ", b"POST", b"PUT ", b"HEAD", b"DELE", b"OPTI", b"HTTP"):
            ops = b"\x00"
            for fc, p in payloads:
                for i in range(0, len(p), 64):
                    c = p[i:i + 64]
                    ops += bytes([(0 if fc else 0x40) | (len(c) - 1)]) + c
                if len(ops) > 12000:
                    break
            put(out, "http", ops, limit=60)
        elif text[:1] == b"\x16":
            ops = b""
            for fc, p in payloads:
                for i in range(0, len(p), 64):
                    c = p[i:i + 64]
                    ops += bytes([(0 if fc else 0x80) | (len(c) - 1)]) + c
                if len(ops) > 12000:
                    break
            put(out, "tls", ops, limit=40)
        del first


def dns_seeds(out, frames):
    pair = b""
    for fr in frames:
        ip = parse_ip(fr)
        if ip is None or ip["frag"] or ip["proto"] != 17 or len(ip["l4"]) < 8:
            continue
        sport, dport = struct.unpack("!HH", ip["l4"][:4])
        if 53 not in (sport, dport):
            continue
        msg = ip["l4"][8:]
        put(out, "dns", msg, limit=120)
        pair += struct.pack("!H", len(msg)) + msg
        if len(pair) > 600:
            put(out, "dns", pair, limit=160)
            pair = b""


def crafted_pcaps(tmp):
    """A few sessions pcapcraft builds for the e2e tests: HTTP, DNS, a TLS ClientHello."""
    w = pcapcraft.PcapWriter()
    c = pcapcraft.TcpConn(w, "10.0.0.1", 40000, "10.0.0.2", 80)
    c.handshake()
    c.send(b"GET /index.html?a=1&b=%41 HTTP/1.1\r\nHost: example.com\r\n"
           b"User-Agent: fuzz\r\nAccept-Encoding: gzip\r\n\r\n")
    c.reply(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/html\r\n\r\nhello")
    c.send(b"POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
           b"4\r\nWiki\r\n0\r\n\r\n")
    c.reply(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n")
    c.close()
    c6 = pcapcraft.TcpConn(w, "2001:db8::1", 40001, "2001:db8::2", 8080)
    c6.handshake()
    c6.send_segments(b"GET /" + b"A" * 300 + b" HTTP/1.0\r\n\r\n", [7, 100, 50, 1000])
    c6.reply(b"HTTP/1.0 301 Moved\r\nLocation: /\r\n\r\n")
    c6.close()
    q = (b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00"
         b"\x01")
    w.udp("10.0.0.1", 5353, "10.0.0.53", 53, q)
    w.udp("10.0.0.53", 53, "10.0.0.1", 5353,
          b"\x12\x34\x81\x80\x00\x01\x00\x01\x00\x00\x00\x00\x07example\x03com\x00\x00\x01"
          b"\x00\x01\xc0\x0c\x00\x01\x00\x01\x00\x00\x0e\x10\x00\x04\x5d\xb8\xd8\x22",
          to_server=False)
    path = os.path.join(tmp, "crafted.pcap")
    w.save(path)
    return [path]


def traffic(out, trafficgen, tmp):
    paths = crafted_pcaps(tmp)
    if trafficgen and os.access(trafficgen, os.X_OK):
        for seed, extra in ((1, []), (2, ["--frag-share", "0.5", "--ipv6-share", "0.5",
                                          "--vlan-share", "0.3"]),
                            (3, ["--attack", "/etc/passwd", "--attack", "<script>",
                                 "--attack-share", "0.5"])):
            p = os.path.join(tmp, "tg%d.pcap" % seed)
            subprocess.run([trafficgen, "-o", p, "--seed", str(seed), "--sessions", "300",
                            "--record", p + ".json"] + extra, check=True,
                           stdout=subprocess.DEVNULL)
            paths.append(p)
    else:
        print("make_corpus: no picket-trafficgen, only pcapcraft traffic", file=sys.stderr)
    for p in paths:
        frames = pcapcraft.pcap_frames(p)
        packet_seeds(out, frames)
        defrag_seeds(out, frames)
        fl = flows(frames)
        stream_seeds(out, fl)
        app_seeds(out, fl)
        dns_seeds(out, frames)


# ---- rules and rule-side files

def rules(out):
    et = sorted(glob.glob(os.path.join(ET_OPEN, "*.rules")))
    sids = []
    for path in et:
        with open(path, errors="replace") as f:
            lines = [l for l in f if l.startswith(("alert", "drop", "pass", "reject", "#alert"))]
        for l in lines[::max(1, len(lines) // 12)][:12]:
            put(out, "rule_parser", l, limit=400)
            for tok in l.split(";"):
                tok = tok.strip()
                if tok.startswith("sid:") and tok[4:].isdigit():
                    sids.append(int(tok[4:]))
    ips = []
    for name in ("compromised-ips.txt",):
        p = os.path.join(ET_OPEN, name)
        if os.path.exists(p):
            with open(p) as f:
                ips = [l.strip() for l in f if l.strip() and not l.startswith("#")][:400]
    for i in range(0, len(ips), 50):
        chunk = ips[i:i + 50]
        text = "".join("drop ip %s any -> any any priority %d\n" % (ip, n % 7)
                       for n, ip in enumerate(chunk))
        text += "drop ip any any -> [%s] any\n" % ", ".join(chunk[:10])
        text += "pass tcp any any <> %s 80:443\n" % chunk[0]
        put(out, "acl", text)
    for i in range(0, min(len(sids), 600), 60):
        part = sids[i:i + 60]
        text = "".join("suppress gen_id 1, sig_id %d, track by_src, ip %s\n" %
                       (s, ips[n % len(ips)] if ips else "10.0.0.%d" % (n % 250))
                       for n, s in enumerate(part[:20]))
        text += "".join("threshold gen_id 1, sig_id %d, type limit, track by_dst, count %d, "
                        "seconds %d\n" % (s, 1 + n % 5, 10 * (1 + n % 6))
                        for n, s in enumerate(part[20:40]))
        text += "".join("event_filter gen_id 1, sig_id %d, type both, track by_rule, count 2, "
                        "seconds 60\n" % s for s in part[40:])
        put(out, "threshold", text)
    for name in ("classification.config", "reference.config"):
        p = os.path.join(ET_OPEN, name)
        if os.path.exists(p):
            with open(p, "rb") as f:
                put(out, "classification", f.read())
    if not et:
        print("make_corpus: no ET Open rules at %s, rule seeds from the checked-in corpus only"
              % ET_OPEN, file=sys.stderr)


# ---- configuration, bundles, sensor messages, options

def yaml_files():
    return sorted(glob.glob(os.path.join(REPO, "deploy", "*.yaml")) +
                  glob.glob(os.path.join(REPO, "deploy", "k8s", "config", "*.yaml")))


def protoc_encode(message, text):
    r = subprocess.run(["protoc", "-I", os.path.join(REPO, "proto"),
                        "--encode=picket.v1." + message, "picket/v1/picket.proto"],
                       input=text.encode(), stdout=subprocess.PIPE, check=True)
    return r.stdout


def pstr(s):
    return '"' + "".join("\\%03o" % b for b in s.encode()) + '"'


def bundle_files():
    files = {}
    et = sorted(glob.glob(os.path.join(ET_OPEN, "*.rules")))[:3]
    for p in et:
        with open(p, errors="replace") as f:
            files["rules/" + os.path.basename(p)] = "".join(f.readlines()[:40])
    if not files:
        files["rules/local.rules"] = ('alert tcp any any -> any 80 (msg:"x"; content:"GET"; '
                                      'sid:1; rev:1;)\n')
    first_sid = "1"
    for content in files.values():
        for tok in content.split(";"):
            if tok.strip().startswith("sid:"):
                first_sid = tok.strip()[4:]
                break
        break
    files["config.yaml"] = ("vars:\n  address-groups:\n    HOME_NET: \"[10.0.0.0/8]\"\n"
                            "  port-groups:\n    HTTP_PORTS: \"[80,8080]\"\n")
    files["tuning.yaml"] = "disable: [%s]\nenable: [2]\n" % first_sid
    files["threshold.config"] = ("suppress gen_id 1, sig_id %s, track by_src, ip 10.0.0.1\n"
                                 % first_sid)
    files["acl.rules"] = "bypass tcp 10.1.0.0/16 any <> 10.2.0.0/16 873\n"
    p = os.path.join(ET_OPEN, "classification.config")
    if os.path.exists(p):
        with open(p) as f:
            files["classification.config"] = f.read()
    return files


def bundle_text(files, version):
    lines = ['manifest {', '  name: "seed"', '  version: %d' % version, '  author: "fuzz"']
    for path in sorted(files):
        c = files[path].encode()
        lines.append('  files { path: %s sha256: "%s" size: %d }' %
                     (pstr(path), hashlib.sha256(c).hexdigest(), len(c)))
    lines.append('}')
    for path in sorted(files):
        lines.append('files { path: %s content: %s }' % (pstr(path), pstr(files[path])))
    return "\n".join(lines) + "\n"


def archive_records(files):
    out = b"\x00"
    for path, content in files.items():
        p = path.encode()
        c = content.encode()[:65535]
        out += bytes([len(p)]) + struct.pack("<H", len(c)) + p + c
    return out


def files_seeds(out):
    for p in yaml_files():
        with open(p, "rb") as f:
            y = f.read()
        put(out, "config", y)
        put(out, "config", y + b"\0workers=2\0capture.mode=nfqueue\0capture.nfqueue.queue=0:3")
    files = bundle_files()
    try:
        encoded = protoc_encode("Bundle", bundle_text(files, 1))
        put(out, "bundle", encoded)
        put(out, "bundle_archive", b"\x01" + encoded)
    except (OSError, subprocess.CalledProcessError) as e:
        print("make_corpus: protoc failed (%s): no encoded bundles" % e, file=sys.stderr)
    put(out, "bundle_archive", archive_records(files))
    for evil in ("../escape.rules", "/tmp/abs.rules", "rules/../../x.rules", "rules//a.rules",
                 "rules/./a.rules", ".hidden/a.rules", "manifest.json", "rules/" + "a" * 249,
                 "a/b/c/d/e/f/g/h/i.rules", "rules\\..\\x.rules", "rules/\u00e9.rules"):
        put(out, "bundle_archive", archive_records(dict(files, **{evil: "x\n"})))
    for p in sorted(glob.glob(os.path.join(HERE, "corpus", "bundle", "*.json")) +
                    glob.glob(os.path.join(HERE, "corpus", "bundle", "*.yaml"))):
        with open(p, "rb") as f:
            put(out, "bundle", f.read())

    hello = ('hello { sensor_name: "s1" host: "h\\"x\\ny" version: "0.1.0" capture_mode: 3 '
             'capture_source: "eth0" workers: 2 labels { key: "site" value: "paris" } '
             'labels { key: "site-a.dc" value: "v\\\\\\"" } bundle { name: "b" version: 3 '
             'sha256: "abc" } started_at: 1700000000000000000 ips_mode: true }')
    metrics = ('metrics { timestamp: %d interval_ms: 10000 seq: %d counters { key: '
               '"decoder.pkts" value: %d } counters { key: "capture.kernel_drops" value: %d } '
               'counters { key: "detect.alert" value: %d } counters { key: "decoder.bytes" '
               'value: %d } workers { worker: 0 packets: 10 bytes: 1000 } workers { worker: 1 '
               'packets: 5 bytes: 300 } bundle_version: 3 }')
    alerts = ('alerts { alerts { timestamp: 1 gid: 1 sid: 2001219 rev: 3 msg: "ET SCAN" '
              'src_ip: "10.0.0.1" dst_ip: "10.0.0.2" src_port: 1234 dst_port: 22 proto: "TCP" '
              'action: 2 severity: 2 } dropped: 7 }')
    try:
        msgs = [protoc_encode("SensorMessage", hello)]
        for seq in range(1, 5):
            msgs.append(protoc_encode("SensorMessage", metrics % (
                1700000000000000000 + seq * 10 ** 10, seq, 1000 * seq, seq, 3 * seq,
                100000 * seq)))
        msgs.append(protoc_encode("SensorMessage", alerts))
        msgs.append(protoc_encode("SensorMessage", metrics % (1, 1, 2 ** 64 - 1, 0, 0, 0)))
        for i, order in enumerate(([0, 1, 2, 5, 3, 4], [0, 1, 1, 6, 2], [5, 0, 4, 3, 6])):
            rec = b"".join(bytes([i + (n % 2)]) + struct.pack("<H", len(msgs[k])) + msgs[k]
                           for n, k in enumerate(order))
            put(out, "metrics", rec)
    except (OSError, subprocess.CalledProcessError) as e:
        print("make_corpus: protoc failed (%s): no sensor messages" % e, file=sys.stderr)

    for args in (["0:3", "sensors", "--selector", "label=site=paris"],
                 ["eth1:eth2", "bundle", "list", "--json"],
                 ["127.0.0.1:9090", "sensor", "show", "edge-1"],
                 ["site=paris,rack=a1", "deploy", "--version", "3", "--selector", "all",
                  "--canary", "1", "--wait"],
                 ["64mb", "rollback", "--selector", "s1,s2"],
                 ["workers=8", "history", "--limit", "10"],
                 ["[::1]:50051", "alerts", "--limit", "5", "--json"],
                 ["a.b.c=[1,2]", "bundle", "diff", "1", "2"],
                 ["65535", "enroll", "s1"],
                 ["localhost:0", "--insecure", "revoke", "s1"]):
        put(out, "cli", "\0".join(args))


def checked_in(out):
    for d in sorted(glob.glob(os.path.join(HERE, "corpus", "*"))):
        if not os.path.isdir(d):
            continue
        for p in sorted(glob.glob(os.path.join(d, "*"))):
            if os.path.isfile(p) and not p.endswith(".py"):
                with open(p, "rb") as f:
                    put(out, os.path.basename(d), f.read())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trafficgen", default="")
    ap.add_argument("out")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="picket-corpus.")
    try:
        checked_in(a.out)
        traffic(a.out, a.trafficgen, tmp)
        rules(a.out)
        files_seeds(a.out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for t in sorted(counts):
        print("%-16s %d new seeds" % (t, counts[t]))


if __name__ == "__main__":
    main()
