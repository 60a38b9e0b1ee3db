#!/usr/bin/env python3
"""A stand-in for picket-sensor used by test_run_compat.py.

--help          prints a usage text (mentions --simulate-ips when FAKE_SENSOR_IPS=1)
-T -S RULES     prints "RULES:LINE sid N: unknown keyword 'lua'" on stderr for every rule
                line that holds "lua:", then exits 1; exits 3 silently when a line holds
                "check-crash"; else prints the summary and exits 0
-r PCAP -S RULES -l DIR
                copies fake-eve.json from the rules file's directory to DIR/eve.json and
                records its argv in DIR/argv.json; exits 2 when a rule line holds "run-crash"
"""
import json
import os
import re
import shutil
import sys


def opt(argv, flag):
    return argv[argv.index(flag) + 1] if flag in argv else None


def main(argv):
    if "--help" in argv:
        print("usage: fake_sensor -r FILE -S FILE -l DIR [-k all|none] [--set KEY=VALUE] [-T]")
        if os.environ.get("FAKE_SENSOR_IPS") == "1":
            print("  --simulate-ips   run as if inline")
        return 0
    rules = opt(argv, "-S")
    with open(rules) as f:
        lines = f.read().splitlines()
    if "-T" in argv:
        bad = 0
        for n, line in enumerate(lines, 1):
            if "check-crash" in line:
                return 3
            if "lua:" in line:
                sid = re.search(r"sid:\s*(\d+)", line)
                print("%s:%d sid %s: unknown keyword 'lua'" % (rules, n, sid.group(1) if sid else 0),
                      file=sys.stderr)
                bad += 1
        print("rules: %d loaded, %d skipped" % (len(lines) - bad, bad))
        return 1 if bad else 0
    if any("run-crash" in l for l in lines):
        print("fake_sensor: error: boom", file=sys.stderr)
        return 2
    out = opt(argv, "-l")
    with open(os.path.join(out, "argv.json"), "w") as f:
        json.dump(argv, f)
    src = os.path.join(os.path.dirname(rules), "fake-eve.json")
    if os.path.exists(src):
        shutil.copy(src, os.path.join(out, "eve.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
