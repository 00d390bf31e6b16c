# TTFT breakdown from markers inside tokensim, with each probe kind: uprobes on the
# executable, uprobes on a shared library, USDT. Every part agrees with tokensim's truth
# within 200 us at p99 and admit + prefill + emit-to-wire = TTFT. tokensim keeps serving
# correctly after tokentrace attached and detached.
. "$(dirname "$0")/lib.sh"

# more streams than engine slots: requests really wait for admission
start_sim --ttft-ms 25 --itl-ms 5 --jitter-ms 2 --tokens 12 --max-batch 2

run_kind() {	# label, marker options...
	local label=$1 seen
	shift
	seen=$(wc -l <"$WORK/truth.jsonl")
	start_tt "$@"
	run_load --requests 40 --concurrency 4 --max-tokens 12
	stop_tt
	# this phase's requests only (tokensim keeps appending to its truth file)
	tail -n +$((seen + 1)) "$WORK/truth.jsonl" >"$WORK/truth.phase"
	python3 "$ROOT/tests/e2e/check_breakdown.py" --label "$label" "$WORK/truth.phase" \
		"$WORK/tt.jsonl"
	$CHECK --min-requests 40 "$WORK/truth.phase" "$WORK/tt.jsonl" >"$WORK/check.out" ||
		{ cat "$WORK/check.out"; die "$label: counts or timings off"; }
}

run_kind uprobe-exe \
	--uprobe admit=tokensim:tokensim_admit,key=arg2:str \
	--uprobe token=tokensim:tokensim_token,key=arg2:str
run_kind uprobe-lib \
	--uprobe admit=libtsengine.so:tse_admit,key=arg2:str \
	--uprobe token=libtsengine:tse_token,key=arg2:str
run_kind usdt \
	--usdt admit=tokensim:tokensim:admit,key=arg2:str \
	--usdt token=$SIM:tokensim:token,key=arg2:str

# detached: tokensim still answers every request correctly, no probe left behind
run_load --requests 8 --concurrency 2 --max-tokens 12
python3 - "$WORK/truth.jsonl" "$WORK/load.jsonl" <<'PY'
import json, sys
t = {o["request_id"]: o for o in map(json.loads, open(sys.argv[1]))}
l = [json.loads(x) for x in open(sys.argv[2])]
assert len(l) == 8 and all(x["status"] == 200 and x["chunks"] == t[x["request_id"]]["chunks"] == 12
                           for x in l), "tokensim misbehaves after detach"
PY
grep -q uprobe /sys/kernel/tracing/uprobe_events 2>/dev/null && die "uprobe events left behind"
kill -0 "$SIM_PID" || die "tokensim died"
echo "ok: tokensim serves correctly after attach and detach"
