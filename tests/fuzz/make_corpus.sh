#!/usr/bin/env bash
# Generates the seed corpus of every fuzz target into OUT_DIR/<target>/ with the project's own
# tools (picket-trafficgen pcaps, tests/e2e/pcapcraft.py sessions, deploy/ files, ET Open rules
# when /work/shared has them, bundles and sensor messages encoded with protoc); see
# make_corpus.py. Builds picket-trafficgen in BUILD_DIR first when it is missing.
# Usage: tests/fuzz/make_corpus.sh BUILD_DIR OUT_DIR
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 BUILD_DIR OUT_DIR" >&2
    exit 2
fi
build_dir=$1
out_dir=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tg="$build_dir/tools/trafficgen/picket-trafficgen"
if [[ ! -x $tg ]]; then
    cmake --build "$build_dir" --target picket-trafficgen >/dev/null ||
        echo "make_corpus: cannot build picket-trafficgen; pcapcraft traffic only" >&2
fi
# The ASan runtime of a sanitizer build must not report the generator's own exit leaks.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} python3 "$here/make_corpus.py" --trafficgen "$tg" \
    "$out_dir"
