# `make CC=clang` and `make CC=gcc` both build (issue 12: clang's -dumpmachine names no Debian
# include dir, so the BPF side lost <asm/errno.h>), in a copy of the tree so the real build is
# left alone. Each compiler's tokentrace must replay a recording to the same bytes, and the
# core's and outputs' unit tests built with it pass.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
REC=$ROOT/tests/fuzz/seeds/fuzz_record/tokensim_4req.ttr

# the tracked and new files as they are now, not a commit
(cd "$ROOT" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$W" 2>/dev/null) ||
	fail "copying the tree"
for cc in clang gcc; do
	command -v "$cc" >/dev/null || fail "$cc is not installed (tools/install-deps.sh)"
	out=.output-$cc
	units=$(cd "$W" && ls tests/unit/proto/test_*.c tests/unit/core/test_*.c tests/unit/out/test_*.c |
		sed "s|.*/\(test_[a-z_]*\)\.c|$out/tests/\1|")
	# shellcheck disable=SC2086
	timeout 600 make -C "$W" -j2 OUTPUT="$out" CC="$cc" all $units >"$W/$cc.log" 2>&1 ||
		fail "make CC=$cc: $(grep -E 'error|Error' "$W/$cc.log" | head -n 5)"
	mv "$W/tokentrace" "$W/tokentrace.$cc"
	for t in $units; do
		timeout 120 "$W/$t" >"$W/unit.log" 2>&1 || fail "CC=$cc: $(basename "$t"): $(tail -n 5 "$W/unit.log")"
	done
	"$W/tokentrace.$cc" -r "$REC" --json >"$W/replay.$cc" 2>/dev/null || fail "CC=$cc: replay"
	echo "ok: make CC=$cc builds; $(echo "$units" | wc -w) unit tests pass"
done
cmp -s "$W/replay.clang" "$W/replay.gcc" || fail "the clang and gcc builds replay differently"
grep -q '"type":"request"' "$W/replay.gcc" || fail "the replay printed no request"
echo "ok: both builds replay the recording to the same bytes"
