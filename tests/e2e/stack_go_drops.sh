# Drops on a real stack: Go's net/http streaming flat out to 8 clients, a 1 MiB ring, and
# tokentrace's consumer stopped (SIGSTOP) for 150 ms every 400 ms so the ring fills and the
# kernel drops records. Every request reported without the lost flag must still be exact
# (chunks, complete, each token between the server's hand-off and the client's read); the
# drops must be counted, flagged on the requests they touched, and cause no parse error:
# the kernel holds back the rest of a response that lost a record, so Go's chunked framing
# is never picked up midway.
. "$(dirname "$0")/stack_lib.bash"

build_go
start_server go "$GO_SERVER" --port 0 --truth "$WORK/truth.jsonl" --ttft-ms 1 --itl-ms 0 \
	--tokens 300
trace "$SRV_PID" -b 1
load_stuttered "$SRV_PORT" --requests 160 --concurrency 8 --max-tokens 300
tail -n 1 "$WORK/load.err" | sed 's/^/note: /'
stop_tt
stop "$SRV_PID"
check go-drops --truth "$WORK/truth.jsonl" --trace "$WORK/tt.jsonl" --client "$WORK/load.jsonl" \
	--port "$SRV_PORT" --expect-format sse --min-requests 160 --min-complete 160 --drops
finish
