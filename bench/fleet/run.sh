#!/usr/bin/env bash
# Fleet scale benchmark: picket-manager with K=1000, then K=10000 simulated sensor streams.
#   bench/fleet/run.sh [BUILD_DIR]        (default: build; SOAK / INTERVAL override 20 / 5)
# The 10000 run may fail on a small machine: the sync-API manager holds two threads per stream
# (manager/service/README.md "Limits"); the result line then says how many streams connected.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
BIN="$BUILD/bench/fleet/fleet_load"
MGR="$BUILD/manager/picket-manager"
for k in 1000 10000; do
    echo "== K=$k"
    timeout 300 "$BIN" --manager-bin "$MGR" --sensors "$k" --soak "${SOAK:-20}" \
        --interval "${INTERVAL:-5}"
    rc=$?
    if [ "$rc" -eq 124 ]; then
        echo "fleet: K=$k timed out after 300 s"
    elif [ "$rc" -ne 0 ]; then
        echo "fleet: K=$k exit status $rc (see the fields above)"
    fi
done
