#!/usr/bin/env python3
"""Writes the seed corpus of csr_fuzz (corpus/csr/) with the openssl command line: CSRs that
pass the manager's checks (P-256, CN a sensor name, with and without requested extensions)
and ones refused for each reason (RSA and P-384 keys, no CN, two CNs, a CN that is not a
sensor name, a signature that does not verify, a damaged PEM). Files are named by the sha1 of
their bytes. Run from anywhere: python3 tests/fuzz/corpus/make_csr_corpus.py
"""
import hashlib
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))


def write(data):
    d = os.path.join(HERE, "csr")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def key(tmp, name, algo, *opts):
    path = os.path.join(tmp, name + ".key")
    subprocess.run(["openssl", "genpkey", "-algorithm", algo, "-out", path] + list(opts),
                   check=True, capture_output=True)
    return path


def csr(key_path, subj, *extra):
    r = subprocess.run(["openssl", "req", "-new", "-key", key_path, "-subj", subj, "-sha256"] +
                       list(extra), check=True, capture_output=True)
    return r.stdout


def main():
    with tempfile.TemporaryDirectory() as tmp:
        ec = key(tmp, "ec", "EC", "-pkeyopt", "ec_paramgen_curve:P-256")
        good = csr(ec, "/O=Picket/OU=sensor/CN=edge-a")
        write(good)
        write(csr(ec, "/CN=node-17.example"))
        write(csr(ec, "/O=Picket/CN=edge-b", "-addext", "subjectAltName=DNS:evil.example",
                  "-addext", "basicConstraints=critical,CA:TRUE"))
        write(csr(key(tmp, "rsa", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"), "/CN=edge-a"))
        write(csr(key(tmp, "p384", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"), "/CN=edge-a"))
        write(csr(ec, "/O=Picket"))
        write(csr(ec, "/CN=a/CN=b"))
        write(csr(ec, "/CN=bad name"))
        write(csr(ec, "/CN=ca"))
        # A flipped byte in the signature (the last bytes of the DER) no longer verifies.
        lines = good.decode().strip().split("\n")
        body = lines[-2]
        lines[-2] = body[:-4] + ("AAAA" if body[-4:] != "AAAA" else "BBBB")
        write(("\n".join(lines) + "\n").encode())
        write(good[: len(good) // 2])


if __name__ == "__main__":
    main()
