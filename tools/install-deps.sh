#!/bin/sh
# Install what building and testing tokentrace needs, on Debian/Ubuntu, if it is missing.
# Runs apt-get only when a package is absent, so it is cheap on a ready machine.
set -eu

# qemu-system-x86, busybox-static, cpio: tests/kernels boots other kernels under emulation
# libcurl4-openssl-dev: --otlp posts with libcurl; protobuf-compiler: test_otlp decodes what it
# encodes with protoc; chromium: tests/cli/report_html.sh renders --report's page headless
# python3-yaml, systemd (systemd-analyze): tests/cli/deploy.sh checks tools/deploy
# libnghttp2-dev: the HTTP/2 parsers decode HPACK with its inflater (user/proto/hpack.c)
PKGS="make gcc clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev pkg-config libnghttp2-dev \
systemtap-sdt-dev libcmocka-dev libmicrohttpd-dev libncurses-dev \
prometheus tmux curl jq bpftrace valgrind golang-go nginx openssl \
python3-fastapi python3-uvicorn python3-httptools python3-uvloop python3-h11 gunicorn \
python3-zmq python3-msgpack qemu-system-x86 busybox-static cpio python3-dev \
libcurl4-openssl-dev protobuf-compiler chromium python3-yaml systemd \
python3-grpcio golang-google-grpc-dev nghttp2-client nghttp2-server python3-httpx python3-h2 \
python3-hypercorn strace debootstrap podman runc iproute2"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
command -v python3 >/dev/null 2>&1 || missing="$missing python3"
# python3-grpcio, golang-google-grpc-dev: the gRPC stacks (tests/stacks/grpc); nghttp2-*,
# python3-httpx/h2, python3-hypercorn, strace: the HTTP/2 wire corpus's stacks and its recording
# (tests/corpus/h2)
# debootstrap, podman, runc, iproute2: the container tests (tests/lib/rootfs.sh makes their
# Debian roots; tests/lib/container.bash runs them under unshare+chroot and podman, in network
# namespaces of their own)
# python3-dev: Debian's python3 (3.11) and its headers with Include/internal, which the
# Python-stack tests check tokentrace's CPython offsets against
# the Node stack (tests/stacks/node) needs only `node`: any Node, Debian's or nodesource's
command -v node >/dev/null 2>&1 || missing="$missing nodejs"

if [ -z "$missing" ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages:$missing; run as root (or: sudo apt-get install$missing)" >&2
	exit 1
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# prometheus's postinst starts a service on :9090 where systemd runs; tests use their own
apt-get install -y -qq --no-install-recommends $missing >/dev/null
