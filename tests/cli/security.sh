# Command-line safety, root-free (issue 12): malformed PID lists are rejected; errors quote
# what was typed escaped and cut to a line; a failed --perfetto write fails the run; the file
# rules hold for a replay's --perfetto too (no symlink followed, the result 0600).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TT=$ROOT/tokentrace
REC=$ROOT/tests/fuzz/seeds/fuzz_record/tokensim_4req.ttr
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# expect RC REGEX -- args: exit code, one stderr line matching, nothing on stdout
expect() {
	local code=$1 re=$2 rc=0
	shift 2
	"$TT" "$@" >"$W/out" 2>"$W/err" || rc=$?
	[ "$rc" -eq "$code" ] || fail "'${*:1:3}' exited $rc, expected $code: $(head -c 300 "$W/err")"
	[ "$(wc -l <"$W/err")" -eq 1 ] || fail "'${*:1:3}': not one line: $(head -c 300 "$W/err")"
	grep -qE -- "$re" "$W/err" || fail "'${*:1:3}' said: $(head -c 300 "$W/err") (expected /$re/)"
	[ ! -s "$W/out" ] || fail "'${*:1:3}' printed on stdout"
	echo "ok: $(head -c 160 "$W/err")"
}

expect 2 "invalid PID list \(an empty element\) '4242,,4242'" -p 4242,,4242
expect 2 "invalid PID list \(an empty element\) '4242,'" -p 4242,
expect 2 "invalid PID list \(an empty element\) ',4242'" -p ,4242
expect 2 "invalid PID list \(PID given twice\) '4242,4242'" -p 4242,4242
expect 2 "invalid PID list \(PID given twice\)" -p 4242 -p 4243,4242
expect 2 "invalid PID '0'" -p 0
expect 2 "invalid PID 'x'" -p 1,x

# a 100 KB argument: one short line, the argument cut
big=$(head -c 100000 /dev/zero | tr '\0' a)
for args in "--uprobe admit=$big" "--usdt admit=$big" "--uretprobe admit=$big" "-p 1$big" \
	"--metrics 1$big" "--bogus=$big" "5$big" "-s 1$big"; do
	# shellcheck disable=SC2086
	"$TT" -p 4242 $args >/dev/null 2>"$W/err"
	[ $? -eq 2 ] || fail "${args:0:12}: exit $?"
	[ "$(wc -l <"$W/err")" -eq 1 ] || fail "${args:0:12}: $(wc -l <"$W/err") lines"
	[ "$(wc -c <"$W/err")" -lt 300 ] || fail "${args:0:12}: a $(wc -c <"$W/err")-byte error"
	grep -q 'aaa\.\.\.' "$W/err" || fail "${args:0:12}: the cut is not marked: $(cat "$W/err")"
done
echo "ok: a 100 KB argument is quoted cut, in one short line"

# control characters typed (or pasted) come back escaped
expect 2 "invalid PID 'x\\\\x1b\[2J\\\\u009b'" -p $'x\e[2J\xc2\x9b'
expect 2 "unknown option '--x\\\\x1b'" $'--x\e'
expect 2 "marker \(a control character\)" -p 1 --uprobe $'admit=a:b\e[2J'

# a failed --perfetto write: said once, exit 1 (a replay needs no root)
rc=0
"$TT" -r "$REC" --json --perfetto /dev/full >"$W/out" 2>"$W/err" || rc=$?
[ $rc -eq 1 ] || fail "--perfetto /dev/full exited $rc"
[ "$(grep -c 'perfetto /dev/full: write failed: No space left on device' "$W/err")" -eq 1 ] ||
	fail "--perfetto /dev/full said: $(cat "$W/err")"
grep -q '"type":"request"' "$W/out" || fail "the other outputs did not run"
"$TT" -r "$REC" --perfetto /dev/null >/dev/null 2>"$W/err" || fail "--perfetto /dev/null: $(cat "$W/err")"
echo "ok: --perfetto /dev/full exits 1, /dev/null 0"

# the file rules, for the replay's --perfetto: no symlink followed, a new file 0600
echo keep >"$W/victim"
ln -s "$W/victim" "$W/link.json"
expect 1 "--perfetto $W/link.json: is a symbolic link: not followed" -r "$REC" --perfetto "$W/link.json"
[ "$(cat "$W/victim")" = keep ] || fail "the symlink was followed"
(umask 0 && "$TT" -r "$REC" --perfetto "$W/new.json" >/dev/null 2>&1) || fail "replay to new.json"
[ "$(stat -c %a "$W/new.json")" = 600 ] || fail "new.json mode $(stat -c %a "$W/new.json")"
"$TT" -r "$REC" --force --perfetto "$W/link.json" >/dev/null 2>&1 || fail "--force"
[ -f "$W/link.json" ] && [ ! -L "$W/link.json" ] && [ "$(cat "$W/victim")" = keep ] ||
	fail "--force did not replace the link itself"
echo "ok: a replay's --perfetto: symlink refused, --force replaces the link, new files 0600"
