#!/usr/bin/env bash
# The CI fuzz smoke run: every libFuzzer target built in BUILD_DIR/tests/fuzz, one after the
# other, one process each (CI has 2 cores), each starting from a temporary copy of its
# checked-in seed corpus (tests/fuzz/corpus/<name without _fuzz>/), so the repo's corpus is
# never modified.
#
# SECONDS is the TOTAL budget of the run, shared equally by the targets found (at least
# MIN_SECONDS_PER_TARGET=5 s each, so a tiny budget still runs every target; the seed corpus
# alone is replayed first and counts in that time). With the 17 targets of today,
# `run.sh BUILD 200` gives each ~11 s and the whole run stays under 4 minutes on 2 cores
# (startup and corpus replay included). Set FUZZ_PER_TARGET=1 to make SECONDS per target
# instead (the old meaning). FUZZ_ONLY="a_fuzz b_fuzz" restricts the run to those targets.
#
# Fails (exit 1) on any crash, leak, sanitizer report, timeout (-timeout=10 s per input) or
# out-of-memory (-rss_limit_mb=2048), printing for each failed target its name, the end of
# its log and the reproducer path, e.g.
#   == FAILED defrag_fuzz: crash, reproducer /tmp/picket-fuzz.X/defrag_fuzz/artifacts/crash-…
#   reproduce: BUILD/tests/fuzz/defrag_fuzz /tmp/picket-fuzz.X/defrag_fuzz/artifacts/crash-…
# The work directory is kept when something failed, removed otherwise.
# Usage: tests/fuzz/run.sh BUILD_DIR SECONDS
set -u

if [[ $# -ne 2 ]]; then
    echo "usage: $0 BUILD_DIR SECONDS (total budget; FUZZ_PER_TARGET=1: per target)" >&2
    exit 2
fi
build_dir=$1
budget=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fuzz_dir="$build_dir/tests/fuzz"
min_per_target=5

if [[ ! -d $fuzz_dir ]]; then
    echo "no fuzz targets in $fuzz_dir (configure with -DPICKET_FUZZ=ON)" >&2
    exit 2
fi

fuzzers=()
for fuzzer in "$fuzz_dir"/*_fuzz; do
    [[ -x $fuzzer && -f $fuzzer ]] || continue
    name=$(basename "$fuzzer")
    if [[ -n ${FUZZ_ONLY:-} && " $FUZZ_ONLY " != *" $name "* ]]; then
        continue
    fi
    fuzzers+=("$fuzzer")
done
if [[ ${#fuzzers[@]} -eq 0 ]]; then
    echo "no *_fuzz executables in $fuzz_dir" >&2
    exit 2
fi
if [[ ${FUZZ_PER_TARGET:-0} == 1 ]]; then
    seconds=$budget
else
    seconds=$((budget / ${#fuzzers[@]}))
fi
((seconds < min_per_target)) && seconds=$min_per_target
echo "fuzz smoke: ${#fuzzers[@]} targets, ${seconds}s each"

work=$(mktemp -d "${TMPDIR:-/tmp}/picket-fuzz.XXXXXX")
start_all=$(date +%s)
failed=()
for fuzzer in "${fuzzers[@]}"; do
    name=$(basename "$fuzzer")
    seeds="$here/corpus/${name%_fuzz}"
    corpus="$work/$name/corpus"
    artifacts="$work/$name/artifacts/"
    mkdir -p "$corpus" "$artifacts"
    if [[ -d $seeds ]]; then
        find "$seeds" -maxdepth 1 -type f ! -name '*.py' -exec cp {} "$corpus"/ \;
    fi
    start=$(date +%s)
    # -max_total_time bounds the fuzzing; the outer timeout catches a hang that libFuzzer's
    # own -timeout cannot (e.g. in the seed replay before its watchdog starts).
    timeout -k 10 $((seconds + 60)) "$fuzzer" -max_total_time="$seconds" -timeout=10 \
        -rss_limit_mb=2048 -malloc_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$artifacts" "$corpus" >"$work/$name/log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    if [[ $rc -eq 0 ]]; then
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$name/log")
        cov=$(grep -ao 'cov: [0-9]*' "$work/$name/log" | tail -n 1)
        echo "== $name: ok (${took}s, ${execs:-?} execs, ${cov:-cov: ?})"
        continue
    fi
    repro=$(find "$artifacts" -type f | head -n 1)
    kind=$(basename "${repro:-none}" | cut -d- -f1)
    [[ $rc -eq 124 ]] && kind="hang (killed by timeout)"
    tail -n 60 "$work/$name/log"
    echo "== FAILED $name: ${kind:-exit $rc}, reproducer ${repro:-none} (log $work/$name/log)"
    [[ -n $repro ]] && echo "   reproduce: $fuzzer $repro"
    failed+=("$name")
done

echo "fuzz smoke: $(($(date +%s) - start_all))s in total"
if [[ ${#failed[@]} -ne 0 ]]; then
    echo "failed: ${failed[*]} (work directory kept: $work)"
    exit 1
fi
rm -rf "$work"
echo "all ${#fuzzers[@]} fuzzer(s) ok"
