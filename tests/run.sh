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

for g in "${groups[@]}"; do
	case $g in
	unit) run_unit ;;
	corpus) run_corpus ;;
	fuzz) run_fuzz ;;
	cli) run_scripts tests/cli ;;
	e2e)
		if [ "$(id -u)" -ne 0 ]; then
			echo "SKIP  e2e: needs root"
		else
			run_scripts tests/e2e
		fi
		;;
	kernels)
		# other kernels under qemu (tests/kernels/README.md): each line says which hooks
		# tokentrace chose there
		if [ "$(id -u)" -ne 0 ]; then
			echo "SKIP  kernels: needs root"
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
[ $fail -eq 0 ]
