#!/bin/bash
# Run every test and close with "N passed, N failed".
#
#   tests/run.sh [GROUP...]      groups: unit corpus fuzz cli e2e kernels (default: all)
#   FUZZ_SECONDS=N               time per fuzzer (default 10)
#   E2E_FILTER=REGEX             only e2e scripts whose name matches
#
# Every test runs under `timeout`; its output goes to tests/out/<name>.log and is shown
# when it fails.
set -u
cd "$(dirname "$0")/.."
OUT=tests/out
mkdir -p "$OUT"
pass=0
fail=0
failed=()
skipped=()	# groups that could not run: the run is then no pass
groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=(unit corpus fuzz cli e2e kernels)

t0=$SECONDS
result() {	# name rc log: the time since the last result is the test's
	local secs=$((SECONDS - t0))
	t0=$SECONDS
	if [ "$2" -eq 0 ]; then
		pass=$((pass + 1))
		printf 'PASS  %-40s %4ds\n' "$1" "$secs"
	else
		fail=$((fail + 1))
		failed+=("$1")
		printf 'FAIL  %s (exit %s, %ds)\n' "$1" "$2" "$secs"
		sed 's/^/      | /' "$3" | tail -n 40
	fi
}

run_unit() {
	for t in .output/tests/test_*; do
		[ -x "$t" ] || continue
		name=unit/$(basename "$t")
		log=$OUT/$(basename "$t").log
		timeout 120 "$t" >"$log" 2>&1
		result "$name" $? "$log"
		# cmocka's own counts, for the record
		grep -E '^\[  (PASSED|FAILED)  \]' "$log" | sed 's/^/      /'
	done
}

run_corpus() {
	log=$OUT/corpus.log
	timeout 300 python3 tests/corpus/check.py .output/tests/corpus >"$log" 2>&1
	result corpus $? "$log"
	tail -n 1 "$log" | sed 's/^/      /'
	# the HTTP/2 captures, through the parsers alone (tests/corpus/h2/README.md)
	log=$OUT/corpus-h2.log
	timeout 300 python3 tests/corpus/h2/check.py .output/tests/h2wire >"$log" 2>&1
	result corpus/h2 $? "$log"
	tail -n 1 "$log" | sed 's/^/      /'
}

run_fuzz() {
	secs=${FUZZ_SECONDS:-10}
	for f in .output/fuzz/fuzz_*; do
		[ -x "$f" ] || continue
		name=$(basename "$f")
		log=$OUT/$name.log
		seeds=tests/fuzz/seeds/$name
		work=$(mktemp -d)
		[ -d "$seeds" ] && cp -r "$seeds"/. "$work"/
		# the wire corpus, cut the way each fuzzer takes its input: real servers' bytes
		python3 tests/fuzz/corpus_seeds.py "$name" "$work" >/dev/null ||
			echo "note: no corpus seeds for $name"
		# the corpus is the seed set; new inputs go to a scratch dir, not into git
		timeout $((secs + 60)) "$f" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
			-print_final_stats=1 "$work" >"$log" 2>&1
		rc=$?
		rm -rf "$work"
		result "fuzz/$name (${secs}s)" $rc "$log"
		grep -E '^stat::number_of_executed_units' "$log" | sed 's/^/      /'
	done
}

run_scripts() {	# dir
	for s in "$1"/*.sh; do
		[ -f "$s" ] || continue
		name=$(basename "$s" .sh)
		[ "$name" = lib ] && continue	# helpers, not a test
		if [ -n "${E2E_FILTER:-}" ] && ! [[ $name =~ $E2E_FILTER ]]; then
			continue
		fi
		log=$OUT/$(basename "$1")-$name.log
		timeout 300 bash "$s" >"$log" 2>&1
		rc=$?	# now: the name's $(basename) below would reset $?
		result "$(basename "$1")/$name" $rc "$log"
		grep -E '^(measured|note):' "$log" | sed 's/^/      /'
	done
}

# The Debian roots the selected e2e scripts run servers in (a "# rootfs: NAME..." line in a
# script; tests/lib/rootfs.sh). Built in the background from the start of the run, so that
# they overlap the root-free groups; one after another, as two at once took longer here (325 s
# against 66 + 217 s apart). The e2e group waits for them before its first script, so nothing
# is timed while they run. Cached: on a machine that has them, this takes no time. A failed
# build fails its line; the scripts that need it fail too.
ROOTS=()
ROOTS_PID=
start_rootfs() {
	local s name names=()
	for s in tests/e2e/*.sh; do
		name=$(basename "$s" .sh)
		if [ -n "${E2E_FILTER:-}" ] && ! [[ $name =~ $E2E_FILTER ]]; then
			continue
		fi
		names+=($(sed -n 's/^# rootfs: //p' "$s"))
	done
	for name in $(printf '%s\n' "${names[@]}" | sort -u); do
		[ -d "$(tests/lib/rootfs.sh --path "$name")" ] || ROOTS+=("$name")
	done
	[ ${#ROOTS[@]} -gt 0 ] || return 0
	echo "      building root filesystems in the background: ${ROOTS[*]}"
	(
		for name in "${ROOTS[@]}"; do
			timeout 1200 tests/lib/rootfs.sh "$name" >"$OUT/rootfs-$name.log" 2>&1
		done
	) &
	ROOTS_PID=$!
}

wait_rootfs() {
	local name
	[ -n "$ROOTS_PID" ] || return 0
	wait "$ROOTS_PID"
	for name in "${ROOTS[@]}"; do
		[ -d "$(tests/lib/rootfs.sh --path "$name")" ]
		result "rootfs/$name" $? "$OUT/rootfs-$name.log"
		grep '^rootfs: ' "$OUT/rootfs-$name.log" | sed 's/^/      /'
	done
}

if [ "$(id -u)" -eq 0 ] && [[ " ${groups[*]} " == *" e2e "* ]]; then
	start_rootfs
fi


for g in "${groups[@]}"; do
	case $g in
	unit) run_unit ;;
	corpus) run_corpus ;;
	fuzz) run_fuzz ;;
	cli) run_scripts tests/cli ;;
	e2e)
		if [ "$(id -u)" -ne 0 ]; then
			echo "SKIP  e2e: needs root"
			skipped+=(e2e)
		else
			wait_rootfs
			run_scripts tests/e2e
		fi
		;;
	kernels)
		# other kernels under qemu (tests/kernels/README.md): each line says which hooks
		# tokentrace chose there
		if [ "$(id -u)" -ne 0 ]; then
			echo "SKIP  kernels: needs root"
			skipped+=(kernels)
		else
			log=$OUT/kernels.log
			timeout 600 tests/kernels/matrix.sh >"$log" 2>&1
			result kernels $? "$log"
			grep -E '^(debian|host|kernels:|note:)' "$log" | sed 's/^/      /'
		fi
		;;
	*) echo "unknown group $g" >&2; exit 2 ;;
	esac
done

echo
[ $fail -gt 0 ] && printf 'failed: %s\n' "${failed[*]}"
echo "$pass passed, $fail failed"
if [ ${#skipped[@]} -gt 0 ]; then
	echo "not a pass: skipped ${skipped[*]} (needs root)"
	exit 1
fi
[ $fail -eq 0 ]
