#!/usr/bin/env bash
# The Debian 12 packages of Picket, in three lists, and their installation from Debian's archive.
#
#   install-deps.sh [--build] [--runtime] [--test] [--print]
#
#   --build    compilers, cmake and the -dev libraries of a Release build of picket-manager,
#              picket-sensor and picketctl (deploy/Dockerfile's build stage)
#   --runtime  the shared-library packages those three binaries load, plus ca-certificates
#              (deploy/Dockerfile's runtime stage); never a -dev package
#   --test     what tests/run.sh needs beyond --build: test frameworks, clang for the sanitizer
#              builds, the optional DPDK, servers and tools of the end-to-end tests
#   --print    print the selected package names, one a line, and install nothing
#
# Options combine; no list option selects all three (tests/run.sh, deploy/quickstart.sh).
# Idempotent: when every selected package is already present it only checks and exits (no
# apt-get call). tests/deploy/deps_test.py checks the lists against the CMake files, the built
# binaries and the Dockerfile.
set -euo pipefail

BUILD_PACKAGES=(
    # compilers and build tools
    build-essential cmake ninja-build pkg-config
    # gRPC, protobuf and Abseil (manager <-> sensor RPC, absl::Status)
    libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
    # detection (Hyperscan, PCRE2), capture (libpcap; NFQUEUE: libnetfilter-queue, libmnl)
    libhyperscan-dev libpcre2-dev libpcap-dev libnetfilter-queue-dev libmnl-dev
    # configuration, CLI, JSON, the manager's store, metrics endpoint (civetweb)
    libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libsqlite3-dev libcivetweb-dev
    # hashes and TLS (OpenSSL), HTTP bodies (zlib, liblzma), EVE file magic, the EVE redis sink
    libssl-dev zlib1g-dev liblzma-dev libmagic-dev libhiredis-dev
    # rule sources: fetching (libcurl) and unpacking (libarchive) upstream rulesets
    libcurl4-openssl-dev libarchive-dev
    # the manager's PostgreSQL store backend and its replicas' coordination (libpq, found with
    # pkg-config)
    libpq-dev
    # the Debian packages (`--target package`): man pages from --help, dpkg-shlibdeps
    help2man dpkg-dev
)

# The packages of the sonames that picket-manager, picket-sensor and picketctl are linked
# against (built with --build only: without DPDK). libc6, libgcc-s1 and libstdc++6 are in
# debian:12 already; they are listed so that the check against the binaries has no exceptions.
RUNTIME_PACKAGES=(
    libc6 libgcc-s1 libstdc++6
    libgrpc++1.51 libgrpc29 libprotobuf32 libabsl20220623
    libhyperscan5 libpcre2-8-0 libpcap0.8 libnetfilter-queue1 libmnl0
    libyaml-cpp0.7 libsqlite3-0 libcivetweb1
    libssl3 zlib1g liblzma5 libmagic1 libhiredis0.14
    libcurl4 libarchive13 libpq5
    # TLS to upstream rule sources (libcurl) needs the CA bundle
    ca-certificates
)

TEST_PACKAGES=(
    # sanitizer and fuzzer builds (clang, compiler-rt), formatting, the compiler cache
    clang clang-format libclang-rt-14-dev ccache
    # tests and benchmarks
    libgtest-dev libgmock-dev libbenchmark-dev python3 python3-yaml
    # DPDK 22.11 for the optional DPDK capture (picket_capture_dpdk); pulls in the net_pcap,
    # net_ring and net_af_packet PMDs and the ring mempool that the virtual-device tests use.
    # Not in --build: the image's sensor is built without it.
    libdpdk-dev
    # a real Redis server for the EVE redis sink's tests; logrotate for the rotation test
    redis-server logrotate
    # PostgreSQL 15's server binaries (/usr/lib/postgresql/15/bin): the store's tests run
    # initdb and pg_ctl in a temporary directory of their own. The cluster Debian may create
    # is never started (policy-rc.d below) nor used.
    postgresql-15
    # runtime tools used by the end-to-end tests
    iproute2 iptables iputils-ping ethtool tcpdump procps
    # a sensor's clock a day off in the fleet fault test (libfaketime, LD_PRELOAD)
    faketime
    # metrics and deployment files: a real Prometheus server (and promtool) for the tests and
    # the quickstart; docker-compose renders deploy/docker-compose.yml offline; systemd-analyze
    # checks the units; unshare/nsenter (util-linux) enter the test namespaces
    prometheus docker-compose systemd util-linux
    # checks of the Debian packages (deploy_packages): lintian and the completion
    lintian bash-completion
)

want_build=0 want_runtime=0 want_test=0 print=0
for a in "$@"; do
    case "$a" in
        --build) want_build=1 ;;
        --runtime) want_runtime=1 ;;
        --test) want_test=1 ;;
        --print | --list) print=1 ;;
        -h | --help) sed -n '2,17p' "$0"; exit 0 ;;
        *) echo "install-deps.sh: unknown option '$a' (--build, --runtime, --test, --print)" >&2
           exit 2 ;;
    esac
done
if [ $((want_build + want_runtime + want_test)) -eq 0 ]; then
    want_build=1 want_runtime=1 want_test=1
fi

PACKAGES=()
[ "$want_build" -eq 1 ] && PACKAGES+=("${BUILD_PACKAGES[@]}")
[ "$want_runtime" -eq 1 ] && PACKAGES+=("${RUNTIME_PACKAGES[@]}")
if [ "$want_test" -eq 1 ]; then
    PACKAGES+=("${TEST_PACKAGES[@]}")
    # kubectl renders deploy/k8s (kubectl kustomize) in tests/deploy. Any kubectl on the PATH
    # will do (some images ship Google's); otherwise Debian's kubernetes-client provides it.
    if ! command -v kubectl >/dev/null 2>&1; then
        PACKAGES+=(kubernetes-client)
    fi
fi

if [ "$print" -eq 1 ]; then
    printf '%s\n' "${PACKAGES[@]}"
    exit 0
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
# Packages with a service (prometheus, redis-server, postgresql-15) must not start it: Picket's tests start
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
