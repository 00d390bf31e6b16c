#!/bin/bash
# What tokentrace's syscall hooks cost an untraced process in another kernel, booted under
# qemu (tests/kernels/boot.sh): getppid(2) in a loop (ctxbench --syscall, built static) with
# nothing attached, with tokentrace tracing an idle process with its syscall tracepoints
# (TOKENTRACE_SYSCALL_TP=1), and with its trampolines (sys=fexit, where the kernel has them);
# three rounds, interleaved. Emulation inflates every figure: compare the rows, not the ns.
#
#   tools/bench/guest-syscalls.sh KERNEL_IMAGE [RESULT_DIR]
#   e.g. tools/bench/guest-syscalls.sh .output/kernels/cache/linux-image-6.1.0-*/boot/vmlinuz-*
#
# Needs make (tokentrace) and the kernel matrix's image (tests/kernels/fetch.sh). Prints one
# line per run: the configuration, the ready line's hooks, ctxbench's JSON.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
RES=${2:-$ROOT/.output/kernels/run/syscalls}
WORK=$(mktemp -d /tmp/tt-guest-sys.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cc -O2 -static -D_GNU_SOURCE -I"$ROOT/tools/bench" -o "$WORK/ctxbench" "$ROOT/tools/bench/ctxbench.c"
{
	cat <<'SH'
#!/bin/sh
B=/tmp/ctxbench
base64 -d >$B <<'B64'
SH
	base64 "$WORK/ctxbench"
	cat <<'SH'
B64
chmod +x $B
sleep 1000 &
S=$!
run() { echo "$1 $2 $($B --syscall --cpu 1 --rounds 200000)" >>$OUT/sys.txt; }
traced() {	# label, env assignment
	env $2 "$TT/tokentrace" -p $S --json >/tmp/tt.out 2>/tmp/tt.err &
	P=$!
	i=0
	while [ $i -lt 1200 ] && ! grep -q '"type":"ready"' /tmp/tt.out 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	h=$(grep -o '"hooks":"[^"]*"' /tmp/tt.out) || h=
	if [ -n "$h" ]; then run "$1" "$h"; else echo "$1 not-ready" >>$OUT/sys.txt; fi
	kill -INT $P
	wait $P
}
for r in 1 2 3; do
	run base -
	traced tp TOKENTRACE_SYSCALL_TP=1
	traced default TT_NONE=1
done
SH
} >"$WORK/guest.sh"
"$ROOT/tests/kernels/boot.sh" "$1" "$WORK/guest.sh" "$RES" >/dev/null
cat "$RES/sys.txt"
