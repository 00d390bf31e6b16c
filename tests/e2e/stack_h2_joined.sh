#!/bin/bash
# Attach while an HTTP/2 connection is already streaming: grpcio's client keeps one channel
# to the grpc.aio Generate server, three calls at a time of different lengths, and tokentrace
# is started on the server in the middle of it. The streams begun before it came are
# reported joined (headers unknown, TTFT null) with every token handed off after it was
# ready, each at a time between that token's hand-off and the client's receive; those begun
# after are whole; each stream is the one call its tokens fit, none twice, none invented
# (check_joined.py).
[ -n "${STACK_H2_BOUNDED:-}" ] || STACK_H2_BOUNDED=1 exec timeout 150 bash "$0" "$@"
source "$(dirname "$0")/stack_lib.bash"
GRPC=$ROOT/tests/stacks/grpc
PY=/usr/bin/python3

start_server grpc-aio "$PY" "$GRPC/server.py" --port 0 --ttft-ms 30 --itl-ms 20 \
	--truth "$WORK/truth.jsonl"
"$PY" "$GRPC/client.py" --port "$SRV_PORT" --requests 12 --concurrency 3 \
	--max-tokens 40,53,47,61 --id-prefix j --out "$WORK/client.jsonl" 2>"$WORK/client.err" &
CLIENT_PID=$!
PIDS+=("$CLIENT_PID")
sleep 0.5	# the connection is up and its first streams are under way
trace "$SRV_PID"
wait "$CLIENT_PID" || die "client: $(tail -n 3 "$WORK/client.err")"
stop_tt
stop "$SRV_PID"
python3 "$ROOT/tests/e2e/check_joined.py" --truth "$WORK/truth.jsonl" --trace "$WORK/tt.jsonl" \
	--client "$WORK/client.jsonl" --port "$SRV_PORT" --min-joined 2 ||
	die "tokentrace's streams of a connection joined mid-way disagree with the truth"
echo "PASS: a connection joined mid-way: every stream seen, each the right call, exact"
