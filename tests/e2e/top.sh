# --top in a real terminal (tmux) against tokensim: the screen shows the streams in flight
# (path, model, tokens, a STALL while tokensim holds one), the rolling TTFT/ITL/TPOT
# percentiles and tokens/s, and the pane of recent stalls: tokensim's injected sleeps, each
# with the gap the truth's own token times give, who slept (tokensim's pid) and where
# (stall_run); a key sorts; a resize redraws within the new width; q exits 0 and leaves the
# final summary on the normal screen. Without a terminal, plain lines and a note.
. "$(dirname "$0")/lib.sh"

SOCK=tt-e2e-$$
tm() { tmux -L "$SOCK" "$@"; }
screen() { tm capture-pane -p -t top; }
# wait_screen REGEX SECONDS: the screen shows REGEX
wait_screen() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		screen >"$WORK/screen.txt" 2>/dev/null || true
		grep -qE "$1" "$WORK/screen.txt" && return 0
		sleep 0.1
	done
	echo "--- screen:"
	cat "$WORK/screen.txt"
	return 1
}

# long streams with a long stall each: always something in flight, a stall to see
start_sim --ttft-ms 40 --itl-ms 30 --tokens 60 --stall-every 20 --stall-ms 1500 --max-batch 16
LANG_UTF8=C.UTF-8
locale -a 2>/dev/null | grep -qix 'c.utf-\?8' || LANG_UTF8=C

tm -f /dev/null new-session -d -s top -x 160 -y 40 \
	"LANG=$LANG_UTF8 LC_ALL= TERM=screen-256color $TT -p $SIM_PID --top 1 2>'$WORK/tt.err'; echo \"rc=\$?\" >'$WORK/top.rc'; sleep 60"
PIDS+=("$(tm display -p -t top '#{pid}')")

wait_screen 'CONNECTION +PATH +MODEL +STATE' 30 || die "no --top screen"
"$LOAD" --port "$SIM_PORT" --requests 12 --concurrency 4 --max-tokens 60 \
	--model top-model --out "$WORK/load.jsonl" 2>"$WORK/load.err" &
LOAD_PID=$!
PIDS+=("$LOAD_PID")

# the streams, live
wait_screen '127\.0\.0\.1:[0-9]+-127\.0\.0\.1:[0-9]+ +/v1/chat/completions +top-model +(stream|STALL)' 20 ||
	die "no stream on the screen"
wait_screen 'STALL [0-9.]+(ms|s)' 20 || die "no STALL marker during tokensim's stall"
echo "ok: streams in flight and a STALL on the screen"
# the pane: the stall once its gap has ended, said as who was late and what it did; where
# (the native frame) once the stack's text is read, when the request is done
ROOT_RE="tokensim \\(pid $SIM_PID, thread [0-9]+\\) asleep [0-9.]+(us|ms|s)"
FRAME=" at tokensim\`stall_run; stack: "
wait_screen "stall [0-9.]+(us|ms|s) after token [0-9]+: $ROOT_RE$FRAME" 30 ||
	die "no injected stall in the recent stalls pane"
grep -q 'RECENT STALLS' "$WORK/screen.txt" || die "no title on the recent stalls pane"
grep -oE 'stall [0-9.]+(us|ms|s) after token [0-9]+: .*' "$WORK/screen.txt" >"$WORK/pane.txt"
grep -vE ": $ROOT_RE($FRAME|$)" "$WORK/pane.txt" &&
	die "a stall in the pane not said as tokensim's sleep"
echo "ok: the pane shows $(wc -l <"$WORK/pane.txt") stalls: $(head -n 1 "$WORK/pane.txt")"
# percentiles and rate once requests finish
wait_screen '^ +TTFT +[0-9.]+(us|ms|s) +[0-9.]+(us|ms|s) +[0-9.]+(us|ms|s) +[0-9.]+(us|ms|s) +[1-9]' 40 ||
	die "no TTFT percentiles"
grep -qE '^ +ITL +[0-9.]+(us|ms|s) .* [1-9][0-9]*$' "$WORK/screen.txt" || die "no ITL percentiles"
grep -qE '[1-9][0-9]*\.[0-9] tok/s' "$WORK/screen.txt" || die "no tokens/s"
echo "ok: rolling percentiles and tokens/s"
sed 's/^/      | /' "$WORK/screen.txt" | head -n 16

# sort by tokens: the header says so and the column carries the mark
tm send-keys -t top t
wait_screen 'sort: tokens' 5 || die "t did not sort by tokens"
grep -qE 'TOKENS(▼|v)' "$WORK/screen.txt" || die "no sort mark on TOKENS"
echo "ok: sorted by tokens"

# a narrower terminal: everything redrawn within it
tm resize-window -t top -x 90 -y 24
wait_screen 'STATE' 5 || die "no screen after resize"
sleep 1.2
screen >"$WORK/screen.txt"
awk 'length($0) > 90 { bad = 1 } END { exit bad }' "$WORK/screen.txt" || die "lines wider than 90 columns after resize"
grep -qE '^ +TTFT' "$WORK/screen.txt" || die "percentiles lost after resize"
echo "ok: resized to 90x24"

# q: exit 0, the final summary on the normal screen
tm send-keys -t top q
wait_for "$WORK/top.rc" 'rc=' 10 || die "q did not stop tokentrace"
grep -qx 'rc=0' "$WORK/top.rc" || die "tokentrace exited $(cat "$WORK/top.rc")"
wait_screen '^--- .* total .* requests' 5 || die "no final summary after q"
grep -q 'attached to PID' "$WORK/tt.err" || die "the screen's stderr was not given back"
echo "ok: q exits 0 with the final summary"
wait "$LOAD_PID" || true
# every stall the pane showed is one tokensim injected: its token, and its gap as the truth's
# own token times give it, to the last digit shown
python3 - "$WORK" <<'PY' || die "the pane's stalls are not tokensim's"
import json, re, sys
w = sys.argv[1]
unit = {"us": 1e3, "ms": 1e6, "s": 1e9}
truth = [json.loads(l) for l in open(f"{w}/truth.jsonl")]
for l in open(f"{w}/pane.txt").read().splitlines():
    m = re.match(r"stall ([0-9.]+)(us|ms|s) after token ([0-9]+): ", l)
    shown, n = float(m[1]) * unit[m[2]], int(m[3])
    digit = unit[m[2]] / 10 ** len(m[1].partition(".")[2])
    gaps = [t["t_token_ns"][n] - t["t_token_ns"][n - 1] for t in truth for s in t["stalls"]
            if s["before_chunk"] == n and s["kind"] == "sleep"]
    assert gaps, f"no stall injected before token {n + 1}: {l}"
    assert any(abs(shown - g) < digit for g in gaps), (l, [g / 1e6 for g in gaps])
print(f"measured: the pane's stalls match the truth's gaps to their last digit")
PY

# no terminal: lines, and a note
"$TT" -p "$SIM_PID" --top 0 >"$WORK/plain.out" 2>"$WORK/plain.err" &
PLAIN=$!
PIDS+=("$PLAIN")
wait_for "$WORK/plain.err" 'attached' 30 || die "--top without a terminal did not start"
grep -q 'not a terminal' "$WORK/plain.err" || die "no note about the missing terminal"
run_load --requests 2 --max-tokens 3
sleep 0.3
kill -INT "$PLAIN"
wait "$PLAIN" || die "--top without a terminal exited $?"
grep -qE '^TIME +PID +CONNECTION' "$WORK/plain.out" || die "no text lines without a terminal"
grep -q $'\033' "$WORK/plain.out" && die "escape sequences without a terminal"
echo "ok: plain lines without a terminal"
tm kill-server 2>/dev/null || true
