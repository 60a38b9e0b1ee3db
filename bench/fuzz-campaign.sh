#!/usr/bin/env bash
# A longer fuzzing campaign over every libFuzzer target of tests/fuzz (the CI only runs the
# short smoke, tests/fuzz/run.sh). Builds the fuzz build if needed (clang, ASan + UBSan,
# -DPICKET_FUZZ=ON), generates the seed corpus with tests/fuzz/make_corpus.sh, then runs each
# target for --minutes N (one libFuzzer process per target; --jobs J targets at a time),
# keeping each target's growing corpus in the work directory so that a second campaign starts
# where the first stopped. Prints per target: minutes, execs/s, coverage (cov = edges,
# ft = features), corpus size and crashes (crash/leak/timeout/oom artifacts, with their paths).
#
# Usage: bench/fuzz-campaign.sh [--minutes N] [--jobs J] [--only "a_fuzz b_fuzz"]
#                               [--work DIR] [BUILD_DIR]
#   BUILD_DIR  default build-fuzz (configured here when it has no fuzz targets)
#   --minutes  per target, default 10
#   --jobs     targets fuzzed at the same time, default 1 (each uses one core)
#   --work     default BUILD_DIR/fuzz-campaign: seeds/, corpus/<target>/, artifacts/<target>/,
#              logs/<target>.log, summary.md
# Exit status 1 when any target found a crash, leak or timeout.
set -u

minutes=10
jobs=1
only=""
work=""
build_dir=""
while [[ $# -gt 0 ]]; do
    case $1 in
        --minutes) minutes=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) build_dir=$1; shift ;;
    esac
done
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${build_dir:-$repo/build-fuzz}
work=${work:-$build_dir/fuzz-campaign}
fuzz_dir="$build_dir/tests/fuzz"

if [[ ! -f $build_dir/build.ninja && ! -f $build_dir/Makefile ]]; then
    cmake -S "$repo" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DPICKET_FUZZ=ON -DPICKET_ASAN=ON \
        -DPICKET_UBSAN=ON -DPICKET_BUILD_TESTS=OFF -DPICKET_BUILD_BENCH=OFF || exit 1
fi
cmake --build "$build_dir" -j"$(nproc)" --target fuzzers || exit 1

mkdir -p "$work/seeds" "$work/corpus" "$work/artifacts" "$work/logs"
"$repo/tests/fuzz/make_corpus.sh" "$build_dir" "$work/seeds" || exit 1

targets=()
for f in "$fuzz_dir"/*_fuzz; do
    [[ -x $f && -f $f ]] || continue
    n=$(basename "$f")
    [[ -n $only && " $only " != *" $n "* ]] && continue
    targets+=("$n")
done
echo "campaign: ${#targets[@]} targets x ${minutes} min, ${jobs} at a time, work dir $work"

run_one() {
    local name=$1 seeds corpus
    seeds="$work/seeds/${name%_fuzz}"
    corpus="$work/corpus/$name"
    mkdir -p "$corpus" "$seeds" "$work/artifacts/$name"
    # New units go to the first directory (the kept corpus); the seeds are read only.
    "$fuzz_dir/$name" -max_total_time=$((minutes * 60)) -timeout=25 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$work/artifacts/$name/" "$corpus" "$seeds" \
        >"$work/logs/$name.log" 2>&1
}

running=0
for n in "${targets[@]}"; do
    if ((running >= jobs)); then
        wait -n
        running=$((running - 1))
    fi
    echo "  $n ..."
    run_one "$n" &
    running=$((running + 1))
done
wait

status=0
{
    echo "| target | minutes | execs/s | cov | ft | corpus | crashes |"
    echo "|---|---|---|---|---|---|---|"
    for n in "${targets[@]}"; do
        log="$work/logs/$n.log"
        secs=$(grep -ao '^#[0-9].* exec/s: [0-9]*' "$log" | tail -n 1 | sed 's/.*exec\/s: //')
        cov=$(grep -ao 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
        ft=$(grep -ao 'ft: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
        size=$(find "$work/corpus/$n" -type f | wc -l)
        crashes=$(find "$work/artifacts/$n" -type f | wc -l)
        echo "| $n | $minutes | ${secs:-?} | ${cov:-?} | ${ft:-?} | $size | $crashes |"
    done
} | tee "$work/summary.md"
for n in "${targets[@]}"; do
    for a in "$work/artifacts/$n"/*; do
        if [[ -f $a ]]; then
            echo "$n: $a (reproduce: $fuzz_dir/$n $a)"
            status=1
        fi
    done
done
exit $status
