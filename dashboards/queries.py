#!/usr/bin/env python3
"""Extract the PromQL queries of a Grafana dashboard JSON, with Grafana's template variables
replaced by concrete values, so that a test (or an operator) can send them to a Prometheus.

Library:
    from queries import extract_queries, extract_annotation_queries
    extract_queries("dashboards/fleet-overview.json", rate_interval="1m", sensor=".*")
        -> [(panel_title, expr), ...]   every target of every panel (rows included), in order

CLI:
    queries.py DASHBOARD.json [--rate-interval 1m] [--sensor '.*'] [--range 1h]
               [--annotations] [--json]

Substitutions: $__rate_interval and $__interval -> rate_interval (or interval when given),
$__range -> range_, $sensor -> sensor (a regex: the dashboards match it with sensor=~"$sensor",
the same as Grafana's "All" value ".*"). Any other $variable in a query is an error
(ValueError), so a typo cannot reach Prometheus as literal text. $datasource only ever
appears in datasource references, never in a query, and is not substituted. `$1`-style regex
back-references inside PromQL strings are not variables and are left alone.

Annotation queries are kept apart (extract_annotation_queries, or include_annotations=True):
they select events (`changes(...) > 0`) and are empty whenever nothing happened in the last
interval, while every panel query returns data on a healthy fleet.
"""
import argparse
import json
import re
import sys

# Grafana's variable syntaxes: $name, ${name}, ${name:format}, [[name]], [[name:format]].
_VARIABLE = re.compile(r"\$\{(\w+)(?::[^}]*)?\}|\[\[(\w+)(?::\w+)?\]\]|\$(\w+)")


def _substitute(expr, values, where):
    def replace(m):
        name = m.group(1) or m.group(2) or m.group(3)
        if name[0].isdigit():
            return m.group(0)  # a regex back-reference such as "$1" in label_replace
        if name not in values:
            raise ValueError("%s: unknown template variable $%s in %r" % (where, name, expr))
        return values[name]

    return _VARIABLE.sub(replace, expr)


def _values(rate_interval, sensor, interval, range_, variables):
    values = {"__rate_interval": rate_interval,
              "__interval": interval if interval is not None else rate_interval,
              "__range": range_, "sensor": sensor}
    values.update(variables or {})
    return values


def _panels(panels):
    # Rows hold their panels in "panels" when collapsed; walk them in dashboard order.
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))


def _load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def extract_annotation_queries(path, rate_interval="1m", sensor=".*", *, interval=None,
                               range_="1h", variables=None):
    """[(annotation_name, expr)] of the dashboard's Prometheus annotations."""
    values = _values(rate_interval, sensor, interval, range_, variables)
    out = []
    for a in _load(path).get("annotations", {}).get("list", []):
        expr = a.get("expr") or a.get("target", {}).get("expr")
        if expr:
            name = a.get("name", "")
            out.append((name, _substitute(expr, values, "annotation %r" % name)))
    return out


def extract_queries(path, rate_interval="1m", sensor=".*", *, interval=None, range_="1h",
                    variables=None, include_annotations=False):
    """[(panel_title, expr)] for every target of every panel, variables substituted.

    `variables` adds or overrides substitutions ({"name": "value"}); include_annotations
    appends extract_annotation_queries' entries, titled "annotation: NAME".
    """
    values = _values(rate_interval, sensor, interval, range_, variables)
    out = []
    for panel in _panels(_load(path).get("panels", [])):
        title = panel.get("title", "")
        for t in panel.get("targets", []):
            expr = t.get("expr")
            if expr:
                out.append((title, _substitute(expr, values, "panel %r" % title)))
    if include_annotations:
        out += [("annotation: " + name, expr)
                for name, expr in extract_annotation_queries(
                    path, rate_interval, sensor, interval=interval, range_=range_,
                    variables=variables)]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dashboard", nargs="+", help="dashboard JSON file(s)")
    ap.add_argument("--rate-interval", default="1m", help="value of $__rate_interval")
    ap.add_argument("--interval", default=None, help="value of $__interval (default: "
                    "--rate-interval)")
    ap.add_argument("--range", dest="range_", default="1h", metavar="RANGE",
                    help="value of $__range")
    ap.add_argument("--sensor", default=".*", help="value of $sensor (a regex)")
    ap.add_argument("--annotations", action="store_true", help="also print annotation queries")
    ap.add_argument("--json", action="store_true",
                    help="print a JSON list of {dashboard, title, expr}")
    args = ap.parse_args(argv)
    rows = []
    try:
        for path in args.dashboard:
            for title, expr in extract_queries(path, args.rate_interval, args.sensor,
                                               interval=args.interval, range_=args.range_,
                                               include_annotations=args.annotations):
                rows.append({"dashboard": path, "title": title, "expr": expr})
    except (OSError, ValueError) as e:
        print("queries.py: %s" % e, file=sys.stderr)
        return 1
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
    else:
        for r in rows:
            print("%s\t%s" % (r["title"], r["expr"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
