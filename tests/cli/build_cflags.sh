# `make CFLAGS=...` builds (issue 32): the tree's -Werror must hold at every optimisation level
# a user or a sanitizer build picks, since gcc's -Wformat-truncation and friends see more or
# less of the code as it inlines more or less (-O1 and -Os saw a stack text copied into a
# smaller field that -O2 did not). Each set builds tokentrace and the unit tests of the parsers,
# the core and the outputs, in a copy of the tree so the real build is left alone; the
# sanitizer build's unit tests must pass under ASan and UBSan.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# the tracked and new files as they are now, not a commit
(cd "$ROOT" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$W" 2>/dev/null) ||
	fail "copying the tree"
units=$(cd "$W" && ls tests/unit/base/test_*.c tests/unit/proto/test_*.c tests/unit/core/test_*.c tests/unit/report/test_*.c |
	sed 's|.*/\(test_[a-z0-9_]*\)\.c|\1|')
SAN='-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer'
first=
n=0
for flags in '-O0 -g' '-Os' '-O3' "$SAN"; do
	n=$((n + 1))
	out=.output-cflags$n
	mkdir -p "$W/$out"
	# the BPF side does not take CFLAGS: its object and skeleton are built once
	[ -n "$first" ] && cp -p "$W/$first"/*.bpf.o "$W/$first"/*.skel.h "$W/$out"/
	first=${first:-$out}
	targets=tokentrace
	[ "$flags" = "$SAN" ] && targets="tokentrace $(printf "$out/tests/%s " $units)"
	# shellcheck disable=SC2086
	timeout 250 make -C "$W" -j2 OUTPUT="$out" CFLAGS="$flags" $targets >"$W/build.log" 2>&1 ||
		fail "make CFLAGS='$flags': $(grep -E 'error|Error' "$W/build.log" | head -n 5)"
	"$W/tokentrace" --version >/dev/null 2>&1 || fail "CFLAGS='$flags': tokentrace --version"
	echo "ok: make CFLAGS='$flags' builds"
done
# the sanitizer build's own unit tests (leaks too: a test's leak is a leak of the code it runs)
for t in $units; do
	ASAN_OPTIONS=abort_on_error=0:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		timeout 120 "$W/$out/tests/$t" >"$W/unit.log" 2>&1 ||
		fail "CFLAGS='$SAN': $t: $(grep -E 'ERROR|runtime error|FAILED' "$W/unit.log" | head -n 5)"
done
echo "ok: under ASan and UBSan, $(echo "$units" | wc -w) unit tests pass"
