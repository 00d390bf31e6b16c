#!/bin/bash
# Injected stalls on the vLLM-shaped Python stack (httptools, uvloop), one kind at a time:
# in the engine process (CPU, sleep, a lock another engine thread holds) and in the API
# server (CPU and a blocking sleep on the event loop, a worker thread holding the GIL).
# The truth names each stall and the first chunk after it; the client must have seen that
# gap there, and tokentrace must still count every chunk and keep every token's send time
# between the hand-off and the receive, and blame the thread, the cause and the Python
# function the truth names (check_blame.py), in the chain and in the line's Python summary.
# tokentrace is given the API server only, as a user who does not know of the engine would:
# the engine behind its ZMQ sockets is followed. The engine's kinds run again on the SGLang
# shape (--shape sglang): a scheduler process whose forward thread runs the model, and a
# detokenizer process between it and the API server, so a token's wakeup crosses three
# processes and four ZMQ I/O threads' hand-offs (seven threads to a lock's holder). And
# engine_cpu once more with the engine started detached (no child of the API server, as a
# supervisor starts TGI's shards): tokentrace must find it as the peer of the API server's
# Unix sockets, say so (a target event, why "peer"), and follow the stall into it. And once
# with the engine's ZMQ sockets on tcp://127.0.0.1 (vLLM's way to an engine on another host):
# the wait crosses into the engine as data on a loopback TCP connection. A stall nobody
# injected fails unless the kernel's own run-queue account of the stack's threads
# (schedtruth.py) confirms it as the wait for a CPU tokentrace says it is.
[ -n "${STACK_PY_BOUNDED:-}" ] || STACK_PY_BOUNDED=1 exec timeout 240 bash "$0" "$@"
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/stacks/python/lib.sh"

failed=()
# one kind's run: 0 when tokentrace agrees with the truth
phase() {	# kind shape (vllm, sglang; detached: its engine started apart; tcp: ZMQ on TCP)
	local kind=$1 shape=$2 ok=0 n flags=(--shape "$2") cross=unix_socket
	[ "$shape" != detached ] || flags=(--shape vllm --engine-launch detached)
	[ "$shape" != tcp ] || { flags=(--shape vllm --zmq tcp); cross=loopback_tcp; }
	start_py_stack --http httptools --loop uvloop --itl-ms 10 --ttft-ms 20 "${flags[@]}" \
		--stall "$kind" --stall-ms 150 --stall-every-tokens 12 --stall-requests 1
	SIM_PID=$PY_API_PID
	start_sched_truth "$WORK/sched.jsonl" "$PY_API_PID" "$PY_ENGINE_PID"
	start_tt
	run_load --requests 8 --concurrency 2 --include-usage --max-tokens 30 --timeout-ms 20000
	stop_tt
	stop_sched_truth
	stop_py_stack
	n=$(grep -c "\"kind\":\"$kind\"" "$WORK/truth.jsonl" || true)
	[ "$n" -gt 0 ] || die "$kind: no stall in the truth: the run did not test it"
	check_py_stack --min-requests 8 --allow-stalls "$kind" | sed "s/^measured: /measured: $kind: /" ||
		ok=1
	python3 "$ROOT/tests/e2e/check_blame.py" "$WORK/truth.jsonl" "$WORK/tt.jsonl" "$kind" \
		"$cross" --sched "$WORK/sched.jsonl" || ok=1
	if [ "$shape" = detached ]; then
		python3 - "$WORK/tt.jsonl" "$PY_ENGINE_PID" <<'PY' || ok=1
import json, sys
pid = int(sys.argv[2])
evs = [o for o in map(json.loads, open(sys.argv[1])) if o.get("type") == "target"]
if not any(o["pid"] == pid and o["why"] == "peer" for o in evs):
    sys.exit(f"FAIL: the detached engine (pid {pid}) is not said to be traced as a peer: {evs}")
PY
	fi
	mkdir -p "$WORK/$shape-$kind"
	mv "$WORK"/{truth,tt,load,sched}.jsonl "$WORK/$shape-$kind/"
	return $ok
}
for run in vllm:{engine_cpu,engine_sleep,engine_lock,api_cpu,api_sleep,api_gil} \
	sglang:{engine_cpu,engine_sleep,engine_lock} detached:engine_cpu tcp:engine_cpu; do
	shape=${run%%:*} kind=${run#*:}
	echo "--- $shape $kind"
	# each phase runs once: a disagreement is a bug to find (its files are kept in the work dir)
	phase "$kind" "$shape" || failed+=("$shape $kind")
done
[ ${#failed[@]} -eq 0 ] || die "tokentrace disagrees with the stack's truth under: ${failed[*]}"
echo "PASS: every stall kind agrees with the truth"
