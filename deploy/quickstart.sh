#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install dependencies, build, generate demo
# traffic with picket-trafficgen, run a sensor over it and show what it saw.
# (The fleet part -- manager, several sensors, bundle push, rollback -- joins this script
# when the control plane exists.)
#
#   deploy/quickstart.sh [--once] [--keep]
#     --once   finish and clean up by itself (the default until the fleet exists)
#     --keep   keep the temporary state directory and print its path
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
KEEP=0
for a in "$@"; do
    case "$a" in
        --once) ;;
        --keep) KEEP=1 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "quickstart: unknown option '$a' (see --help)" >&2; exit 2 ;;
    esac
done

bash deploy/install-deps.sh
BUILD=${PICKET_BUILD_DIR:-$ROOT/build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target picket-sensor picket-trafficgen

STATE=$(mktemp -d /tmp/picket-quickstart-XXXXXX)
cleanup() {
    if [ "$KEEP" = 1 ]; then
        echo "quickstart: state kept in $STATE"
    else
        rm -rf "$STATE"
    fi
}
trap cleanup EXIT

echo "== generating demo traffic (HTTP, DNS, TLS, ICMP; IPv4/IPv6, VLAN, fragments, attacks)"
"$BUILD/tools/trafficgen/picket-trafficgen" -o "$STATE/demo.pcap" --seed 42 --size 50M \
    --frag-share 0.05 --vlan-share 0.05 --attack "/etc/passwd" --attack "cmd.exe" \
    --attack-share 0.05
mkdir -p "$STATE/log"

echo "== running picket-sensor offline with 2 workers"
"$BUILD/sensor/picket-sensor" -r "$STATE/demo.pcap" -l "$STATE/log" --workers 2 -k all

echo "== last EVE stats event ($STATE/log/eve.json), selected fields"
python3 - "$STATE/log/eve.json" <<'PY'
import json, sys
stats = [json.loads(l) for l in open(sys.argv[1]) if '"event_type":"stats"' in l][-1]["stats"]
for key in ("capture.kernel_packets", "capture.kernel_drops", "decoder.pkts", "decoder.bytes",
            "decoder.ipv4", "decoder.ipv6", "decoder.tcp", "decoder.udp", "decoder.vlan",
            "defrag.ipv4.reassembled", "defrag.ipv6.reassembled", "flow.total", "flow.tcp",
            "flow.udp"):
    cur = stats
    for part in key.split("."):
        cur = cur[part]
    print("  %-26s %d" % (key, cur))
PY
echo "== done"
