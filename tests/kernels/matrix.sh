#!/bin/bash
# The kernel matrix: tokentrace end to end on every kernel of kernels.conf (booted under
# qemu, tests/kernels/boot.sh) and on the host's own kernel, checked on the host against
# tokensim's truth with tests/e2e/check_truth.py.
#
#   tests/kernels/matrix.sh [--probe] [NAME...]     NAME: from kernels.conf, or "host"
#
# Per kernel, in the guest (guest/trace.sh): tokensim --truth, tokentrace -p it --json,
# tokenload (REQUESTS=20, CONCURRENCY=2, TOKENS=5), tokentrace stopped with SIGINT, then
# bpftool's count of programs and links. A kernel passes when the guest ran to the end,
# tokentrace got ready and exited 0, tokenload got every request, every request of the
# truth is reported with its chunks and one ITL per gap (check_truth.py), and no BPF
# program or link is left once tokentrace has exited (not checked on the host, where other
# tests load their own). Timing is judged on every kernel as on the host (check_truth.py:
# every token stamp inside its send's interval, p99 within 50 us, none before the server's
# clock, no read stamped after the server had it), except the medians of the distances from
# the server's clocks: under emulation a loopback send itself takes ~150 us, so they are
# bounded at GUEST_RAW_TOL_US (1000). One line per kernel: name, version, the hooks
# tokentrace chose (its ready line's "hooks"), PASS/FAIL, seconds for boot and run.
#
# --probe instead runs guest/probe.sh (tracepoints, kprobes, fentry, helpers, hookprobe)
# and prints one table across the kernels; the files stay in the result directories.
#
# Results go to .output/kernels/run/NAME/. Exit status 1 when any kernel failed.
# Environment: TIMEOUT per boot (seconds, default 240), APPEND (kernel parameters, default
# tsc=reliable: see README.md), and boot.sh's.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
RUN=$ROOT/.output/kernels/run
export TIMEOUT=${TIMEOUT:-240}
export APPEND=${APPEND:-tsc=reliable}
MODE=trace
if [ "${1:-}" = --probe ]; then
	MODE=probe
	shift
fi

wanted() {
	[ $# -eq 1 ] && return 0
	local n=$1 w
	shift
	for w in "$@"; do
		[ "$w" = "$n" ] && return 0
	done
	return 1
}

INITRD=$("$HERE/mkinitrd.sh") || exit 1
export INITRD
mapfile -t KERNELS < <(
	if [ $# -eq 0 ] || [ "$*" != host ]; then
		"$HERE/fetch.sh" $(printf '%s\n' "$@" | grep -vx host)
	fi
	wanted host "$@" && echo "host - -"
)
# the other hook families, forced where the kernel has them: kprobes on 6.1 (fexit is its
# default), the syscall tracepoints on the host (any kernel has them)
for k in "${KERNELS[@]}"; do
	read -r name pkg image <<<"$k"
	case $name in
	debian12-6.1) KERNELS+=("$name+kprobe $pkg $image") ;;
	host) KERNELS+=("host+syscall - -") ;;
	esac
done

# run_host DIR SCRIPT: the guest script on the running kernel, with the same binaries
run_host() {
	local dir=$1 bin
	rm -rf "$dir"
	mkdir -p "$dir/out"
	bin=$(mktemp -d /tmp/tt-kernels.XXXXXX)
	cp "$ROOT/tokentrace" "$ROOT/.output/tokensim" "$ROOT/.output/libtsengine.so" \
		"$ROOT/.output/tokenload" "$ROOT/.output/kernels/hookprobe" "$bin/"
	local t0=$(date +%s.%N)
	TT_HOOKS="${TT_HOOKS:-}" TT=$bin OUT=$dir/out timeout 120 busybox sh "$HERE/guest/$2.sh" >"$dir/out/script.log" 2>&1
	echo $? >"$dir/rc"
	awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", b - a }' >"$dir/time"
	mv "$dir"/out/* "$dir/"
	rmdir "$dir/out"
	uname -r >"$dir/uname"
	rm -rf "$bin"
}

# the hooks tokentrace chose: the ready line's "hooks" when it says, else its probe count
hooks_of() {
	python3 - "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if '"type":"ready"' in line:
        r = json.loads(line)
        h = r.get("hooks") or r.get("hook") or r.get("variant")
        print(h if isinstance(h, str) else ",".join(h) if h else f"probes={r.get('probes')}")
        break
PY
}

pass=0
fail=0
rows=()
for k in "${KERNELS[@]}"; do
	read -r name pkg image <<<"$k"
	dir=$RUN/$name
	hooks=
	[[ $name == *+* ]] && hooks=${name#*+}
	printf '%s: ' "$name" >&2
	if [ "${name%%+*}" = host ]; then
		TT_HOOKS=$hooks run_host "$dir" "$MODE"
		booted=0
	elif [ "$image" = - ]; then
		echo "no image" >&2
		rows+=("$name|-|-|FAIL|-|no kernel image (fetch.sh failed)")
		fail=$((fail + 1))
		continue
	else
		APPEND="$APPEND${hooks:+ tt_hooks=$hooks}" "$HERE/boot.sh" "$image" "$MODE" "$dir" \
			2>"$RUN.$name.err"
		booted=$?
		cat "$RUN.$name.err" >&2
		rm -f "$RUN.$name.err"
	fi
	ver=$(cat "$dir/uname" 2>/dev/null || echo "?")
	secs=$(cat "$dir/time" 2>/dev/null || echo "?")
	echo "${secs}s" >&2
	if [ $booted -ne 0 ]; then
		rows+=("$name|$ver|-|FAIL|$secs|the guest did not run to the end")
		fail=$((fail + 1))
		continue
	fi
	if [ $MODE = probe ]; then
		[ -s "$dir/probe.txt" ] && pass=$((pass + 1)) || fail=$((fail + 1))
		continue
	fi

	why=()
	st=$dir/status.txt
	grep -q '^ready yes' "$st" 2>/dev/null || why+=("not ready")
	grep -q '^tt_rc 0$' "$st" 2>/dev/null || why+=("tokentrace exit $(sed -n 's/^tt_rc //p' "$st")")
	if grep -q '^ready yes' "$st"; then
		grep -q '^load_rc 0$' "$st" || why+=("tokenload failed")
		n=$(grep -c . "$dir/load.jsonl" 2>/dev/null)
		[ "${n:-0}" -eq "${REQUESTS:-20}" ] || why+=("tokenload logged ${n:-0} requests")
		# every stamp inside its syscall's interval and never before the server's clock,
		# on every kernel, every token
		timing=
		if ! python3 "$ROOT/tests/e2e/check_truth.py" --min-requests "${REQUESTS:-20}" \
			$timing "$dir/truth.jsonl" "$dir/tt.jsonl" >"$dir/check.txt" 2>&1; then
			why+=("$(grep -m1 FAIL "$dir/check.txt")")
		fi
		# the injected sleeps: every one found, a sleep for 80% of its gap or all of its own time
		# (the guest's sleeps are --stall-ms 100: guest/trace.sh), and each with the stack it
		# blocked with, taken where the sleep returns (by the syscall tracepoint, or the
		# trampoline on the syscall's function: sys= of the hooks). No unknown, no stackless
		# one passes.
		if ! python3 "$ROOT/tests/e2e/check_stalls.py" --cause sleep --or-cover-ms 100 \
			--stack-has stall_run "$dir/truth.jsonl" "$dir/tt.jsonl" >"$dir/stalls.txt" 2>&1; then
			why+=("stalls: $(grep -m1 FAIL "$dir/stalls.txt")")
		fi
		hooks=$(hooks_of "$dir/tt.jsonl")
		# Debian's kernels have BPF trampolines: accept, close and the sleeps' and futex's
		# exits must be hooked on the syscalls' functions there, not by syscall
		# tracepoints, which slow every syscall of the machine while attached
		if [[ $name != host* ]] && [[ $hooks != *sys=fexit* ]]; then
			why+=("syscall hooks not trampolines ($hooks)")
		fi
	else
		hooks=-
		why+=("$(grep -m1 '^tokentrace:' "$dir/tt.err" 2>/dev/null)")
	fi
	# guests only: on the host (host, host+syscall) other tests load their own
	if [[ $name != host* ]] && ! cmp -s "$dir/bpf-before.txt" "$dir/bpf-after.txt"; then
		why+=("left loaded: $(tr '\n' ' ' <"$dir/bpf-after.txt")")
	fi
	if [ ${#why[@]} -eq 0 ]; then
		rows+=("$name|$ver|$hooks|PASS|$secs|$(sed -n 's/^measured: \([a-z]*\) error vs truth over [0-9]* samples: p50 [0-9.]*us p99 \([0-9.]*us\).*/\1 p99 \2/p' \
			"$dir/check.txt" | tr '\n' ' ')")
		pass=$((pass + 1))
	else
		rows+=("$name|$ver|$hooks|FAIL|$secs|$(IFS=';'; echo "${why[*]}")")
		# the next run overwrites the run dir: a failure's records stay for a look
		rm -rf "$dir.failed" && cp -r "$dir" "$dir.failed"
		fail=$((fail + 1))
	fi
done

if [ $MODE = probe ]; then
	# one row per fact, one column per kernel
	names=()
	files=()
	for k in "${KERNELS[@]}"; do
		read -r name _ _ <<<"$k"
		[ -s "$RUN/$name/probe.txt" ] || continue
		names+=("$name")
		files+=("$RUN/$name/probe.txt")
	done
	python3 - "${#names[@]}" "${names[@]}" "${files[@]}" <<'PY'
import sys
n = int(sys.argv[1]); names = sys.argv[2:2 + n]; files = sys.argv[2 + n:]
facts, cols = [], []
for f in files:
    d = {}
    for line in open(f):
        w = line.split()
        if not w:
            continue
        # how many words name the fact: "hook SEC load ok ...", "bpftool helper NAME TYPE yes"
        n = {"hook": 2, "tracepoint": 2, "btf-func": 2, "btf-rawtp": 2, "helper": 2,
             "ftrace-func": 2}.get(w[0], 1)
        if w[0] == "bpftool" and len(w) > 2:
            n = 3 if w[1] == "map_type" else 4 if w[1] == "helper" else 1
        k, v = " ".join(w[:n]), " ".join(w[n:])
        if k not in facts:
            facts.append(k)
        d[k] = v
    cols.append(d)
width = max(len(k) for k in facts)
print(" " * width + " | " + " | ".join(names))
for k in facts:
    vals = [c.get(k, "-") for c in cols]
    print(f"{k:<{width}} | " + " | ".join(vals))
PY
else
	for r in "${rows[@]}"; do
		IFS='|' read -r name ver hooks res secs detail <<<"$r"
		printf '%-14s %-28s %-24s %s %6ss  %s\n' "$name" "$ver" "$hooks" "$res" "$secs" "$detail"
	done
fi
echo "kernels: $pass passed, $fail failed"
[ $fail -eq 0 ]
