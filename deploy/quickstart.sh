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
# The generator also writes demo.pcap.json: the record of what it wrote, each injected attack
# with its string and flow; the --once checks below take their expectations from it.
"$TRAFFICGEN" -o "$STATE/demo.pcap" --seed 42 --sessions 2000 --attack "/etc/passwd" \
    --attack "cmd.exe" --attack-share 0.05 | tail -n 1
RECORD=$STATE/demo.pcap.json

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
rule_files:
  - $ROOT/deploy/prometheus/picket-alerts.yml
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

# Both rules have fired on both sensors since v2 went out (cmd.exe attacks come round every
# few seconds at 500 packets/s), so the list below shows what the demo bundle catches.
alerts_json() { ctl --json alerts --limit 1000000 >"$1"; }
both_rules_fired() {
    alerts_json "$STATE/alerts-now.json" &&
        python3 - "$STATE/alerts-now.json" "$V2" <<'PY'
import json, sys
alerts = json.load(open(sys.argv[1]))["alerts"]
v2 = int(sys.argv[2])
seen = {(a["sensor"], a["sid"]) for a in alerts if a["bundle_version"] == v2}
want = {(s, sid) for s in ("edge1", "edge2") for sid in (1000001, 1000002)}
sys.exit(0 if want <= seen else 1)
PY
}
wait_for "alerts of both demo rules (v$V2) from both sensors" 120 both_rules_fired
echo
echo "== the fleet"
ctl sensors
echo
echo "== recent alerts"
ctl alerts --limit 8
# Taken after the listing: it holds every alert listed (newest first, at most a few more).
alerts_json "$STATE/alerts-listed.json"

if [ "$ONCE" = 1 ]; then
    echo
    echo "== --once: check the alerts against the demo traffic and the demo rules"
    # Expected, from the generator's record and the two rules (content:"/etc/passwd" -> sid
    # 1000001; content:"cmd.exe"; nocase -> sid 1000002, in v2 only): exactly these two sids,
    # each alert on a flow the generator injected that rule's string into, sid 1000002 only
    # under v2, and both rules from both sensors.
    python3 - "$RECORD" "$STATE/alerts-listed.json" "$V1" "$V2" <<'PY'
import ipaddress, json, sys
record = json.load(open(sys.argv[1]))
alerts = json.load(open(sys.argv[2]))["alerts"]
def ends(a_ip, a_port, b_ip, b_port):  # a flow's two endpoints, either way round
    return tuple(sorted([(ipaddress.ip_address(a_ip), int(a_port)),
                         (ipaddress.ip_address(b_ip), int(b_port))]))
v1, v2 = int(sys.argv[3]), int(sys.argv[4])
rules = {1000001: ("/etc/passwd", "DEMO /etc/passwd in traffic", {v1, v2}),
         1000002: ("cmd.exe", "DEMO cmd.exe in traffic", {v2})}
flows = {}  # (string, sorted endpoints) -> injected attacks
for a in record["attacks"]:
    f = a["flow"]
    key = (a["string"], ends(f["src"], f["sport"], f["dst"], f["dport"]))
    flows[key] = flows.get(key, 0) + 1
problems = []
for a in alerts:
    where = "%s %s:%s -> %s:%s (v%s)" % (a["sensor"], a["src_ip"], a["src_port"], a["dst_ip"],
                                         a["dst_port"], a["bundle_version"])
    if a["sid"] not in rules:
        problems.append("unexpected: sid %s '%s' on %s" % (a["sid"], a["msg"], where))
        continue
    string, msg, versions = rules[a["sid"]]
    if a["msg"] != msg:
        problems.append("unexpected: sid %s with msg '%s' (want '%s')" % (a["sid"], a["msg"], msg))
    if a["bundle_version"] not in versions:
        problems.append("unexpected: sid %s under bundle v%s (its rule is only in %s)"
                        % (a["sid"], a["bundle_version"], sorted(versions)))
    if (string, ends(a["src_ip"], a["src_port"], a["dst_ip"], a["dst_port"])) not in flows:
        problems.append("unexpected: sid %s on %s, a flow the generator did not inject '%s' into"
                        % (a["sid"], where, string))
for sensor in ("edge1", "edge2"):
    for sid in sorted(rules):
        if not any(a["sensor"] == sensor and a["sid"] == sid and a["bundle_version"] == v2
                   for a in alerts):
            problems.append("missing: sid %s ('%s') from %s under v%s"
                            % (sid, rules[sid][0], sensor, v2))
for sid, (string, _, _) in sorted(rules.items()):
    n = sum(1 for a in alerts if a["sid"] == sid)
    injected = sum(1 for a in record["attacks"] if a["string"] == string)
    print("  sid %s '%s': %d alerts held by the manager; the generator injected it %d times"
          % (sid, string, n, injected))
if problems:
    print("quickstart: the alerts do not match the demo traffic:", file=sys.stderr)
    for p in problems:
        print("  " + p, file=sys.stderr)
    sys.exit(1)
print("  ok: only the two demo rules fired, each on its own attack flows, on both sensors")
PY
    # Exact counts need a whole pass: one offline run of the same pcap with the v2 rules must
    # alert once per injected attack (the record counts them; attack_string_packets equal to
    # the number of attacks says neither string occurs anywhere else in the traffic).
    mkdir -p "$STATE/offline"
    "$SENSOR" -r "$STATE/demo.pcap" -S "$STATE/bundle-v2/rules/local.rules" \
        -l "$STATE/offline" 2>"$STATE/offline/sensor.log" >/dev/null
    python3 - "$RECORD" "$STATE/offline/eve.json" <<'PY'
import collections, json, sys
record = json.load(open(sys.argv[1]))
want = collections.Counter({1000001: 0, 1000002: 0})
for a in record["attacks"]:
    want[{"/etc/passwd": 1000001, "cmd.exe": 1000002}[a["string"]]] += 1
got = collections.Counter()
for line in open(sys.argv[2]):
    ev = json.loads(line)
    if ev["event_type"] == "alert":
        got[ev["alert"]["signature_id"]] += 1
problems = []
if record["attack_string_packets"] != len(record["attacks"]):
    problems.append("the record has %d packets with an attack string for %d attacks"
                    % (record["attack_string_packets"], len(record["attacks"])))
for sid in sorted(set(want) | set(got)):
    print("  one offline pass, sid %s: %d alerts, %d attacks injected"
          % (sid, got[sid], want[sid]))
    if got[sid] != want[sid]:
        problems.append("%s sid %s: %d alerts, want %d (one per injected attack)"
                        % ("unexpected" if got[sid] > want[sid] else "missing", sid, got[sid],
                           want[sid]))
if problems:
    print("quickstart: one offline pass does not match the demo traffic:", file=sys.stderr)
    for p in problems:
        print("  " + p, file=sys.stderr)
    sys.exit(1)
print("  ok: one alert per injected attack")
PY
fi

echo
echo "== a broken bundle (a keyword Picket does not support): the manager refuses it"
make_bundle "$STATE/bundle-broken" \
'alert tcp any any -> any any (msg:"needs lua"; lua:script.lua; sid:1000003; rev:1;)'
if ctl bundle push "$STATE/bundle-broken" --name demo -m "quickstart: broken"; then
    echo "quickstart: the manager stored a bundle none of whose rules loads" >&2
    exit 1
fi
echo "(exit status 1 is expected: none of its rules loads with the sensor's own parser)"
echo
echo "== pushed anyway (--force): the sensors refuse it too"
V3=$(ctl --json bundle push "$STATE/bundle-broken" --name demo -m "quickstart: broken" --force |
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
echo
echo "== Prometheus: the alerting rules (deploy/prometheus/picket-alerts.yml) and what fires"
python3 - "$PROM_PORT" <<'PY'
import json, sys, urllib.request
base = "http://127.0.0.1:%s/api/v1/" % sys.argv[1]
groups = json.load(urllib.request.urlopen(base + "rules", timeout=5))["data"]["groups"]
rules = [r for g in groups for r in g["rules"] if r["type"] == "alerting"]
bad = [r["name"] for r in rules if r.get("health") != "ok"]
print("  %d alerting rules in %d groups loaded%s" % (len(rules), len(groups),
      ", unhealthy: " + ", ".join(bad) if bad else ""))
for a in json.load(urllib.request.urlopen(base + "alerts", timeout=5))["data"]["alerts"]:
    print("  %-8s %s %s" % (a["state"], a["labels"].get("alertname"), a["labels"].get("sensor", "")))
if not rules or bad:
    sys.exit(1)
PY

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
