#!/usr/bin/env bash
# The one command that installs dependencies, builds, and runs every test suite. Exit status is
# the truth, and the last line counts apart what passed, failed and was skipped:
#   tests: N passed, M failed, K skipped
# Above it: the time of each phase, every quarantined test with its reason and age
# (tests/quarantine.txt), every skipped test with its reason, every failed one.
# Three builds:
#   build/       Release, warnings as errors: GoogleTest units, the end-to-end process tests
#                (fleet, metrics, namespaces, deploy files, dashboards), then the suricata-verify
#                compat cases (one CTest test each, label compat).
#   build-san/   clang with ASan + UBSan (+ libFuzzer coverage): the unit suite and the compat
#                cases again, every sanitizer report fatal (tests/sanitizers/), then the libFuzzer
#                smoke run: the checked-in corpus of every target replayed, then >= 15 s each.
#   build-tsan/  clang with ThreadSanitizer: the tests of the threaded parts (engine reader,
#                workers, stats and reload swap; alert and EVE queues; agent; manager streams,
#                rollout and store writer; metrics exporter), any report fatal.
# No automatic retry: a test that fails is a failure. A known-flaky test is fixed, or named in
# tests/quarantine.txt (it still runs; its result is shown, not counted).
#
#   tests/run.sh                everything (what CI runs, with --require-all)
#   tests/run.sh --require-all  a skipped test is a failure naming the missing prerequisite
#                               (root, network namespaces, a tool, the shared data)
#   tests/run.sh --sanitize     only the ASan/UBSan build: its unit + compat suites, fuzz smoke
#   tests/run.sh --tsan         only the ThreadSanitizer build and its suite
#   tests/run.sh --no-sanitize  skip the ASan/UBSan unit + compat suites (fuzz smoke still runs)
#   tests/run.sh --no-tsan      skip the ThreadSanitizer build and suite
#   tests/run.sh --no-fuzz      skip the fuzz smoke run
#   tests/run.sh --fuzz-seconds N   seconds of fuzzing per target after the corpus replay
#                                   (default 15, the least it takes)
#   tests/run.sh -R REGEX       only the CTest tests matching REGEX (no fuzz smoke run)
# Build directories: PICKET_BUILD_DIR (default build/), PICKET_SAN_BUILD_DIR (build-san/),
# PICKET_TSAN_BUILD_DIR (build-tsan/).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

RELEASE=1
SANITIZE=1
TSAN=1
FUZZ=1
FUZZ_SECONDS=15
REQUIRE_ALL=0
REGEX=""
CTEST_ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --sanitize) RELEASE=0; SANITIZE=1; TSAN=0 ;;
        --tsan) RELEASE=0; SANITIZE=0; FUZZ=0; TSAN=1 ;;
        --no-sanitize) SANITIZE=0 ;;
        --no-tsan) TSAN=0 ;;
        --no-fuzz) FUZZ=0 ;;
        --require-all) REQUIRE_ALL=1 ;;
        --fuzz-seconds)
            [[ ${2:-} =~ ^[0-9]+$ ]] || { echo "tests/run.sh: --fuzz-seconds takes a number of seconds, got '${2:-}'" >&2; exit 2; }
            FUZZ_SECONDS="$2"; shift ;;
        -R)
            [ -n "${2:-}" ] || { echo "tests/run.sh: -R takes a regular expression" >&2; exit 2; }
            REGEX="$2"; CTEST_ARGS+=(-R "$2"); FUZZ=0; shift ;;
        -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
        *) echo "tests/run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

bash deploy/install-deps.sh

# ccache keys on paths relative to the checkout, so a fresh clone elsewhere (CI) reuses the
# objects of an earlier build of the same sources.
export CCACHE_BASEDIR=$ROOT CCACHE_NOHASHDIR=1

JOBS=$(nproc)
WORK=$(mktemp -d /tmp/picket-tests-XXXXXX)
STATE=$WORK/results.json
SAN_LOGS=$WORK/sanitizer
mkdir -p "$SAN_LOGS"
trap 'rm -rf "$WORK"' EXIT
REPORT=(python3 "$ROOT/tests/support/ctest_report.py")
QUARANTINE=$ROOT/tests/quarantine.txt
TIMINGS=()
phase_start=$SECONDS
# Records how long the phase that just ended took (printed at the end, for CI time budgets).
phase_done() {
    TIMINGS+=("$1: $((SECONDS - phase_start)) s")
    phase_start=$SECONDS
}
# run_ctest PHASE BUILD_DIR ARGS...: one CTest run (no retry), every result added to STATE.
run_ctest() {
    local phase=$1 dir=$2 base
    shift 2
    base=$WORK/$(echo "$phase" | tr -c 'a-zA-Z0-9\n' '_')
    rm -f "$base.xml"
    # The exit status is not used: the JUnit file says what passed, failed or was skipped (a
    # missing file is a failure of its own), CTest's output why a test failed (ctest_report.py).
    ctest --test-dir "$dir" --output-on-failure --output-junit "$base.xml" "$@" 2>&1 |
        tee "$base.log" || true
    "${REPORT[@]}" add "$STATE" "$phase" "$base.xml" --quarantine "$QUARANTINE" --log "$base.log"
}
# has_tests BUILD_DIR ARGS...: whether CTest selects any test with these arguments.
has_tests() {
    local dir=$1
    shift
    ! ctest --test-dir "$dir" -N "$@" | grep -q '^Total Tests: 0$'
}
# build PHASE ARGS...: a cmake --build whose failure is recorded (and ends the run).
build() {
    local phase=$1
    shift
    if ! cmake --build "$@"; then
        "${REPORT[@]}" result "$STATE" "$phase" "build" fail "cmake --build $* failed"
        "${REPORT[@]}" summary "$STATE" || true
        exit 1
    fi
}
# san_reports PHASE: any sanitizer report written during PHASE fails it (reports go to files, so
# that one from a process whose exit status a test ignores still counts).
san_reports() {
    local f n
    n=$(find "$SAN_LOGS" -type f | wc -l)
    if [ "$n" -eq 0 ]; then
        "${REPORT[@]}" result "$STATE" "$1" "no sanitizer report" pass
        return 0
    fi
    for f in "$SAN_LOGS"/*; do
        echo "==== sanitizer report $(basename "$f")"
        head -n 80 "$f"
    done
    mkdir -p "$ROOT/sanitizer-reports"
    mv "$SAN_LOGS"/* "$ROOT/sanitizer-reports/"
    "${REPORT[@]}" result "$STATE" "$1" "no sanitizer report" fail \
        "$n report(s), kept in $ROOT/sanitizer-reports"
}
# configure_clang BUILD_DIR -D...: a clang tree for a sanitizer, -O1 with line tables only
# (stack traces with file:line at a fraction of -O2 -g's cost), tests on, benchmarks off.
configure_clang() {
    local dir=$1 flags="-O1 -gline-tables-only -DNDEBUG"
    shift
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
        "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$flags" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$flags" \
        -DPICKET_BUILD_TESTS=ON -DPICKET_BUILD_BENCH=OFF "$@" >/dev/null
}

if [ "$RELEASE" = 1 ]; then
    BUILD=${PICKET_BUILD_DIR:-$ROOT/build}
    cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPICKET_WERROR=ON >/dev/null
    build release "$BUILD" -j "$JOBS"
    "${REPORT[@]}" timeouts "$STATE" release "$BUILD"
    phase_done "release configure+build"
    # Unit tests run in parallel; the e2e and namespace tests take the machine to themselves;
    # the compat cases each start one sensor, two at a time.
    run_ctest "release unit" "$BUILD" -j "$JOBS" -LE "e2e|netns|compat" "${CTEST_ARGS[@]}"
    phase_done "release unit"
    run_ctest "release e2e" "$BUILD" -L "e2e|netns" "${CTEST_ARGS[@]}"
    phase_done "release e2e"
    if has_tests "$BUILD" -L compat "${CTEST_ARGS[@]}"; then
        run_ctest "release compat" "$BUILD" -j "$JOBS" -L compat "${CTEST_ARGS[@]}"
    elif [ -z "$REGEX" ]; then
        "${REPORT[@]}" result "$STATE" "release compat" "suricata-verify compat cases" skip \
            "no suricata-verify data beside the checkout (../shared/data/suricata-verify)"
    fi
    phase_done "release compat"
fi

if [ "$SANITIZE" = 1 ] || [ "$FUZZ" = 1 ]; then
    # One clang build serves the sanitized suites and the fuzzers: the libraries a fuzzer links
    # also get -fsanitize=fuzzer-no-link (tests/fuzz/CMakeLists.txt), which only adds coverage
    # callbacks that the ASan runtime provides, so the unit tests link and run with them too.
    SAN_BUILD=${PICKET_SAN_BUILD_DIR:-${PICKET_FUZZ_BUILD_DIR:-$ROOT/build-san}}
    configure_clang "$SAN_BUILD" -DPICKET_ASAN=ON -DPICKET_UBSAN=ON -DPICKET_TSAN=OFF \
        -DPICKET_FUZZ=ON
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
    build asan "$SAN_BUILD" -j "$JOBS" --target "${SAN_TARGETS[@]}"
    phase_done "asan configure+build"
fi

if [ "$SANITIZE" = 1 ]; then
    SUPP=$ROOT/tests/sanitizers
    export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1:log_path=$SAN_LOGS/asan"
    export LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$SUPP/ubsan.supp:log_path=$SAN_LOGS/ubsan"
    run_ctest "asan unit" "$SAN_BUILD" -j "$JOBS" -LE "e2e|netns|compat" "${CTEST_ARGS[@]}"
    san_reports "asan unit"
    phase_done "asan unit"
    # The pass-listed compat cases again, each sensor under ASan (compat_inventory, which only
    # adds the data set's bookkeeping and the cases outside the pass list, ran in Release).
    if has_tests "$SAN_BUILD" -L compat -E '^compat_inventory$' "${CTEST_ARGS[@]}"; then
        run_ctest "asan compat" "$SAN_BUILD" -j "$JOBS" -L compat -E '^compat_inventory$' \
            "${CTEST_ARGS[@]}"
        san_reports "asan compat"
    fi
    phase_done "asan compat"
    unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS
fi

if [ "$FUZZ" = 1 ]; then
    if FUZZ_PER_TARGET=1 bash tests/fuzz/run.sh "$SAN_BUILD" "$FUZZ_SECONDS"; then
        "${REPORT[@]}" result "$STATE" fuzz "fuzz smoke (tests/fuzz/run.sh)" pass
    else
        # Which target and why, on the report's last lines (a CI log is often read from its
        # end only).
        why=$(paste -sd ';' "$SAN_BUILD/fuzz-smoke/failures.txt" 2>/dev/null | cut -c1-600)
        "${REPORT[@]}" result "$STATE" fuzz "fuzz smoke (tests/fuzz/run.sh)" fail \
            "${why:-a target crashed, leaked, hung or reported} (reproducers in $SAN_BUILD/fuzz-findings)"
    fi
    phase_done "fuzz smoke"
fi

if [ "$TSAN" = 1 ]; then
    # Only the tests marked THREADED in their CMakeLists.txt are registered in this build
    # (tests/CMakeLists.txt); the target threaded_tests builds them and what they link.
    TSAN_BUILD=${PICKET_TSAN_BUILD_DIR:-$ROOT/build-tsan}
    configure_clang "$TSAN_BUILD" -DPICKET_TSAN=ON -DPICKET_ASAN=OFF -DPICKET_UBSAN=OFF \
        -DPICKET_FUZZ=OFF
    build tsan "$TSAN_BUILD" -j "$JOBS" --target threaded_tests
    phase_done "tsan configure+build"
    # ignore_noninstrumented_modules: gRPC, Abseil and protobuf are Debian's uninstrumented
    # builds; their libc calls are not checked, Picket's own accesses are (tests/sanitizers/).
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4:ignore_noninstrumented_modules=1:suppressions=$ROOT/tests/sanitizers/tsan.supp:log_path=$SAN_LOGS/tsan"
    run_ctest "tsan" "$TSAN_BUILD" -j "$JOBS" "${CTEST_ARGS[@]}"
    san_reports "tsan"
    unset TSAN_OPTIONS
    phase_done "tsan"
fi

printf 'time: %s\n' "${TIMINGS[@]}"
if [ "$REQUIRE_ALL" = 1 ]; then
    "${REPORT[@]}" summary "$STATE" --require-all
else
    "${REPORT[@]}" summary "$STATE"
fi
