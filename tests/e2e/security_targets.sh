# What tokentrace agrees to trace, and how it notices the end (issue 12): PID 1 and kernel
# threads are refused with a reason (kernel threads taken with --force), a thread's id points
# to its process, a zombie is refused; a target that exits while traced but stays a zombie
# (its parent does not reap it, so kill(pid, 0) still finds it) ends the trace; an asked-for
# output that cannot be written (--perfetto /dev/full) makes the live run exit 1.
. "$(dirname "$0")/lib.sh"

# refuse REGEX ARGS...: exit 1, one line, before anything is attached
refuse() {
	local re=$1 rc=0
	shift
	timeout 60 "$TT" -q "$@" 0 >"$WORK/out.txt" 2>"$WORK/refuse.err" || rc=$?
	[ $rc -eq 1 ] || die "'$*' exited $rc: $(cat "$WORK/refuse.err")"
	[ "$(wc -l <"$WORK/refuse.err")" -eq 1 ] || die "'$*': not one line: $(cat "$WORK/refuse.err")"
	grep -qE -- "$re" "$WORK/refuse.err" || die "'$*' said: $(cat "$WORK/refuse.err")"
	echo "ok: $(cat "$WORK/refuse.err")"
}

refuse '^tokentrace: PID 1 \(.*\) is init: .* \(--force to trace it anyway\)$' -p 1
KT=$(awk '$1 == "Name:" && $2 == "kthreadd" { print FILENAME }' /proc/[0-9]*/status 2>/dev/null |
	head -n 1 | cut -d/ -f3)
[ -n "$KT" ] || die "no kthreadd"
refuse "^tokentrace: PID $KT \(kthreadd\) is a kernel thread: it has no user-space sockets" -p "$KT"
rc=0
timeout 60 "$TT" -p "$KT" --force -q 0.2 1 >/dev/null 2>"$WORK/kt.err" || rc=$?
[ $rc -eq 0 ] || die "--force on a kernel thread exited $rc: $(cat "$WORK/kt.err")"
echo "ok: --force takes a kernel thread"

start_sim --ttft-ms 5 --itl-ms 2 --tokens 4
TID=$(ls "/proc/$SIM_PID/task" | grep -vx "$SIM_PID" | head -n 1)
[ -n "$TID" ] || die "tokensim has no second thread"
refuse "^tokentrace: PID $TID \(.*\) is a thread of process $SIM_PID: give -p $SIM_PID$" -p "$TID"

# a zombie: a child that exited, of a parent that never waits
python3 -c 'import os, time
pid = os.fork()
if pid == 0:
    os._exit(0)
print(pid, flush=True)
time.sleep(120)' >"$WORK/zpid" &
PIDS+=("$!")
wait_for "$WORK/zpid" '^[0-9]+$' 10 || die "no zombie"
Z=$(cat "$WORK/zpid")
for _ in $(seq 50); do
	[ "$(awk '{ print $3 }' "/proc/$Z/stat")" = Z ] && break
	sleep 0.1
done
refuse "^tokentrace: PID $Z \(.*\) has exited \(a zombie its parent has not reaped\)" -p "$Z"

# a target that turns zombie while traced: the trace ends by itself, exit 0, and says so
mkfifo "$WORK/go"
python3 -c 'import os, sys, time
pid = os.fork()
if pid == 0:
    open(sys.argv[1]).readline()	# until told
    os._exit(0)
print(pid, flush=True)
time.sleep(120)' "$WORK/go" >"$WORK/zpid2" &
PIDS+=("$!")
wait_for "$WORK/zpid2" '^[0-9]+$' 10 || die "no second child"
Z2=$(cat "$WORK/zpid2")
"$TT" -p "$Z2" -q 0 >/dev/null 2>"$WORK/z2.err" &
TTZ=$!
PIDS+=("$TTZ")
wait_for "$WORK/z2.err" 'attached' 30 || die "tokentrace did not attach: $(cat "$WORK/z2.err")"
echo go >"$WORK/go"
for _ in $(seq 50); do
	[ "$(awk '{ print $3 }' "/proc/$Z2/stat" 2>/dev/null)" = Z ] && break
	sleep 0.1
done
[ "$(awk '{ print $3 }' "/proc/$Z2/stat")" = Z ] || die "the child is not a zombie: the case is not tested"
rc=0
for _ in $(seq 100); do
	kill -0 "$TTZ" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$TTZ" 2>/dev/null && die "tokentrace did not notice its target became a zombie"
wait "$TTZ" || rc=$?
[ $rc -eq 0 ] || die "tokentrace exited $rc: $(cat "$WORK/z2.err")"
grep -q "PID $Z2 exited" "$WORK/z2.err" || die "no 'exited' line: $(cat "$WORK/z2.err")"
echo "ok: a target that became a zombie ends the trace (exit 0)"

# an asked-for output that fails: exit 1 (as -w to a full disk already did)
rc=0
timeout 60 "$TT" -p "$SIM_PID" --json --perfetto /dev/full 0.3 1 >"$WORK/full.out" 2>"$WORK/full.err" &
FULL=$!
wait_for "$WORK/full.err" 'attached' 30 || die "not attached: $(cat "$WORK/full.err")"
run_load --requests 5 --max-tokens 4
wait "$FULL" || rc=$?
[ $rc -eq 1 ] || die "--perfetto /dev/full exited $rc: $(cat "$WORK/full.err")"
[ "$(grep -c -- '--perfetto /dev/full: write failed: No space left on device' "$WORK/full.err")" -eq 1 ] ||
	die "--perfetto /dev/full said: $(cat "$WORK/full.err")"
grep -q '"type":"summary","final":true' "$WORK/full.out" || die "the other outputs stopped"
echo "ok: --perfetto /dev/full: one line, the other outputs kept going, exit 1"
