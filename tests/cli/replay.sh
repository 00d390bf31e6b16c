# Recordings of live runs where tokentrace was once wrong, replayed root-free (tokentrace -r):
# each tests/corpus/replay/NAME.ttr with its server's truth NAME.truth.jsonl and its check
# NAME.check (the arguments of tests/e2e/check_stalls.py). A replay feeds the correlator the
# very records of that run, so the fix is checked on exactly what went wrong.
# Re-record them with tests/corpus/replay/record.sh after a change of the record layout.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TT=$ROOT/tokentrace
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
n=0
for rec in "$ROOT"/tests/corpus/replay/*.ttr; do
	[ -f "$rec" ] || continue
	name=$(basename "$rec" .ttr)
	"$TT" -r "$rec" --json >"$W/$name.jsonl" 2>"$W/$name.err" ||
		{ echo "FAIL: $name: replay failed: $(cat "$W/$name.err")"; exit 1; }
	# shellcheck disable=SC2046
	python3 "$ROOT/tests/e2e/check_stalls.py" $(cat "${rec%.ttr}.check") \
		"${rec%.ttr}.truth.jsonl" "$W/$name.jsonl" | sed "s/^/$name: /" ||
		{ echo "FAIL: $name"; exit 1; }
	n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "FAIL: no recording replayed"; exit 1; }
echo "ok: $n recordings replayed, every stall right"
