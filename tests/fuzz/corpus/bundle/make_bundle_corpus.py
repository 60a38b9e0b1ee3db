#!/usr/bin/env python3
"""Writes the seed corpus of bundle_fuzz: serialized picket.v1.Bundle messages (encoded with
`protoc --encode`), a manifest.json and a tuning.yaml. Run from the repo root:
    python3 tests/fuzz/corpus/bundle/make_bundle_corpus.py"""
import hashlib
import json
import os
import subprocess

here = os.path.dirname(os.path.abspath(__file__))
files = {
    "rules/a.rules": 'alert tcp any any -> any 80 (msg:"a"; sid:1; rev:1;)\n'
                     '# alert udp any any -> any 53 (msg:"b"; sid:2;)\n',
    "config.yaml": "vars:\n  address-groups:\n    HOME_NET: \"[10.0.0.0/8]\"\n",
    "tuning.yaml": "enable: [2]\nmodify:\n  - {sid: 1, from: 'any 80', to: 'any 8080'}\n",
}


def esc(s):
    return json.dumps(s)  # a valid protobuf text-format string for these ASCII inputs


def bundle_text(version, tamper=False):
    out = ['manifest {', '  name: "seed"', f'  version: {version}', '  author: "fuzz"',
           '  created_at: 1700000000000000000']
    for path in sorted(files):
        content = files[path]
        out.append(f'  files {{ path: {esc(path)} sha256: "{hashlib.sha256(content.encode()).hexdigest()}" '
                   f'size: {len(content)} }}')
    out.append('}')
    for path, content in files.items():
        if tamper:
            content = content.replace("80", "81")
        out.append(f'files {{ path: {esc(path)} content: {esc(content)} }}')
    return "\n".join(out) + "\n"


def encode(text):
    return subprocess.run(
        ["protoc", "--encode=picket.v1.Bundle", "-Iproto", "proto/picket/v1/picket.proto"],
        input=text.encode(), capture_output=True, check=True).stdout


with open(os.path.join(here, "valid.pb"), "wb") as f:
    f.write(encode(bundle_text(3)))
with open(os.path.join(here, "tampered.pb"), "wb") as f:
    f.write(encode(bundle_text(3, tamper=True)))
manifest = {"format": 1, "name": "seed", "version": 3, "parent_version": 2, "author": "fuzz",
            "message": "m", "created_at": 1700000000000000000,
            "files": [{"path": p, "sha256": hashlib.sha256(c.encode()).hexdigest(),
                       "size": len(c)} for p, c in sorted(files.items())],
            "signing_key_id": "", "signature": ""}
with open(os.path.join(here, "manifest.json"), "w") as f:
    json.dump(manifest, f, indent=2)
with open(os.path.join(here, "tuning.yaml"), "w") as f:
    f.write("enable: [2]\ndisable: [\"1:1\"]\nsuppress:\n  - {sid: 1, track: by_src, ip: 10.0.0.0/8}\n"
            "threshold:\n  - {sid: 2, type: limit, track: by_src, count: 1, seconds: 60}\n")
