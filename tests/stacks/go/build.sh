#!/bin/sh
# Builds the Go stack server offline, stdlib only, into .output/stacks/go-server.
# Everything Go writes (build cache, module path) stays under .output/, so a CI machine
# needs golang-go and nothing from the network. Prints the binary's path.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
OUT=$ROOT/.output/stacks
mkdir -p "$OUT/go-cache" "$OUT/go-path"
command -v go >/dev/null 2>&1 || { echo "build.sh: no go on PATH (apt-get install golang-go)" >&2; exit 1; }
cd "$HERE"
# CGO off: a static binary, no C toolchain involved; GOFLAGS/GOPROXY: never the network
env GOCACHE="$OUT/go-cache" GOPATH="$OUT/go-path" GOPROXY=off GOFLAGS=-mod=mod \
	CGO_ENABLED=0 GO111MODULE=on go build -trimpath -o "$OUT/go-server.tmp" .
mv "$OUT/go-server.tmp" "$OUT/go-server"
echo "$OUT/go-server"
