#!/usr/bin/env bash
# The CI fuzz smoke run: every libFuzzer target built in BUILD_DIR/tests/fuzz, one after the
# other, one process at a time (CI has 2 cores). For each target, in two steps:
#   1. replay: every input of its checked-in corpus (tests/fuzz/corpus/<name without _fuzz>/),
#      each run once; any crash, leak, sanitizer report or timeout fails the run (this is how
#      a reproducer added to the corpus keeps a fixed bug fixed);
#   2. fuzz: libFuzzer for SECONDS-derived seconds from a copy of that corpus, in
#      BUILD_DIR/fuzz-smoke/<target>/corpus (recreated each run; the repo's corpus is never
#      modified; bench/fuzz-campaign.sh --merge is how new coverage goes back into the repo).
#
# SECONDS is the TOTAL fuzzing budget, shared equally by the targets found, at least
# MIN_SECONDS_PER_TARGET=15 s each (so `run.sh BUILD 0` still gives every target 15 s); the
# replay and process start come on top. With FUZZ_PER_TARGET=1, SECONDS is per target instead
# (still at least 15). FUZZ_ONLY="a_fuzz b_fuzz" restricts the run to those targets. With the
# 17 targets of today, `FUZZ_PER_TARGET=1 run.sh BUILD 15` (what tests/run.sh runs) takes
# about 6 minutes on the 2-core machine (ASan + UBSan build; 1421 corpus inputs replayed).
#
# Fails (exit 1) on any crash, leak, sanitizer report, timeout (-timeout=10 s per input) or
# out-of-memory (-rss_limit_mb=2048). One line per failure (target, step, kind and the
# sanitizer's SUMMARY line) goes to BUILD_DIR/fuzz-smoke/failures.txt, which tests/run.sh
# prints last. What failed is kept in a stable place, never deleted by a later run:
# BUILD_DIR/fuzz-findings/<target>/ holds the reproducer (crash-*, leak-*, timeout-*, oom-*;
# for a replay failure, a copy of the corpus file) and the log, and the run prints, e.g.
#   == FAILED defrag_fuzz (fuzz): crash, reproducer BUILD/fuzz-findings/defrag_fuzz/crash-…
#      reproduce: BUILD/tests/fuzz/defrag_fuzz BUILD/fuzz-findings/defrag_fuzz/crash-…
#      once fixed, keep it in the corpus: cp FILE tests/fuzz/corpus/defrag/$(sha1sum <FILE | cut -c1-40)
# (the corpus is replayed by every smoke run, so the fix stays tested). A reproducer of a bug
# that is not fixed yet must not go into the corpus (the smoke would fail): keep it in
# tests/fuzz/regressions/<target>/ with a README line saying what it shows.
# Usage: tests/fuzz/run.sh BUILD_DIR SECONDS
set -u

if [[ $# -ne 2 ]]; then
    echo "usage: $0 BUILD_DIR SECONDS (total budget; FUZZ_PER_TARGET=1: per target)" >&2
    exit 2
fi
build_dir=$(cd "$1" 2>/dev/null && pwd) || {
    echo "no build directory $1" >&2
    exit 2
}
budget=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
fuzz_dir="$build_dir/tests/fuzz"
min_per_target=15
opts=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048)

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
echo "fuzz smoke: ${#fuzzers[@]} targets, corpus replay then ${seconds}s of fuzzing each"

work="$build_dir/fuzz-smoke"
findings="$build_dir/fuzz-findings"
rm -rf "$work"
mkdir -p "$work" "$findings"
start_all=$(date +%s)
failed=()

# report NAME STEP RC LOG ARTIFACT_DIR [CORPUS_FILE]: keeps the reproducer and the log under
# fuzz-findings/NAME/ and prints how to reproduce it and, once fixed, keep it in the corpus.
report() {
    local name=$1 step=$2 rc=$3 log=$4 artifacts=$5 input=${6:-} repro kind keep stamp why
    stamp=$(date +%Y%m%d-%H%M%S)
    keep="$findings/$name"
    mkdir -p "$keep"
    repro=$(find "$artifacts" -maxdepth 1 -type f 2>/dev/null | head -n 1)
    if [[ -z $repro && -n $input ]]; then
        repro="$artifacts/corpus-$(basename "$input")"
        cp "$input" "$repro"
    fi
    kind=$(basename "${repro:-none}" | cut -d- -f1)
    [[ $kind == corpus ]] && kind="failure"
    [[ $rc -eq 124 || $rc -eq 137 ]] && kind="hang (killed by timeout)"
    [[ -z $repro && $kind == none ]] && kind="exit $rc"
    if [[ -n $repro ]]; then
        cp "$repro" "$keep/"
        repro="$keep/$(basename "$repro")"
    fi
    cp "$log" "$keep/$step-$stamp.log"
    tail -n 60 "$log"
    # The sanitizer's or libFuzzer's one-line verdict ("SUMMARY: AddressSanitizer: ...",
    # "==N== ERROR: libFuzzer: timeout ..."), for the summary that tests/run.sh prints last.
    why=$(grep -a -m 1 -E '^SUMMARY: |ERROR: libFuzzer|runtime error:' "$log" | cut -c1-200)
    echo "$name ($step): $kind${why:+: $why}" >>"$work/failures.txt"
    echo "== FAILED $name ($step): $kind, reproducer ${repro:-none} (log $keep/$step-$stamp.log)"
    [[ -n $repro ]] && echo "   reproduce: $fuzz_dir/$name $repro"
    if [[ -n $input ]]; then
        echo "   the failing input is in the checked-in corpus: $input"
    elif [[ -n $repro ]]; then
        echo "   once fixed, keep it in the corpus: cp $repro" \
            "$repo/tests/fuzz/corpus/${name%_fuzz}/\$(sha1sum <$repro | cut -c1-40)"
    fi
}

for fuzzer in "${fuzzers[@]}"; do
    name=$(basename "$fuzzer")
    seeds="$here/corpus/${name%_fuzz}"
    corpus="$work/$name/corpus"
    artifacts="$work/$name/artifacts"
    mkdir -p "$corpus" "$artifacts"
    files=()
    if [[ -d $seeds ]]; then
        mapfile -t files < <(find "$seeds" -maxdepth 1 -type f ! -name '*.py' ! -name '*.md' |
            sort)
    fi
    # 1. Replay: each file of the checked-in corpus once (libFuzzer's reproduce mode stops at
    # the first failing input and names it: "Running: FILE").
    start=$(date +%s)
    if [[ ${#files[@]} -gt 0 ]]; then
        timeout -k 10 600 "$fuzzer" "${opts[@]}" -artifact_prefix="$artifacts/" "${files[@]}" \
            >"$work/$name/replay.log" 2>&1
        rc=$?
        if [[ $rc -ne 0 ]]; then
            bad=$(sed -n 's/^Running: //p' "$work/$name/replay.log" | tail -n 1)
            report "$name" replay "$rc" "$work/$name/replay.log" "$artifacts" "$bad"
            failed+=("$name")
            continue
        fi
        cp "${files[@]}" "$corpus"/
    fi
    replay=$(($(date +%s) - start))
    # 2. Fuzz. libFuzzer runs the corpus again first, inside -max_total_time: the replay's
    # time is added so that every target really fuzzes `seconds` (detect_fuzz's corpus takes
    # ~15 s: each input loads its own rule set). The outer timeout catches a hang that
    # libFuzzer's own -timeout cannot (e.g. in the corpus load before its watchdog starts).
    start=$(date +%s)
    total=$((seconds + replay))
    timeout -k 10 $((total + 120)) "$fuzzer" -max_total_time="$total" "${opts[@]}" \
        -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" >"$work/$name/log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    if [[ $rc -eq 0 ]]; then
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$name/log")
        cov=$(grep -ao 'cov: [0-9]*' "$work/$name/log" | tail -n 1)
        units=$(find "$corpus" -type f | wc -l)
        echo "== $name: ok (replay ${#files[@]} inputs ${replay}s, fuzz ${took}s," \
            "${execs:-?} execs, ${cov:-cov: ?}, corpus ${#files[@]} -> $units)"
        continue
    fi
    report "$name" fuzz "$rc" "$work/$name/log" "$artifacts"
    failed+=("$name")
done

echo "fuzz smoke: $(($(date +%s) - start_all))s in total"
if [[ ${#failed[@]} -ne 0 ]]; then
    echo "failed: ${failed[*]} (reproducers and logs kept in $findings; work directory $work)"
    exit 1
fi
echo "all ${#fuzzers[@]} fuzzer(s) ok (grown corpora in $work/<target>/corpus)"
