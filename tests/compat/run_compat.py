#!/usr/bin/env python3
"""Compatibility runner: replays suricata-verify style cases through picket-sensor.

Usage:
  run_compat.py --sensor BIN --cases DIR [--pass-list FILE] [--expected-cases FILE]
                [--update-pass-list] [-k PATTERN | --case NAME] [-j N] [--outdir DIR]
                [--timeout SEC] [--suricata-version V] [--report-md FILE] [-v]

A case is a directory holding test.yaml (plus a pcap, a rules file, optionally
suricata.yaml), in the layout of OISF/suricata-verify. For each case the runner:

  1. skips it when test.yaml asks for something we cannot provide (a feature, a custom
     command, IPS mode when the sensor has no --simulate-ips, ...);
  2. runs the sensor's rule check (BIN -T -S RULES ...) and skips the case when any of its
     rules was skipped by the sensor ("unsupported: <reason>", from the diagnostics
     "file:line sid N: reason" the sensor prints);
  3. runs BIN -r PCAP -S RULES -l OUTDIR ..., fails the case when the sensor's exit status
     is not the one test.yaml's `exit-code:` names (0 when absent, as upstream's run.py),
     and evaluates every `filter` check on eve.json (alert, fileinfo, flow, http, dns, tls,
     drop, anomaly, stats, ... records) against OUTDIR/eve.json; a case passes when all of
     them hold (`shell` and `stats` checks are not ours to honour).

A case whose checks all expect `count: 0` is passed by a sensor that writes nothing: it is
reported apart (PASS-COUNT0 / FAIL-COUNT0) and left out of the pass rate.

It prints one line per case (PASS name / FAIL name: why / SKIP name: why / PASS-COUNT0 name
/ FAIL-COUNT0 name: why), then the totals, the pass rates and the checks per event type
(--report-md writes those as a Markdown table). The exit status is 1 when a
case named in the pass list no longer passes (a regression) or is missing from the data,
or when the data set's cases differ from --expected-cases; new passes are reported on
stderr and added to the pass list with --update-pass-list, which also rewrites
--expected-cases from the data. With --case NAME only that case runs (no scan of the data
set) and the exit status is 0 exactly when it passes.
"""

import argparse
import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

import yaml

DEFAULT_SURICATA_VERSION = "9.0.0"
DEFAULT_TIMEOUT_SEC = 300  # per sensor invocation; a case runs the sensor twice
DIAGNOSTIC_RE = re.compile(r"^(?P<file>.+?):(?P<line>\d+) sid (?P<sid>\d+): (?P<reason>.*)$")
STRING_OPS = ("__find", "__contains", "__startswith", "__endswith")
NUMBER_OPS = ("__gt", "__gte", "__lt", "__lte")
# Arguments of test.yaml `args:` that the runner understands; anything else skips the case.
KNOWN_FLAGS_WITH_VALUE = ("-k", "--set")
KNOWN_FLAGS = ("--simulate-ips",)


class Skip(Exception):
    pass


class Fail(Exception):
    pass


# The outcome of a case: PASS, FAIL or SKIP, why, and whether every check it ran expects
# count 0 (a sensor that writes nothing passes such a case).
COUNT0_SUFFIX = "-COUNT0"


def status_word(status, count0_only):
    return status + COUNT0_SUFFIX if count0_only and status != "SKIP" else status


# ---------------------------------------------------------------------------------------
# Versions (suricata-verify's requires: min-version / lt-version / gt-version / version)


def parse_version(text):
    m = re.search(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?", str(text))
    if not m:
        raise ValueError("bad version %r" % (text,))
    return tuple(int(g) if g is not None else None for g in m.groups())


def _filled(v):
    return tuple(x if x is not None else 0 for x in v)


def version_matches(ours, required, op):
    a, b = _filled(ours), _filled(required)
    if op == "min-version":
        return a >= b
    if op == "lt-version":
        return a < b
    if op == "gt-version":
        return a > b
    if op == "version":  # "7" matches 7.x.y, "7.0" matches 7.0.y
        return all(r is None or o == r for o, r in zip(ours, required))
    raise ValueError(op)


VERSION_KEYS = ("min-version", "lt-version", "gt-version", "version")


def unmet_requirement(requires, ours):
    """Why `requires` is not met by our version/features, or None when it is."""
    if not requires:
        return None
    for key, value in requires.items():
        if key in VERSION_KEYS:
            if not version_matches(ours, parse_version(value), key):
                return "requires %s %s" % (key, value)
        elif key == "features":
            return "requires feature %s" % ", ".join(str(f) for f in value)
        elif key == "pcap":
            if not value:
                return "test runs without a pcap"
        else:
            return "unsupported requirement '%s'" % key
    return None


# ---------------------------------------------------------------------------------------
# EVE filter checks (suricata-verify's FilterCheck semantics, plus numeric comparisons)


def find_value(name, obj):
    """The value at a dotted path such as alert.signature_id or vlan[0]; None if absent.

    A `__len` part yields the length of what was reached (-1 if it has none); the string
    and number operators end the walk and leave the comparison to the caller.
    """
    for part in name.split("."):
        if part == "__len":
            try:
                return len(obj)
            except TypeError:
                return -1
        if part in STRING_OPS or part in NUMBER_OPS:
            break
        index = None
        m = re.match(r"^(.*)\[(\d+)\]$", part)
        if m:
            part, index = m.group(1), int(m.group(2))
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
        if index is not None:
            try:
                obj = obj[index]
            except (IndexError, KeyError, TypeError):
                return None
    return obj


def _number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def match_event(match, event):
    for key, expected in match.items():
        if key == "has-key":
            if find_value(expected, event) is None:
                return False
            continue
        if key == "not-has-key":
            if find_value(expected, event) is not None:
                return False
            continue
        val = find_value(key, event)
        op = key.rsplit(".", 1)[-1] if "." in key else None
        if op in STRING_OPS:
            if val is None:
                return False
            if op == "__find":
                if not isinstance(val, str) or val.find(expected) < 0:
                    return False
            elif op == "__contains":
                try:
                    if expected not in val:
                        return False
                except TypeError:
                    return False
            elif op == "__startswith":
                if not isinstance(val, str) or not val.startswith(expected):
                    return False
            elif op == "__endswith":
                if not isinstance(val, str) or not val.endswith(expected):
                    return False
        elif op in NUMBER_OPS:
            if not _number(val) or not _number(expected):
                return False
            if op == "__gt" and not val > expected:
                return False
            if op == "__gte" and not val >= expected:
                return False
            if op == "__lt" and not val < expected:
                return False
            if op == "__lte" and not val <= expected:
                return False
        elif val != expected:
            return False
    return True


# The EVE record types reported by name, in this order; a check on any other type (dcerpc,
# smb, netflow, ...) is reported under its own name after them.
EVENT_TYPES = ("alert", "fileinfo", "flow", "http", "dns", "tls", "drop", "anomaly", "stats")
# What a filter without `event_type` counts as when none of its keys names a record type:
# it matches records of every type.
ANY_EVENT_TYPE = "any"


def filter_event_type(flt):
    """The EVE record type a filter check is about: its `event_type`, else the record type
    its keys name (`alert.signature_id`, `has-key: http.hostname`, ...; alert first, since
    an alert carries flow/http/... objects too), else "any"."""
    match = flt.get("match") or {}
    if "event_type" in match:
        return str(match["event_type"])
    names = [str(v) for k, v in match.items() if k in ("has-key", "not-has-key")]
    names += [k for k in match if k not in ("has-key", "not-has-key")]
    heads = [re.split(r"[.\[]", n, maxsplit=1)[0] for n in names]
    if "alert" in heads:
        return "alert"
    for head in heads:
        if head in EVENT_TYPES and head != "alert":
            return head
    return ANY_EVENT_TYPE


def eve_filters(checks, ours):
    """The filter checks that count: every `filter` on eve.json with its requires met, as
    (check number, filter, event type)."""
    out = []
    for i, check in enumerate(checks or []):
        if not isinstance(check, dict) or "filter" not in check:
            continue
        flt = check["filter"]
        if not isinstance(flt, dict) or flt.get("filename", "eve.json") != "eve.json":
            continue
        requires = dict(flt.get("requires") or {})
        for key in VERSION_KEYS:
            if key in flt:
                requires[key] = flt[key]
        if unmet_requirement(requires, ours) is not None:
            continue
        out.append((i + 1, flt, filter_event_type(flt)))
    return out


def load_eve(path):
    if not os.path.exists(path):
        raise Fail("no eve.json written")
    events = []
    with open(path, "r", encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                events.append(json.loads(line))
            except ValueError as e:
                raise Fail("eve.json line %d is not JSON: %s" % (n, e))
    return events


def count0_only(filters):
    """True when every check expects no matching record: a sensor that writes nothing (or no
    record of the types checked) passes them."""
    return bool(filters) and all(f[1].get("count") == 0 for f in filters)


def check_results(filters, events):
    """[(check number, event type, passed, description of a failure or None)] for each
    filter ((number, filter) or (number, filter, event type)) against the records."""
    out = []
    for f in filters:
        number, flt = f[0], f[1]
        event_type = f[2] if len(f) > 2 else filter_event_type(flt)
        count = sum(1 for ev in events if match_event(flt.get("match") or {}, ev))
        expected = flt.get("count")
        why = None
        if count != expected:
            what = flt.get("comment") or json.dumps(flt.get("match"), sort_keys=True)
            why = "check #%d %s: expected %s, got %d" % (number, what, expected, count)
        out.append((number, event_type, why is None, why))
    return out


def evaluate(filters, events):
    """None when every filter holds, else the first failure's description."""
    for _, _, ok, why in check_results(filters, events):
        if not ok:
            return why
    return None


# ---------------------------------------------------------------------------------------
# Cases


def discover(cases_dir, patterns):
    names = []
    for dirpath, dirnames, filenames in os.walk(cases_dir, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(("_", ".")))
        if dirpath == cases_dir:
            continue
        if "test.yaml" in filenames:
            dirnames[:] = []
            name = os.path.relpath(dirpath, cases_dir)
            if not patterns or any(p in name for p in patterns):
                names.append(name)
    return sorted(names)


def resolve_input(case_dir, config, key, globs, what):
    """pcap:/rules: keys resolve by basename inside the case dir (the data set copies inputs
    that upstream shares between tests next to each test)."""
    value = config.get(key)
    if isinstance(value, list):
        value = value[0] if len(value) == 1 else None
    if isinstance(value, str) and value:
        path = os.path.join(case_dir, os.path.basename(value))
        if not os.path.exists(path):
            raise Skip("%s %s not found" % (what, os.path.basename(value)))
        return path
    found = []
    for g in globs:
        found += glob.glob(os.path.join(case_dir, g))
    found = sorted(set(found))
    if not found:
        raise Skip("no %s" % what)
    if len(found) > 1:
        raise Skip("several %s files: %s" % (what, ", ".join(os.path.basename(f) for f in found)))
    return found[0]


def load_yaml(path):
    with open(path, "rb") as f:
        return yaml.safe_load(f) or {}


def yaml_quote(value):
    """A --set value that the sensor's YAML parser reads back as this exact string."""
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def suricata_yaml_sets(case_dir, etc_dir):
    """--set assignments for what the case's suricata.yaml changes that the sensor knows:
    address/port vars, action-order, packet-alert-max, the eve alert
    payload/packet/verdict/xff options and the drop record's flows/alerts."""
    path = os.path.join(case_dir, "suricata.yaml")
    if not os.path.exists(path):
        return []
    doc = load_yaml(path)
    layers = []
    include = doc.get("include")
    for inc in include if isinstance(include, list) else [include] if include else []:
        inc_path = os.path.join(etc_dir, os.path.basename(str(inc)))
        if os.path.exists(inc_path):
            layers.append(load_yaml(inc_path))
    layers.append(doc)
    sets = []
    seen = {}
    for layer in layers:
        for group in ("address-groups", "port-groups"):
            values = ((layer.get("vars") or {}).get(group)) or {}
            for k, v in values.items():
                seen["vars.%s.%s" % (group, k)] = yaml_quote(v)
        order = layer.get("action-order")
        if isinstance(order, list) and order:
            seen["action-order"] = "[%s]" % ", ".join(str(a) for a in order)
        pam = layer.get("packet-alert-max")
        if isinstance(pam, int) and pam > 0:
            seen["packet-alert-max"] = str(pam)
        for out in layer.get("outputs") or []:
            eve = out.get("eve-log") if isinstance(out, dict) else None
            if not isinstance(eve, dict):
                continue
            for t in eve.get("types") or []:
                if isinstance(t, dict) and "alert" in t and isinstance(t["alert"], dict):
                    for key in ("payload", "payload-printable", "packet", "verdict"):
                        if key in t["alert"]:
                            on = t["alert"][key] in (True, "yes", "on", "true")
                            seen["outputs.eve.alert." + key] = "yes" if on else "no"
                if isinstance(t, dict) and isinstance(t.get("dns"), dict):
                    if str(t["dns"].get("version", "")) in ("2", "3"):
                        seen["outputs.eve.dns.version"] = str(t["dns"]["version"])
                if isinstance(t, dict) and isinstance(t.get("drop"), dict):
                    d = t["drop"]
                    if "flows" in d:
                        seen["outputs.eve.drop.flows"] = str(d["flows"])
                    if "alerts" in d:
                        on = d["alerts"] in (True, "yes", "on", "true")
                        seen["outputs.eve.drop.alerts"] = "yes" if on else "no"
                if isinstance(t, dict) and "alert" in t and isinstance(t["alert"], dict):
                    xff = t["alert"].get("xff")
                    if isinstance(xff, dict):
                        for key in ("enabled", "mode", "deployment", "header"):
                            if key not in xff:
                                continue
                            v = xff[key]
                            if key == "enabled":
                                v = "yes" if v in (True, "yes", "on", "true") else "no"
                            else:
                                v = yaml_quote(v)
                            seen["outputs.eve.alert.xff." + key] = v
    for k, v in seen.items():
        sets += ["--set", "%s=%s" % (k, v)]
    return sets


# Defaults that changed between Suricata versions, as --set assignments: a case that requires
# at least the version (min-version) was written against the new default, unless its own
# suricata.yaml sets the option. Suricata 8 logs DNS in the v3 format (v2 in 7, Picket's
# default).
VERSION_DEFAULTS = (
    ((8,), "outputs.eve.dns.version", "3"),
)


def version_default_sets(requires, sets):
    """--set assignments for VERSION_DEFAULTS that the case's requires: min-version reaches and
    `sets` (its suricata.yaml's) does not already set."""
    minimum = (requires or {}).get("min-version")
    if minimum is None:
        return []
    have = {sets[i + 1].split("=", 1)[0] for i in range(len(sets) - 1) if sets[i] == "--set"}
    out = []
    for since, key, value in VERSION_DEFAULTS:
        if _filled(parse_version(minimum)) >= _filled(since + (0,) * (3 - len(since))) and \
                key not in have:
            out += ["--set", "%s=%s" % (key, value)]
    return out


def case_args(config, name, sensor_help):
    """Extra sensor arguments from test.yaml `args:`, or Skip for what we cannot pass.
    sensor_help() returns the sensor's --help text (asked only for an IPS case)."""
    words = []
    for arg in config.get("args") or []:
        words += [w for w in re.split(r"\s+", str(arg).strip()) if w]
    out = []
    ips = "ips" in os.path.basename(name)
    i = 0
    while i < len(words):
        w = words[i]
        if w in KNOWN_FLAGS_WITH_VALUE:
            if i + 1 >= len(words):
                raise Skip("argument %s without a value" % w)
            out += [w, words[i + 1]]
            i += 2
            continue
        if w == "--simulate-ips":
            ips = True
        elif w not in KNOWN_FLAGS:
            raise Skip("unsupported argument %s" % w)
        i += 1
    if ips:
        if "--simulate-ips" not in sensor_help():
            raise Skip("ips mode (--simulate-ips) not supported by the sensor")
        out.append("--simulate-ips")
    return out


class Runner:
    def __init__(self, sensor, cases_dir, outdir, version, verbose=False,
                 timeout=DEFAULT_TIMEOUT_SEC):
        self.sensor = sensor
        self.cases_dir = cases_dir
        self.outdir = outdir
        self.version = version
        self.verbose = verbose
        self.timeout = timeout
        self.etc_dir = os.path.join(cases_dir, "_upstream-etc")
        self._help = None
        self._help_lock = threading.Lock()
        self.checks = {}  # case name -> [(event type, passed or None)], see run_case

    def help_text(self):
        """BIN --help, run once and only when a case needs it: a case test runs one case,
        and a sanitizer build pays for every process start."""
        with self._help_lock:
            if self._help is None:
                self._help = self._sensor_help()
            return self._help

    def _sensor_help(self):
        try:
            p = subprocess.run([self.sensor, "--help"], capture_output=True, text=True,
                               timeout=60)
            return p.stdout + p.stderr
        except (OSError, subprocess.TimeoutExpired):
            return ""

    def common_sets(self):
        sets = []
        for key, fname in (("classification-file", "classification.config"),
                           ("reference-config-file", "reference.config")):
            path = os.path.join(self.etc_dir, fname)
            if os.path.exists(path):
                sets += ["--set", "%s=%s" % (key, path)]
        return sets

    def _run(self, argv, cwd):
        if self.verbose:
            print("+ " + " ".join(argv), file=sys.stderr)
        # The environment passes through (ASAN_OPTIONS/UBSAN_OPTIONS of a sanitizer build,
        # with their log_path): a sanitizer report makes the sensor exit non-zero, which
        # fails the case below.
        env = dict(os.environ, TZ="UTC")
        try:
            return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                                  errors="replace", timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise Fail("sensor timed out after %g s: %s" % (self.timeout, " ".join(argv)))
        except OSError as e:
            raise Fail("cannot run the sensor: %s" % e)

    def run_case(self, name):
        """('PASS'|'FAIL'|'SKIP', reason, count0_only). The case's checks, as (event type,
        passed: True/False, or None when the case did not run), go to self.checks[name]."""
        info = {"count0_only": False, "checks": []}
        try:
            status, reason = self._run_case(name, info)
        except Skip as e:
            status, reason = "SKIP", str(e)
        except Fail as e:
            status, reason = "FAIL", str(e)
        except (yaml.YAMLError, ValueError, KeyError, TypeError, AttributeError) as e:
            status, reason = "FAIL", "bad case: %s: %s" % (type(e).__name__, e)
        checks = info["checks"]
        if status == "SKIP":
            checks = [(t, None) for t, _ in checks]
        elif status == "FAIL" and "evaluated" not in info:
            checks = [(t, False) for t, _ in checks]  # the sensor failed: none could pass
        self.checks[name] = checks
        return (status, reason, info["count0_only"])

    def _run_case(self, name, info):
        case_dir = os.path.join(self.cases_dir, name)
        config = load_yaml(os.path.join(case_dir, "test.yaml"))
        filters = eve_filters(config.get("checks"), self.version)
        info["checks"] = [(t, None) for _, _, t in filters]
        why = unmet_requirement(config.get("requires"), self.version)
        if why:
            raise Skip(why)
        skip = config.get("skip")
        if skip is True:
            raise Skip("skipped by default")
        if "command" in config:
            raise Skip("custom command")
        # suricata-verify's run.py: `exit-code: N` is the status the run must end with,
        # 0 when the key is absent.
        expected_exit = config.get("exit-code", 0)
        if not isinstance(expected_exit, int) or isinstance(expected_exit, bool):
            raise Skip("exit-code %r is not a number" % (expected_exit,))
        if "setup" in config:
            raise Skip("setup scripts")
        if not filters:
            raise Skip("no filter checks")
        info["count0_only"] = count0_only(filters)
        pcap = resolve_input(case_dir, config, "pcap", ("*.pcap", "*.pcapng"), "pcap")
        rules = resolve_input(case_dir, config, "rules", ("*.rules",), "rules")
        extra = case_args(config, name, self.help_text)
        case_sets = suricata_yaml_sets(case_dir, self.etc_dir)
        sets = (self.common_sets() + case_sets +
                version_default_sets(config.get("requires"), case_sets))

        out = os.path.join(self.outdir, name)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)

        check = self._run([self.sensor, "-T", "-S", rules] + sets, case_dir)
        diagnostics = []
        for line in (check.stderr + check.stdout).splitlines():
            if line.strip().startswith("warning:"):
                continue  # the rule loaded (e.g. a flowbit checked but never set)
            m = DIAGNOSTIC_RE.match(line.strip())
            if m:
                diagnostics.append(m.group("reason"))
        if diagnostics:
            more = " (+%d more)" % (len(diagnostics) - 1) if len(diagnostics) > 1 else ""
            raise Skip("unsupported: %s%s" % (diagnostics[0], more))
        if check.returncode != 0:
            raise Fail("rule check exited with %d: %s" % (check.returncode,
                                                          last_line(check.stderr)))

        run = self._run([self.sensor, "-r", pcap, "-S", rules, "-l", out] + sets + extra,
                        case_dir)
        with open(os.path.join(out, "sensor.log"), "w") as f:
            f.write(run.stdout)
            f.write(run.stderr)
        # No exception for a damaged capture: Suricata ends a pcap whose tail is truncated
        # with status 0 after the packets before the damage, and every case without
        # `exit-code:` was written against that.
        if run.returncode != expected_exit:
            how = ("exited with %d" % run.returncode if run.returncode >= 0 else
                   "was killed by signal %d" % -run.returncode)
            raise Fail("sensor %s, expected exit status %d: %s" % (
                how, expected_exit, last_line(run.stderr)))
        results = check_results(filters, load_eve(os.path.join(out, "eve.json")))
        info["checks"] = [(t, ok) for _, t, ok, _ in results]
        info["evaluated"] = True
        failure = next((why for _, _, ok, why in results if not ok), None)
        if failure:
            raise Fail(failure)
        return ("PASS", "")


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1] if lines else "(no output)"


# ---------------------------------------------------------------------------------------
# Pass list and expected cases


def read_pass_list(path):
    if not path or not os.path.exists(path):
        return []
    names = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(line)
    return names


def write_pass_list(path, names):
    header = ("# Compatibility cases that pass (tests/compat/run_compat.py). A case listed here\n"
              "# that stops passing fails the run. Regenerate with --update-pass-list.\n")
    with open(path, "w") as f:
        f.write(header)
        for n in sorted(set(names)):
            f.write(n + "\n")


def read_expected_cases(path):
    """(count, names) recorded in PATH: a `count N` line and one case name a line."""
    count = None
    names = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.match(r"^count\s+(\d+)$", line)
            if m:
                count = int(m.group(1))
            else:
                names.append(line)
    if count is None:
        raise ValueError("%s: no 'count N' line" % path)
    return count, names


def write_expected_cases(path, names):
    with open(path, "w") as f:
        f.write("# The cases of the suricata-verify data set that the compat gate expects\n"
                "# (tests/compat/run_compat.py --expected-cases). compat_inventory fails when\n"
                "# the data set's cases differ; regenerate with --update-pass-list.\n")
        f.write("count %d\n" % len(names))
        for n in sorted(names):
            f.write(n + "\n")


def data_set_problems(all_names, listed, expected):
    """Why the data set is not the one the gate was set up for: pass-listed cases missing
    from it, a case count or case names that differ from `expected` ((count, names) or
    None)."""
    problems = []
    present = set(all_names)
    for n in listed:
        if n not in present:
            problems.append("missing: %s is in the pass list but not in the data set" % n)
    if expected is not None:
        count, names = expected
        if count != len(names):
            problems.append("expected cases file: count %d but %d names" % (count, len(names)))
        if len(all_names) != count:
            problems.append("case count changed: expected %d, found %d" % (count,
                                                                           len(all_names)))
        gone = sorted(set(names) - present)
        new = sorted(present - set(names))
        if gone:
            problems.append("cases gone from the data set: %s" % " ".join(gone))
        if new:
            problems.append("cases new in the data set: %s" % " ".join(new))
    return problems


# ---------------------------------------------------------------------------------------
# Totals


def load_families(cases_dir):
    """Case name -> family ('core', 'http-evader', ...) from the data set's index.json."""
    path = os.path.join(cases_dir, "index.json")
    if not os.path.exists(path):
        return {}
    try:
        with open(path) as f:
            index = json.load(f)
        return {e["name"]: e.get("family") or "other" for e in index
                if isinstance(e, dict) and "name" in e}
    except (ValueError, KeyError, TypeError):
        return {}


def percent(part, whole):
    return "%d/%d = %.1f%%" % (part, whole, 100.0 * part / whole) if whole else "%d/0" % part


def totals_line(results):
    """`P passed, F failed, S skipped, C count-0-only (P0 passed, F0 failed)`: count-0-only
    cases are counted apart from the first three."""
    c = {"PASS": 0, "FAIL": 0, "SKIP": 0, "PASS0": 0, "FAIL0": 0}
    for status, _, zero in results:
        c[status + ("0" if zero and status != "SKIP" else "")] += 1
    return ("%d passed, %d failed, %d skipped, %d count-0-only (%d passed, %d failed)" % (
        c["PASS"], c["FAIL"], c["SKIP"], c["PASS0"] + c["FAIL0"], c["PASS0"], c["FAIL0"]), c)


def per_type_counts(names, checks):
    """[(event type, checks in the cases run, passed, checks in skipped cases)], types in
    EVENT_TYPES order then by name."""
    counts = {}
    for n in names:
        for event_type, ok in checks.get(n, []):
            c = counts.setdefault(event_type, [0, 0, 0])
            if ok is None:
                c[2] += 1
            else:
                c[0] += 1
                c[1] += 1 if ok else 0
    order = [t for t in EVENT_TYPES if t in counts]
    order += sorted(t for t in counts if t not in EVENT_TYPES)
    return [(t, counts[t][0], counts[t][1], counts[t][2]) for t in order]


def per_type_lines(names, checks):
    """`event type T: C checks, P passed, pass rate P/C = x% (+S in skipped cases)`."""
    out = []
    for t, run, passed, skipped in per_type_counts(names, checks):
        out.append("event type %s: %d checks, %d passed, pass rate %s%s" % (
            t, run, passed, percent(passed, run),
            " (+%d in skipped cases)" % skipped if skipped else ""))
    return out


def report_md(names, checks):
    """The per-event-type figures as a Markdown table (--report-md)."""
    out = ["| event type | checks | passed | pass rate | checks in skipped cases |",
           "|---|---|---|---|---|"]
    for t, run, passed, skipped in per_type_counts(names, checks):
        rate = "%.1f%%" % (100.0 * passed / run) if run else "-"
        out.append("| %s | %d | %d | %s | %d |" % (t, run, passed, rate, skipped))
    return out


def summary_lines(names, results, families, checks=None):
    """The totals, per family when the data set has several, the pass rates, and the checks
    per event type."""
    line, c = totals_line([results[n] for n in names])
    out = [line]
    by_family = {}
    for n in names:
        by_family.setdefault(families.get(n, "other"), []).append(results[n])
    if families and len(by_family) > 1:
        for fam in sorted(by_family):
            fam_line, fc = totals_line(by_family[fam])
            out.append("family %s: %s; pass rate %s" % (
                fam, fam_line, percent(fc["PASS"], fc["PASS"] + fc["FAIL"] + fc["SKIP"])))
    counted = c["PASS"] + c["FAIL"] + c["SKIP"]
    out.append("pass rate (count-0-only apart): %s of the cases, %s of those run" % (
        percent(c["PASS"], counted), percent(c["PASS"], c["PASS"] + c["FAIL"])))
    out.append("pass rate with count-0-only: %s of the cases, %s of those run" % (
        percent(c["PASS"] + c["PASS0"], len(names)),
        percent(c["PASS"] + c["PASS0"], c["PASS"] + c["FAIL"] + c["PASS0"] + c["FAIL0"])))
    out += per_type_lines(names, checks or {})
    return out


def case_line(name, result):
    status, reason, zero = result
    return "%s %s%s" % (status_word(status, zero), name, ": " + reason if reason else "")


# ---------------------------------------------------------------------------------------
# Main


def run_one(runner, cases_dir, name):
    """--case NAME: run just that case (no scan of the data set); 0 exactly when it passes.
    A SKIP is a failure here: the case tests exist for cases that passed."""
    if not os.path.isfile(os.path.join(cases_dir, name, "test.yaml")):
        print("FAIL %s: not in the data set (no %s)" % (
            name, os.path.join(cases_dir, name, "test.yaml")), flush=True)
        return 1
    result = runner.run_case(name)
    print(case_line(name, result), flush=True)
    status, _, zero = result
    if status == "PASS" and zero:
        print("note: %s checks only count: 0 (a sensor that never alerts passes it)" % name)
    if status == "SKIP":
        print("%s was expected to pass but is now skipped" % name)
    return 0 if status == "PASS" else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sensor", required=True, help="picket-sensor binary")
    ap.add_argument("--cases", required=True, help="directory of cases (suricata-verify layout)")
    ap.add_argument("--pass-list", help="file of case names that must keep passing")
    ap.add_argument("--expected-cases", help="file recording the data set's case count and "
                    "names; the run fails when the data set differs")
    ap.add_argument("--update-pass-list", action="store_true",
                    help="add the cases that pass now to --pass-list and rewrite "
                    "--expected-cases from the data set")
    ap.add_argument("-k", dest="patterns", action="append", default=[],
                    help="run only cases whose name contains PATTERN (repeatable, or a,b,c)")
    ap.add_argument("--case", help="run exactly this case (its path under --cases); exit 0 "
                    "only when it passes")
    ap.add_argument("-j", dest="jobs", type=int, default=1, help="cases run in parallel")
    ap.add_argument("--outdir", help="keep each case's output under DIR (default: a temporary "
                    "directory, removed at the end)")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_SEC,
                    help="seconds one sensor invocation may take (default %d)" %
                    DEFAULT_TIMEOUT_SEC)
    ap.add_argument("--suricata-version", default=DEFAULT_SURICATA_VERSION,
                    help="version that test.yaml requires: are checked against (default %s: "
                    "the data set targets upstream's current behaviour)" %
                    DEFAULT_SURICATA_VERSION)
    ap.add_argument("--report-md", metavar="FILE",
                    help="write the checks per event type as a Markdown table to FILE "
                    "(- = stdout, after the summary)")
    ap.add_argument("-v", dest="verbose", action="store_true", help="print sensor command lines")
    args = ap.parse_args(argv)

    if args.update_pass_list and not args.pass_list:
        ap.error("--update-pass-list needs --pass-list")
    if args.case and (args.patterns or args.update_pass_list or args.report_md):
        ap.error("--case runs one case: not with -k, --update-pass-list or --report-md")
    cases_dir = os.path.abspath(args.cases)
    if not os.path.isdir(cases_dir):
        ap.error("--cases %s: not a directory" % args.cases)
    sensor = os.path.abspath(args.sensor) if os.sep in args.sensor else args.sensor

    tmp = None
    outdir = args.outdir
    if outdir is None:
        tmp = tempfile.mkdtemp(prefix="picket-compat-")
        outdir = tmp
    outdir = os.path.abspath(outdir)
    try:
        runner = Runner(sensor, cases_dir, outdir, parse_version(args.suricata_version),
                        args.verbose, args.timeout)
        if args.case:
            return run_one(runner, cases_dir, os.path.normpath(args.case))
        return run_all(args, runner, cases_dir)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def run_all(args, runner, cases_dir):
    all_names = discover(cases_dir, [])
    patterns = [p for arg in args.patterns for p in arg.split(",") if p]
    names = [n for n in all_names if not patterns or any(p in n for p in patterns)]

    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for name, result in zip(names, pool.map(runner.run_case, names)):
            results[name] = result
            print(case_line(name, result), flush=True)

    listed = read_pass_list(args.pass_list)
    expected = None
    if args.expected_cases and os.path.exists(args.expected_cases):
        expected = read_expected_cases(args.expected_cases)
    problems = data_set_problems(all_names, listed, expected)
    if args.expected_cases and expected is None and not args.update_pass_list:
        problems.append("no expected cases file %s" % args.expected_cases)
    regressions = [n for n in listed if n in results and results[n][0] != "PASS"]
    new_passes = [n for n in names if results[n][0] == "PASS" and n not in listed]
    if new_passes:
        print("new passes (not in the pass list): %s" % " ".join(new_passes), file=sys.stderr)
    if args.update_pass_list:
        if new_passes:
            write_pass_list(args.pass_list, listed + new_passes)
            print("pass list %s: added %d case(s)" % (args.pass_list, len(new_passes)),
                  file=sys.stderr)
        if args.expected_cases:
            write_expected_cases(args.expected_cases, all_names)
            print("expected cases %s: %d case(s)" % (args.expected_cases, len(all_names)),
                  file=sys.stderr)
            problems = data_set_problems(all_names, listed, None)
    for p in problems:
        print(p)
    for n in regressions:
        print("regression: %s is in the pass list but did not pass" % n)
    for line in summary_lines(names, results, load_families(cases_dir), runner.checks):
        print(line)
    if args.report_md:
        table = "\n".join(report_md(names, runner.checks)) + "\n"
        if args.report_md == "-":
            print(table, end="")
        else:
            with open(args.report_md, "w") as f:
                f.write(table)
    if problems or regressions:
        print("FAILED: %d data set problem(s), %d regression(s)" % (len(problems),
                                                                    len(regressions)))
        sys.stdout.flush()
        return 1
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
