# Binary checks, root-free: --help, --version, usage errors go to stderr with exit 2.
set -eu
TT=$(cd "$(dirname "$0")/../.." && pwd)/tokentrace
out=$("$TT" --help)
echo "$out" | grep -q '^Usage: tokentrace -p PID' || { echo "FAIL: --help has no usage line"; exit 1; }
echo "$out" | grep -q '^EXAMPLES' || { echo "FAIL: --help has no EXAMPLES"; exit 1; }
"$TT" --version | grep -qE '^tokentrace [0-9]+\.[0-9]+\.[0-9]+$' || { echo "FAIL: --version"; exit 1; }
rc=0
"$TT" -p 1 extra-arg-that-is-not-a-number >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || { echo "FAIL: bad interval exit $rc"; exit 1; }
rc=0
err=$("$TT" -p 1 -b 3 2>&1 >/dev/null) || rc=$?
[ $rc -eq 2 ] && echo "$err" | grep -q 'power of two' || { echo "FAIL: -b 3: $rc $err"; exit 1; }
for bad in x -1 100000001 1.5; do
	rc=0
	err=$("$TT" -p 1 --budget "$bad" 2>&1 >/dev/null) || rc=$?
	[ $rc -eq 2 ] && [ "$(echo "$err" | wc -l)" -eq 1 ] && echo "$err" | grep -q 'invalid --budget' ||
		{ echo "FAIL: --budget $bad: $rc $err"; exit 1; }
done
echo "ok"
