# Stalls that are a timer (issue 13): Go's net/http with a time.Sleep in the generating
# goroutine, Node's http with a setTimeout in the async generator, 200 ms before every 10th
# token. Go parks the waiting threads in futexes and one in epoll with the timer's deadline;
# Node's one thread waits in epoll_wait for its next timer. Every injected stall must be
# reported as the server idle, waiting for a timer, within the server's own threads
# (check_timers.py), and nothing else reported as a stall.
. "$(dirname "$0")/stack_lib.bash"

build_go
phase() {	# label, server command...
	local label=$1
	shift
	start_server "$label" "$@" --port 0 --truth "$WORK/$label.truth" --ttft-ms 20 \
		--itl-ms 5 --tokens 24 --stall-every-tokens 10 --stall-ms 200
	trace "$SRV_PID"
	load "$label" --port "$SRV_PORT" --requests 8 --concurrency 2 --max-tokens 24 \
		--id-prefix "$label-"
	stop_tt
	stop "$SRV_PID"
	if python3 "$ROOT/tests/e2e/check_timers.py" "$WORK/$label.truth" "$WORK/tt.jsonl" \
		"$SRV_PID" >"$WORK/$label.check"; then
		sed "s/^measured:/measured: $label:/" "$WORK/$label.check"
	else
		cat "$WORK/$label.check"
		FAILED+=("$label")
	fi
}
phase go "$GO_SERVER"
phase node node "$NODE_SERVER"
finish
