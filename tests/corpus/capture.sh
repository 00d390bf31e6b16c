#!/bin/bash
# Record wire-corpus files from the real stacks (tests/stacks): each server streams to
# tokenload while strace records its socket syscalls, byte for byte; strace2wire.py turns
# that and the server's own truth into NAME.wire and NAME.expect. Run by hand (root, after
# `make test-bins`), then commit what it wrote; `make test` replays the files root-free.
#
#   tests/corpus/capture.sh [NAME...]    default: all of them
#
# Each file's first line names the stack and its version. What the servers send is their
# own synthetic text (tokenload's prompt, " tokN" deltas): no user data.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$ROOT/tests/corpus
LOAD=$ROOT/.output/tokenload
WORK=$(mktemp -d /tmp/tt-capture.XXXXXX)
SRV=
trap '[ -n "$SRV" ] && kill "$SRV" 2>/dev/null; rm -rf "$WORK"' EXIT
command -v strace >/dev/null || { echo "capture: needs strace (apt-get install strace)" >&2; exit 1; }

wait_port() {	# FILE: the "listening on ADDR:PORT" line's port
	for _ in $(seq 200); do
		grep -q '^listening on ' "$1" 2>/dev/null && break
		sleep 0.05
	done
	sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$1" | head -n 1
}

# record NAME PID PORT NOTE tokenload-flags...: trace PID's socket calls while tokenload runs
record() {
	local name=$1 pid=$2 port=$3 note=$4 st
	shift 4
	strace -f -p "$pid" -xx -s 1048576 -ttt -o "$WORK/$name.strace" \
		-e trace=accept,accept4,read,readv,recvfrom,recvmsg,write,writev,sendto,sendmsg,shutdown,close &
	st=$!
	sleep 1	# attached to every thread
	"$LOAD" --port "$port" --out "$WORK/$name.load" "$@" 2>/dev/null
	sleep 0.5
	kill "$st"
	wait "$st" 2>/dev/null || true
	kill "$SRV"
	wait "$SRV" 2>/dev/null || true
	SRV=
	python3 "$OUT/strace2wire.py" "$WORK/$name.strace" "$WORK/$name.truth" "$OUT/$name" "$note"
}

want() {	# NAME: asked for (every one when none was named)
	[ ${#NAMES[@]} -eq 0 ] && return 0
	for n in "${NAMES[@]}"; do [ "$n" = "$1" ] && return 0; done
	return 1
}
NAMES=("$@")
LOADFLAGS=(--requests 3 --concurrency 2 --max-tokens 5 --include-usage)

if want real-node-http-sse; then
	node "$ROOT/tests/stacks/node/server.js" --port 0 --truth "$WORK/real-node-http-sse.truth" \
		--ttft-ms 5 --itl-ms 2 --tokens 5 >"$WORK/srv.out" 2>&1 &
	SRV=$!
	record real-node-http-sse "$SRV" "$(wait_port "$WORK/srv.out")" \
		"Node $(node --version) http, res.write() per SSE event (tests/stacks/node/server.js)" \
		"${LOADFLAGS[@]}"
fi
GO=$("$ROOT/tests/stacks/go/build.sh")
for kind in sse ndjson; do
	name=real-go-nethttp-$kind
	want "$name" || continue
	path=/v1/chat/completions
	[ $kind = ndjson ] && path=/api/chat
	"$GO" --port 0 --truth "$WORK/$name.truth" --ttft-ms 5 --itl-ms 2 --tokens 5 \
		>"$WORK/srv.out" 2>&1 &
	SRV=$!
	record "$name" "$SRV" "$(wait_port "$WORK/srv.out")" \
		"$(go version | cut -d' ' -f3) net/http, one Flush per token, $path (tests/stacks/go)" \
		"${LOADFLAGS[@]}" --path "$path"
done
for http in httptools h11; do
	name=real-uvicorn-$http
	want "$name" || continue
	loop=uvloop
	[ $http = h11 ] && loop=asyncio
	eval "$("$ROOT/tests/stacks/python/run_server.sh" "$WORK/py.out" --port 0 --http $http \
		--loop $loop --truth "$WORK/$name.truth" --ttft-ms 5 --itl-ms 2 --tokens 5)"
	SRV=$PY_API_PID
	record "$name" "$SRV" "$PY_PORT" \
		"uvicorn $(/usr/bin/python3 -c 'import uvicorn; print(uvicorn.__version__)') ($http, $loop), FastAPI StreamingResponse, vLLM-shaped (tests/stacks/python)" \
		"${LOADFLAGS[@]}"
done
