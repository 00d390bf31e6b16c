#!/bin/sh
# Builds the grpc-go stack offline into .output/stacks/grpcstack, against Debian's Go
# packages (golang-google-grpc-dev and what it depends on, under /usr/share/gocode) in
# GOPATH mode: no module download, nothing from the network. Prints the binary's path.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../../.." && pwd)
OUT=$ROOT/.output/stacks
GOCODE=${GOCODE:-/usr/share/gocode}
mkdir -p "$OUT/go-cache"
command -v go >/dev/null 2>&1 || { echo "build.sh: no go on PATH (apt-get install golang-go)" >&2; exit 1; }
[ -d "$GOCODE/src/google.golang.org/grpc" ] ||
	{ echo "build.sh: no grpc-go in $GOCODE (apt-get install golang-google-grpc-dev)" >&2; exit 1; }
cd "$HERE"
env GOCACHE="$OUT/go-cache" GOPATH="$GOCODE" GO111MODULE=off GOPROXY=off GOFLAGS= \
	CGO_ENABLED=0 go build -trimpath -o "$OUT/grpcstack.tmp" .
mv "$OUT/grpcstack.tmp" "$OUT/grpcstack"
echo "$OUT/grpcstack"
