#!/bin/bash
# gRPC over HTTP/2 on grpc-go (golang-google-grpc-dev, tests/stacks/grpc/go): the Generate
# stream with a stalling scheduler goroutine, failing, cancelled and refused calls, from the
# grpc-go client and from grpcio's (two connections, calls concurrent on each), traced with
# --port (only the gRPC port's connections). As stack_grpc_aio: every stream, its messages,
# its times between hand-off and receive, its status, each injected stall.
[ -n "${STACK_GRPC_BOUNDED:-}" ] || STACK_GRPC_BOUNDED=1 exec timeout 200 bash "$0" "$@"
source "$(dirname "$0")/stack_lib.bash"
GRPC=$ROOT/tests/stacks/grpc
BIN=$("$GRPC/go/build.sh" 2>"$WORK/go-build.err") || die "go build: $(tail -n 5 "$WORK/go-build.err")"

start_server grpc-go "$BIN" server --port 0 --ttft-ms 30 --itl-ms 10 --tokens 12 \
	--stall-every-tokens 6 --stall-ms 120 --fail-every 5 --fail-after 8 --reject-over 40 \
	--truth "$WORK/truth.jsonl"
trace "$SRV_PID" --port "$SRV_PORT"
"$BIN" client --port "$SRV_PORT" --requests 20 --concurrency 4 --max-tokens 12 \
	--cancel-every 7 --cancel-after 4 --id-prefix go --out "$WORK/client.jsonl" \
	2>"$WORK/client.err" || die "client: $(tail -n 3 "$WORK/client.err")"
/usr/bin/python3 "$GRPC/client.py" --port "$SRV_PORT" --requests 8 --concurrency 3 \
	--max-tokens 12 --cancel-every 4 --cancel-after 3 --id-prefix py \
	--out "$WORK/client.jsonl" 2>>"$WORK/client.err" || die "client: $(tail -n 3 "$WORK/client.err")"
"$BIN" client --port "$SRV_PORT" --requests 1 --max-tokens 60 --id-prefix big \
	--out "$WORK/client.jsonl" 2>>"$WORK/client.err" || die "client: $(tail -n 3 "$WORK/client.err")"
stop_tt
stop "$SRV_PID"
check "grpc-go" --grpc --port "$SRV_PORT" --truth "$WORK/truth.jsonl" --trace "$WORK/tt.jsonl" \
	--client "$WORK/client.jsonl" --min-requests 29 --min-complete 22 --min-aborted 4 \
	--min-stalls 20
finish
echo "PASS: every gRPC stream of grpc-go agrees with the server's truth and the clients' logs"
