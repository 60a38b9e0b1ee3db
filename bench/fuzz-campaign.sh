#!/usr/bin/env bash
# A longer fuzzing campaign over every libFuzzer target of tests/fuzz (the CI only runs the
# short smoke, tests/fuzz/run.sh), and the way its findings go back into the repository.
# Builds the fuzz targets in BUILD_DIR (configured, when it has none, exactly as tests/run.sh
# configures its sanitizer build: clang, ASan + UBSan, -DPICKET_FUZZ=ON), takes the seeds
# (tests/fuzz/make_corpus.sh, or with --repo-seeds only the checked-in corpus), then runs each
# target for --minutes N (one libFuzzer process per target; --jobs J targets at a time),
# keeping each target's growing corpus in the work directory so that a second campaign starts
# where the first stopped. Prints per target: seconds, execs/s, coverage (cov = edges,
# ft = features), corpus size and crashes (crash/leak/timeout/oom artifacts, with their paths).
#
# --merge: afterwards, merges what the campaign found into the checked-in corpus,
# tests/fuzz/corpus/<target without _fuzz>/, with libFuzzer's -merge=1 -use_counters=0: only
# inputs that add a coverage edge to what is already there are added (each cut to --max-len
# bytes, named by their sha1), nothing is removed. --merge-only: no fuzzing, merges what an
# earlier campaign left in the work directory. Prints files and bytes before and after; commit the result (the
# smoke replays the whole checked-in corpus on every CI run). A target with a crash is not
# merged (its corpus may hold the crash's neighbours; fix it first).
#
# Usage: bench/fuzz-campaign.sh [--minutes N | --seconds N] [--jobs J] [--only "a_fuzz b_fuzz"]
#                               [--work DIR] [--repo-seeds] [--merge | --merge-only]
#                               [--max-len B] [BUILD_DIR]
#   BUILD_DIR    default build-san (tests/run.sh's sanitizer build, which builds them too)
#   --minutes    per target, default 10 (--seconds N: N seconds instead)
#   --jobs       targets fuzzed at the same time, default 1 (each uses one core)
#   --work       default BUILD_DIR/fuzz-campaign: seeds/, corpus/<target>/, artifacts/<target>/,
#                logs/<target>.log, summary.md
#   --max-len    longest input the merge keeps, default 4096 bytes
# Exit status 1 when any target found a crash, leak or timeout, or a merge failed.
set -u

seconds=600
jobs=1
merge=0
fuzz=1
repo_seeds=0
max_len=4096
only=""
work=""
build_dir=""
while [[ $# -gt 0 ]]; do
    case $1 in
        --minutes) seconds=$(($2 * 60)); shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --merge) merge=1; shift ;;
        --merge-only) merge=1; fuzz=0; shift ;;
        --repo-seeds) repo_seeds=1; shift ;;
        --max-len) max_len=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        -h | --help) sed -n '2,29p' "$0"; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) build_dir=$1; shift ;;
    esac
done
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${build_dir:-$repo/build-san}
work=${work:-$build_dir/fuzz-campaign}
fuzz_dir="$build_dir/tests/fuzz"

if [[ ! -f $build_dir/build.ninja && ! -f $build_dir/Makefile ]]; then
    # The same configuration as tests/run.sh's sanitizer build, so that both can share it.
    san_flags="-O1 -gline-tables-only -DNDEBUG"
    cmake -S "$repo" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
        "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$san_flags" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$san_flags" \
        -DPICKET_ASAN=ON -DPICKET_UBSAN=ON -DPICKET_TSAN=OFF -DPICKET_FUZZ=ON \
        -DPICKET_BUILD_TESTS=ON -DPICKET_BUILD_BENCH=OFF || exit 1
fi
cmake --build "$build_dir" -j"$(nproc)" --target fuzzers || exit 1

mkdir -p "$work/seeds" "$work/corpus" "$work/artifacts" "$work/logs"
# Absolute paths: some targets chdir (cli_fuzz), and libFuzzer resolves its directories late.
work=$(cd "$work" && pwd)
fuzz_dir=$(cd "$fuzz_dir" && pwd)
if [[ $repo_seeds == 0 && $fuzz == 1 ]]; then
    "$repo/tests/fuzz/make_corpus.sh" "$build_dir" "$work/seeds" || exit 1
fi

targets=()
for f in "$fuzz_dir"/*_fuzz; do
    [[ -x $f && -f $f ]] || continue
    n=$(basename "$f")
    [[ -n $only && " $only " != *" $n "* ]] && continue
    targets+=("$n")
done
targets_to_fuzz=("${targets[@]}")
echo "campaign: ${#targets[@]} targets x ${seconds} s, ${jobs} at a time, work dir $work"

run_one() {
    local name=$1 seeds corpus
    seeds="$work/seeds/${name%_fuzz}"
    [[ $repo_seeds == 1 ]] && seeds="$repo/tests/fuzz/corpus/${name%_fuzz}"
    corpus="$work/corpus/$name"
    mkdir -p "$corpus" "$seeds" "$work/artifacts/$name"
    # New units go to the first directory (the kept corpus); the seeds are read only.
    "$fuzz_dir/$name" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$work/artifacts/$name/" "$corpus" "$seeds" \
        >"$work/logs/$name.log" 2>&1
}

running=0
((fuzz == 1)) || targets_to_fuzz=()
for n in "${targets_to_fuzz[@]}"; do
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
    echo "| target | seconds | execs/s | cov | ft | corpus | crashes |"
    echo "|---|---|---|---|---|---|---|"
    for n in "${targets[@]}"; do
        log="$work/logs/$n.log"
        secs=$(grep -ao '^#[0-9].* exec/s: [0-9]*' "$log" | tail -n 1 | sed 's/.*exec\/s: //')
        cov=$(grep -ao 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
        ft=$(grep -ao 'ft: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
        size=$(find "$work/corpus/$n" -type f | wc -l)
        crashes=$(find "$work/artifacts/$n" -type f | wc -l)
        echo "| $n | $seconds | ${secs:-?} | ${cov:-?} | ${ft:-?} | $size | $crashes |"
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

if [[ $merge == 1 ]]; then
    echo "merge into $repo/tests/fuzz/corpus (-merge=1, -max_len=$max_len):"
    for n in "${targets[@]}"; do
        dest="$repo/tests/fuzz/corpus/${n%_fuzz}"
        if [[ ! -d $work/corpus/$n ]]; then
            echo "  $n: nothing to merge (no $work/corpus/$n)"
            continue
        fi
        if [[ -n $(find "$work/artifacts/$n" -type f) ]]; then
            echo "  $n: not merged (it found a crash)"
            continue
        fi
        mkdir -p "$dest"
        before=$(find "$dest" -maxdepth 1 -type f ! -name '*.py' ! -name '*.md' | wc -l)
        bytes_before=$(find "$dest" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
        # -use_counters=0: an input must add an edge, not just a new hit count of one, which
        # keeps the corpus (and the smoke's replay of it) several times smaller.
        if ! "$fuzz_dir/$n" -merge=1 -use_counters=0 -max_len="$max_len" -timeout=25 \
            -rss_limit_mb=2048 \
            "$dest" "$work/corpus/$n" >"$work/logs/$n.merge.log" 2>&1; then
            echo "  $n: merge failed (log $work/logs/$n.merge.log)"
            status=1
            continue
        fi
        after=$(find "$dest" -maxdepth 1 -type f ! -name '*.py' ! -name '*.md' | wc -l)
        bytes_after=$(find "$dest" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
        echo "  $n: $before -> $after files, $bytes_before -> $bytes_after bytes"
    done
    echo "corpus now $(find "$repo/tests/fuzz/corpus" -type f | wc -l) files," \
        "$(find "$repo/tests/fuzz/corpus" -type f -printf '%s\n' | awk '{s += $1} END {print s}')" \
        "bytes in total"
fi
exit $status
