"""The variant families of http_evasions.py (see there): for each family of the HTTP evader
corpus, its variants as described by the corpus's pages, in our own terms."""
import os
import re
import sys
import zlib

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_evasions import (EICAR, FILE_FIELDS, Variant, base64, chunks_of, compress_as,  # noqa
                           gzip_of, lzma_alone_of, raw_deflate_of, response, two_part,
                           zlib_of)


_NAMES = {0x20: "sp", 0x09: "tab", 0x0D: "cr", 0x0A: "lf", 0x00: "nul", 0x0B: "vt", 0x0C: "ff",
          0x2F: "/", 0x2E: ".", 0x2B: "+", 0x2D: "-"}


def slug(raw):
    """A readable name for bytes: letters and digits kept, the rest named (sp, cr, nul, x7f)."""
    out = []
    for c in raw:
        if chr(c).isalnum() and c < 0x80:
            out.append(chr(c))
        else:
            out.append("." + _NAMES.get(c, "x%02x" % c) + ".")
    return re.sub(r"\.+", ".", "".join(out)).strip(".").replace("./.", "/")


# --------------------------------------------------------------------------- chunked family

def chunked():
    out = []
    te = b"Transfer-Encoding: chunked\r\nConnection: close\r\n"

    def add(name, desc, resp, libhtp=None):
        out.append(Variant("chunked", name, desc, resp, libhtp))

    body5 = chunks_of(EICAR)
    add("plain", "valid chunked body", response(fields=FILE_FIELDS + te, body=body5))
    add("clen", "Content-Length, not chunked",
        response(fields=FILE_FIELDS + b"Content-length: %d\r\n" % len(EICAR), body=EICAR))

    # The size field: leading zeros, case, what follows or precedes the hex digits.
    sizes = [
        ("size-lead0", "0%x", "size with a leading 0"),
        ("size-lead00", "00%x", "size with leading 00"),
        ("size-upper", "%X", "upper-case hex size"),
        ("size-lead0-upper", "0%X", "upper-case hex size with a leading 0"),
    ]
    for label, ch in (("space", " "), ("tab", "\t"), ("cr", "\r"), ("lf", "\n"), ("x", "x"),
                      ("comma", ","), ("nul", "\0"), ("vt", "\v"), ("ff", "\f"),
                      ("space-x", " x")):
        sizes.append(("size-then-" + label, "%x" + ch, "size followed by " + repr(ch)))
    for label, ch in (("space", " "), ("tab", "\t"), ("cr", "\r"), ("lf", "\n"),
                      ("crlf", "\r\n"), ("crlf-crlf", "\r\n\r\n"), ("crlf-x-crlf", "\r\nx\r\n"),
                      ("x", "x"), ("comma", ","), ("semicolon", ";"), ("nul", "\0"),
                      ("vt", "\v"), ("ff", "\f"), ("x-space", "x ")):
        sizes.append((label + "-then-size", ch + "%x", "size preceded by " + repr(ch)))
    for name, fmt, desc in sizes:
        add(name, desc, response(fields=FILE_FIELDS + te, body=chunks_of(EICAR, 15, fmt)))

    for final in (b"00", b"0" * 20, b"0x"):
        add("final-size-" + final.decode()[:6] + ("-%d" % len(final)),
            "last chunk size written %r" % final,
            response(fields=FILE_FIELDS + te, body=chunks_of(EICAR, final=final + b"\r\n\r\n")))
    for label, last in (("lf", b"0\n"), ("cr", b"0\r"), ("bare", b"0"), ("lf-lf", b"0\n\n"),
                        ("lf-space-lf", b"0\n \n"), ("lf-crlf", b"0\n\r\n"),
                        ("lf-cr-crlf", b"0\n\r\r\n"), ("junk-trailer", b"0\r\nfoobar\r\n")):
        add("last-chunk-" + label, "last chunk written %r" % last,
            response(fields=FILE_FIELDS + te, body=chunks_of(EICAR, final=last)))

    add("ext-junk", "every chunk with an extension '; foobar'",
        response(fields=FILE_FIELDS + te, body=chunks_of(EICAR, ext=b"; foobar")))
    parts = [EICAR[i:i + 5] for i in range(0, len(EICAR), 5)]
    body = b"".join(b"%x; %s  %x\r\n%s\r\n" % (len(p), b"x" * len(p), len(p), p) for p in parts)
    add("ext-like-chunk", "every chunk with an extension that looks like a chunk",
        response(fields=FILE_FIELDS + te, body=body + b"0\r\n\r\n"))

    # With Content-Length too (RFC 9112 6.3: chunked wins).
    def cl(pct, data):
        return b"Content-length: %d\r\n" % (len(data) * pct // 100)
    add("te-then-cl", "chunked and then Content-Length, sent chunked",
        response(fields=FILE_FIELDS + te + cl(100, body5), body=body5))
    add("cl-then-te", "Content-Length and then chunked, sent chunked",
        response(fields=FILE_FIELDS + cl(100, body5) + te, body=body5))
    add("te-cl-double", "chunked with a Content-Length of twice the body",
        response(fields=FILE_FIELDS + te + cl(200, body5), body=body5))
    add("te-cl-half", "chunked with a Content-Length of half the body",
        response(fields=FILE_FIELDS + te + cl(50, body5), body=body5))
    junk = EICAR + b"x" * len(EICAR)
    jb = chunks_of(junk)
    add("te-cl-covers-content", "content plus junk, chunked; Content-Length of half (the content)",
        response(fields=FILE_FIELDS + te + cl(50, jb), body=jb))

    # Chunked with HTTP/1.0 and odd versions.
    gz = gzip_of(EICAR)
    gzf = b"Content-Encoding: gzip\r\n"
    for ver in (b"HTTP/1.0",):
        for order in ("te", "te-cl", "cl-te"):
            for comp in (False, True):
                data = gz if comp else EICAR
                cb = chunks_of(data)
                f = FILE_FIELDS + {"te": te, "te-cl": te + cl(100, cb),
                                   "cl-te": cl(100, cb) + te}[order]
                f += gzf if comp else b""
                suffix = "-gzip" if comp else ""
                add("http10-%s-chunked%s" % (order, suffix),
                    "%s, %s fields, sent chunked%s" % (ver.decode(), order, suffix),
                    response(ver + b" 200 ok", f, cb))
                f2 = FILE_FIELDS + {"te": te, "te-cl": te + cl(100, data),
                                    "cl-te": cl(100, data) + te}[order]
                f2 += gzf if comp else b""
                add("http10-%s-plain%s" % (order, suffix),
                    "%s, %s fields, not sent chunked%s" % (ver.decode(), order, suffix),
                    response(ver + b" 200 ok", f2, data))
    for ver in (b"HTTP/1.2", b"HTTP/2.0", b"HTTP/2.1", b"HTTP/0.9", b"HTTP/1.01", b"HTTP/1.10",
                b"http/1.1", b"http/1.0"):
        v = ver.decode().replace("/", "")
        add("ver-%s-chunked" % v, "chunked with version %s, sent chunked" % ver.decode(),
            response(ver + b" 200 ok", FILE_FIELDS + te, body5))
        add("ver-%s-plain" % v, "chunked and Content-Length with version %s, not sent chunked"
            % ver.decode(), response(ver + b" 200 ok", FILE_FIELDS + te + cl(100, EICAR), EICAR))
    for ver in (b"HTTP/0.1", b"HTTP/01.1", b"HTTP/11.01", b"HTTP/11.10", b"HTTP/9.9"):
        v = ver.decode().replace("/", "")
        add("ver-%s-chunked-gzip" % v, "chunked gzip with version %s" % ver.decode(),
            response(ver + b" 200 ok", FILE_FIELDS + te + gzf, chunks_of(gz)))
        add("ver-%s-plain-gzip" % v, "chunked + Content-Length with version %s, not sent "
            "chunked, gzip" % ver.decode(),
            response(ver + b" 200 ok", FILE_FIELDS + te + cl(100, gz) + gzf, gz))

    # The value of Transfer-Encoding.
    def tev(value, name, desc, chunked=True, extra=b""):
        f = FILE_FIELDS + b"Transfer-Encoding: " + value + b"\r\nConnection: close\r\n" + extra
        add(name, desc, response(fields=f, body=body5 if chunked else EICAR))
    tev(b"chUnked", "te-mixed-case", "value chUnked")
    tev(b"\r\n chunked", "te-folded", "value on a continuation line")
    tev(b"chunked\r\n ", "te-then-empty-fold", "value followed by an empty continuation line")
    tev(b"\r\n \r\n chunked", "te-folded-twice", "value after two continuation lines")
    tev(b"\r\n \r\n chunked\r\n ", "te-folded-twice-then-fold",
        "value after two continuation lines and one more after it")
    tev(b"chu", "te-chu", "value 'chu', sent chunked")
    tev(b"chunked;", "te-semicolon", "value 'chunked;', sent chunked")
    tev(b"xchunked", "te-xchunked", "value 'xchunked', sent chunked")
    tev(b"chunkedx", "te-chunkedx", "value 'chunkedx', sent chunked")
    tev(b"chunked x", "te-chunked-space-x", "value 'chunked x', sent chunked")
    tev(b"x chunked", "te-x-space-chunked", "value 'x chunked', sent chunked")
    tev(b"chunked x", "te-chunked-space-x-plain", "value 'chunked x', not sent chunked", False)
    tev(b"x chunked", "te-x-space-chunked-plain", "value 'x chunked', not sent chunked", False)
    tev(b"x\r\n chunked", "te-x-folded-chunked", "value 'x' folded into 'chunked', sent chunked")
    tev(b"chunked\r\n x", "te-chunked-folded-x", "value 'chunked' folded into 'x', sent chunked")
    tev(b"=?UTF-8?B?Y2h1bmtlZAo=?=", "te-rfc2047", "RFC 2047 encoded 'chunked', sent chunked")
    tev(b"=?UTF-8?B?Y2h1bmtlZAo=?=", "te-rfc2047-plain",
        "RFC 2047 encoded 'chunked', not sent chunked", False)
    tev(b"=?UTF-8?B?Y2h1bmtlZAo=?=", "te-rfc2047-cl-plain",
        "RFC 2047 encoded 'chunked' and Content-Length, not sent chunked", False,
        b"Content-length: %d\r\n" % len(EICAR))
    tev(b"\r\n chunked", "te-folded-plain", "value on a continuation line, not sent chunked",
        False)
    tev(b"chunked\r\n ", "te-then-empty-fold-plain",
        "value and an empty continuation line, not sent chunked", False)
    tev(b"\r\n \r\n chunked", "te-folded-twice-plain",
        "value after two continuation lines, not sent chunked", False)
    tev(b"\rchunked", "te-cr-value", "value after a lone CR, sent chunked")
    tev(b"\rchunked", "te-cr-value-plain", "value after a lone CR, not sent chunked", False)
    tev(b"\r chunked", "te-cr-space-value", "value after CR SP, sent chunked")
    tev(b"\r chunked", "te-cr-space-value-plain", "value after CR SP, not sent chunked", False)
    tev(b"chunked\r ", "te-value-cr-space", "value followed by CR SP, sent chunked")
    tev(b"chunked\r ", "te-value-cr-space-plain", "value followed by CR SP, not sent chunked",
        False)
    add("ce-chunked", "'Content-Encoding: chunked' instead of Transfer-Encoding, sent chunked",
        response(fields=FILE_FIELDS + b"Content-Encoding: chunked\r\nConnection: close\r\n",
                 body=body5))

    # Two or three Transfer-Encoding fields, one of them junk.
    xte = b"Transfer-Encoding: lalala\r\nConnection: close\r\n"
    for order, fields in (("junk-chunked", xte + te), ("chunked-junk", te + xte),
                          ("junk-chunked-junk", xte + te + xte)):
        for with_cl in (False, True):
            for sent in ("chunked", "plain"):
                for comp in (False, True):
                    data = gz if comp else EICAR
                    f = FILE_FIELDS + fields + (gzf if comp else b"")
                    b = chunks_of(data) if sent == "chunked" else data
                    if with_cl:
                        f += cl(100, b)
                    name = "te-%s%s-%s%s" % (order, "-cl" if with_cl else "", sent,
                                             "-gzip" if comp else "")
                    add(name, "Transfer-Encoding fields %s%s, sent %s%s" % (
                        order, " and Content-Length" if with_cl else "", sent,
                        " gzipped" if comp else ""), response(fields=f, body=b))
    add("te-cl-plain", "chunked and Content-Length, not sent chunked",
        response(fields=FILE_FIELDS + te + cl(100, EICAR), body=EICAR))
    add("te-cl-plain-gzip", "chunked and Content-Length, not sent chunked, gzipped",
        response(fields=FILE_FIELDS + te + cl(100, gz) + gzf, body=gz))

    # Hiding the field name.
    for label, sep in (("space", b" "), ("tab", b"\t"), ("cr", b"\r"), ("colon", b":")):
        f = FILE_FIELDS + b"Connection: close\r\nTransfer-Encoding" + sep + b": chunked\r\n"
        add("te-name-%s-colon" % label, "'Transfer-Encoding%r:', sent chunked" % sep,
            response(fields=f, body=body5))
        add("te-name-%s-colon-plain" % label, "'Transfer-Encoding%r:', not sent chunked" % sep,
            response(fields=f, body=EICAR))
    for label, sep in (("cr", b"\r"), ("crx", b"\rx"), ("lf", b"\n")):
        f = FILE_FIELDS[:-2] + sep + b"Transfer-Encoding: chunked\r\nConnection: close\r\n"
        add("te-after-%s-only" % label, "Transfer-Encoding after a %r line end, sent chunked"
            % sep, response(fields=f, body=body5))
        add("te-after-%s-only-plain" % label,
            "Transfer-Encoding after a %r line end, not sent chunked" % sep,
            response(fields=f, body=EICAR))

    # Bad chunk framing.
    for label, eol in (("lf", b"\n"), ("cr", b"\r"), ("crcr", b"\r\r"), ("lflf", b"\n\n"),
                       ("lfcr", b"\n\r")):
        add("eol-" + label, "chunk lines ended by %r" % eol,
            response(fields=FILE_FIELDS + te, body=chunks_of(EICAR, eol=eol,
                                                            final=b"0" + eol + eol)))
    add("no-last-chunk", "no last chunk, the connection closes",
        response(fields=FILE_FIELDS + te, body=chunks_of(EICAR, final=None)))
    add("eof-in-chunk", "the last chunk announces more than is sent",
        response(fields=FILE_FIELDS + te, body=chunks_of(EICAR, final=None, last_cut=True)))
    for label, pre in (("space", b" "), ("lf", b"\n"), ("cr", b"\r"), ("crlf", b"\r\n")):
        add(label + "-before-chunks", "%r before the first chunk" % pre,
            response(fields=FILE_FIELDS + te, body=pre + body5))
    return out




# --------------------------------------------------------------------------- compressed family

def _encode(data, kinds):
    for k in kinds:
        data = compress_as(k, data)
    return data


def _patch(data, offset, length, op, value):
    """Replace (=), OR (|) or XOR (^) `length` bytes at offset (negative: from the end)."""
    b = bytearray(data)
    if offset < 0:
        offset += len(b)
    if op == "=":
        b[offset:offset + length] = value
    else:
        for i, v in enumerate(value):
            b[offset + i] = (b[offset + i] | v) if op == "|" else (b[offset + i] ^ v)
    return bytes(b)


def compressed():
    out = []

    def add(name, desc, fields, body, length=True, close=False, libhtp=None):
        f = b""
        if length is True:
            f += b"Content-length: %d\r\n" % len(body)
        elif length is not None:
            f += b"Content-length: %d\r\n" % length
        if close:
            f += b"Connection: close\r\n"
        out.append(Variant("compressed", name, desc,
                           response(fields=f + FILE_FIELDS + fields, body=body), libhtp))

    def ce(*values):
        return b"".join(b"Content-Encoding:" + v + b"\r\n" for v in values)

    add("gzip", "Content-Encoding gzip, gzipped", ce(b"gzip"), gzip_of(EICAR))
    add("x-gzip", "Content-Encoding x-gzip, gzipped", ce(b"x-gzip"), gzip_of(EICAR))
    add("deflate", "Content-Encoding deflate, raw deflate", ce(b"deflate"), raw_deflate_of(EICAR))
    add("deflate-mixed-case", "Content-Encoding deFLaTe, raw deflate", ce(b"deFLaTe"),
        raw_deflate_of(EICAR))
    for kind in ("gzip", "deflate"):
        for flush in ("partial", "block", "sync", "full", "finish"):
            add("%s-2parts-%s" % (kind, flush),
                "%s in two parts with a %s flush between them" % (kind, flush), ce(kind.encode()),
                two_part(kind, EICAR, flush))
    add("lzma", "Content-Encoding lzma, LZMA alone format", ce(b"lzma"), lzma_alone_of(EICAR))
    gz_zlib = (bytes([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 2, 0]) + zlib_of(EICAR) +
               (zlib.crc32(EICAR) & 0xFFFFFFFF).to_bytes(4, "little") +
               len(EICAR).to_bytes(4, "little"))
    add("gzip-header-zlib-data", "gzip header around zlib (RFC 1950) data", ce(b"gzip"), gz_zlib)
    add("deflate-as-zlib", "Content-Encoding deflate, zlib data", ce(b"deflate"), zlib_of(EICAR))
    add("deflate-as-zlib-2parts", "Content-Encoding deflate, zlib data in two parts",
        ce(b"deflate"), two_part("zlib", EICAR, "full"))
    # Odd spellings of one coding.
    for label, value, kind in (("fold-gzip", b"\r\n gzip", "gzip"),
                               ("fold-deflate", b"\r\n deflate", "deflate"),
                               ("fold-fold-deflate", b"\r\n \r\n deflate", "deflate"),
                               ("deflate-comma", b"deflate,", "deflate"),
                               ("deflate-fold-comma", b"deflate\r\n ,", "deflate"),
                               ("deflate-fold-comma-fold", b"deflate\r\n ,\r\n ", "deflate")):
        add(label, "Content-Encoding %r, %s" % (value, kind), ce(value),
            compress_as(kind, EICAR), close=b"\r" in value)
    # Compression in Transfer-Encoding.
    add("te-gzip", "Transfer-Encoding gzip, gzipped", b"Transfer-Encoding:gzip\r\n",
        gzip_of(EICAR), close=False)
    add("te-deflate", "Transfer-Encoding deflate, deflated", b"Transfer-Encoding:deflate\r\n",
        raw_deflate_of(EICAR))
    add("te-gzip-ce-gzip", "Transfer-Encoding and Content-Encoding gzip, gzipped twice",
        b"Transfer-Encoding:gzip\r\n" + ce(b"gzip"), gzip_of(gzip_of(EICAR)))
    add("te-gzip-plain", "Transfer-Encoding gzip, not compressed", b"Transfer-Encoding:gzip\r\n",
        EICAR)
    # Several codings: in one field, in several, and bodies that do or do not match them.
    combos = [
        (["gzip", "gzip"], ["gzip", "gzip"]),
        (["deflate", "deflate"], ["deflate", "deflate"]),
        (["gzip", "deflate"], ["gzip", "deflate"]),
        (["deflate", "gzip"], ["deflate", "gzip"]),
        (["gzip", "deflate", "gzip"], ["gzip", "deflate", "gzip"]),
        (["deflate", "gzip", "deflate"], ["deflate", "gzip", "deflate"]),
        (["gzip", "gzip"], ["gzip"]),
        (["gzip", "gzip"], []),
        (["deflate", "deflate"], ["deflate"]),
        (["deflate", "deflate"], []),
        (["gzip", "deflate"], ["deflate", "gzip"]),
        (["gzip", "deflate"], ["deflate"]),
        (["gzip", "deflate"], ["gzip"]),
        (["gzip", "deflate"], []),
        (["deflate", "gzip"], ["gzip", "deflate"]),
        (["deflate", "gzip"], ["gzip"]),
        (["deflate", "gzip"], ["deflate"]),
        (["deflate", "gzip"], []),
    ]
    for codings, applied in combos:
        body = _encode(EICAR, applied)
        cs = [c.encode() for c in codings]
        tag = "%s-as-%s" % ("-".join(codings), "-".join(applied) or "plain")
        add("fields-" + tag, "one field per coding %s, body %s" % (codings, applied or "plain"),
            ce(*cs), body)
        add("list-" + tag, "one field listing %s, body %s" % (codings, applied or "plain"),
            ce(b",".join(cs)), body)
    add("list-fold-deflate-deflate", "'deflate\\r\\n ,\\r\\n deflate', deflated twice",
        ce(b"deflate\r\n ,\r\n deflate"), _encode(EICAR, ["deflate", "deflate"]), close=True)
    add("list-fold-deflate-deflate-fold", "'deflate\\r\\n ,\\r\\n deflate\\r\\n ', deflated twice",
        ce(b"deflate\r\n ,\r\n deflate\r\n "), _encode(EICAR, ["deflate", "deflate"]), close=True)
    add("fields-gzip-deflate+gzip", "fields 'gzip,deflate' and 'gzip', three codings",
        ce(b"gzip,deflate", b"gzip"), _encode(EICAR, ["gzip", "deflate", "gzip"]))
    add("fields-deflate-gzip+deflate", "fields 'deflate,gzip' and 'deflate', three codings",
        ce(b"deflate,gzip", b"deflate"), _encode(EICAR, ["deflate", "gzip", "deflate"]))
    # identity.
    add("identity", "Content-Encoding identity, plain", ce(b"identity"), EICAR)
    add("identity-twice", "two fields identity, plain", ce(b"identity", b"identity"), EICAR)
    add("identity-list", "'identity,identity', plain", ce(b"identity,identity"), EICAR)
    for kind in ("gzip", "deflate"):
        k = kind.encode()
        body = compress_as(kind, EICAR)
        add("identity+%s" % kind, "fields identity and %s" % kind, ce(b"identity", k), body)
        add("identity,%s" % kind, "'identity,%s'" % kind, ce(b"identity," + k), body)
        add("%s+identity" % kind, "fields %s and identity" % kind, ce(k, b"identity"), body)
        add("%s,identity" % kind, "'%s,identity'" % kind, ce(k + b",identity"), body)
    # Names that are not quite a coding.
    add("x-deflate", "Content-Encoding x-deflate, raw deflate", ce(b"x-deflate"),
        raw_deflate_of(EICAR))
    add("x-deflate-zlib", "Content-Encoding x-deflate, zlib", ce(b"x-deflate"), zlib_of(EICAR))
    add("gzipx", "Content-Encoding gzipx, gzipped", ce(b"gzipx"), gzip_of(EICAR))
    add("xgzip", "Content-Encoding xgzip, gzipped", ce(b"xgzip"), gzip_of(EICAR))
    add("gzip-space-x", "Content-Encoding 'gzip x', gzipped", ce(b"gzip x"), gzip_of(EICAR))
    add("x-space-gzip", "Content-Encoding 'x gzip', gzipped", ce(b"x gzip"), gzip_of(EICAR))
    add("deflate-as-gzip", "Content-Encoding deflate, gzipped", ce(b"deflate"), gzip_of(EICAR))
    add("gzip-as-deflate", "Content-Encoding gzip, raw deflate", ce(b"gzip"),
        raw_deflate_of(EICAR))
    for value, label in ((b"deflate", "deflate"), (b"deflate,", "deflate-comma"),
                         (b"deflate\r\n ,", "deflate-fold-comma"),
                         (b"deflate\r\n ,\r\n ", "deflate-fold-comma-fold"),
                         (b"gzip x", "gzip-space-x"), (b"foo", "foo"),
                         (b"=?UTF-8?B?ZGVmbGF0ZQo=?=", "rfc2047-deflate")):
        add("plain-" + label, "Content-Encoding %r, not compressed" % value, ce(value), EICAR,
            close=b"\r" in value)
    add("deflate+gzip-x", "fields deflate and 'gzip x', deflated", ce(b"deflate", b"gzip x"),
        raw_deflate_of(EICAR))
    add("gzip-x+deflate", "fields 'gzip x' and deflate, deflated", ce(b"gzip x", b"deflate"),
        raw_deflate_of(EICAR))
    add("rfc2047-deflate", "RFC 2047 encoded 'deflate', deflated",
        ce(b"=?UTF-8?B?ZGVmbGF0ZQo=?="), raw_deflate_of(EICAR))
    # Hiding the field.
    for kind in ("deflate", "gzip"):
        k = kind.encode()
        body = compress_as(kind, EICAR)
        for label, name in (("space-colon", b"Content-Encoding :"),
                            ("colon-colon", b"Content-Encoding::")):
            f = name + b" " + k + b"\r\n"
            add("%s-%s" % (label, kind), "%r %s, compressed" % (name, kind), f, body)
            add("%s-%s-plain" % (label, kind), "%r %s, not compressed" % (name, kind), f, EICAR)
        for label, sep in (("cr-only", b"\r"), ("crx-only", b"\rx"), ("lf-only", b"\n")):
            f = sep + b"Content-Encoding: " + k + b"\r\n"
            # The line end before the field is the one of the previous field.
            out.append(Variant(
                "compressed", "%s-%s" % (label, kind),
                "Content-Encoding %s after a %r line end, compressed" % (kind, sep),
                response(fields=b"Content-length: %d\r\n" % len(body) + FILE_FIELDS[:-2] + f,
                         body=body)))
            if label != "crx-only":
                out.append(Variant(
                    "compressed", "%s-%s-plain" % (label, kind),
                    "Content-Encoding %s after a %r line end, not compressed" % (kind, sep),
                    response(fields=b"Content-length: %d\r\n" % len(EICAR) + FILE_FIELDS[:-2] +
                             f, body=EICAR)))
        for label, value in (("cr", b"\r" + k), ("cr-space", b"\r " + k)):
            add("value-%s-%s" % (label, kind), "Content-Encoding:%r, compressed" % value,
                ce(value), body, close=True)
            add("value-%s-%s-plain" % (label, kind), "Content-Encoding:%r, not compressed" % value,
                ce(value), EICAR, close=True)
    # gzip headers and trailers tampered with, also behind hidden fields.
    gz = gzip_of(EICAR)
    edits = [
        ("magic", [(0, 2, "=", b"\x1f\x8c")], "wrong magic"),
        ("method", [(2, 1, "=", b"\x88")], "compression method 0x88"),
        ("ftext", [(3, 1, "|", b"\x01")], "FTEXT flag"),
        ("fhcrc-missing", [(3, 1, "|", b"\x02")], "FHCRC flag without the CRC"),
        ("fhcrc-zero", [(3, 1, "|", b"\x02"), (10, 0, "=", b"\0\0")], "FHCRC with CRC 0"),
        ("fextra-0", [(3, 1, "|", b"\x04"), (10, 0, "=", b"\0\0")], "FEXTRA, XLEN 0"),
        ("fextra-5", [(3, 1, "|", b"\x04"), (10, 0, "=", b"\x05\x00Ap\x01\x00\x00")],
         "FEXTRA, XLEN 5"),
        ("fname", [(3, 1, "|", b"\x08"), (10, 0, "=", b" \0")], "FNAME with a short name"),
        ("fcomment", [(3, 1, "|", b"\x10"), (10, 0, "=", b" \0")], "FCOMMENT"),
        ("reserved-20", [(3, 1, "|", b"\x20")], "reserved flag 0x20"),
        ("reserved-40", [(3, 1, "|", b"\x40")], "reserved flag 0x40"),
        ("reserved-80", [(3, 1, "|", b"\x80")], "reserved flag 0x80"),
        ("bad-crc", [(-8, 4, "^", b"\xff\xff\xff\xff")], "wrong CRC in the trailer"),
        ("bad-length", [(-4, 1, "^", b"\xff")], "wrong length in the trailer"),
        ("no-length", [(-4, 4, "=", b"")], "no length in the trailer"),
        ("no-trailer", [(-8, 8, "=", b"")], "no trailer"),
    ]
    hides = [("", b"Content-Encoding:gzip\r\n", False),
             ("cr-", b"Content-Encoding:\r gzip\r\n", True),
             ("space-colon-", b"Content-Encoding : gzip\r\n", False)]
    for prefix, field, close in hides:
        for label, ops, desc in edits:
            if prefix and label in ("magic", "method"):
                continue
            body = gz
            for op in ops:
                body = _patch(body, *op)
            add("gz-%s%s" % (prefix, label), "gzip, %s (field %r)" % (desc, field), field, body,
                close=close)
    for label, ops, extra, length in (("no-length-cl-4", [(-4, 4, "=", b"")], 4, True),
                                      ("no-trailer-cl-8", [(-8, 8, "=", b"")], 8, True),
                                      ("no-length-close", [(-4, 4, "=", b"")], 0, None),
                                      ("no-trailer-close", [(-8, 8, "=", b"")], 0, None)):
        body = gz
        for op in ops:
            body = _patch(body, *op)
        add("gz-" + label, "gzip, %s; Content-Length %s" % (
            label, "as the original" if length else "absent (close)"), b"Content-Encoding:gzip\r\n",
            body, length=(len(body) + extra) if length else None, close=True)
    add("gz-lf-before-body", "gzip body after a LF", b"Content-Encoding:gzip\r\n", b"\n" + gz)
    return out


# --------------------------------------------------------------------------- clen family

def clen():
    out = []
    n = len(EICAR)

    def add(name, desc, cl_fields, body, libhtp=None):
        f = FILE_FIELDS + b"Connection: close\r\n" + cl_fields
        out.append(Variant("clen", name, desc, response(fields=f, body=body), libhtp))

    def cl(value):
        return b"Content-length: " + value + b"\r\n"
    junk = EICAR + b"X" * n
    half, full, double = b"%d" % (n // 2), b"%d" % n, b"%d" % (2 * n)
    add("one", "one Content-Length, then close", cl(full), EICAR)
    add("none", "no Content-Length, body until close", b"", EICAR)
    add("one-junk", "one Content-Length, junk after the body, then close", cl(full), junk)
    add("two-junk", "the right Content-Length twice, junk after the body", cl(full) * 2, junk)
    add("double", "Content-Length twice the body, close after it", cl(double), EICAR)
    add("half", "Content-Length half the body, close after it", cl(half), EICAR)
    for tag, a, b, body in (("half-full", half, full, EICAR), ("full-half", full, half, EICAR),
                            ("double-full", double, full, junk),
                            ("full-double", full, double, junk)):
        add("fields-" + tag, "two Content-Length fields %s" % tag, cl(a) + cl(b), body)
        add("te-junk-fields-" + tag, "two Content-Length fields %s, a junk Transfer-Encoding"
            % tag, b"Transfer-Encoding: lalala\r\n" + cl(a) + cl(b), body)
    add("fold-full-double", "Content-Length full with a folded empty part, and double",
        cl(b"\r\n " + full) + cl(double), junk)
    add("te-junk-fold-full-double", "the same with a junk Transfer-Encoding",
        b"Transfer-Encoding: lalala\r\n" + cl(b"\r\n " + full) + cl(double), junk)
    for tag, value, body in (
            ("half-fold-full", half + b"\r\n " + full, EICAR),
            ("half-full", half + b" " + full, EICAR),
            ("half-comment-full", half + b"( " + full + b")", EICAR),
            ("full-fold-half", full + b"\r\n " + half, EICAR),
            ("full-half", full + b" " + half, EICAR),
            ("comment-full-half", b"(" + full + b") " + half, EICAR),
            ("full-fold-double", full + b"\r\n " + double, junk),
            ("full-comment-double", full + b"( " + double + b")", junk),
            ("double-fold-full", double + b"\r\n " + full, junk),
            ("comment-double-full", b"(" + double + b") " + full, junk)):
        add("value-" + tag, "Content-Length value %r" % value, cl(value), body)
    for tag, value in (("semicolon-len", b";" + full), ("len-semicolon", full + b";"),
                       ("comma-len", b"," + full), ("len-comma", full + b","),
                       ("len-comma-len", full + b"," + full), ("quoted", b'"' + full + b'"'),
                       ("len-A", full + b"A"), ("A-len", b"A" + full),
                       ("len-space-A", full + b" A"), ("A-space-len", b"A " + full),
                       ("nbsp-len", b"\xa0" + full), ("len-nbsp", full + b"\xa0"),
                       ("len-dot0", full + b".0"), ("len-dot9", full + b".9")):
        add("odd-" + tag, "Content-Length %r, junk after the body" % value, cl(value), junk)
    return out


# --------------------------------------------------------------------------- broken family

def _broken_response(status=b"HTTP/1.1 200 ok", extra=b"", framing="clen", comp=None,
                     before=b"", file_last=False, no_tail=False, line_end=None, head_end=None):
    """The broken family's answer: the file's fields, "Connection: close", `extra` (raw), a
    harmless field and the framing field; framing: "clen" (Content-Length), "chunked" (4-byte
    chunks, no field added: `extra` names it or not) or "close". comp: gzip / deflate applied
    to the body (the field, if any, is in `extra`). before: bytes before the status line.
    file_last: the file's fields after the others. no_tail: neither the harmless field nor
    Content-Length. line_end: every CRLF (or LF) of the head written as this instead.
    head_end: the head's final line ends (the CRLF of the last field and the empty line)
    written as this instead."""
    body = EICAR if comp is None else compress_as(comp, EICAR)
    if framing == "chunked":
        body = chunks_of(body, 4)
    fields = b"Connection: close\r\n" + extra
    if not no_tail:
        fields += b"Yet-another-header: foo\r\n"
        if framing == "clen":
            fields += b"Content-length: %d\r\n" % len(body)
    fields = fields + FILE_FIELDS if file_last else FILE_FIELDS + fields
    head = before + status + b"\r\n" + fields + b"\r\n"
    if line_end is not None:
        head = re.sub(rb"\r?\n", lambda m: line_end, head)
    if head_end is not None:
        head = re.sub(rb"[\r\n]+\Z", lambda m: head_end, head)
    return head + body


def broken():
    out = []

    def add(name, desc, resp, libhtp=None):
        out.append(Variant("broken", name, desc, resp, libhtp))
    R = _broken_response
    TE = b"Transfer-Encoding: chunked\r\n"
    add("ok", "a valid answer with Content-Length", R())
    add("http09", "an HTTP/0.9 answer: the file without any head", EICAR)
    for tag, pre in (("lf", b"\n"), ("lf-lf", b"\n\n"), ("HTT-lf-lf", b"HTT\n\n"),
                     ("HTTP-lf-lf", b"HTTP\n\n"), ("hTtp-lf-lf", b"hTtp\n\n"),
                     ("HTTP-lf", b"HTTP\n"), ("hTtp-lf", b"hTtp\n"),
                     ("HTTP-slash-lf-lf", b"HTTP/\n\n"), ("HTTP-dot-lf-lf", b"HTTP.\n\n"),
                     ("HTTPx-lf-lf", b"HTTPx\n\n"),
                     ("status100-lf-lf", b"HTTP/1.1 100 ok\n\n"),
                     ("status+100-lf-lf", b"HTTP/1.1 +100 ok\n\n")):
        add("http09-after-" + tag, "the file without a head, after %r" % pre, pre + EICAR)

    # Junk around Transfer-Encoding.
    add("te-then-del-line", "Transfer-Encoding then a line \\177, sent chunked",
        R(extra=TE + b"\x7f\r\n", framing="chunked"))
    for where, file_last, pre in (("first", True, b""), ("after-field", False, b"X-Foo: bar\r\n")):
        for label, ws in (("space", b" "), ("tab", b"\t")):
            extra = pre + ws + TE
            add("te-%s-folded-%s" % (label, where),
                "%r + Transfer-Encoding as a continuation (%s), sent chunked" % (ws, where),
                R(extra=extra, framing="chunked", file_last=file_last))
            add("te-%s-folded-%s-clen" % (label, where),
                "the same, not sent chunked (Content-Length)",
                R(extra=extra, framing="clen", file_last=file_last))
            if where == "first":
                add("te-%s-folded-%s-close" % (label, where),
                    "the same, not sent chunked, no Content-Length",
                    R(extra=extra, framing="close", file_last=file_last))
    junk_lines = [
        ("8bit-name", "L\xf6chriger-H\xe4ddar: foobar\r\n".encode("utf-8"), "a field name in UTF-8"),
        ("binary-value", b"foo:b\x01ar\r\n", "a value with \\001"),
        ("nul-value", b"foo:b\x00ar\r\n", "a value with NUL"),
        ("8bit-value", b"foo:b\x80ar\r\n", "a value with \\200"),
        ("colon-only", b": foo\r\n", "a field with an empty name"),
        ("del-line", b"\x7f\r\n", "a line \\177"),
        ("nul-line", b"\x00\r\n", "a line NUL"),
        ("junk-line", b"qutqzdafsdshadsdfdshsdd sddfd\r\n", "a junk line without colon"),
        ("space-name", b"Foo Bar: foobar\r\n", "a field name with a space"),
        ("folded-field", b"FooBar: foobar\r\n     barfoot\r\n", "a folded field"),
        ("cr-line", b"\r\r\n", "a line of one CR"),
        ("lf-line", b"\n\r\n", "a line LF CRLF"),
        ("crcr-line", b"\r\r\r\n", "a line CR CR CRLF"),
        ("lfcr-line", b"\n\r\r\n", "a line LF CR CRLF"),
    ]
    for label, line, desc in junk_lines:
        add("%s-then-te" % label, "%s, then Transfer-Encoding, sent chunked" % desc,
            R(extra=line + TE, framing="chunked"))
        if label not in ("cr-line", "lf-line", "crcr-line", "lfcr-line"):
            add("%s-then-te-clen" % label, "%s, then Transfer-Encoding, not sent chunked" % desc,
                R(extra=line + TE, framing="clen"))
    for label, pre in (("crcr", b"\r\r"), ("cr-space-cr", b"\r \r"), ("lflf", b"\n\n"),
                       ("lf-space-lf", b"\n \n"), ("crlf-space-crlf", b"\r\n \r\n")):
        add("te-after-%s" % label, "Transfer-Encoding after %r, sent chunked" % pre,
            R(extra=pre + TE, framing="chunked"))
        add("te-after-%s-clen" % label, "Transfer-Encoding after %r, not sent chunked" % pre,
            R(extra=pre + TE, framing="clen"))
    # Transfer-Encoding and Content-Encoding fields with odd bytes in name or value.
    te_odd = [
        (b":chu\x00nked", True), (b":chu\r\n nked", True), (b":chu\r\n nked", False),
        (b":chu\r\nnked", True), (b":chu\r\nnked", False), (b"\x00:chunked", True),
        (b" \t \t :chunked", True), (b"\x0b:chunked", True), (b"\x0c:chunked", True),
        (b"\n :chunked", True), (b"\r :chunked", True), (b"\r\n :chunked", True),
        (b"\r\n :\r\n chunked", True), (b"\r\n \r\n :\r\n chunked", True),
        (b"\n\x00:chunked", True), (b":,chunked", True), (b":;chunked", True),
        (b":\x00chunked", True), (b":\x0bchunked", True), (b":\x0cchunked", True),
        (b":\xa0chunked", True), (b":\n\x00chunked", True), (b":\n\x0bchunked", True),
        (b":\n\x0cchunked", True), (b":\n\xa0chunked", True), (b":chunked,", True),
        (b":chunked;", True), (b":chunked\x00", True), (b":\x7fchunked", True),
        (b":chunked\x7f", True), (b":chu\x7fnked", True), (b":\xef\xbb\xbfchunked", True),
        (b":\xc2\x84chunked", True)]
    for i, (rest, chunked_body) in enumerate(te_odd):
        add("te-odd-%02d%s" % (i, "" if chunked_body else "-clen"),
            "'Transfer-Encoding%r', %s" % (rest, "sent chunked" if chunked_body
                                            else "not sent chunked"),
            R(extra=b"Transfer-Encoding" + rest + b"\r\n",
              framing="chunked" if chunked_body else "clen"))
    for i, raw in enumerate((b"Transfer\x00-encoding:chunked\r\n",
                             b"Transfer\x00-encoding:chun\x00ked\r\n")):
        add("te-nul-name-%d" % i, "field %r, sent chunked" % raw, R(extra=raw, framing="chunked"))
    for kind in ("gzip", "deflate"):
        k = kind.encode()
        mid = k[:len(k) // 2] + b"\x00" + k[len(k) // 2:]
        odd = [b":" + mid, b"\x00:" + k, b"\r\n :" + k, b"\r\n :\r\n " + k, b"\x0b:" + k,
               b"\x0c:" + k, b":," + k, b":;" + k, b":\x00" + k, b":\x0b" + k, b":\x0c" + k,
               b":\xa0" + k, b":\n\x00" + k, b":\n\x0b" + k, b":\n\x0c" + k, b":\n\xa0" + k,
               b":" + k + b",", b":" + k + b";", b":" + k + b"\x00", b":" + k + b"\x0b",
               b":" + k + b"\x0c", b":" + k + b"\xa0"]
        for i, rest in enumerate(odd):
            add("ce-odd-%s-%02d" % (kind, i), "'Content-Encoding%r', %s" % (rest, kind),
                R(extra=b"Content-Encoding" + rest + b"\r\n", comp=kind))
        add("ce-nul-name-%s" % kind, "field 'Content\\0-encoding: %s'" % kind,
            R(extra=b"Content\x00-encoding:" + k + b"\r\n", comp=kind))

    # Broken heads.
    for label, extra in (("empty-fold", b"Foo: bar\r\n \r\n"),
                         ("8bit-name", "L\xf6chriger-H\xe4ddar: foobar\r\n".encode("utf-8")),
                         ("colon-only", b": foo\r\n"), ("nul-line", b"\x00\r\n"),
                         ("del-line", b"\x7f\r\n"), ("junk-line", b"qutqzdafsdshadsdfdshsdd sd\r\n"),
                         ("space-name", b"Foo Bar: foobar\r\n"), ("cr-line", b"\r\r\n"),
                         ("lf-line", b"\n\r\n"), ("crcr-line", b"\r\r\r\n"),
                         ("lfcr-line", b"\n\r\r\n")):
        add("head-" + label, "a head with %r" % extra, R(extra=extra))
    add("head-del-line-only", "a line \\177 and then the body (until close)",
        R(extra=b"\x7f\r\n", no_tail=True))
    add("status-code-only", "status line without reason phrase", R(status=b"HTTP/1.1 200"))
    add("status-lower-http", "http/1.1 instead of HTTP/1.1", R(status=b"http/1.1 200 ok"))
    for ver in (b"HTTP/0.9", b"HTTP/1.10", b"HTTP/1.00", b"HTTP/1.01", b"HTTP/1.2", b"HTTP/2.0",
                b"HTTP/1.1 ", b"HTTP/1.1\t", b"HTTP/1.1\r", b"HTTP/1.1\n", b" HTTP/1.1",
                b"FTP/1.1", b"ICY", b"HTTP\\1.1"):
        add("version-" + slug(ver), "status line version %r" % ver, R(status=ver + b" 200 ok"))
    add("version-ICY-gzip", "version ICY, gzipped",
        R(status=b"ICY 200 ok", extra=b"Content-Encoding: gzip\r\n", comp="gzip"))
    for ver in (b"HTTP/1.010", b"HTTP/+1.+1", b"HTTP/1A.1B", b"HTTP/2.B", b"HTTP/9.-1",
                b"HTTP/1 .1"):
        add("version-%s-chunked" % slug(ver), "version %r, chunked" % ver,
            R(status=ver + b" 200 ok", extra=TE, framing="chunked"))
        add("version-%s-te-clen" % slug(ver), "version %r, Transfer-Encoding but not chunked" % ver,
            R(status=ver + b" 200 ok", extra=TE, framing="clen"))
    add("version-A.B-gzip", "version HTTP/A.B, gzipped",
        R(status=b"HTTP/A.B 200 ok", extra=b"Content-Encoding: gzip\r\n", comp="gzip"))
    add("status-no-code", "'HTTP/1.1' without code", R(status=b"HTTP/1.1"))
    for head in (b"HTTP/1.1", b"HTTP/1.1 200", b"HTTP/1.1 200 ", b"HTTP/1.1 200 ok"):
        for sep, sl in ((b"\r", "cr"), (b"\n", "lf"), (b"\r\n", "crlf")):
            if sep == b"\r\n" and head != b"HTTP/1.1":
                continue
            for framing in ("clen", "chunked"):
                add("status-%s-%s-te-%s" % (slug(head), sl, framing),
                    "%r then Transfer-Encoding after %r, %s" % (head, sep, framing),
                    R(status=head + sep + b"Transfer-Encoding:chunked", framing=framing))
    for i, st in enumerate((b"\x00HTTP/1.1 200 ok", b"HTT\x00P/1.1 200 ok", b"HTTP/1\x00.1 200 ok",
                            b"HTTP/1.1\x00 200 ok", b"HTTP/1.1 2\x0000 ok", b"HTTP/1.1 200\x00 ok",
                            b"HTTP/1.1\x00200\x00ok", b"HTTP/1.1\x0b200\x0bok",
                            b"HTTP/1.1 -65336 ", b"HTTP/1.1foobar", b"HTTP/1.foobar",
                            b"HTTP/1foobar", b"HTTP/foobar", b"HTTP/", b"HTTP",
                            b"HTTP/1.1\t204 ok", b"HTTP/1.1\t304 ok", b"HTTP/1.1    204 ok",
                            b"HTTP/1.1    304 ok", b"HTTP\\1.1 200 ok")):
        add("status-odd-%02d" % i, "status line %r, chunked" % st,
            R(status=st, extra=TE, framing="chunked"))
    add("status-foobar-cr-te", "'HTTP/1.1foobar' CR Transfer-Encoding, chunked",
        R(status=b"HTTP/1.1foobar\rTransfer-Encoding:chunked", framing="chunked"))
    for framing in ("clen", "chunked"):
        add("status-is-te-%s" % framing, "no status line, Transfer-Encoding first, %s" % framing,
            R(status=b"Transfer-Encoding:chunked", framing=framing))
    # Line ends.
    for te in (False, True):
        for label, le, he in (("cr", b"\r", None), ("cr-end-crlflf", b"\r", b"\r\n\n"),
                              ("cr-end-crlfcrlf", b"\r", b"\r\n\r\n"), ("lf", b"\n", None),
                              ("crcr", b"\r\r", None), ("crcr-end-crlfcrlf", b"\r\r", b"\r\n\r\n"),
                              ("lfcr", b"\n\r", None), ("lfcr-end-crlfcrlf", b"\n\r", b"\r\n\r\n"),
                              ("cr-nul-lf", b"\r\x00\n", None),
                              ("lfcrcrlf-end-crlfcrlf", b"\n\r\r\n", b"\r\n\r\n")):
            if not te and label in ("crcr-end-crlfcrlf", "lfcr-end-crlfcrlf",
                                    "lfcrcrlf-end-crlfcrlf"):
                continue
            add("eol-%s%s" % (label, "-chunked" if te else ""),
                "head lines ended by %r%s%s" % (le, ", head ended by %r" % he if he else "",
                                               ", chunked" if te else ""),
                R(extra=TE if te else b"", framing="chunked" if te else "clen", line_end=le,
                  head_end=he))
    for label, he in (("crcr", b"\r\r"), ("crlf-nul-crlf", b"\r\n\x00\r\n"),
                      ("cr-nul-crlf", b"\r\x00\r\n"), ("lflf", b"\n\n"), ("lfcrlf", b"\n\r\n"),
                      ("lfcrcrlf", b"\n\r\r\n"), ("lfcrcrlfcrlf", b"\n\r\r\n\r\n"),
                      ("lf-sp-lf", b"\n \n"), ("lf-sp-lflf", b"\n \n\n"),
                      ("crlf-sp-crlfcrlf", b"\r\n \r\n\r\n"), ("lf-sp-dot-lf", b"\n .\n"),
                      ("lf-tab-lf", b"\n\t\n"), ("lf-tab-lflf", b"\n\t\n\n"),
                      ("crlf-tab-crlfcrlf", b"\r\n\t\r\n\r\n"), ("lf-vt-lf", b"\n\x0b\n"),
                      ("lf-vt-lflf", b"\n\x0b\n\n"), ("crlf-vt-crlfcrlf", b"\r\n\x0b\r\n\r\n")):
        variants_of = [("", {})]
        if label in ("lflf", "lfcrlf", "lfcrcrlf", "lfcrcrlfcrlf") or "-sp-" in label or \
                "-tab-" in label or "-vt-" in label:
            if label != "lf-sp-dot-lf":
                variants_of += [("-chunked", {"extra": TE, "framing": "chunked"}),
                                ("-gzip", {"extra": b"Content-Encoding: gzip\r\n",
                                           "comp": "gzip"})]
        for suffix, kw in variants_of:
            add("head-end-%s%s" % (label, suffix), "head ended by %r%s" % (he, suffix),
                R(head_end=he, **kw))
    # Status codes.
    for code in (b"300", b"301", b"302", b"303", b"305", b"307", b"308", b"100", b"101",
                 b"102", b"204", b"205", b"206", b"304", b"401", b"407", b"400", b"403",
                 b"404", b"406", b"500", b"502", b"000", b"600", b"700", b"800", b"900",
                 b"2xx", b"20x", b"2", b"20", b"2000", b"0200", b" 200", b"\t200", b"299",
                 b"0204", b"2040", b"0304", b"3040"):
        add("code-" + slug(code), "status %r with a body" % code, R(status=b"HTTP/1.1 " + code + b" ok"))
    for code in (b"204", b"304"):
        add("code-%s-chunked" % code.decode(), "status %s with a chunked body" % code.decode(),
            R(status=b"HTTP/1.1 " + code + b" ok", extra=TE, framing="chunked"))
    for label, pre in (("100", b"HTTP/1.1 100 whatever\r\n\r\n"),
                       ("100-body", b"HTTP/1.1 100 whatever\r\nContent-length: 4\r\n\r\nfooo"),
                       ("-65436", b"HTTP/1.1 -65436 whatever\r\n\r\n"),
                       ("-65436-body", b"HTTP/1.1 -65436 whatever\r\nContent-length: 4\r\n\r\nfooo")):
        add("interim-%s" % label, "%r before the real answer" % pre, R(before=pre))
    # Bytes before the status line.
    for label, pre in (("crlf", b"\r\n"), ("crlf-crlf", b"\r\n\r\n"), ("space-crlf", b" \r\n"),
                       ("space-tab-crlf", b" \t\r\n"), ("space-crlf-tab-crlf", b" \r\n\t\r\n"),
                       ("space-tab-cr-crlf", b" \t\r\r\n"), ("foobar-crlf", b"foobar\r\n"),
                       ("sip-crlf", b"SIP/2.0 200 ok\r\n"), ("space-foobar-crlf", b" foobar\r\n"),
                       ("space-sip-crlf", b" SIP/2.0 200 ok\r\n"), ("cr", b"\r"),
                       ("cr-cr", b"\r\r"), ("space-cr", b" \r"), ("lf", b"\n"), ("lf-lf", b"\n\n"),
                       ("space-lf", b" \n"), ("lfcr", b"\n\r"), ("H", b"H"), ("HT", b"HT"),
                       ("HTT", b"HTT"), ("HTTX", b"HTTX"), ("HTTXY", b"HTTXY")):
        add("before-%s" % label, "%r before the status line, chunked" % pre,
            R(before=pre, extra=TE, framing="chunked"))
    # libhtp drops a junk line where the status line is due only when the data at hand goes
    # on with 'H' (http-evader 487, in one segment: the file keeps its Content-Disposition
    # name). Cut inside the junk, the line ends in the next segment: dropped too. Alone in its
    # segment it is body (the file is named after the URI; libhtp would end that transaction
    # there and take the answer as the next one's).
    pre = b" foobar\r\n"
    resp = R(before=pre, extra=TE, framing="chunked")
    out.append(Variant("broken", "before-space-foobar-crlf-alone",
                       "%r alone in a segment before the status line, chunked" % pre, resp,
                       split=[len(pre)]))
    out.append(Variant("broken", "before-space-foobar-crlf-cut",
                       "%r before the status line, cut after 4 bytes, chunked" % pre, resp,
                       split=[4]))
    return out


# --------------------------------------------------------------------------- mime, rfc822, range

def others():
    out = []
    b64 = base64.encodebytes(EICAR)

    def mime(name, desc, resp, libhtp=None):
        out.append(Variant("mime", name, desc, resp, libhtp))
    ok = b"HTTP/1.1 200 ok\r\n"
    mime("single", "one part", ok + b"Content-length: %d\r\n\r\n" % len(EICAR) + EICAR)
    mime("single-cte-b64-plain", "Content-Transfer-Encoding base64, data not encoded",
         ok + b"Content-transfer-Encoding: base64\r\nContent-length: %d\r\n\r\n" % len(EICAR) +
         EICAR)
    mime("single-cte-b64", "Content-Transfer-Encoding base64, data encoded",
         ok + b"Content-transfer-Encoding: base64\r\nContent-length: %d\r\n\r\n" % len(b64) + b64)
    for mtype, label in ((b"multipart/mixed", "mixed"), (b"multipart/related", "related"),
                         (b"text/plain", "plain-multi")):
        for cte in (False, True):
            data = b64 if cte else EICAR
            part = FILE_FIELDS + (b"Content-transfer-Encoding: base64\r\n" if cte else b"")
            part += b"Content-length: %d\r\n\r\n" % len(data) + data + b"\r\n"
            body = (b"\r\n--foobar\r\nContent-Location: p1\r\n" + part +
                    b"--foobar\r\nContent-Location: p2\r\n" + part + b"--foobar--\r\n")
            mime("%s%s" % (label, "-b64" if cte else ""),
                 "two parts in %s%s" % (mtype.decode(), ", base64" if cte else ""),
                 ok + b"Content-type: " + mtype + b"; boundary=foobar\r\nContent-length: %d\r\n\r\n"
                 % len(body) + body)

    def rfc(name, desc, resp, libhtp=None):
        out.append(Variant("messagerfc822", name, desc, resp, libhtp))
    gz = gzip_of(EICAR)

    def v10(fields, data):
        return b"HTTP/1.0 200 ok\r\n" + fields + b"Content-length: %d\r\n\r\n" % len(data) + data
    rfc("plain", "plain data", v10(FILE_FIELDS, EICAR))
    rfc("gzip", "Content-Encoding gzip", v10(FILE_FIELDS + b"Content-Encoding: gzip\r\n", gz))
    for label, inner_fields, data in (
            ("packed", FILE_FIELDS, EICAR),
            ("packed-b64", FILE_FIELDS + b"Content-Transfer-Encoding: base64\r\n", b64 + b"\r\n"),
            ("packed-gzip", FILE_FIELDS + b"Content-Encoding: gzip\r\n", gz)):
        inner = inner_fields + b"Content-length: %d\r\n\r\n" % len(data) + data + b"\r\n"
        rfc(label, "the file in a message/rfc822 body (%s)" % label,
            v10(b"Content-type: message/rfc822\r\n", inner))

    def rng(name, desc, resp, libhtp=None):
        out.append(Variant("range", name, desc, resp, libhtp))
    rng("full", "all data at once",
        ok + b"Content-length: %d\r\n" % len(EICAR) + FILE_FIELDS + b"\r\n" + EICAR)
    rng("first-byte-206", "206 with the first byte only",
        b"HTTP/1.1 206 partial content\r\nContent-length: 1\r\nAccept-Ranges: bytes\r\n"
        b"Content-Range: bytes 0-0/%d\r\n" % len(EICAR) + FILE_FIELDS + b"\r\n" + EICAR[:1])
    rng("first-byte-200", "200 announcing the whole file, the first byte sent",
        ok + b"Content-length: %d\r\n" % len(EICAR) + FILE_FIELDS + b"\r\n" + EICAR[:1])
    return out


# --------------------------------------------------------------------------- not decoded by libhtp

_NO_CHUNK = ("a size line that does not start with a hex digit (after CR/LF/SP/HT/VT/FF) is no "
             "chunk: the body is taken as sent from there, chunk lines and all")
_VT_NO_FOLD = "VT, FF and 0xA0 do not fold a line: the field's value is empty"
_HEADLESS = ("the first line does not start with HTTP: the whole answer is a body as sent, "
             "head and chunk lines included")
_CHUNKS_IN_HEAD = ("no empty line before the chunks: the chunk lines are read as header lines and "
                   "the empty line after the last chunk ends the head (no body left)")
_B64 = "Content-Transfer-Encoding is a MIME coding that HTTP parsers do not decode"

# Variants whose file libhtp does not decode (a browser may still show it): the reason, from
# libhtp's parser (htp_response.c, htp_util.c, htp_decompressors.c) as read for each family.
LIBHTP_NO_DECODE = {
    "chunked/size-then-lf": "the size line ends at the LF, so every chunk's data starts with the "
                            "CR LF meant to end its size line and loses its last two bytes",
    "chunked/crlf-x-crlf-then-size": _NO_CHUNK,
    "chunked/x-then-size": _NO_CHUNK,
    "chunked/comma-then-size": _NO_CHUNK,
    "chunked/semicolon-then-size": _NO_CHUNK,
    "chunked/nul-then-size": _NO_CHUNK + " (NUL is not skipped)",
    "chunked/x-space-then-size": _NO_CHUNK,
    "chunked/te-chu": "Transfer-Encoding without 'chunked': the chunked body is read as sent",
    "chunked/te-rfc2047": "an RFC 2047 encoded value is not 'chunked': the body is read as sent",
    "chunked/te-cr-value": "a lone CR ends the field line: Transfer-Encoding is empty, 'chunked' "
                           "is a line of its own",
    "chunked/ce-chunked": "chunked named in Content-Encoding is no transfer coding",
    "chunked/te-name-cr-colon": "'Transfer-Encoding\\r: chunked': the CR ends the line, there is "
                                "no Transfer-Encoding field",
    "chunked/te-after-crx-only": "the lone CR ends the previous line and the field is named "
                                 "'xTransfer-Encoding'",
    "chunked/eol-cr": "chunk lines without LF: the first size line never ends",
    "chunked/eol-crcr": "chunk lines without LF: the first size line never ends",
    "chunked/eol-lflf": "a size line ends at its first LF: the second LF starts the chunk data "
                        "and the framing slips",
    "chunked/eol-lfcr": "a size line ends at the LF: the CR starts the chunk data and the "
                        "framing slips",
    "compressed/gzip-2parts-finish": "two gzip members back to back: inflating stops at the end "
                                     "of the first (half the file)",
    "compressed/deflate-2parts-finish": "two deflate streams back to back: inflating stops at the "
                                        "end of the first (half the file)",
    "compressed/gzip-header-zlib-data": "zlib data behind a gzip header is neither gzip nor raw "
                                        "deflate: every retry fails and the body passes through "
                                        "compressed",
    "compressed/te-gzip": "a coding named in Transfer-Encoding is not decoded",
    "compressed/te-deflate": "a coding named in Transfer-Encoding is not decoded",
    "compressed/te-gzip-ce-gzip": "gzipped twice but one coding in Content-Encoding: one layer "
                                  "decoded",
    "compressed/rfc2047-deflate": "an RFC 2047 encoded coding name names no coding",
    "compressed/crx-only-deflate": "the lone CR ends the previous line and the field is named "
                                   "'xContent-Encoding'",
    "compressed/crx-only-gzip": "the lone CR ends the previous line and the field is named "
                                "'xContent-Encoding'",
    "compressed/value-cr-deflate": "'Content-Encoding:\\rdeflate': the lone CR ends the line, "
                                   "the value is empty",
    "compressed/value-cr-gzip": "'Content-Encoding:\\rgzip': the lone CR ends the line, the "
                                "value is empty",
    "compressed/gz-magic": "not gzip (magic 1f 8c): inflate fails in every mode libhtp retries, "
                           "the body passes through compressed",
    "compressed/gz-method": "not gzip (method 0x88): inflate fails in every mode libhtp retries, "
                            "the body passes through compressed",
    "compressed/gz-fhcrc-missing": "FHCRC set without its CRC: the header check fails and the "
                                   "retry past a 12-byte header cuts into the deflate data",
    "compressed/gz-cr-fhcrc-missing": "FHCRC set without its CRC (see gz-fhcrc-missing)",
    "compressed/gz-space-colon-fhcrc-missing": "FHCRC set without its CRC (see gz-fhcrc-missing)",
    "compressed/gz-lf-before-body": "a LF before the gzip magic: no mode inflates from the first "
                                    "byte",
    "broken/lf-line-then-te": "the line '\\n\\r\\n' holds an empty line: the head ends before "
                              "Transfer-Encoding",
    "broken/lfcr-line-then-te": "'\\n\\r' then '\\r\\n': an empty line ends the head before "
                                "Transfer-Encoding",
    "broken/te-after-lflf": "an empty line before Transfer-Encoding ends the head",
    "broken/te-after-lf-space-lf": "an empty line before Transfer-Encoding ends the head",
    "broken/te-after-crlf-space-crlf": "an empty line before Transfer-Encoding ends the head",
    "broken/te-odd-01": "the folded value is 'chu nked', not 'chunked'",
    "broken/te-odd-03": "'nked' on a line of its own continues nothing: the value is 'chu'",
    "broken/te-odd-22": _VT_NO_FOLD,
    "broken/te-odd-23": _VT_NO_FOLD,
    "broken/te-odd-24": _VT_NO_FOLD,
    "broken/te-odd-30": "'chu\\x7fnked' does not contain 'chunked'",
    "broken/ce-odd-gzip-13": _VT_NO_FOLD,
    "broken/ce-odd-gzip-14": _VT_NO_FOLD,
    "broken/ce-odd-gzip-15": _VT_NO_FOLD,
    "broken/ce-odd-deflate-13": _VT_NO_FOLD,
    "broken/ce-odd-deflate-14": _VT_NO_FOLD,
    "broken/ce-odd-deflate-15": _VT_NO_FOLD,
    "broken/version-ICY-gzip": _HEADLESS + " (not decompressed)",
    "broken/status-odd-01": _HEADLESS + " ('HTT\\0P')",
    "broken/status-is-te-chunked": _HEADLESS,
    "broken/eol-cr-chunked": _CHUNKS_IN_HEAD,
    "broken/eol-crcr-chunked": _CHUNKS_IN_HEAD,
    "broken/eol-cr-nul-lf-chunked": _CHUNKS_IN_HEAD,
    "broken/head-end-lf-vt-lf-chunked": _CHUNKS_IN_HEAD,
    "broken/eol-lfcrcrlf-end-crlfcrlf-chunked": "'\\n\\r' then '\\r\\n' is an empty line: the "
                                                "head ends after its first field",
    "broken/head-end-lf-vt-lf-gzip": "no empty line ends the head: the gzip bytes are header "
                                     "lines up to the close, only the tail after their last LF "
                                     "is body",
    "broken/code-101": "101 Switching Protocols: what follows is not HTTP",
    "broken/before-H": _HEADLESS,
    "broken/before-HT": _HEADLESS,
    "broken/before-HTT": _HEADLESS,
    "broken/before-HTTX": _HEADLESS,
    "broken/before-HTTXY": _HEADLESS,
    "mime/single-cte-b64": _B64,
    "mime/mixed-b64": _B64,
    "mime/related-b64": _B64,
    "mime/plain-multi-b64": _B64,
    "messagerfc822/packed-b64": _B64,
    "messagerfc822/packed-gzip": "a Content-Encoding inside a message/rfc822 body is not decoded",
    "range/first-byte-206": "only the first byte of the file is sent",
    "range/first-byte-200": "only the first byte of the file is sent",
}
