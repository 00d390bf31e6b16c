#!/bin/bash
# Record the HTTP/2 wire corpus from real stacks: strace records every socket syscall of the
# server, byte for byte, while a real client talks to it; ../strace2wire.py turns that into
# NAME.wire and expect.py the stacks' own logs into NAME.expect. Run by hand (root, after
# `make test-bins`), then commit what it wrote; tests/run.sh corpus replays them root-free.
#
#   tests/corpus/h2/capture.sh [NAME...]    default: all of them
#
# What the servers send is their own synthetic text (" tokN", generated files): no user data.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
PY=/usr/bin/python3
WORK=$(mktemp -d /tmp/tt-h2capture.XXXXXX)
SRV=
trap '[ -n "$SRV" ] && kill "$SRV" 2>/dev/null; rm -rf "$WORK"' EXIT
command -v strace >/dev/null || { echo "capture: needs strace (apt-get install strace)" >&2; exit 1; }

free_port() {
	$PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_line() {	# FILE: the "listening on ADDR:PORT" line's port
	for _ in $(seq 200); do
		grep -q '^listening on ' "$1" 2>/dev/null && break
		sleep 0.05
	done
	sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$1" | head -n 1
}

wait_port() {	# PORT: until something listens there
	for _ in $(seq 200); do
		$PY -c "import socket; socket.create_connection(('127.0.0.1', $1)).close()" \
			2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# record NAME PID NOTE CMD...: trace PID's socket calls while CMD runs, then stop $SRV
record() {
	local name=$1 pid=$2 note=$3 st
	shift 3
	strace -f -p "$pid" -xx -s 1048576 -ttt -o "$WORK/$name.strace" \
		-e trace=accept,accept4,read,readv,recvfrom,recvmsg,write,writev,sendto,sendmsg,shutdown,close &
	st=$!
	sleep 1	# attached to every thread
	"$@"
	sleep 0.5
	kill "$st"
	wait "$st" 2>/dev/null || true
	kill "$SRV"
	wait "$SRV" 2>/dev/null || true
	SRV=
	$PY "$ROOT/tests/corpus/strace2wire.py" "$WORK/$name.strace" - "$HERE/$name" "$note"
	sed -i '1s|(tests/corpus/capture.sh)|(tests/corpus/h2/capture.sh)|' "$HERE/$name.wire"
}

want() {
	[ ${#NAMES[@]} -eq 0 ] && return 0
	for n in "${NAMES[@]}"; do [ "$n" = "$1" ] && return 0; done
	return 1
}
NAMES=("$@")
GRPC_SRV=(--ttft-ms 5 --itl-ms 2 --tokens 5 --fail-every 3 --fail-after 2 --reject-over 50)
GRPC_CLI=(--requests 4 --concurrency 2 --max-tokens 4 --cancel-every 4 --cancel-after 2)

grpc_clients() {	# CLIENT...: the calls of a case, two connections
	"$@" --out "$WORK/client.jsonl" "${GRPC_CLI[@]}" --id-prefix c1
	"$@" --out "$WORK/client.jsonl" --requests 1 --max-tokens 60 --id-prefix big
}

GO=$("$ROOT/tests/stacks/grpc/go/build.sh")
GRPCIO=$($PY -c 'import grpc; print(grpc.__version__)')
GRPCGO=$(sed -n 's/^const Version = "\(.*\)"/\1/p' /usr/share/gocode/src/google.golang.org/grpc/version.go)
for pair in "grpcio grpcio" "grpc-go grpc-go" "grpcio grpc-go" "grpc-go grpcio"; do
	set -- $pair
	name=real-$1-generate
	[ "$1" != "$2" ] && name=real-$1-generate-$2-client
	want "$name" || continue
	rm -f "$WORK/truth.jsonl" "$WORK/client.jsonl"
	if [ "$1" = grpcio ]; then
		$PY "$ROOT/tests/stacks/grpc/server.py" --port 0 --truth "$WORK/truth.jsonl" \
			"${GRPC_SRV[@]}" >"$WORK/srv.out" 2>&1 &
		srv="grpcio $GRPCIO grpc.aio"
	else
		"$GO" server --port 0 --truth "$WORK/truth.jsonl" "${GRPC_SRV[@]}" >"$WORK/srv.out" 2>&1 &
		srv="grpc-go $GRPCGO"
	fi
	SRV=$!
	port=$(wait_line "$WORK/srv.out")
	if [ "$2" = grpcio ]; then
		cli=($PY "$ROOT/tests/stacks/grpc/client.py" --port "$port")
		clin="grpcio $GRPCIO client"
	else
		cli=("$GO" client --port "$port")
		clin="grpc-go $GRPCGO client"
	fi
	note="$srv Generate server (tests/stacks/grpc), $clin: a failing, a cancelled and a refused call"
	record "$name" "$SRV" "$note" grpc_clients "${cli[@]}"
	$PY "$HERE/expect.py" grpc "$note" 2 "$WORK/truth.jsonl" "$WORK/client.jsonl" >"$HERE/$name.expect"
done

# nghttpd, static files: small, empty, and one past the stream window the client sets (-w 14:
# 16383 bytes), so the server waits for WINDOW_UPDATEs; padding on both sides
mkdocs() {
	mkdir -p "$WORK/docs"
	head -c 1000 /dev/zero | tr '\0' 'a' >"$WORK/docs/small.txt"
	: >"$WORK/docs/empty.txt"
	$PY -c 'import sys; sys.stdout.write("".join("line %06d\n" % i for i in range(7000)))' \
		>"$WORK/docs/big.txt"
}
FILES="/small.txt=1000 /empty.txt=0 /big.txt=$((7000 * 12))"
NGHTTP_V=$(nghttp --version | awk '{print $2}')
name=real-nghttpd-prior-knowledge
if want "$name"; then
	mkdocs
	port=$(free_port)
	nghttpd --no-tls -d "$WORK/docs" -b 16 "$port" >"$WORK/srv.out" 2>&1 &
	SRV=$!
	wait_port "$port"
	note="nghttpd $NGHTTP_V --no-tls -b 16, nghttp -w 14 -b 8: three files on one connection"
	record "$name" "$SRV" "$note" nghttp -n -w 14 -b 8 http://127.0.0.1:$port/small.txt \
		http://127.0.0.1:$port/empty.txt http://127.0.0.1:$port/big.txt
	# shellcheck disable=SC2086
	$PY "$HERE/expect.py" files "$note" 1 preface $FILES >"$HERE/$name.expect"
fi

# h2c by "Upgrade: h2c" (nghttpd speaks first, so only prior knowledge works with it):
# hypercorn's SSE stream, to curl --http2 and nghttp -u, one connection each
name=real-hypercorn-h2c-upgrade-sse
if want "$name"; then
	port=$(free_port)
	$PY "$HERE/hypercorn_sse.py" --port "$port" >"$WORK/srv.out" 2>&1 &
	SRV=$!
	wait_port "$port"
	url=http://127.0.0.1:$port/v1/chat/completions
	# GET: an upgrade with a request body is refused by hypercorn (and by most servers)
	upgrade_clients() {
		curl -s --http2 -N "$url" >"$WORK/curl.out"
		nghttp -u "$url" >"$WORK/nghttp.out"
		for f in curl nghttp; do
			echo "/v1/chat/completions $(grep -c '^data:' "$WORK/$f.out")"
		done >"$WORK/counts"
	}
	note="hypercorn $($PY -c 'import hypercorn, importlib.metadata as m; print(m.version("hypercorn"))') SSE (hypercorn_sse.py), $(curl --version | head -n 1 | cut -d' ' -f1-2) --http2 and nghttp $NGHTTP_V -u: Upgrade: h2c"
	record "$name" "$SRV" "$note" upgrade_clients
	$PY "$HERE/expect.py" sse "$note" 2 "$WORK/counts" upgrade GET >"$HERE/$name.expect"
fi

# nginx with http2 (prior knowledge on a plain port) in front of the Python stack's SSE:
# curl and httpx stream chat completions over one connection each
name=real-nginx-h2c-sse
if want "$name"; then
	eval "$("$ROOT/tests/stacks/python/run_server.sh" "$WORK/py.out" --port 0 --ttft-ms 5 \
		--itl-ms 2 --tokens 5)"
	PYSRV=$PY_API_PID
	"$ROOT/tests/stacks/nginx/start.sh" --upstream "127.0.0.1:$PY_PORT" --http2 \
		--dir "$WORK/ngx" >"$WORK/ngx.out" 2>&1 &
	NGX=$!
	port=$(wait_line "$WORK/ngx.out")
	# the worker serves the connections (worker_processes 1)
	worker=$(pgrep -P "$(cat "$WORK/ngx/nginx.pid")" | head -n 1)
	body='{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"max_tokens":5}'
	sse_clients() {
		curl -s --http2-prior-knowledge -N -H 'Content-Type: application/json' -d "$body" \
			"http://127.0.0.1:$port/v1/chat/completions" >"$WORK/curl.out"
		$PY "$HERE/httpx_sse.py" "http://127.0.0.1:$port/v1/chat/completions" "$body" \
			>"$WORK/httpx.out"
		for f in curl httpx; do
			echo "/v1/chat/completions $(grep -c '^data:' "$WORK/$f.out")"
		done >"$WORK/counts"
	}
	SRV=$NGX
	note="nginx $(nginx -v 2>&1 | cut -d/ -f2) listen http2 (h2c) in front of uvicorn SSE (tests/stacks/python); curl --http2-prior-knowledge and python3-httpx $($PY -c 'import httpx; print(httpx.__version__)') http2"
	record "$name" "$worker" "$note" sse_clients
	kill "$PYSRV" 2>/dev/null || true
	$PY "$HERE/expect.py" sse "$note" 2 "$WORK/counts" preface POST >"$HERE/$name.expect"
fi
