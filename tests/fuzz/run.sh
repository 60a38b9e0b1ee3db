#!/usr/bin/env bash
# Runs every libFuzzer target built in BUILD_DIR/tests/fuzz for SECONDS each, starting from a
# temporary copy of its seed corpus (tests/fuzz/corpus/<name without _fuzz>/), so the repo's
# corpus is never modified. Exits non-zero if any fuzzer fails (crash, leak, sanitizer
# report, timeout); the reproducer stays in the printed artifact directory.
# Usage: tests/fuzz/run.sh BUILD_DIR SECONDS
set -u

if [[ $# -ne 2 ]]; then
    echo "usage: $0 BUILD_DIR SECONDS" >&2
    exit 2
fi
build_dir=$1
seconds=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fuzz_dir="$build_dir/tests/fuzz"

if [[ ! -d $fuzz_dir ]]; then
    echo "no fuzz targets in $fuzz_dir (configure with -DPICKET_FUZZ=ON)" >&2
    exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/picket-fuzz.XXXXXX")
found=0
failed=()
for fuzzer in "$fuzz_dir"/*_fuzz; do
    [[ -x $fuzzer && -f $fuzzer ]] || continue
    found=$((found + 1))
    name=$(basename "$fuzzer")
    seeds="$here/corpus/${name%_fuzz}"
    corpus="$work/$name/corpus"
    artifacts="$work/$name/artifacts/"
    mkdir -p "$corpus" "$artifacts"
    if [[ -d $seeds ]]; then
        cp -r "$seeds"/. "$corpus"/
    fi
    echo "== $name: ${seconds}s, corpus copy in $corpus"
    if "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$artifacts" "$corpus" \
        >"$work/$name/log" 2>&1; then
        grep -E "^stat::(number_of_executed_units|new_units_added)" "$work/$name/log" || true
        echo "== $name: ok"
    else
        tail -n 60 "$work/$name/log"
        echo "== $name: FAILED (log $work/$name/log, artifacts $artifacts)"
        failed+=("$name")
    fi
done

if [[ $found -eq 0 ]]; then
    echo "no *_fuzz executables in $fuzz_dir" >&2
    exit 2
fi
if [[ ${#failed[@]} -ne 0 ]]; then
    echo "failed: ${failed[*]}"
    exit 1
fi
rm -rf "$work"
echo "all $found fuzzer(s) ok"
