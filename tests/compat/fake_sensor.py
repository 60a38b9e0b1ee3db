#!/usr/bin/env python3
"""A stand-in for picket-sensor used by test_run_compat.py.

--help          prints a usage text (mentions --simulate-ips when FAKE_SENSOR_IPS=1)
-T -S RULES     prints "RULES:LINE sid N: unknown keyword 'lua'" on stderr for every rule
                line that holds "lua:", then exits 1; exits 3 silently when a line holds
                "check-crash"; else prints the summary and exits 0
-r PCAP -S RULES -l DIR
                copies fake-eve.json from the rules file's directory to DIR/eve.json and
                records its argv in DIR/argv.json; exits 2 when a rule line holds "run-crash"
                (before writing anything); when a rule line holds "run-exit-N", writes
                the eve.json, prints "fake_sensor: error: truncated or corrupt capture"
                and exits N
FAKE_SENSOR_NEVER_ALERT=1
                a sensor that never alerts: the eve.json it writes keeps only the events
                of fake-eve.json that are not alerts (an empty file when there is none),
                so it passes exactly the cases whose alert checks all expect count 0
FAKE_SENSOR_ONLY_TYPES=alert,stats
                a sensor that writes only these record types: the other events of
                fake-eve.json are left out (applied after FAKE_SENSOR_NEVER_ALERT)
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
    dst = os.path.join(out, "eve.json")
    only = os.environ.get("FAKE_SENSOR_ONLY_TYPES")
    only = set(only.split(",")) if only else None
    never_alert = os.environ.get("FAKE_SENSOR_NEVER_ALERT") == "1"
    if only is None and not never_alert:
        if os.path.exists(src):
            shutil.copy(src, dst)
    else:
        with open(dst, "w") as f:
            if os.path.exists(src):
                with open(src) as events:
                    for line in events:
                        if not line.strip():
                            continue
                        event_type = json.loads(line).get("event_type")
                        if never_alert and event_type == "alert":
                            continue
                        if only is not None and event_type not in only:
                            continue
                        f.write(line)
    for line in lines:
        m = re.search(r"run-exit-(\d+)", line)
        if m:
            print("fake_sensor: error: truncated or corrupt capture", file=sys.stderr)
            return int(m.group(1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
