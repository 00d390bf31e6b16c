# Python stacks of a live CPython 3.11 (Debian 12's python3), no restart, no -X perf:
# tests/stacks/pyprobe/busy.py runs threads in known places (on CPU in a named function,
# asleep in another, holding the GIL in a long C call, waiting for the GIL); pydriver loads
# tokentrace's Python-stack programs against it (cpu-clock samples, blocking switch-outs)
# and check.py holds what it saw to what busy.py says it did. Another Python version must be
# refused in one line.
. "$(dirname "$0")/lib.sh"

PY=${TT_PY311:-/usr/bin/python3.11}
DRV=$ROOT/.output/tests/pydriver
PROBE=$ROOT/tests/stacks/pyprobe
[ -x "$PY" ] || die "$PY is missing (Debian 12: apt-get install python3)"
[ -x "$DRV" ] || die "$DRV is missing: make test-bins"

"$PY" "$PROBE/busy.py" --seconds 6 --truth "$WORK/truth.jsonl" >"$WORK/busy.out" 2>&1 &
PIDS+=($!)
wait_for "$WORK/truth.jsonl" '"type": "start"' 30 ||
	die "busy.py did not start: $(cat "$WORK/busy.out")"
BUSY=$(sed -n 's/^{"type": "start", "pid": \([0-9]*\).*/\1/p' "$WORK/truth.jsonl")
[ -n "$BUSY" ] || die "no pid in busy.py's truth"

timeout 30 "$DRV" -p "$BUSY" -d 3 --bpf-stats >"$WORK/drv.jsonl" 2>"$WORK/drv.err" ||
	die "pydriver failed: $(tail -n 5 "$WORK/drv.err")"
# the traced process carried on and ended on its own
for _ in $(seq 100); do
	grep -q '"type": "end"' "$WORK/truth.jsonl" && break
	sleep 0.1
done
grep -q '"type": "end"' "$WORK/truth.jsonl" || die "busy.py did not finish after tracing"

python3 "$PROBE/check.py" "$WORK/truth.jsonl" "$WORK/drv.jsonl" || die "Python stacks wrong"

# what a sample and a blocking switch-out cost in the kernel (BPF_ENABLE_STATS, this run):
# the programs run machine-wide, so per record is an upper bound (it carries the untraced runs)
python3 - "$WORK/drv.jsonl" <<'PY' || true
import json, sys
recs = [json.loads(line) for line in open(sys.argv[1])]
bs = next((o for o in recs if o["type"] == "bpf_stats"), None)
st = next((o for o in recs if o["type"] == "stats"), None)
for prog, key in (("py_sample", "samples"), ("py_switch", "blocked")):
    v = bs.get(prog) if bs else None
    if v and v["runs"] and st and st[key]:
        print(f"measured: {prog}: {v['runs']} runs, {v['ns'] / v['runs']:.0f} ns a run; "
              f"{st[key]} {key} records, <= {v['ns'] / st[key]:.0f} ns each")
PY

# other versions are refused, never guessed at (whatever other CPython this machine has)
other=""
for v in 3.13 3.12 3.10 3.9 3.8; do
	p=$(command -v "python$v" 2>/dev/null) || continue
	"$p" -c 'import sys; sys.exit(sys.version_info[:2] == (3, 11))' 2>/dev/null || continue
	other=$p
	break
done
if [ -z "$other" ]; then
	echo "note: no CPython other than 3.11 here: refusal checked by tests/unit/sys/test_pyfake.c"
else
	"$other" -S -c 'import time; time.sleep(20)' &
	OPID=$!
	PIDS+=("$OPID")
	rc=0
	for _ in $(seq 50); do
		rc=0
		timeout 10 "$DRV" -p "$OPID" -d 1 >"$WORK/other.out" 2>"$WORK/other.err" || rc=$?
		grep -q 'only CPython 3.11 is supported' "$WORK/other.err" && break
		sleep 0.1
	done
	[ "$rc" -eq 2 ] || die "$other: pydriver exit $rc, want 2: $(cat "$WORK/other.err")"
	[ "$(wc -l <"$WORK/other.err")" -eq 1 ] ||
		die "$other: more than one line: $(cat "$WORK/other.err")"
	grep -q 'only CPython 3.11 is supported' "$WORK/other.err" ||
		die "$other: $(cat "$WORK/other.err")"
	echo "measured: $other refused: $(cat "$WORK/other.err")"
fi
echo "PASS"
