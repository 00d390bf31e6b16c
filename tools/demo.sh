#!/bin/bash
# make demo: start tokensim (jitter and an occasional stall), trace it live with tokentrace
# while tokenload streams a bounded number of requests through it, then stop everything.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
	echo "demo: tokentrace loads BPF programs and needs root; run: sudo make demo" >&2
	exit 1
fi
work=$(mktemp -d /tmp/tokentrace-demo.XXXXXX)
sim_pid=
tt_pid=
cleanup() {
	[ -n "$tt_pid" ] && kill -INT "$tt_pid" 2>/dev/null && wait "$tt_pid" 2>/dev/null
	[ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null && wait "$sim_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

.output/tokensim --port 0 --ttft-ms 120 --itl-ms 15 --jitter-ms 5 --stall-every 40 \
	--stall-ms 250 --tokens 64 >"$work/sim.out" 2>"$work/sim.err" &
sim_pid=$!
for _ in $(seq 50); do grep -q '^listening' "$work/sim.out" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$work/sim.out")
echo "demo: tokensim (PID $sim_pid) streams on 127.0.0.1:$port; tracing it:"
echo "demo: ./tokentrace -p $sim_pid 3"
echo

./tokentrace -p "$sim_pid" 3 2>"$work/tt.err" &
tt_pid=$!
for _ in $(seq 100); do grep -q 'attached' "$work/tt.err" 2>/dev/null && break; sleep 0.1; done
cat "$work/tt.err"

.output/tokenload --port "$port" --requests 24 --concurrency 4 --max-tokens 64 \
	--out "$work/load.jsonl" 2>/dev/null
sleep 0.5
kill -INT "$tt_pid"
wait "$tt_pid" || true
tt_pid=
