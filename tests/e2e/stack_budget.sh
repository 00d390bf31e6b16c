# --budget (issue 13: the default mode's cost at saturation): servers streaming flat out, far
# over a small budget of sends and reads a second. What a user would check:
# - whole requests are left out, never parts of one: every request reported is exactly
#   right (chunks, complete, each token between the server's hand-off and the client's
#   read), none flagged lost, no parse error;
# - every request not reported is counted, and only those (left_out_by_budget);
# - the sends and reads delivered kept to the budget (check_stack.py --budget: the bound
#   is the budget's own arithmetic over the trace's length, no timing of the server);
# - the text summary says so;
# - a reader that falls behind (stopped 150 ms in every 400) costs whole requests, left out
#   while the ring is half full, instead of records lost in the middle of many: with a rate
#   the load never reaches, the same gates hold, nothing lost.
# On tokensim (the rig) and on Go's net/http (the real stack: one Write+Flush a chunk), over
# TCP and over a Unix socket.
. "$(dirname "$0")/stack_lib.bash"

BUDGET=3000

echo "--- tokensim flat out, --budget $BUDGET"
# seconds of load, so that the rate shows past the burst (a second's worth)
start_sim --ttft-ms 1 --itl-ms 0 --tokens 50 --max-batch 16
start_tt --budget "$BUDGET"
load sim --port "$SIM_PORT" --requests 4000 --concurrency 8
stop_tt
check tokensim --truth "$WORK/truth.jsonl" --trace "$WORK/tt.jsonl" --client "$WORK/sim.jsonl" \
	--port "$SIM_PORT" --expect-format sse --min-requests 4000 --budget "$BUDGET" \
	--concurrency 8
kill -TERM "$SIM_PID" 2>/dev/null || true
wait "$SIM_PID" 2>/dev/null || true

echo "--- tokensim flat out, the reader stopped in turns, --budget 100000000"
start_sim --ttft-ms 1 --itl-ms 0 --tokens 50 --max-batch 16
start_tt --budget 100000000
load_stuttered "$SIM_PORT" --requests 3000 --concurrency 8
stop_tt
check stalled-reader --truth "$WORK/truth.jsonl" --trace "$WORK/tt.jsonl" \
	--client "$WORK/load.jsonl" --port "$SIM_PORT" --expect-format sse --min-requests 3000 \
	--budget 100000000 --concurrency 8
kill -TERM "$SIM_PID" 2>/dev/null || true
wait "$SIM_PID" 2>/dev/null || true

echo "--- Go net/http flat out, --budget $BUDGET"
build_go
start_server go "$GO_SERVER" --port 0 --truth "$WORK/go-truth.jsonl" --ttft-ms 1 --itl-ms 0 \
	--tokens 50
trace "$SRV_PID" --budget "$BUDGET"
load go --port "$SRV_PORT" --requests 3000 --concurrency 8
stop_tt
stop "$SRV_PID"
check go --truth "$WORK/go-truth.jsonl" --trace "$WORK/tt.jsonl" --client "$WORK/go.jsonl" \
	--port "$SRV_PORT" --expect-format sse --min-requests 3000 --budget "$BUDGET" \
	--concurrency 8

# A Unix socket at a token a millisecond a stream (32 streams: 32k tokens/s, ten times the
# budget). Not flat out: there a reader already reading takes the bytes between the send
# queueing them and telling the peer, where the token is stamped (README, Limits).
echo "--- Go net/http over a Unix socket, 32 streams, --budget $BUDGET"
start_server go-unix "$GO_SERVER" --uds "$WORK/go.sock" --truth "$WORK/go-unix-truth.jsonl" \
	--ttft-ms 1 --itl-ms 1 --tokens 50
trace "$SRV_PID" --budget "$BUDGET"
load go-unix-load --unix "$WORK/go.sock" --requests 1500 --concurrency 32
stop_tt
stop "$SRV_PID"
check go-unix --truth "$WORK/go-unix-truth.jsonl" --trace "$WORK/tt.jsonl" \
	--client "$WORK/go-unix-load.jsonl" --expect-format sse --min-requests 1500 \
	--budget "$BUDGET" --concurrency 32

echo "--- the text summary says what was left out"
start_server go2 "$GO_SERVER" --port 0 --ttft-ms 1 --itl-ms 0 --tokens 150
"$TT" -p "$SRV_PID" --budget "$BUDGET" -q 0 >"$WORK/tt.txt" 2>"$WORK/tt-text.err" &
TXT_PID=$!
PIDS+=("$TXT_PID")
wait_for "$WORK/tt-text.err" 'Ctrl-C to stop' 30 || die "tokentrace (text) not ready"
load go2 --port "$SRV_PORT" --requests 200 --concurrency 8
kill -INT "$TXT_PID"
wait "$TXT_PID" || die "tokentrace (text) exited $?"
stop "$SRV_PID"
grep -E -- '^--- .* total .*, [0-9]+ requests left out by the budget \(--budget\)' "$WORK/tt.txt" ||
	FAILED+=("text summary: no 'requests left out by the budget' in: $(grep -- '^---' "$WORK/tt.txt")")
finish
