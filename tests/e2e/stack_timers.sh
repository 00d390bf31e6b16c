# Stalls that are a timer (issue 13): Go's net/http with a time.Sleep in the generating
# goroutine, Node's http with a setTimeout in the async generator, 200 ms before every 10th
# token. Go parks the waiting threads in futexes and one in epoll with the timer's deadline;
# Node's one thread waits in epoll_wait for its next timer. Every injected stall must be
# reported as the server idle, waiting for a timer, within the server's own threads
# (check_timers.py), and nothing else reported as a stall but a wait for a CPU the kernel's
# own run-queue account of the server's threads confirms (schedtruth.py).
# And a native stall: the Go generator's thread held 200 ms in a blocking syscall
# (deviceWait: a driver call's shape), reported as that thread asleep with its user stack,
# walked by frame pointers at the syscall's exit, naming main.deviceWait under
# syscall.Nanosleep (check_timers.py --native).
. "$(dirname "$0")/stack_lib.bash"

build_go
run_phase() {	# label, check_timers.py's flag or "", server command...: 0 when it agrees
	local label=$1 how=$2
	shift 2
	start_server "$label" "$@" --port 0 --truth "$WORK/$label.truth" --ttft-ms 20 \
		--itl-ms 5 --tokens 24 --stall-every-tokens 10 --stall-ms 200
	# each phase's report and recording stay in the work dir, kept when a phase fails
	start_sched_truth "$WORK/$label.sched" "$SRV_PID"
	trace "$SRV_PID" -w "$WORK/$label.ttr"
	load "$label" --port "$SRV_PORT" --requests 8 --concurrency 2 --max-tokens 24 \
		--id-prefix "$label-"
	stop_tt
	stop_sched_truth
	stop "$SRV_PID"
	mv "$WORK/tt.jsonl" "$WORK/$label.tt.jsonl"
	if python3 "$ROOT/tests/e2e/check_timers.py" "$WORK/$label.truth" "$WORK/$label.tt.jsonl" \
		"$SRV_PID" $how --sched "$WORK/$label.sched" >"$WORK/$label.check"; then
		sed "s/^measured:/measured: $label:/" "$WORK/$label.check"
	else
		cat "$WORK/$label.check"
		return 1
	fi
}
# Each phase runs once: a disagreement is a bug to find (its files stay in the work dir).
phase() {
	run_phase "$@" || FAILED+=("$1")
}
phase go "" "$GO_SERVER"
phase node "" node "$NODE_SERVER"
phase go-device --native "$GO_SERVER" --stall-kind device
finish
