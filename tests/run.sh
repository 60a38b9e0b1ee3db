#!/usr/bin/env bash
# The one command that installs dependencies, builds, and runs every test suite. Exit status is
# the truth. Two builds:
#   build/      Release, warnings as errors: GoogleTest units, then the end-to-end process tests
#               (fleet, metrics, namespaces, compat) via CTest;
#   build-san/  clang with ASan + UBSan (+ libFuzzer coverage): the unit suite and the
#               suricata-verify compat suite again, with every sanitizer report fatal
#               (tests/sanitizers/), then a short libFuzzer smoke run of every fuzz target.
# A CTest test that fails is retried once; one that passes then is reported as flaky at the end
# and does not fail the run.
#
#   tests/run.sh              everything (what CI runs)
#   tests/run.sh --sanitize   only the sanitizer build: its unit + compat suites and fuzz smoke
#   tests/run.sh --no-sanitize  skip the sanitized unit + compat suites (fuzz smoke still runs)
#   tests/run.sh --no-fuzz    skip the fuzz smoke run
#   tests/run.sh --fuzz-seconds N   total seconds of the fuzz smoke, shared by the targets
#                                   (at least 5 each; default 120)
#   tests/run.sh -R REGEX     only the CTest tests matching REGEX (no fuzz smoke run)
# Build directories: PICKET_BUILD_DIR (default build/), PICKET_SAN_BUILD_DIR (default build-san/).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

RELEASE=1
SANITIZE=1
FUZZ=1
FUZZ_SECONDS=120
REGEX=""
CTEST_ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --sanitize) RELEASE=0; SANITIZE=1 ;;
        --no-sanitize) SANITIZE=0 ;;
        --no-fuzz) FUZZ=0 ;;
        --fuzz-seconds) FUZZ_SECONDS="$2"; shift ;;
        -R) REGEX="$2"; CTEST_ARGS+=(-R "$2"); FUZZ=0; shift ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) echo "tests/run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

bash deploy/install-deps.sh

JOBS=$(nproc)
status=0
passed=0
failed=0
LOG=$(mktemp /tmp/picket-tests-XXXXXX.log)
SAN_LOGS=$(mktemp -d /tmp/picket-sanitizer-XXXXXX)
trap 'rm -rf "$LOG" "$SAN_LOGS"' EXIT
TIMINGS=()
FAILED_NAMES=()
FLAKY_NAMES=()
phase_start=$SECONDS
# Records how long the phase that just ended took (printed at the end, for CI time budgets).
phase_done() {
    TIMINGS+=("$1: $((SECONDS - phase_start)) s")
    phase_start=$SECONDS
}
# Adds one suite's "N% tests passed, F tests failed out of T" to the totals.
tally() {
    local line total fails
    line=$(grep -E "tests passed, [0-9]+ tests? failed out of [0-9]+" "$LOG" | tail -n 1 || true)
    [ -n "$line" ] || return 0
    fails=$(echo "$line" | sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/')
    total=$(echo "$line" | sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/')
    passed=$((passed + total - fails))
    failed=$((failed + fails))
    # CTest's "The following tests FAILED:" lines, repeated at the end where a log tail shows them.
    local final
    final=$(sed -n '/The following tests FAILED:/,/^$/p' "$LOG" | grep -E '^[[:space:]]+[0-9]+ - ' || true)
    [ -z "$final" ] || mapfile -t -O "${#FAILED_NAMES[@]}" FAILED_NAMES <<<"$final"
    # A test that failed once and passed on its retry (run_ctest's --repeat) is named too: it is
    # flaky, and the log above has its failing output.
    local name
    while read -r name; do
        grep -qF -- " - $name (" <<<"$final" || FLAKY_NAMES+=("$name")
    done < <(sed -n -E 's/.*Test +#[0-9]+: ([^ ]+) \.+ *\*\*\*.*/\1/p' "$LOG" | sort -u)
}
# run_ctest BUILD_DIR ARGS...: one CTest run, its result added to the totals.
run_ctest() {
    local dir=$1 rc
    shift
    set +e
    # A failing test gets one retry: these suites start real processes, threads and timers on
    # a shared 2-core machine. The retry is reported (FLAKY_NAMES), never silent.
    ctest --test-dir "$dir" --output-on-failure --repeat until-pass:2 "$@" 2>&1 | tee "$LOG"
    rc=${PIPESTATUS[0]}
    set -e
    [ "$rc" -eq 0 ] || status=1
    tally
}

if [ "$RELEASE" = 1 ]; then
    BUILD=${PICKET_BUILD_DIR:-$ROOT/build}
    cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPICKET_WERROR=ON >/dev/null
    cmake --build "$BUILD" -j "$JOBS"
    phase_done "release configure+build"
    # Unit tests run in parallel; the e2e and namespace tests take the machine to themselves.
    run_ctest "$BUILD" -j "$JOBS" -LE "e2e|netns" "${CTEST_ARGS[@]}"
    phase_done "release unit"
    run_ctest "$BUILD" -L "e2e|netns" "${CTEST_ARGS[@]}"
    phase_done "release e2e"
fi

if [ "$SANITIZE" = 1 ] || [ "$FUZZ" = 1 ]; then
    # One clang build serves the sanitized suites and the fuzzers: the libraries a fuzzer links
    # also get -fsanitize=fuzzer-no-link (tests/fuzz/CMakeLists.txt), which only adds coverage
    # callbacks that the ASan runtime provides, so the unit tests link and run with them too.
    # -O1 with line tables only: stack traces with file:line at a fraction of -O2 -g's cost.
    SAN_BUILD=${PICKET_SAN_BUILD_DIR:-${PICKET_FUZZ_BUILD_DIR:-$ROOT/build-san}}
    SAN_FLAGS="-O1 -gline-tables-only -DNDEBUG"
    cmake -S . -B "$SAN_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
        "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$SAN_FLAGS" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$SAN_FLAGS" \
        -DPICKET_ASAN=ON -DPICKET_UBSAN=ON -DPICKET_FUZZ=ON -DPICKET_BUILD_TESTS=ON \
        -DPICKET_BUILD_BENCH=OFF >/dev/null
    SAN_TARGETS=()
    if [ "$SANITIZE" = 1 ]; then
        # Every test executable (CTest lists an unbuilt one as a failing *_NOT_BUILT test) and
        # the sensor for the compat suite; not the manager, picketctl or trafficgen binaries,
        # which only the e2e tests run.
        mapfile -t SAN_TARGETS < <(ninja -C "$SAN_BUILD" -t targets all |
            sed -n -E 's/^(tests\/[^:]*): CXX_EXECUTABLE_LINKER.*/\1/p' |
            grep -v -e '^tests/fuzz/' -e '_tests\.cmake$')
        SAN_TARGETS+=(sensor/picket-sensor)
    fi
    [ "$FUZZ" = 1 ] && SAN_TARGETS+=(fuzzers)
    cmake --build "$SAN_BUILD" -j "$JOBS" --target "${SAN_TARGETS[@]}"
    phase_done "sanitizer configure+build"
fi

if [ "$SANITIZE" = 1 ]; then
    # Any report fails: ASan/LSan/UBSan halt with a non-zero exit, and every report is also
    # written to SAN_LOGS so that one from a process whose exit status a test ignores (a
    # sensor the compat runner runs on a case outside its pass list) still fails the run.
    SUPP=$ROOT/tests/sanitizers
    export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1:log_path=$SAN_LOGS/asan"
    export LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$SUPP/ubsan.supp:log_path=$SAN_LOGS/ubsan"
    # Reports go to the log files instead of stderr: show them after each suite.
    san_reports() {
        local f
        for f in "$SAN_LOGS"/*; do
            [ -e "$f" ] || return 0
            echo "==== sanitizer report $(basename "$f")"
            head -n 80 "$f"
        done
        echo "sanitizers: $(find "$SAN_LOGS" -type f | wc -l) report(s) in $1"
        status=1
        failed=$((failed + 1))
        FAILED_NAMES+=("sanitizer report(s) in $1")
        mkdir -p "$SAN_LOGS.kept"
        mv "$SAN_LOGS"/* "$SAN_LOGS.kept"/
        echo "(kept in $SAN_LOGS.kept)"
    }
    run_ctest "$SAN_BUILD" -j "$JOBS" -LE "e2e|netns" "${CTEST_ARGS[@]}"
    san_reports "the sanitized unit suite"
    phase_done "sanitizer unit"
    # The compat suite is labelled e2e (it owns the machine: its runner uses -j 2 itself);
    # registered only when the suricata-verify data is present.
    if [[ -z $REGEX || compat_suricata_verify =~ $REGEX ]]; then
        if ctest --test-dir "$SAN_BUILD" -N -R '^compat_suricata_verify$' |
            grep -q 'Total Tests: 1'; then
            run_ctest "$SAN_BUILD" -R '^compat_suricata_verify$'
            san_reports "the sanitized compat suite"
        else
            echo "sanitizers: compat suite not registered (no suricata-verify data), skipped"
        fi
    fi
    phase_done "sanitizer compat"
    unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS
fi

if [ "$FUZZ" = 1 ]; then
    if bash tests/fuzz/run.sh "$SAN_BUILD" "$FUZZ_SECONDS"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        FAILED_NAMES+=("fuzz smoke (tests/fuzz/run.sh)")
        status=1
    fi
    phase_done "fuzz smoke"
fi

if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
    failed=1  # a suite failed without reaching its summary line
fi
printf 'time: %s\n' "${TIMINGS[@]}"
[ "${#FLAKY_NAMES[@]}" -eq 0 ] || printf 'flaky (failed, passed on its retry): %s\n' "${FLAKY_NAMES[@]}"
[ "${#FAILED_NAMES[@]}" -eq 0 ] || printf 'failed: %s\n' "${FAILED_NAMES[@]}"
echo "tests: $passed passed, $failed failed"
exit "$status"
