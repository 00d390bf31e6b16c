# The error paths: each one a clear one-line message and a non-zero exit, nothing attached.
. "$(dirname "$0")/lib.sh"

expect_fail() {	# expected-exit regex -- command...
	local code=$1 re=$2 rc=0
	shift 2
	"$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
	[ "$rc" -eq "$code" ] || die "'$*' exited $rc, expected $code: $(cat "$WORK/err")"
	grep -qE "$re" "$WORK/err" || die "'$*' said: $(cat "$WORK/err") (expected /$re/)"
	[ "$(wc -l <"$WORK/err")" -eq 1 ] || die "'$*' printed more than one line: $(cat "$WORK/err")"
	[ ! -s "$WORK/out" ] || die "'$*' printed on stdout: $(cat "$WORK/out")"
	echo "ok: $* -> exit $rc: $(cat "$WORK/err")"
}

# the BPF programs a process holds, by id (other tracers may run on the machine)
prog_ids() {
	grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -u
}

start_sim --tokens 4

# not root: drop to nobody, no capabilities
expect_fail 1 'need root' setpriv --reuid=65534 --regid=65534 --clear-groups \
	--inh-caps=-all --bounding-set=-all "$TT" -p "$SIM_PID"

# no such process: a PID above every live one
pid_max=$(cat /proc/sys/kernel/pid_max)
ghost=$((pid_max - 1))
while kill -0 "$ghost" 2>/dev/null; do ghost=$((ghost - 1)); done
expect_fail 1 "no process with PID $ghost" "$TT" -p "$ghost"

# a kernel without BTF: hide /sys/kernel/btf in a private mount namespace
expect_fail 1 'no BTF' unshare -m sh -c \
	"mount -t tmpfs none /sys/kernel/btf && exec $TT -p $SIM_PID"

# bad command lines: exit 2
expect_fail 2 'invalid PID' "$TT" -p abc
expect_fail 2 'which process' "$TT"
expect_fail 2 'invalid capture size' "$TT" -p "$SIM_PID" -s 99999999
expect_fail 2 'unknown option' "$TT" -p "$SIM_PID" --bogus
expect_fail 2 'invalid interval' "$TT" -p "$SIM_PID" -- -3

# tracefs not mounted: tokentrace mounts it itself and runs (debugfs goes too: a mounted
# debugfs brings tracefs back at debug/tracing on the first look there, as libbpf looks)
unshare -m bash -c "
	umount /sys/kernel/debug/tracing 2>/dev/null || true
	umount /sys/kernel/debug 2>/dev/null || true
	umount /sys/kernel/tracing 2>/dev/null || true
	test ! -e /sys/kernel/tracing/events || { echo 'could not unmount tracefs'; exit 1; }
	$TT -p $SIM_PID --json 0.2 1 >'$WORK/tracefs.out' 2>'$WORK/tracefs.err' || exit 1
	test -e /sys/kernel/tracing/events
" || die "without tracefs: $(cat "$WORK/tracefs.err" 2>/dev/null)"
grep -q '"type":"ready"' "$WORK/tracefs.out" || die "no ready line without tracefs"
echo "ok: tracefs unmounted -> mounted by tokentrace, traced"

# the target exits: the trace ends by itself with a final summary and exit 0
start_tt
ids=$(prog_ids "$TT_PID")
[ -n "$ids" ] || die "no BPF program found in tokentrace's descriptors"
run_load --requests 3 --max-tokens 4
stop_sim
for _ in $(seq 50); do kill -0 "$TT_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$TT_PID" 2>/dev/null && die "tokentrace still running after its target exited"
rc=0
wait "$TT_PID" || rc=$?
[ $rc -eq 0 ] || die "tokentrace exited $rc after its target exited"
grep -q '"type":"summary","final":true' "$WORK/tt.jsonl" || die "no final summary at target exit"
grep -q 'exited' "$WORK/tt.err" || die "no word about the target exiting"
[ "$(grep -c '"type":"request"' "$WORK/tt.jsonl")" -eq 3 ] || die "requests before exit missing"
echo "ok: target exit ends the trace with a final summary"

# nothing stays loaded or attached: every program it held is gone from the kernel
sleep 0.5	# program teardown is deferred (RCU)
for id in $ids; do
	bpftool prog show id "$id" >/dev/null 2>&1 && die "BPF program $id still loaded after exit"
done
echo "ok: the $(echo $ids | wc -w) programs tokentrace held are gone"
