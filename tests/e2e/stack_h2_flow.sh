#!/bin/bash
# HTTP/2's own stall against TCP's, on the grpc.aio Generate server: a raw HTTP/2 client
# (h2_flow_client.py) that holds back the stream's WINDOW_UPDATE for 300 ms while reading
# the socket is flow control (the stall says so, on the stream's window, for at least as
# long as the client kept it closed); one that stops reading the socket for 300 ms with
# windows wide open (large messages, a small receive buffer) is a slow reader at the TCP
# level, never flow control (check_flow.py). Each mode twice, on two connections.
[ -n "${STACK_H2_BOUNDED:-}" ] || STACK_H2_BOUNDED=1 exec timeout 150 bash "$0" "$@"
source "$(dirname "$0")/stack_lib.bash"
GRPC=$ROOT/tests/stacks/grpc
PY=/usr/bin/python3

phase() {	# mode, tokens, tokentrace flags, server flags...
	local mode=$1 tokens=$2 ttflags=$3
	shift 3
	rm -f "$WORK/truth.jsonl"
	start_server "grpc-$mode" "$PY" "$GRPC/server.py" --port 0 --ttft-ms 30 --itl-ms 10 \
		--truth "$WORK/truth.jsonl" "$@"
	# shellcheck disable=SC2086
	trace "$SRV_PID" $ttflags
	for i in 1 2; do
		"$PY" "$ROOT/tests/e2e/h2_flow_client.py" --port "$SRV_PORT" --mode "$mode" \
			--tokens "$tokens" --pause-after 10 --pause-ms 300 --id "$mode-$i" \
			--out "$WORK/$mode.client" 2>>"$WORK/$mode.err" ||
			die "$mode client: $(tail -n 3 "$WORK/$mode.err")"
	done
	stop_tt
	stop "$SRV_PID"
	echo "--- $mode"
	python3 "$ROOT/tests/e2e/check_flow.py" --mode "$mode" --truth "$WORK/truth.jsonl" \
		--trace "$WORK/tt.jsonl" --client "$WORK/$mode.client" || FAILED+=("$mode")
}

phase window 30 ""
# 256 KiB messages, 100 a second: the 300 ms fill the sockets' buffers; a capture as large as
# the backlog the server writes at once when the client reads again, so nothing is cut, and
# a ring buffer that holds them
phase tcp 40 "-s 4194304 -b 64" --pad-bytes 262144
finish
echo "PASS: a held-back WINDOW_UPDATE is flow control, a slow TCP reader is not"
