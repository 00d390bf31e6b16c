#!/bin/sh
# tokentrace end to end on this kernel: tokensim (truth file), tokentrace -p it --json,
# tokenload against it, tokentrace stopped with SIGINT; then what stays loaded. The host
# compares tt.jsonl with truth.jsonl (tests/e2e/check_truth.py): nothing is judged here.
# Runs in a guest (boot.sh) or on the host: TT holds the binaries, OUT the results.
# Results: truth.jsonl sim.err tt.jsonl tt.err load.jsonl load.err bpf-before.txt
# bpf-after.txt and status.txt (uname, exit codes, whether tokentrace got ready).
# Environment: REQUESTS (20), CONCURRENCY (2), TOKENS (5), READY_S (seconds to wait for
# tokentrace's ready line, 120: BTF parsing is slow under emulation).
set -u
REQUESTS=${REQUESTS:-20}
CONCURRENCY=${CONCURRENCY:-2}
TOKENS=${TOKENS:-5}
READY_S=${READY_S:-120}
BPFTOOL=${BPFTOOL:-bpftool}
S=$OUT/status.txt

# wait_for FILE REGEX SECONDS [PID]: the regex shows up, or the PID exits first
wait_for() {
	i=0
	while [ $i -lt $(($3 * 10)) ]; do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		[ -n "${4:-}" ] && ! kill -0 "$4" 2>/dev/null && return 1
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

bpf_count() {
	echo "progs $("$BPFTOOL" prog list 2>/dev/null | grep -c '^[0-9]*:')"
	echo "links $("$BPFTOOL" link list 2>/dev/null | grep -c '^[0-9]*:')"
	echo "maps $("$BPFTOOL" map list 2>/dev/null | grep -c '^[0-9]*:')"
}

echo "uname $(uname -r)" >$S
echo "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" >>$S
bpf_count >$OUT/bpf-before.txt

# a sleep before every 3rd token: the stall must be found and said to be a sleep
"$TT/tokensim" --port 0 --truth "$OUT/truth.jsonl" --ttft-ms 20 --itl-ms 5 \
	--tokens "$TOKENS" --stall-every 3 --stall-ms 100 --stall-kind sleep \
	>"$OUT/sim.out" 2>"$OUT/sim.err" &
SIM=$!
if ! wait_for "$OUT/sim.out" '^listening on ' 30 $SIM; then
	echo "sim not-listening" >>$S
	kill $SIM 2>/dev/null
	exit 1
fi
PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$OUT/sim.out" | head -n 1)

t0=$(cut -d' ' -f1 /proc/uptime)
echo "hooks ${TT_HOOKS:-auto}" >>$S
# the kprobe row also keeps the scheduler hooks attached throughout (--stall-hooks always:
# its late exits are the trampolines where the kernel has them); the others are lazy
ALWAYS=
[ "${TT_HOOKS:-}" = kprobe ] && ALWAYS="--stall-hooks always"
# A fixed stall threshold, not the adaptive one (5 x the stream's median gap): under
# emulation a stream's first gap runs 20-40 ms (a loopback send takes tens of ms), which puts
# the adaptive threshold over the injected 100 ms sleep's gap, and by that rule it is no stall
"$TT/tokentrace" -p $SIM --json --stall-ms 50 ${TT_HOOKS:+--hooks $TT_HOOKS} $ALWAYS \
	>"$OUT/tt.jsonl" 2>"$OUT/tt.err" &
TTP=$!
if wait_for "$OUT/tt.jsonl" '"type":"ready"' "$READY_S" $TTP; then
	echo "ready yes after $(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" \
		'BEGIN { printf "%.1fs", b - a }')" >>$S
	bpf_count >$OUT/bpf-during.txt
	"$TT/tokenload" --port "$PORT" --requests "$REQUESTS" --concurrency "$CONCURRENCY" \
		--max-tokens "$TOKENS" --out "$OUT/load.jsonl" 2>"$OUT/load.err"
	echo "load_rc $?" >>$S
	sleep 0.5	# the consumer polls every 20 ms: let the last records drain
	kill -INT $TTP 2>/dev/null
else
	echo "ready no" >>$S
	kill -INT $TTP 2>/dev/null
fi
wait $TTP
echo "tt_rc $?" >>$S
kill $SIM 2>/dev/null
wait $SIM
sleep 0.2	# links go with the last reference; let deferred frees run
bpf_count >$OUT/bpf-after.txt
rm -f "$OUT/sim.out"
