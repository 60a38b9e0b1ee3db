#!/usr/bin/env bash
# Pipeline benchmark: a generated 1 GB pcap and the shared pcaps (when present).
#   bench/pipeline/run.sh [BUILD_DIR] [SIZE]     (defaults: build, 1G)
# BENCH_ARGS is passed on, e.g. BENCH_ARGS="--workers 1,2 --acl acl.rules".
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
SIZE=${2:-1G}
WORK=$(mktemp -d /tmp/picket-bench-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
"$BUILD/tools/trafficgen/picket-trafficgen" -o "$WORK/gen.pcap" --seed 1 --size "$SIZE" \
    --frag-share 0.02 --vlan-share 0.05 >/dev/null
FILES=("$WORK/gen.pcap")
SHARED=../shared/data/pcaps
if [ -d "$SHARED" ]; then
    for f in "$SHARED"/*.pcap; do FILES+=("$f"); done
fi
# shellcheck disable=SC2086
"$BUILD/bench/pipeline/pipeline_bench" --rounds "${ROUNDS:-3}" ${BENCH_ARGS:-} "${FILES[@]}"
