# TTFT breakdown from markers inside tokensim, with each probe kind: uprobes on the
# executable, uprobes on a shared library, USDT. Every part agrees with tokensim's truth
# within 200 us at p99 and admit + prefill + emit-to-wire = TTFT. tokensim keeps serving
# correctly after tokentrace attached and detached.
. "$(dirname "$0")/lib.sh"

# more streams than engine slots: requests really wait for admission
start_sim --ttft-ms 25 --itl-ms 5 --jitter-ms 2 --tokens 12 --max-batch 2

# tokensim's executable text as the process sees it, against the file: a uprobe is a
# breakpoint written into the process's copy of a page; detached, the bytes are the file's
text_matches_file() {
	python3 - "$SIM_PID" "$SIM" <<'PY'
import sys
pid, exe = sys.argv[1], sys.argv[2]
import os
real = os.path.realpath(exe)
with open(f"/proc/{pid}/maps") as m, open(f"/proc/{pid}/mem", "rb") as mem, open(real, "rb") as f:
    for line in m:
        parts = line.split()
        if len(parts) < 6 or "x" not in parts[1] or os.path.realpath(parts[5]) != real:
            continue
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        off = int(parts[2], 16)
        mem.seek(lo)
        f.seek(off)
        live, disk = mem.read(hi - lo), f.read(hi - lo)
        n = min(len(live), len(disk))
        sys.exit(0 if live[:n] == disk[:n] else 1)
sys.exit(2)
PY
}

# what tokentrace really has attached: uprobes of its own (USDT probes are uprobes too) on
# tokensim's files, as the kernel lists them (not the tracefs uprobe_events list, which
# stays empty when libbpf attaches through perf)
uprobes_of() {	# pid of tokentrace
	bpftool perf show 2>/dev/null | awk -v p="$1" '$2 == p && $7 == "uprobe"' |
		grep -cE '/(tokensim|libtsengine\.so)  ' || true
}

run_kind() {	# label, marker options...
	local label=$1 seen
	shift
	seen=$(wc -l <"$WORK/truth.jsonl")
	start_tt "$@"
	[ "$(uprobes_of "$TT_PID")" -eq 2 ] || die "$label: $(uprobes_of "$TT_PID") uprobes on tokensim attached, 2 asked for"
	if [ "$label" = uprobe-exe ]; then
		text_matches_file && die "$label: attached, yet tokensim's text is the file's: no breakpoint"
	fi
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

# a binary named by a relative path and through a symlink, as perf and bpftrace take them,
# with another target listed first that does not map it: -p order must not matter
ln -s "$SIM" "$WORK/sim-link"
sleep 300 &
OTHER=$!
PIDS+=("$OTHER")
seen=$(wc -l <"$WORK/truth.jsonl")
rm -f "$WORK/tt.jsonl"	# no earlier ready line to wait on
(cd "$ROOT" && exec "$TT" -p "$OTHER,$SIM_PID" --json \
	--usdt admit=./.output/tokensim:tokensim:admit,key=arg2:str \
	--uprobe token="$WORK/sim-link":tokensim_token,key=arg2:str) >"$WORK/tt.jsonl" 2>"$WORK/tt.err" &
TT_PID=$!
PIDS+=("$TT_PID")
wait_for "$WORK/tt.jsonl" '"type":"ready"' 30 || die "relative/symlinked binary paths refused: $(cat "$WORK/tt.err")"
run_load --requests 12 --concurrency 2 --max-tokens 12
stop_tt
tail -n +$((seen + 1)) "$WORK/truth.jsonl" >"$WORK/truth.phase"
python3 "$ROOT/tests/e2e/check_breakdown.py" --label relative-paths "$WORK/truth.phase" "$WORK/tt.jsonl"

# detached: tokensim still answers every request correctly, no probe left behind
run_load --requests 8 --concurrency 2 --max-tokens 12
python3 - "$WORK/truth.jsonl" "$WORK/load.jsonl" <<'PY'
import json, sys
t = {o["request_id"]: o for o in map(json.loads, open(sys.argv[1]))}
l = [json.loads(x) for x in open(sys.argv[2])]
assert len(l) == 8 and all(x["status"] == 200 and x["chunks"] == t[x["request_id"]]["chunks"] == 12
                           for x in l), "tokensim misbehaves after detach"
PY
text_matches_file || die "tokensim's text differs from its file after detach: a breakpoint left behind"
[ "$(uprobes_of "$TT_PID")" -eq 0 ] || die "uprobes still attached after exit"
kill -0 "$SIM_PID" || die "tokensim died"
echo "ok: tokensim serves correctly after attach and detach"
