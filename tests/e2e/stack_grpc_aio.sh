#!/bin/bash
# gRPC over HTTP/2, SGLang's shape (tests/stacks/grpc): grpcio's asyncio server streaming a
# Generate call a message per token, its scheduler stalling every 6 tokens; the grpcio client
# on one channel (one connection, calls concurrent on it), some calls failing with INTERNAL
# after 8 messages, some cancelled by the client (RST_STREAM) after 4 (before the failure:
# a call picked for both, which the server's arrival order decides, is still cancelled, so
# the count of cancels is the rig's own), one refused at once
# (trailers-only INVALID_ARGUMENT). Every stream found, its messages exact, each between the
# server's hand-off and the client's receive, its status, and each injected stall (check_stack.py
# --grpc).
[ -n "${STACK_GRPC_BOUNDED:-}" ] || STACK_GRPC_BOUNDED=1 exec timeout 200 bash "$0" "$@"
source "$(dirname "$0")/stack_lib.bash"
GRPC=$ROOT/tests/stacks/grpc
PY=/usr/bin/python3

start_server grpc-aio "$PY" "$GRPC/server.py" --port 0 --ttft-ms 30 --itl-ms 10 --tokens 12 \
	--stall-every-tokens 6 --stall-ms 120 --fail-every 5 --fail-after 8 --reject-over 40 \
	--truth "$WORK/truth.jsonl"
trace "$SRV_PID"
"$PY" "$GRPC/client.py" --port "$SRV_PORT" --requests 24 --concurrency 4 --max-tokens 12 \
	--cancel-every 7 --cancel-after 4 --id-prefix aio --out "$WORK/client.jsonl" \
	2>"$WORK/client.err" || die "client: $(tail -n 3 "$WORK/client.err")"
"$PY" "$GRPC/client.py" --port "$SRV_PORT" --requests 1 --max-tokens 60 --id-prefix big \
	--out "$WORK/client.jsonl" 2>>"$WORK/client.err" || die "client: $(tail -n 3 "$WORK/client.err")"
stop_tt
stop "$SRV_PID"
check "grpc.aio" --grpc --truth "$WORK/truth.jsonl" --trace "$WORK/tt.jsonl" \
	--client "$WORK/client.jsonl" --min-requests 25 --min-complete 20 --min-aborted 3 --min-stalls 20
finish
echo "PASS: every gRPC stream of grpc.aio agrees with the server's truth and the client's log"
