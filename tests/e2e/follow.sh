# Finding the processes without a PID list, and following them: a server started after
# attach by a traced parent is traced (fork + exec, -p follows children); --comm finds a
# process of that name running now and one started later; --port alone finds whoever serves
# the port; --cgroup finds the processes of a cgroup, now and later. Every request of every
# found process is reported against its own truth, and the JSON says who joined and why.
. "$(dirname "$0")/lib.sh"

count_reqs() {	# file pid
	python3 - "$1" "$2" <<'PY'
import json, sys
print(sum(1 for l in open(sys.argv[1]) if '"type":"request"' in l and json.loads(l)["pid"] == int(sys.argv[2])))
PY
}

start_child_sim() {	# truth file, out file; the shell's child, its port in CHILD_PORT
	"$SIM" --port 0 --tokens 6 --itl-ms 3 --truth "$1" >"$2" 2>/dev/null &
	PIDS+=($!)	# in this shell, not a $(...) subshell: killed at exit
	wait_for "$2" '^listening on ' 10 || die "tokensim did not start"
	CHILD_PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$2" | head -n 1)
}

# 1. -p a parent that later starts the server: fork, then exec, then the server's requests
mkfifo "$WORK/go"
# a shell that waits for the word, then forks and execs the server (and waits for it)
bash -c "read _ <'$WORK/go'; '$SIM' --port 0 --tokens 6 --itl-ms 3 --truth '$WORK/truth-child.jsonl' >'$WORK/child.out' 2>/dev/null; true" &
PARENT=$!
PIDS+=("$PARENT")
rm -f "$WORK/tt.jsonl"	# no earlier ready line to wait on
"$TT" -p "$PARENT" --json >"$WORK/tt.jsonl" 2>"$WORK/tt.err" &
TT_PID=$!
PIDS+=("$TT_PID")
wait_for "$WORK/tt.jsonl" '"type":"ready"' 30 || die "not ready: $(cat "$WORK/tt.err")"
echo go >"$WORK/go"
wait_for "$WORK/child.out" '^listening on ' 10 || die "child tokensim did not start"
CHILD_PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$WORK/child.out")
"$LOAD" --port "$CHILD_PORT" --requests 8 --concurrency 2 --max-tokens 6 --out "$WORK/load.jsonl" 2>/dev/null ||
	die "load on the child failed"
stop_tt
grep -q '"type":"target","event":"fork".*"ppid":'"$PARENT" "$WORK/tt.jsonl" ||
	die "no fork event for the child: $(grep target "$WORK/tt.jsonl")"
grep -q '"type":"target","event":"exec".*"comm":"tokensim"' "$WORK/tt.jsonl" ||
	die "no exec event for the child: $(grep target "$WORK/tt.jsonl")"
$CHECK --min-requests 8 "$WORK/truth-child.jsonl" "$WORK/tt.jsonl" >"$WORK/check.out" ||
	{ cat "$WORK/check.out"; die "the exec'ed server's requests"; }
grep -q "forked by PID $PARENT" "$WORK/tt.err" || die "the fork was not announced: $(cat "$WORK/tt.err")"
echo "ok: -p $PARENT followed its child through fork and exec: 8 requests"
pkill -TERM -P "$PARENT" 2>/dev/null || true	# the server it forked: not in PIDS

# 2. --comm: the process of that name now, and one started after attach
start_child_sim "$WORK/truth-a.jsonl" "$WORK/a.out"
P1=$CHILD_PORT
rm -f "$WORK/tt.jsonl"	# no earlier ready line to wait on
"$TT" --comm tokensim --json >"$WORK/tt.jsonl" 2>"$WORK/tt.err" &
TT_PID=$!
PIDS+=("$TT_PID")
wait_for "$WORK/tt.jsonl" '"type":"ready"' 30 || die "--comm not ready: $(cat "$WORK/tt.err")"
start_child_sim "$WORK/truth-b.jsonl" "$WORK/b.out"
P2=$CHILD_PORT
wait_for "$WORK/tt.jsonl" '"event":"found".*"why":"comm"' 10 || die "the later tokensim was not found"
"$LOAD" --port "$P1" --requests 6 --concurrency 2 --max-tokens 6 --id-prefix a- --out "$WORK/la.jsonl" 2>/dev/null
"$LOAD" --port "$P2" --requests 6 --concurrency 2 --max-tokens 6 --id-prefix b- --out "$WORK/lb.jsonl" 2>/dev/null
stop_tt
for x in a b; do
	grep "\"request_id\":\"$x-" "$WORK/tt.jsonl" >"$WORK/tt-$x.jsonl" || true
	$CHECK --min-requests 6 "$WORK/truth-$x.jsonl" "$WORK/tt-$x.jsonl" >"$WORK/check.out" ||
		{ cat "$WORK/check.out"; die "--comm: the $x server's requests"; }
done
echo "ok: --comm tokensim: the running one and the one started after attach, 6 requests each"

# 3. --port alone: whoever serves it
start_child_sim "$WORK/truth-c.jsonl" "$WORK/c.out"
P3=$CHILD_PORT
rm -f "$WORK/tt.jsonl"	# no earlier ready line to wait on
"$TT" --port "$P3" --json >"$WORK/tt.jsonl" 2>"$WORK/tt.err" &
TT_PID=$!
PIDS+=("$TT_PID")
wait_for "$WORK/tt.jsonl" '"type":"ready"' 30 || die "--port not ready: $(cat "$WORK/tt.err")"
"$LOAD" --port "$P3" --requests 6 --concurrency 2 --max-tokens 6 --out "$WORK/lc.jsonl" 2>/dev/null
"$LOAD" --port "$P1" --requests 3 --max-tokens 6 --id-prefix other- --out "$WORK/lo.jsonl" 2>/dev/null
stop_tt
$CHECK --min-requests 6 "$WORK/truth-c.jsonl" <(grep -v '"request_id":"other-' "$WORK/tt.jsonl") >"$WORK/check.out" ||
	{ cat "$WORK/check.out"; die "--port: the server's requests"; }
grep -q '"request_id":"other-' "$WORK/tt.jsonl" && die "--port $P3 reported another port's requests"
echo "ok: --port $P3 alone: its server's 6 requests, none of another port"

# 4. --cgroup: a cgroup of the test's own, a server in it now and one started in it later
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
CG=$CG2/tokentrace-e2e-$$
if [ -n "$CG2" ] && mkdir "$CG" 2>/dev/null; then
	trap 'cleanup; for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do kill $p 2>/dev/null; done; sleep 0.2; rmdir "$CG" 2>/dev/null' EXIT
	start_child_sim "$WORK/truth-d.jsonl" "$WORK/d.out"
	P4=$CHILD_PORT
	echo "$(pgrep -n -f "truth $WORK/truth-d.jsonl")" >"$CG/cgroup.procs"
	rm -f "$WORK/tt.jsonl"	# no earlier ready line to wait on
	"$TT" --cgroup "$CG" --json >"$WORK/tt.jsonl" 2>"$WORK/tt.err" &
	TT_PID=$!
	PIDS+=("$TT_PID")
	wait_for "$WORK/tt.jsonl" '"type":"ready"' 30 || die "--cgroup not ready: $(cat "$WORK/tt.err")"
	bash -c "echo \$\$ >'$CG/cgroup.procs'; exec '$SIM' --port 0 --tokens 6 --itl-ms 3 --truth '$WORK/truth-e.jsonl' >'$WORK/e.out' 2>/dev/null" &
	PIDS+=($!)
	wait_for "$WORK/e.out" '^listening on ' 10 || die "tokensim in the cgroup did not start"
	P5=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$WORK/e.out")
	wait_for "$WORK/tt.jsonl" '"why":"cgroup"' 10 || die "the later process of the cgroup was not found"
	"$LOAD" --port "$P4" --requests 5 --max-tokens 6 --id-prefix d- --out "$WORK/ld.jsonl" 2>/dev/null
	"$LOAD" --port "$P5" --requests 5 --max-tokens 6 --id-prefix e- --out "$WORK/le.jsonl" 2>/dev/null
	stop_tt
	for x in d e; do
		grep "\"request_id\":\"$x-" "$WORK/tt.jsonl" >"$WORK/tt-$x.jsonl" || true
		$CHECK --min-requests 5 "$WORK/truth-$x.jsonl" "$WORK/tt-$x.jsonl" >"$WORK/check.out" ||
			{ cat "$WORK/check.out"; die "--cgroup: the $x server's requests"; }
	done
	echo "ok: --cgroup: the server in it and the one started in it later, 5 requests each"
else
	echo "note: no cgroup v2 to make a test cgroup in: --cgroup not tested"
fi
