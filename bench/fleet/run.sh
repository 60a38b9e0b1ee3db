#!/usr/bin/env bash
# Fleet scale benchmark: picket-manager with K=1000, then K=10000 simulated sensor streams (the
# 10000 run also SIGKILLs and restarts the manager: --kill-restart), then K=20000 when asked.
#   bench/fleet/run.sh [BUILD_DIR] [--20k]   (default: build; SOAK / INTERVAL override 20 / 5;
#                                             FLEET_20K=1 is the same as --20k)
# Each run is under `timeout` (300 s, 600 s for the runs with a kill and for 20000). A run that
# fails prints its line anyway (how many streams connected, reconnected, were applied).
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=build
WANT_20K=${FLEET_20K:-0}
for a in "$@"; do
    case "$a" in
    --20k) WANT_20K=1 ;;
    *) BUILD=$a ;;
    esac
done
BIN="$BUILD/bench/fleet/fleet_load"
MGR="$BUILD/manager/picket-manager"
run() {
    local k=$1 limit=$2
    shift 2
    echo "== K=$k $*"
    timeout "$limit" "$BIN" --manager-bin "$MGR" --sensors "$k" --soak "${SOAK:-20}" \
        --interval "${INTERVAL:-5}" "$@"
    local rc=$?
    if [ "$rc" -eq 124 ]; then
        echo "fleet: K=$k timed out after $limit s"
    elif [ "$rc" -ne 0 ]; then
        echo "fleet: K=$k exit status $rc (see the fields above)"
    fi
}
run 1000 300
run 10000 600 --kill-restart
if [ "$WANT_20K" = 1 ]; then
    run 20000 600
fi
