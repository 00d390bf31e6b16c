# The README's capability claims (issue 12), measured: uid 0 holding only CAP_BPF and
# CAP_PERFMON traces a server another user runs, every request tokenload made is reported; a
# marker needs more (CAP_SYS_ADMIN for the uprobe, CAP_SYS_PTRACE to read the binary), and
# says so in one line instead of attaching half.
. "$(dirname "$0")/lib.sh"

U=ttsec
id -u "$U" >/dev/null 2>&1 || useradd -M -r -s /usr/sbin/nologin "$U" || die "cannot create $U"
chmod 711 "$WORK"
# tokensim as ttsec: a target that is not the tracer's own
setpriv --reuid="$U" --regid="$U" --clear-groups -- "$SIM" --port 0 --ttft-ms 5 --itl-ms 2 \
	--tokens 5 >"$WORK/sim.out" 2>"$WORK/sim.err" &
SIM_PID=$!
PIDS+=("$SIM_PID")
wait_for "$WORK/sim.out" '^listening on ' 10 || die "tokensim as $U did not start: $(cat "$WORK/sim.err")"
SIM_PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$WORK/sim.out")
[ "$(stat -c %U "/proc/$SIM_PID")" = "$U" ] || die "tokensim does not run as $U"

# uid 0 with only these capabilities: setpriv execs tokentrace, so $! is tokentrace
rm -f "$WORK/tt.jsonl"	# no earlier ready line to wait on
setpriv --bounding-set=-all,+bpf,+perfmon --inh-caps=-all -- "$TT" -p "$SIM_PID" --json 0 \
	>"$WORK/tt.jsonl" 2>"$WORK/tt.err" &
TT_PID=$!
PIDS+=("$TT_PID")
wait_for "$WORK/tt.jsonl" '"type":"ready"' 30 || die "CAP_BPF+CAP_PERFMON: $(cat "$WORK/tt.err")"
grep -q '^CapEff:.*000000c000000000' "/proc/$TT_PID/status" ||
	die "tokentrace has more than CAP_BPF+CAP_PERFMON: $(grep CapEff "/proc/$TT_PID/status")"
run_load --requests 4 --max-tokens 5
stop_tt
[ "$(grep -c '"type":"request"' "$WORK/tt.jsonl")" = 4 ] || die "not the 4 requests"
echo "ok: uid 0 with CAP_BPF + CAP_PERFMON only traces another user's server: 4 of 4 requests"

MK=(--usdt admit=tokensim:tokensim:admit,key=arg2:str)
rc=0
timeout 60 setpriv --bounding-set=-all,+bpf,+perfmon --inh-caps=-all -- "$TT" -p "$SIM_PID" -q "${MK[@]}" 0 \
	>/dev/null 2>"$WORK/mk.err" || rc=$?
[ $rc -eq 1 ] && [ "$(wc -l <"$WORK/mk.err")" -eq 1 ] || die "markers without more caps: rc $rc: $(cat "$WORK/mk.err")"
echo "ok: a marker with CAP_BPF + CAP_PERFMON only: $(cat "$WORK/mk.err")"
timeout 60 setpriv --bounding-set=-all,+bpf,+perfmon,+sys_admin,+sys_ptrace --inh-caps=-all -- \
	"$TT" -p "$SIM_PID" -q "${MK[@]}" 0.3 1 >/dev/null 2>"$WORK/mk2.err" || die "markers with CAP_SYS_ADMIN + CAP_SYS_PTRACE: $(cat "$WORK/mk2.err")"
grep -q 'attached to PID' "$WORK/mk2.err" || die "markers did not attach: $(cat "$WORK/mk2.err")"
echo "ok: markers attach with CAP_SYS_ADMIN + CAP_SYS_PTRACE added"
