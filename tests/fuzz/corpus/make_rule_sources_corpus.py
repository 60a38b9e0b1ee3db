#!/usr/bin/env python3
"""Writes the seed corpora of rule_source_fuzz (corpus/rule_source/) and rule_policy_fuzz
(corpus/rule_policy/).

rule_source: byte 0 is the kind the caller claims (index into KINDS, which must match kKinds
in tests/fuzz/rule_source_fuzz.cc), the rest an archive as a rule server would send it: tar,
tar.gz and zip of rules and config files (one with a path escape, one with a symlink, one with
a nested directory), and a plain rules file. rule_policy: byte 0 is the file (enable, disable,
drop, modify: kKinds in rule_policy_fuzz.cc), the rest suricata-update policy text.
Files are named by the sha1 of their bytes. Run from anywhere:
python3 tests/fuzz/corpus/make_rule_sources_corpus.py
"""
import hashlib
import io
import os
import sys
import tarfile
import zipfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = ["", "tar.gz", "tar", "zip", "rules"]
RULE = (b'alert tcp any any -> any 80 (msg:"ET SCAN x"; content:"x"; '
        b'classtype:attempted-recon; sid:2000001; rev:1;)\n')


def write(sub, data):
    d = os.path.join(HERE, sub)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def tar(members, gz):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w", format=tarfile.USTAR_FORMAT) as t:
        for name, data, kind in members:
            info = tarfile.TarInfo(name)
            info.mtime = 0
            if kind == "link":
                info.type = tarfile.SYMTYPE
                info.linkname = data.decode()
                t.addfile(info)
            elif kind == "dir":
                info.type = tarfile.DIRTYPE
                t.addfile(info)
            else:
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def zipped(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members:
            z.writestr(name, data)
    return buf.getvalue()


def main():
    plain = [("rules/emerging-scan.rules", RULE, "file"),
             ("rules/classification.config", b"config classification: x,X,1\n", "file"),
             ("rules/reference.config", b"config reference: url http://\n", "file")]
    write("rule_source", bytes([1]) + tar(plain, True))
    write("rule_source", bytes([2]) + tar(plain, False))
    write("rule_source", bytes([0]) + tar(plain, True))
    write("rule_source", bytes([0]) + tar([("rules", b"", "dir")] + plain +
                                          [("rules/sub/more.rules", RULE, "file")], True))
    write("rule_source", bytes([1]) + tar([("../evil.rules", RULE, "file")], True))
    write("rule_source", bytes([1]) + tar([("rules/link.rules", b"/etc/passwd", "link")] + plain,
                                          True))
    write("rule_source", bytes([3]) + zipped([("rules/a.rules", RULE), ("README", b"x")]))
    write("rule_source", bytes([4]) + RULE + b"# " + RULE)
    write("rule_source", bytes([1]) + tar(plain, True)[:60])

    for kind, text in [
            (0, b"2000001\n1:2000002\nre:et scan\ngroup:emerging-*.rules\n"),
            (1, b"# comment\n2000001, 1:2000003\nmetadata: policy balanced-ips drop\n"
                b"classtype:trojan-activity\ngroup:gpl.rules # trailing\n*\n"),
            (2, b"re:(?i)et info\n3:2000004\n"),
            (3, b'2000001 "content:\\"x\\"" "content:\\"y\\""\n'
                b're:gpl "a\\(b\\+\\)c" "\\1\\g<1>$1${1}"\n'
                b"modifysid 2000003 \"drop\" | \"alert\"\n"),
            (1, b"re:(unclosed\nfoo:bar\n"),
    ]:
        write("rule_policy", bytes([kind]) + text)


if __name__ == "__main__":
    main()
