# Marker options that cannot be placed safely are refused with one line and exit 1 (2 for a
# malformed option), before anything is attached: a symbol that is not there, a stripped
# binary, an offset that is not a function start, a binary the process does not map, a USDT
# probe the binary does not declare.
. "$(dirname "$0")/lib.sh"

# a stripped copy of tokensim (with its library beside it, found through $ORIGIN)
strip -o "$WORK/tokensim-stripped" "$SIM"
cp "$ROOT/.output/libtsengine.so" "$WORK/"
"$WORK/tokensim-stripped" --port 0 >"$WORK/stripped.out" 2>/dev/null &
STRIPPED=$!
PIDS+=("$STRIPPED")
wait_for "$WORK/stripped.out" '^listening' 10 || die "stripped tokensim did not start"
start_sim --tokens 4

expect_fail() {	# exit regex -- args...
	local code=$1 re=$2 rc=0
	shift 2
	"$TT" "$@" 1 1 >"$WORK/out" 2>"$WORK/err" || rc=$?
	[ "$rc" -eq "$code" ] || die "'$*' exited $rc, expected $code: $(cat "$WORK/err")"
	grep -qE "$re" "$WORK/err" || die "'$*' said: $(cat "$WORK/err") (expected /$re/)"
	[ "$(wc -l <"$WORK/err")" -eq 1 ] || die "more than one line: $(cat "$WORK/err")"
	grep -q '"type":"ready"' "$WORK/out" && die "'$*' got ready"
	echo "ok: exit $rc: $(cat "$WORK/err")"
}

expect_fail 1 "no function 'no_such_fn'" -p "$SIM_PID" --uprobe admit=tokensim:no_such_fn
expect_fail 1 'stripped' -p "$STRIPPED" --uprobe admit=tokensim-stripped:tokensim_admit
expect_fail 1 'not the start of a function' -p "$SIM_PID" --uprobe token=tokensim:tokensim_token+1
expect_fail 1 'not mapped in PID' -p "$SIM_PID" --uprobe admit=libnothere.so:f
expect_fail 1 'no USDT probe tokensim:nope' -p "$SIM_PID" --usdt admit=tokensim:tokensim:nope
expect_fail 2 "unknown marker 'bogus'" -p "$SIM_PID" --uprobe bogus=tokensim:tokensim_admit
expect_fail 2 'key=ret is only for --uretprobe' -p "$SIM_PID" --uprobe admit=tokensim:tokensim_admit,key=ret
expect_fail 2 'expected BINARY:PROVIDER:PROBE' -p "$SIM_PID" --usdt admit=tokensim:admit

# the stripped binary still has its USDT notes: a marker users can rely on
"$TT" -p "$STRIPPED" --json --usdt admit=tokensim-stripped:tokensim:admit 0.2 1 \
	>"$WORK/out" 2>"$WORK/err" || die "USDT on a stripped binary: $(cat "$WORK/err")"
grep -q '"markers":\["admit"\]' "$WORK/out" || die "no ready with the marker"
echo "ok: USDT on a stripped binary attaches"

# both processes survived every attempt
kill -0 "$SIM_PID" && kill -0 "$STRIPPED" || die "a traced process died"
run_load --requests 4 --max-tokens 4
echo "ok: tokensim still serves"
