#!/usr/bin/env python3
"""Smoke test of bench/cutoff (cutoff_bench): runs the rig end to end on a generated ruleset and
generated traffic with a two-column ladder whose ends are certain on any machine this project
runs on (0.01 Gbit/s = 1,800 packets/s is lossless; 10 Gbit/s = 1.8 Mpps through 3,000 rules
is not), and checks the output's shape: the vendor-style table, the bracketing, the bisection
between the two, the PCRE-only configuration either measured or reported as unavailable, the
machine-readable last line, and that the rig leaves no work directory behind. Never checks a
rate against a threshold of its own: only that the cut-off lies inside the bracket.

    cutoff_smoke_test.py --build BUILD_DIR
"""
import argparse
import glob
import re
import subprocess
import sys


def fail(msg, out=""):
    print("FAIL: " + msg)
    if out:
        print("---- output ----")
        print(out)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    exe = args.build + "/bench/cutoff/cutoff_bench"

    # Bad arguments: usage, exit 2, nothing measured.
    bad = subprocess.run([exe, "--configs", "no-such-config"], capture_output=True, text=True,
                         timeout=30)
    if bad.returncode != 2 or "unknown configuration 'no-such-config'" not in bad.stderr:
        fail("bad --configs: rc %d, stderr %r" % (bad.returncode, bad.stderr))

    before = set(glob.glob("/tmp/picket-cutoff-*"))
    cmd = [exe, "--rules", "generated", "--quick", "--configs", "hs-jit,pcre-jit",
           "--workers", "1,2", "--ladder", "0.01,10", "--steps", "1", "--secs", "0.2",
           "--calib-secs", "0.3"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    out = run.stdout + run.stderr
    if run.returncode != 0:
        fail("exit code %d" % run.returncode, out)
    after = set(glob.glob("/tmp/picket-cutoff-*"))
    if after - before:
        fail("work directory left behind: %s" % sorted(after - before), out)

    if "| workers | 0.01 Gbit/s | 10 Gbit/s | cut-off (0 loss) |" not in run.stdout:
        fail("no vendor-style table header", out)
    for w in (1, 2):
        m = re.search(r"^\| %d \| 100 \| ([0-9.]+)\*? \| ([^|]+) \|$" % w, run.stdout, re.M)
        if m is None:
            fail("row for %d worker(s): want 100%% at 0.01 Gbit/s, then a lossy cell" % w, out)
        if float(m.group(1)) >= 100:
            fail("%d worker(s): 10 Gbit/s cell is not lossy" % w, out)
    # Each row bisected once between the lossless and the lossy column.
    bisects = re.findall(r"^  hs-jit +w(\d) bisect ", run.stdout, re.M)
    if sorted(bisects) != ["1", "2"]:
        fail("want one bisection step per row, got %s" % bisects, out)

    last = run.stdout.strip().splitlines()[-1]
    if not last.startswith("cutoff: rules=generated "):
        fail("last line: %r" % last, out)
    fields = dict(kv.split("=", 1) for kv in last.split()[1:])
    for w in (1, 2):
        v = fields.get("hs-jit_w%d_gbps" % w)
        if v is None:
            fail("last line lacks hs-jit_w%d_gbps" % w, out)
        g = float(v.rstrip("+"))
        if not 0.01 <= g < 10:
            fail("hs-jit_w%d_gbps=%s outside the bracket [0.01, 10)" % (w, v), out)
    # The PCRE-only baseline needs the engine's detect.prefilter switch: measured when the
    # engine has it, reported as unavailable otherwise, never silently measured with Hyperscan.
    if fields.get("pcre-jit") == "unavailable":
        if "no switch to turn the Hyperscan prefilter off" not in run.stdout:
            fail("pcre-jit unavailable without the reason", out)
    elif "pcre-jit_w1_gbps" not in fields or "pcre-jit_w2_gbps" not in fields:
        fail("pcre-jit neither measured nor reported unavailable", out)
    elif re.search(r"^pcre-jit: .* 0 Hyperscan databases", run.stdout, re.M) is None:
        fail("pcre-jit measured with Hyperscan databases", out)
    print("PASS (%s)" % last)


if __name__ == "__main__":
    main()
