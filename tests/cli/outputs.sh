# The outputs' command line, root-free: --help lists them with examples; a replay refuses the
# options of a live run and other misuse is exit 2 with one line on stderr; an unreadable
# recording is exit 1 with one line.
set -u
TT=$(cd "$(dirname "$0")/../.." && pwd)/tokentrace
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

help=$("$TT" --help)
for opt in --top --metrics --perfetto --write --read; do
	echo "$help" | grep -q -- "$opt" || fail "--help does not list $opt"
done
echo "$help" | grep -q '^       tokentrace -r FILE' || fail "--help has no replay usage line"
echo "$help" | sed -n '/^EXAMPLES/,$p' | grep -q -- '-r run.ttr' || fail "no replay example"
echo "$help" | sed -n '/^EXAMPLES/,$p' | grep -q -- '--metrics' || fail "no metrics example"

# expect RC REGEX -- args: exit code, the one stderr line, nothing on stdout
expect() {
	local code=$1 re=$2 rc=0
	shift 2
	"$TT" "$@" >"$W/out" 2>"$W/err" || rc=$?
	[ "$rc" -eq "$code" ] || fail "'$*' exited $rc, expected $code: $(cat "$W/err")"
	[ "$(wc -l <"$W/err")" -eq 1 ] || fail "'$*': not one line: $(cat "$W/err")"
	grep -qE -- "$re" "$W/err" || fail "'$*' said: $(cat "$W/err") (expected /$re/)"
	[ ! -s "$W/out" ] || fail "'$*' printed on stdout"
	echo "ok: $* -> $rc: $(cat "$W/err")"
}
expect 2 'no -p' -r x.ttr -p 1
expect 2 '--top does not apply to a replay' -r x.ttr --top
expect 2 '--metrics does not apply to a replay' -r x.ttr --metrics 9464
expect 2 '-w does not apply to a replay' -r x.ttr -w y.ttr
expect 2 '--port does not apply to a replay' -r x.ttr --port 80
expect 2 'no INTERVAL or COUNT' -r x.ttr 5
expect 2 'both want stdout' -p 1 --top --json
expect 2 'stall-hooks says when .*not with --no-stalls' -p 1 --no-stalls --stall-hooks always
expect 2 'stall-hooks says when .*not with --aggregate' -p 1 --stall-hooks lazy --aggregate
expect 2 "invalid --stall-hooks .*'sometimes'" -p 1 --stall-hooks sometimes
expect 2 "invalid --metrics address .*'bogus'" -p 1 --metrics bogus
expect 2 "invalid --metrics address .*'70000'" -p 1 --metrics 70000
expect 2 "invalid --metrics address .*'1.2.3:80'" -p 1 --metrics 1.2.3:80
expect 2 "invalid --metrics address .*'example.com:80'" -p 1 --metrics example.com:80
expect 2 'needs a value' -p 1 --perfetto
expect 1 "$W/none.ttr: No such file or directory" -r "$W/none.ttr"
printf 'not a recording\n' >"$W/text.ttr"
expect 1 "$W/text.ttr: not a tokentrace recording" -r "$W/text.ttr" --json
printf '\x89TTREC\r\n\x01\x00' >"$W/cut.ttr"
expect 1 "$W/cut.ttr: truncated recording at byte 10" -r "$W/cut.ttr"
printf '\x89TTREC\r\n\x07\x00\x00\x01' >"$W/v7.ttr"
expect 1 "format version 7; this tokentrace reads version 1" -r "$W/v7.ttr"
echo ok
