# Drops on a real stack: Go's net/http streaming flat out to 8 clients, a 1 MiB ring, and
# tokentrace's consumer stopped (SIGSTOP) for 150 ms every 400 ms so the ring fills and the
# kernel drops records (--budget 0: every request let in; by default the budget leaves
# requests out whole while the ring is half full, stack_budget.sh). Every request reported without the lost flag must still be exact
# (chunks, complete, each token between the server's hand-off and the client's read); the
# drops must be counted (in the summary and in Prometheus, with the losses that may hide
# whole requests), flagged on the requests they touched, and cause no parse error: the
# kernel holds back the rest of a response that lost a record, so Go's chunked framing is
# never picked up midway.
. "$(dirname "$0")/stack_lib.bash"

build_go
start_server go "$GO_SERVER" --port 0 --truth "$WORK/truth.jsonl" --ttft-ms 1 --itl-ms 0 \
	--tokens 300
trace "$SRV_PID" -b 1 --budget 0 --metrics 0 1
MPORT=$(sed -n 's|^tokentrace: metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics$|\1|p' "$WORK/tt.err")
load_stuttered "$SRV_PORT" --requests 160 --concurrency 8 --max-tokens 300
tail -n 1 "$WORK/load.err" | sed 's/^/note: /'
sleep 1.5	# a summary window (1 s) rolls after the last loss: the metrics count it
curl -sf "http://127.0.0.1:$MPORT/metrics" >"$WORK/metrics.txt" || die "GET /metrics failed"
stop_tt
# Prometheus says what the summary says
BETWEEN=$(sed -n 's/^tokentrace_lost_between_requests_total \([0-9]*\)$/\1/p' "$WORK/metrics.txt")
FINAL=$(python3 -c 'import json,sys
print([r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "summary" and r["final"]][0]["lost_between_requests"])' "$WORK/tt.jsonl")
[ -n "$BETWEEN" ] && [ "$BETWEEN" = "$FINAL" ] ||
	die "metrics say ${BETWEEN:-nothing} losses between requests, the final summary $FINAL"
stop "$SRV_PID"
check go-drops --truth "$WORK/truth.jsonl" --trace "$WORK/tt.jsonl" --client "$WORK/load.jsonl" \
	--port "$SRV_PORT" --expect-format sse --min-requests 160 --min-complete 160 --drops
finish
