# Helpers for the privileged end-to-end tests: source it, then start_sim, start_tt,
# run_load, stop_tt. Everything started here is killed on exit; files go to $WORK.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# TT_OVERRIDE: another tokentrace (a wrapper adding options) for a local run of a test
TT=${TT_OVERRIDE:-$ROOT/tokentrace}
SIM=$ROOT/.output/tokensim
LOAD=$ROOT/.output/tokenload
CHECK="python3 $ROOT/tests/e2e/check_truth.py"
WORK=$(mktemp -d /tmp/tt-e2e.XXXXXX)
SIM_PID=
TT_PID=
REC_N=0
PIDS=()
EXIT_HOOKS=()	# run first at exit: tests/lib/container.bash stops its containers there

cleanup() {
	local rc=$? h
	for h in "${EXIT_HOOKS[@]}"; do
		"$h" || true
	done
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	if [ $rc -ne 0 ] || [ -n "${KEEP_WORK:-}" ]; then	# KEEP_WORK=1: kept to look at
		# a failure's recordings (-w, start_tt) go where tests/run.sh keeps its logs, to
		# replay with tokentrace -r and, once fixed, to become a replay test
		if [ $rc -ne 0 ] && compgen -G "$WORK/rec.*.ttr" >/dev/null; then
			local keep
			keep=$ROOT/tests/out/$(basename "$0" .sh).rec
			mkdir -p "$keep" && cp "$WORK"/rec.*.ttr "$keep"/ &&
				echo "--- recordings kept in $keep"
		fi
		echo "--- work dir $WORK kept; tokentrace stderr:"
		cat "$WORK/tt.err" 2>/dev/null | tail -n 20 || true
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT

die() {
	echo "FAIL: $*"
	exit 1
}

# wait_for FILE REGEX SECONDS
wait_for() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# start_sim [tokensim flags...]: sets SIM_PID, SIM_PORT; truth in $WORK/truth.jsonl
start_sim() {
	# a previous phase's "listening on" line must not answer the wait below before the new
	# process has truncated the file (seen: tokenload sent to the old port, refused)
	rm -f "$WORK/sim.out"
	"$SIM" --port 0 --truth "$WORK/truth.jsonl" "$@" >"$WORK/sim.out" 2>"$WORK/sim.err" &
	SIM_PID=$!
	PIDS+=("$SIM_PID")
	wait_for "$WORK/sim.out" '^listening on ' 10 || die "tokensim did not start: $(cat "$WORK/sim.err")"
	SIM_PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$WORK/sim.out" | head -n 1)
}

# start_tt [tokentrace flags...]: traces tokensim, JSON to $WORK/tt.jsonl; waits for "ready"
start_tt() {
	# a previous phase's file, ready line and all, must not satisfy the wait below before
	# the new process has truncated it
	rm -f "$WORK/tt.jsonl"
	local rec=()
	# every run recorded (unless the test records itself, or --aggregate keeps no records to
	# write), kept if the test fails
	[[ " $* " == *" -w "* || " $* " == *" --write "* || " $* " == *" --aggregate "* ]] ||
		rec=(-w "$WORK/rec.$((++REC_N)).ttr")
	"$TT" -p "$SIM_PID" --json "${rec[@]}" "$@" >"$WORK/tt.jsonl" 2>"$WORK/tt.err" &
	TT_PID=$!
	PIDS+=("$TT_PID")
	wait_for "$WORK/tt.jsonl" '"type":"ready"' 30 || die "tokentrace not ready: $(cat "$WORK/tt.err")"
}

# run_load [tokenload flags...]: client records in $WORK/load.jsonl
run_load() {
	"$LOAD" --port "$SIM_PORT" --out "$WORK/load.jsonl" "$@" 2>"$WORK/load.err" ||
		die "tokenload failed: $(tail -n 3 "$WORK/load.err")"
}

# load_stuttered PORT [tokenload flags...]: tokenload to $WORK/load.jsonl while tokentrace's
# consumer is stopped (SIGSTOP) for 150 ms of every 400, so a small ring fills and the kernel
# drops records; waits for the load, then for the consumer to take what the ring holds
load_stuttered() {
	local port=$1 pid
	shift
	"$LOAD" --port "$port" --out "$WORK/load.jsonl" "$@" 2>"$WORK/load.err" &
	pid=$!
	PIDS+=("$pid")
	while kill -0 "$pid" 2>/dev/null; do
		kill -STOP "$TT_PID"
		sleep 0.15
		kill -CONT "$TT_PID"
		sleep 0.25
	done
	wait "$pid" || die "tokenload failed: $(tail -n 3 "$WORK/load.err")"
	sleep 0.5
}

# stop_tt: SIGINT, expect exit 0 and a final summary
stop_tt() {
	local rc=0
	sleep 0.3	# let the last records drain (the consumer polls every 20 ms)
	kill -INT "$TT_PID"
	wait "$TT_PID" || rc=$?
	[ $rc -eq 0 ] || die "tokentrace exited $rc: $(cat "$WORK/tt.err")"
	grep -q '"type":"summary","final":true' "$WORK/tt.jsonl" || die "no final summary"
}

# start_sched_truth OUT PID...: the kernel's run-queue account of PID's threads and their
# children's (schedtruth.py), the truth for a stall nobody injected on a busy machine. It
# polls at a real-time priority: on the busy machine it is there for, a poll held off the
# CPU would widen its windows past what they can confirm.
start_sched_truth() {
	local out=$1
	shift
	chrt -f 1 python3 "$ROOT/tests/e2e/schedtruth.py" sample "$out" "$@" &
	SCHED_PID=$!
	PIDS+=("$SCHED_PID")
}

stop_sched_truth() {
	kill -TERM "$SCHED_PID" 2>/dev/null || true
	wait "$SCHED_PID" 2>/dev/null || true
}

stop_sim() {
	kill -TERM "$SIM_PID"
	wait "$SIM_PID" || true
}
