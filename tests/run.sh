#!/usr/bin/env bash
# The one command that installs dependencies, builds, and runs every test suite:
# GoogleTest units and the end-to-end process tests (via CTest), then a short libFuzzer smoke
# run of every fuzz target. Exit status is the truth.
#
#   tests/run.sh              everything (what CI runs)
#   tests/run.sh --no-fuzz    skip the fuzz smoke run
#   tests/run.sh --fuzz-seconds N   seconds per fuzz target (default 20)
#   tests/run.sh -R REGEX     only the CTest tests matching REGEX
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

FUZZ=1
FUZZ_SECONDS=20
CTEST_ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --no-fuzz) FUZZ=0 ;;
        --fuzz-seconds) FUZZ_SECONDS="$2"; shift ;;
        -R) CTEST_ARGS+=(-R "$2"); FUZZ=0; shift ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "tests/run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

bash deploy/install-deps.sh

BUILD=${PICKET_BUILD_DIR:-$ROOT/build}
JOBS=$(nproc)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPICKET_WERROR=ON >/dev/null
cmake --build "$BUILD" -j "$JOBS"

status=0
passed=0
failed=0
LOG=$(mktemp /tmp/picket-tests-XXXXXX.log)
trap 'rm -f "$LOG"' EXIT
# Adds one suite's "N% tests passed, F tests failed out of T" to the totals.
tally() {
    local line total fails
    line=$(grep -E "tests passed, [0-9]+ tests? failed out of [0-9]+" "$LOG" | tail -n 1 || true)
    [ -n "$line" ] || return 0
    fails=$(echo "$line" | sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/')
    total=$(echo "$line" | sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/')
    passed=$((passed + total - fails))
    failed=$((failed + fails))
}
# Unit tests run in parallel; the e2e and namespace tests take the machine to themselves.
set +e
ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" -LE "e2e|netns" "${CTEST_ARGS[@]}" 2>&1 | tee "$LOG"
rc=${PIPESTATUS[0]}
set -e
[ "$rc" -eq 0 ] || status=1
tally
set +e
ctest --test-dir "$BUILD" --output-on-failure -L "e2e|netns" "${CTEST_ARGS[@]}" 2>&1 | tee "$LOG"
rc=${PIPESTATUS[0]}
set -e
[ "$rc" -eq 0 ] || status=1
tally

if [ "$FUZZ" = 1 ]; then
    FUZZ_BUILD=${PICKET_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
    cmake -S . -B "$FUZZ_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DPICKET_FUZZ=ON \
        -DPICKET_ASAN=ON -DPICKET_UBSAN=ON -DPICKET_BUILD_TESTS=OFF -DPICKET_BUILD_BENCH=OFF \
        >/dev/null
    cmake --build "$FUZZ_BUILD" -j "$JOBS" --target fuzzers
    if bash tests/fuzz/run.sh "$FUZZ_BUILD" "$FUZZ_SECONDS"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        status=1
    fi
fi

if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
    failed=1  # a suite failed without reaching its summary line
fi
echo "tests: $passed passed, $failed failed"
exit "$status"
