# `make CC=clang` builds (issue 12: clang's -dumpmachine names no Debian include dir, so the
# BPF side lost <asm/errno.h>), in a copy of the tree so the real build is left alone; `make`
# with gcc is the tree's own build (make's default `cc`), whose unit tests the unit suite
# runs. The clang build's unit tests of the core and outputs must pass, and its tokentrace
# must replay a recording to the same bytes as the tree's.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
REC=$ROOT/tests/fuzz/seeds/fuzz_record/tokensim_4req.ttr

command -v clang >/dev/null || fail "clang is not installed (tools/install-deps.sh)"
[ -x "$ROOT/tokentrace" ] || fail "the tree's tokentrace is not built"
"$ROOT/tokentrace" --version 2>/dev/null | grep -q . || fail "the tree's tokentrace does not run"
# the tracked and new files as they are now, not a commit
(cd "$ROOT" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$W" 2>/dev/null) ||
	fail "copying the tree"
out=.output-clang
units=$(cd "$W" && ls tests/unit/base/test_*.c tests/unit/proto/test_*.c tests/unit/core/test_*.c tests/unit/report/test_*.c |
	sed "s|.*/\(test_[a-z0-9_]*\)\.c|$out/tests/\1|")
# shellcheck disable=SC2086
timeout 600 make -C "$W" -j2 OUTPUT="$out" CC=clang all $units >"$W/clang.log" 2>&1 ||
	fail "make CC=clang: $(grep -E 'error|Error' "$W/clang.log" | head -n 5)"
for t in $units; do
	timeout 120 "$W/$t" >"$W/unit.log" 2>&1 || fail "CC=clang: $(basename "$t"): $(tail -n 5 "$W/unit.log")"
done
echo "ok: make CC=clang builds; $(echo "$units" | wc -w) unit tests pass"
"$W/tokentrace" -r "$REC" --json >"$W/replay.clang" 2>/dev/null || fail "CC=clang: replay"
"$ROOT/tokentrace" -r "$REC" --json >"$W/replay.tree" 2>/dev/null || fail "the tree's build: replay"
grep -q '"type":"request"' "$W/replay.tree" || fail "the replay printed no request"
cmp -s "$W/replay.clang" "$W/replay.tree" || fail "the clang build and the tree's replay differently"
echo "ok: the clang build and the tree's own replay the recording to the same bytes"
