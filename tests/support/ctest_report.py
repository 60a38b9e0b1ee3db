#!/usr/bin/env python3
"""The bookkeeping of tests/run.sh: what passed, failed and was skipped, and why.

Every CTest run of tests/run.sh writes a JUnit file (ctest --output-junit); this script adds each
one to a state file, with the phase it came from, and at the end prints the summary whose last
line is `tests: N passed, M failed, K skipped`. A skip is never a pass:

  - CTest's own status decides: a GoogleTest case that called GTEST_SKIP() and a Python suite that
    exited 77 (tests/support/picket_test.py) are "notrun" with a <skipped> element;
  - each skipped test is listed with its reason: GoogleTest's message after "Skipped", the
    Python suite's "SKIPPED <case>: <reason>" lines, or CTest's own message;
  - with --require-all every skip is a failure that names the missing prerequisite;
  - a test named in the quarantine file (tests/quarantine.txt) runs as usual but counts in none of
    the three numbers: the summary prints it with its result, its reason and its age in days;
  - a disabled test (GoogleTest's DISABLED_ prefix) is listed as such and counted nowhere.

Usage:
  ctest_report.py add STATE PHASE JUNIT [--quarantine FILE] [--log CTEST_OUTPUT]
  ctest_report.py result STATE PHASE NAME pass|fail|skip [REASON]   (a step that is not CTest)
  ctest_report.py timeouts STATE PHASE BUILD_DIR     (every CTest test has a TIMEOUT property)
  ctest_report.py summary STATE [--require-all]      (prints; exit 1 when anything failed)
"""
import datetime
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET


def load(state):
    if os.path.exists(state):
        with open(state) as f:
            return json.load(f)
    return {"results": [], "quarantine": []}


def save(state, data):
    tmp = state + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, state)


def read_quarantine(path):
    """Lines `NAME | YYYY-MM-DD | reason` ('#' starts a comment). NAME is a CTest test name."""
    entries = []
    if not path or not os.path.exists(path):
        return entries
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = [p.strip() for p in line.split("|")]
            if len(parts) != 3 or not parts[0] or not parts[2]:
                sys.exit("%s:%d: want 'TEST | YYYY-MM-DD | reason', got %r" % (path, lineno, line))
            try:
                since = datetime.date.fromisoformat(parts[1])
            except ValueError:
                sys.exit("%s:%d: bad date %r (want YYYY-MM-DD)" % (path, lineno, parts[1]))
            entries.append({"name": parts[0], "since": since.isoformat(), "reason": parts[2]})
    return entries


def skip_reason(out, message):
    """Why a test was skipped, from its output."""
    reasons = re.findall(r"^SKIPPED (.+)$", out, re.M)  # tests/support/picket_test.py
    if reasons:
        return "; ".join(reasons)
    # GoogleTest: "path:line: Skipped\n<message lines>\n[  SKIPPED ] Suite.Name (N ms)"
    m = re.search(r": Skipped\n(.*?)\n\[  SKIPPED \]", out, re.S)
    if m:
        return " ".join(m.group(1).split()) or "GTEST_SKIP() without a message"
    return message or "skipped (no reason printed)"


def ctest_statuses(log):
    """{test name: CTest's word for a failure ("Failed", "Timeout", "Exception: SegFault"...)}
    from CTest's own output, which says more than the JUnit file."""
    words = {}
    if log and os.path.exists(log):
        with open(log, errors="replace") as f:
            for m in re.finditer(r"Test +#\d+: (\S+) \.+ *\*\*\*(.+?) +[\d.]+ sec", f.read()):
                words[m.group(1)] = m.group(2).strip()
    return words


def cmd_add(state, phase, junit, quarantine, log=None):
    data = load(state)
    words = ctest_statuses(log)
    quarantined = {q["name"]: q for q in read_quarantine(quarantine)}
    data["quarantine"] = list(quarantined.values())
    if not os.path.exists(junit):
        data["results"].append({"phase": phase, "name": "ctest (%s)" % phase, "status": "fail",
                                "reason": "CTest wrote no result file (%s)" % junit})
        save(state, data)
        return
    root = ET.parse(junit).getroot()
    for case in root.iter("testcase"):
        name = case.get("name")
        out = case.findtext("system-out") or ""
        skipped = case.find("skipped")
        if case.get("status") == "run":
            status, reason = "pass", ""
        elif case.get("status") == "disabled":
            # DISABLED_ GoogleTest cases and DISABLED CTest tests: shown, never counted.
            status, reason = "disabled", "not run (disabled in its source)"
        elif skipped is not None and re.match(r"SKIP_(RETURN_CODE|REGULAR_EXPRESSION)",
                                              skipped.get("message", "")):
            # The test ran and said it skipped (GTEST_SKIP, exit 77).
            status, reason = "skip", skip_reason(out, skipped.get("message", ""))
        elif skipped is not None:
            # CTest could not run it ("Unable to find executable": not built, or not reachable):
            # a failure, not a skip.
            status, reason = "fail", "not run: " + skipped.get("message", "")
        else:
            status = "fail"
            reason = words.get(name, "Failed")
        entry = {"phase": phase, "name": name, "status": status, "reason": reason}
        if name in quarantined:
            entry["quarantined"] = True
        data["results"].append(entry)
    save(state, data)


def cmd_result(state, phase, name, status, reason):
    if status not in ("pass", "fail", "skip"):
        sys.exit("status must be pass, fail or skip, got %r" % status)
    data = load(state)
    data["results"].append({"phase": phase, "name": name, "status": status, "reason": reason})
    save(state, data)


def cmd_timeouts(state, phase, build):
    """Every CTest test of BUILD has a TIMEOUT property: one hang must not stall CI."""
    r = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"],
                       capture_output=True, text=True)
    name = "every CTest test has a TIMEOUT (%s)" % phase
    if r.returncode != 0:
        cmd_result(state, phase, name, "fail", "ctest --show-only failed: " + r.stderr.strip())
        return
    tests = json.loads(r.stdout).get("tests", [])
    missing = [t["name"] for t in tests
               if not any(p.get("name") == "TIMEOUT" for p in t.get("properties", []))]
    if missing:
        print("tests without a TIMEOUT: " + ", ".join(missing))
        cmd_result(state, phase, name, "fail", "no TIMEOUT: " + ", ".join(missing[:20]))
    else:
        cmd_result(state, phase, name, "pass", "")


def cmd_summary(state, require_all):
    data = load(state)
    passed, failed, skipped = [], [], []
    quarantined, disabled = [], []
    for r in data["results"]:
        label = "%s [%s]" % (r["name"], r["phase"])
        if r["status"] == "disabled":
            disabled.append(label)
        elif r.get("quarantined"):
            quarantined.append((r, label))
        elif r["status"] == "pass":
            passed.append(label)
        elif r["status"] == "skip" and not require_all:
            skipped.append((label, r["reason"]))
        elif r["status"] == "skip":
            failed.append((label, "skipped under --require-all: missing prerequisite: "
                           + r["reason"]))
        else:
            failed.append((label, r["reason"]))
    phases = []
    for r in data["results"]:
        if r["phase"] not in phases:
            phases.append(r["phase"])
    for phase in phases:
        rs = [r for r in data["results"] if r["phase"] == phase and not r.get("quarantined")]
        print("phase %s: %d passed, %d failed, %d skipped" % (
            phase, sum(r["status"] == "pass" for r in rs),
            sum(r["status"] == "fail" or (require_all and r["status"] == "skip") for r in rs),
            sum(r["status"] == "skip" and not require_all for r in rs)))
    today = datetime.date.today()
    for q in data.get("quarantine", []):
        runs = [r for r, _ in quarantined if r["name"] == q["name"]]
        age = (today - datetime.date.fromisoformat(q["since"])).days
        outcome = ", ".join("%s [%s]" % (r["status"], r["phase"]) for r in runs) or "not run"
        print("quarantined (not counted): %s, since %s (%d days): %s; this run: %s"
              % (q["name"], q["since"], age, q["reason"], outcome))
    for label in disabled:
        print("disabled (not run, not counted): %s" % label)
    for label, reason in skipped:
        print("skipped: %s: %s" % (label, reason))
    for label, reason in failed:
        print("failed: %s: %s" % (label, reason))
    print("tests: %d passed, %d failed, %d skipped" % (len(passed), len(failed), len(skipped)))
    return 1 if failed else 0


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    cmd, state = argv[1], argv[2]
    if cmd == "add" and len(argv) >= 5 and len(argv) % 2 == 1:
        opts = dict(zip(argv[5::2], argv[6::2]))
        if set(opts) - {"--quarantine", "--log"}:
            sys.exit(__doc__)
        cmd_add(state, argv[3], argv[4], opts.get("--quarantine"), opts.get("--log"))
    elif cmd == "result" and len(argv) in (6, 7):
        cmd_result(state, argv[3], argv[4], argv[5], argv[6] if len(argv) == 7 else "")
    elif cmd == "timeouts" and len(argv) == 5:
        cmd_timeouts(state, argv[3], argv[4])
    elif cmd == "summary" and len(argv) in (3, 4):
        return cmd_summary(state, len(argv) == 4 and argv[3] == "--require-all")
    else:
        sys.exit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
