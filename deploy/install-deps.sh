#!/usr/bin/env bash
# Installs every build, test and runtime dependency of Picket from Debian 12's archive.
# Idempotent: when every package is already present it only checks and exits (no apt-get call).
set -euo pipefail

PACKAGES=(
    # build
    build-essential cmake ninja-build pkg-config ccache clang clang-format libclang-rt-14-dev
    # libraries
    libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
    libpcre2-dev libhyperscan-dev libpcap-dev libsqlite3-dev libyaml-cpp-dev nlohmann-json3-dev
    libcli11-dev libspdlog-dev libcivetweb-dev civetweb libnetfilter-queue-dev libmnl-dev
    libbpf-dev libssl-dev zlib1g-dev liblzma-dev
    # rule sources: fetching (libcurl) and unpacking (libarchive) upstream rulesets
    libcurl4-openssl-dev libarchive-dev
    # the EVE redis sink (hiredis) and a real Redis server for its tests
    libhiredis-dev redis-server
    # file magic for EVE fileinfo (force-magic); logrotate for the rotation test
    libmagic-dev logrotate
    # DPDK 22.11 for the optional DPDK capture (picket_capture_dpdk); pulls in the net_pcap,
    # net_ring and net_af_packet PMDs and the ring mempool that the virtual-device tests use
    libdpdk-dev
    # tests and benchmarks
    libgtest-dev libgmock-dev libbenchmark-dev
    # runtime tools used by the end-to-end tests
    iproute2 iptables iputils-ping ethtool tcpdump procps python3 python3-yaml
    # a sensor's clock a day off in the fleet fault test (libfaketime, LD_PRELOAD)
    faketime
    # metrics and deployment files: a real Prometheus server (and promtool) for the tests and
    # the quickstart; docker-compose renders deploy/docker-compose.yml offline; systemd-analyze
    # checks the units; unshare/nsenter (util-linux) enter the test namespaces
    prometheus docker-compose systemd util-linux
    # Debian packages (deploy/packaging): man pages, Depends, the .deb checks and the completion
    help2man dpkg-dev lintian bash-completion
)
# kubectl renders deploy/k8s (kubectl kustomize) in tests/deploy. Any kubectl on the PATH will
# do (some images ship Google's); otherwise Debian's kubernetes-client provides it.
if ! command -v kubectl >/dev/null 2>&1; then
    PACKAGES+=(kubernetes-client)
fi

missing=()
for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if [ "${#missing[@]}" -eq 0 ]; then
    echo "install-deps: all ${#PACKAGES[@]} packages present"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi

echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Packages with a service (prometheus, redis-server) must not start it: Picket's tests start
# their own Prometheus and Redis on loopback when they need one. A policy-rc.d that refuses
# every start, only while installing.
POLICY=/usr/sbin/policy-rc.d
if [ ! -e "$POLICY" ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$POLICY" >/dev/null
    $SUDO chmod 755 "$POLICY"
    trap '$SUDO rm -f "$POLICY"' EXIT
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

echo "install-deps: done"
