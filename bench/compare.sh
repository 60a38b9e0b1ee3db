#!/usr/bin/env bash
# Before/after comparison of two builds on the packet path: bench/pipeline (1 worker) and
# bench/detect (ET Open, PCRE2 JIT) on a generated pcap and the shared pcaps, the two builds
# run in turn (A B A B ...) so that the machine's drift hits both, median per build and pcap
# and the ratio after/before. Never pass/fail: the figures go to docs/performance.md.
#
#   bench/compare.sh BEFORE_BUILD AFTER_BUILD [ROUNDS]      (ROUNDS default 3)
#
# Each build dir needs bench/pipeline/pipeline_bench, bench/detect/detect_bench and
# tools/trafficgen/picket-trafficgen. Rules: ../shared/data/rules/et-open (RULES=DIR to
# change); without them only the pipeline is compared.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
    echo "usage: bench/compare.sh BEFORE_BUILD AFTER_BUILD [ROUNDS]" >&2
    exit 2
fi
BEFORE=$1
AFTER=$2
ROUNDS=${3:-3}
for b in "$BEFORE" "$AFTER"; do
    for t in bench/pipeline/pipeline_bench bench/detect/detect_bench tools/trafficgen/picket-trafficgen; do
        [ -x "$b/$t" ] || { echo "compare.sh: $b/$t: not built" >&2; exit 2; }
    done
done
RULES=${RULES:-../shared/data/rules/et-open}
WORK=$(mktemp -d /tmp/picket-compare-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
"$AFTER/tools/trafficgen/picket-trafficgen" -o "$WORK/gen200.pcap" --seed 1 --size 200M \
    --attack /etc/passwd --attack cmd.exe --attack-share 0.05 >/dev/null
FILES=("$WORK/gen200.pcap")
if [ -d ../shared/data/pcaps ]; then
    for f in ../shared/data/pcaps/*.pcap; do FILES+=("$f"); done
fi
OUT="$WORK/out"
: >"$OUT"
for ((r = 1; r <= ROUNDS; r++)); do
    for side in before after; do
        b=$BEFORE
        [ "$side" = after ] && b=$AFTER
        "$b/bench/pipeline/pipeline_bench" --rounds 1 --workers 1 "${FILES[@]}" |
            sed -n "s/^pipeline: /$side pipeline /p" >>"$OUT"
        if [ -d "$RULES" ]; then
            args=(--rules "$RULES" --rounds 1)
            [ -f "$RULES/classification.config" ] && args+=(--classification "$RULES/classification.config")
            "$b/bench/detect/detect_bench" "${args[@]}" "${FILES[@]}" |
                sed -n "s/^detect: /$side detect /p" >>"$OUT"
        fi
    done
done
python3 - "$OUT" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    side, bench, rest = line.split(" ", 2)
    kv = dict(re.findall(r"(\w+)=(\S+)", rest))
    name = kv["file"].rsplit("/", 1)[-1]
    key = "w1_pps" if bench == "pipeline" else "jit_pps"
    runs.setdefault((bench, name), {}).setdefault(side, []).append(float(kv[key]))
print(f"{'bench':9} {'pcap':22} {'before pps':>12} {'after pps':>12} {'after/before':>13}  runs")
for (bench, name), sides in sorted(runs.items()):
    b, a = statistics.median(sides["before"]), statistics.median(sides["after"])
    pairs = [x / y for x, y in zip(sides["after"], sides["before"])]
    print(f"{bench:9} {name:22} {b:12.0f} {a:12.0f} {a / b:13.3f}  "
          f"pairwise {min(pairs):.3f}-{max(pairs):.3f} (n={len(pairs)})")
PY
