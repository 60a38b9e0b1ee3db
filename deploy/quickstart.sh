#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install dependencies, build, then run a small
# Picket fleet on loopback and show what it does:
#   - demo traffic from picket-trafficgen (HTTP, DNS, TLS, ICMP, with attacks in it),
#   - a demo PKI (fleet CA, manager, two sensors, an admin) and an admin token,
#   - picket-manager (mutual TLS, SQLite, Prometheus /metrics),
#   - two picket-sensor processes replaying the traffic in a loop,
#   - a Prometheus server (Debian's) scraping the manager;
# then pushes and deploys a demo bundle, prints the fleet, recent alerts, the deployment
# history and the URLs, pushes a broken bundle that the sensors reject, and rolls back.
#
#   deploy/quickstart.sh [--once] [--keep]
#     --once   finish and clean up by itself (CI runs this); default: run until Ctrl-C
#     --keep   keep the temporary state directory and print its path
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
ONCE=0
KEEP=0
for a in "$@"; do
    case "$a" in
        --once) ONCE=1 ;;
        --keep) KEEP=1 ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) echo "quickstart: unknown option '$a' (see --help)" >&2; exit 2 ;;
    esac
done

bash deploy/install-deps.sh
BUILD=${PICKET_BUILD_DIR:-$ROOT/build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target picket-sensor picket-manager picketctl \
    picket-trafficgen

SENSOR=$BUILD/sensor/picket-sensor
MANAGER=$BUILD/manager/picket-manager
CTL=$BUILD/manager/cli/picketctl
TRAFFICGEN=$BUILD/tools/trafficgen/picket-trafficgen

STATE=$(mktemp -d /tmp/picket-quickstart-XXXXXX)
PIDS=()
cleanup() {
    local rc=$?
    # Stop what this script started, by PID, newest first; then wait for each.
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
        kill -TERM "${PIDS[$i]}" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    if [ "$KEEP" = 1 ]; then
        echo "quickstart: state kept in $STATE"
    else
        rm -rf "$STATE"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A free loopback port (the kernel picks it; a race with other programs is unlikely here).
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# wait_for DESCRIPTION SECONDS COMMAND...: polls COMMAND until it succeeds.
wait_for() {
    local what=$1 secs=$2
    shift 2
    local deadline=$((SECONDS + secs))
    until "$@" >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "quickstart: timed out waiting for $what" >&2
            return 1
        fi
        sleep 0.5
    done
}

GRPC_PORT=$(free_port)
METRICS_PORT=$(free_port)
PROM_PORT=$(free_port)
MGR=127.0.0.1:$GRPC_PORT

echo "== demo traffic: picket-trafficgen (2000 sessions, attacks '/etc/passwd' and 'cmd.exe')"
"$TRAFFICGEN" -o "$STATE/demo.pcap" --seed 42 --sessions 2000 --attack "/etc/passwd" \
    --attack "cmd.exe" --attack-share 0.05 | tail -n 1

echo "== demo PKI in $STATE/pki (fleet CA; manager, edge1, edge2, admin certificates)"
"$CTL" pki init "$STATE/pki" --cn "Picket quickstart CA" >/dev/null
"$CTL" pki issue "$STATE/pki" --kind manager --name manager --san 127.0.0.1 >/dev/null
for s in edge1 edge2; do
    "$CTL" pki issue "$STATE/pki" --kind sensor --name "$s" >/dev/null
done
"$CTL" pki issue "$STATE/pki" --kind admin --name admin >/dev/null
python3 -c 'import secrets; print(secrets.token_hex(24))' >"$STATE/admin.token"
chmod 600 "$STATE/admin.token"

echo "== picket-manager on $MGR (mutual TLS), metrics on 127.0.0.1:$METRICS_PORT"
"$MANAGER" --listen "$MGR" --db "$STATE/manager.db" --tls-cert "$STATE/pki/manager.crt" \
    --tls-key "$STATE/pki/manager.key" --client-ca "$STATE/pki/ca.crt" \
    --admin-token-file "$STATE/admin.token" --metrics-listen "127.0.0.1:$METRICS_PORT" \
    2>"$STATE/manager.log" &
PIDS+=($!)

CTL_ARGS=(--manager "$MGR" --ca "$STATE/pki/ca.crt" --cert "$STATE/pki/admin.crt"
          --key "$STATE/pki/admin.key" --token-file "$STATE/admin.token")
ctl() { "$CTL" "${CTL_ARGS[@]}" "$@"; }
wait_for "the manager" 30 ctl sensors

echo "== two sensors replaying the traffic in a loop (500 packets/s each)"
for s in edge1 edge2; do
    mkdir -p "$STATE/$s"
    "$SENSOR" -r "$STATE/demo.pcap" --pcap-loop 0 --pcap-rate 500 --workers 1 \
        -l "$STATE/$s" --manager "$MGR" --name "$s" --tls-cert "$STATE/pki/$s.crt" \
        --tls-key "$STATE/pki/$s.key" --ca "$STATE/pki/ca.crt" --state-dir "$STATE/$s/state" \
        --labels "site=demo,role=edge" --metrics-interval 2 2>"$STATE/$s/sensor.log" &
    PIDS+=($!)
done

echo "== Prometheus on 127.0.0.1:$PROM_PORT scraping the manager every 2 s"
cat >"$STATE/prometheus.yml" <<EOF
global:
  scrape_interval: 2s
  evaluation_interval: 2s
scrape_configs:
  - job_name: picket-manager
    static_configs:
      - targets: ['127.0.0.1:$METRICS_PORT']
EOF
prometheus --config.file="$STATE/prometheus.yml" --storage.tsdb.path="$STATE/tsdb" \
    --web.listen-address="127.0.0.1:$PROM_PORT" 2>"$STATE/prometheus.log" &
PIDS+=($!)

connected() {
    [ "$(ctl --json sensors | python3 -c \
        'import json,sys; print(sum(1 for s in json.load(sys.stdin) if s["connected"]))')" = 2 ]
}
wait_for "both sensors to connect" 60 connected

# make_bundle DIR RULES: a bundle directory (rules/local.rules + config.yaml).
make_bundle() {
    mkdir -p "$1/rules"
    printf '%s\n' "$2" >"$1/rules/local.rules"
    echo "{}" >"$1/config.yaml"
}

echo
echo "== push and deploy the demo bundle (one rule per attack string)"
make_bundle "$STATE/bundle-v1" \
'alert tcp any any -> any any (msg:"DEMO /etc/passwd in traffic"; flow:established; content:"/etc/passwd"; classtype:attempted-recon; sid:1000001; rev:1;)'
V1=$(ctl --json bundle push "$STATE/bundle-v1" --name demo -m "quickstart: passwd rule" |
     python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
ctl deploy "$V1" --to all --wait --timeout 60

make_bundle "$STATE/bundle-v2" \
'alert tcp any any -> any any (msg:"DEMO /etc/passwd in traffic"; flow:established; content:"/etc/passwd"; classtype:attempted-recon; sid:1000001; rev:1;)
alert tcp any any -> any any (msg:"DEMO cmd.exe in traffic"; flow:established; content:"cmd.exe"; nocase; classtype:attempted-admin; sid:1000002; rev:1;)'
V2=$(ctl --json bundle push "$STATE/bundle-v2" --name demo -m "quickstart: add cmd.exe rule" |
     python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
echo "== what changed from v$V1 to v$V2"
ctl bundle diff "$V1" "$V2"
ctl deploy "$V2" --to all --wait --timeout 60

sleep 4  # a few reports and alerts reach the manager
echo
echo "== the fleet"
ctl sensors
echo
echo "== recent alerts"
ctl alerts --limit 8

echo
echo "== a broken bundle (a keyword Picket does not support): the sensors refuse it"
make_bundle "$STATE/bundle-broken" \
'alert tcp any any -> any any (msg:"needs lua"; lua:script.lua; sid:1000003; rev:1;)'
V3=$(ctl --json bundle push "$STATE/bundle-broken" --name demo -m "quickstart: broken" |
     python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
if ctl deploy "$V3" --to all --wait --timeout 60; then
    echo "quickstart: the broken bundle was applied, which must not happen" >&2
    exit 1
fi
echo "(exit status 1 is expected: every sensor rejected v$V3 and kept running v$V2)"

echo
echo "== roll back to the previous bundle"
ctl rollback --to all --wait --timeout 60
echo
echo "== the fleet after the rollback"
ctl sensors
echo
echo "== deployment history"
ctl history --limit 10

echo
echo "== Prometheus: packets per second per sensor, from the manager's metrics"
query_prometheus() {
    python3 - "$PROM_PORT" <<'PY'
import json, sys, urllib.parse, urllib.request
q = 'sum by (sensor) (rate(picket_sensor_packets_total[10s]))'
url = "http://127.0.0.1:%s/api/v1/query?%s" % (sys.argv[1], urllib.parse.urlencode({"query": q}))
res = json.load(urllib.request.urlopen(url, timeout=5))["data"]["result"]
if not res:
    sys.exit(1)
for r in sorted(res, key=lambda r: r["metric"]["sensor"]):
    print("  %-6s %8.1f packets/s" % (r["metric"]["sensor"], float(r["value"][1])))
PY
}
wait_for "Prometheus to have samples" 60 query_prometheus
query_prometheus

cat <<EOF

== URLs
  manager metrics:  http://127.0.0.1:$METRICS_PORT/metrics
  Prometheus:       http://127.0.0.1:$PROM_PORT/  (try: picket_sensor_alerts_total)
  picketctl:        $CTL ${CTL_ARGS[*]} sensors
  Grafana:          import dashboards/*.json (see docs/dashboards.md)
  state directory:  $STATE
EOF

if [ "$ONCE" = 1 ]; then
    echo "== --once: stopping the fleet"
    exit 0
fi
echo "== the fleet keeps running; Ctrl-C stops it and removes the state directory"
while true; do
    for pid in "${PIDS[@]}"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "quickstart: process $pid exited; stopping" >&2
            exit 1
        fi
    done
    sleep 2
done
