# Terminal control bytes from clients (issue 12): paths, request ids and model names carrying C0
# (ESC, BEL), C1 (CSI as the raw byte 0x9b and as UTF-8 U+009B, NEL), a bidi override and
# invalid UTF-8; and a path of invisible code points (issue 32: a TAG character, a zero-width
# space), which hide text in what a terminal shows. Every output shows them escaped: the text
# lines and --top without a terminal (\xNN, \uNNNN, \UNNNNNNNN), --top in a terminal (tmux: the
# screen shows the escapes, and its title survives a clear-screen request), --json and
# --perfetto (\u escapes, U+FFFD; the decoded strings are the ones sent), and Prometheus labels.
# JSON escapes the invisible ones too (a TAG as its surrogate pair): the decoded string is the
# one sent.
. "$(dirname "$0")/lib.sh"

RAW="python3 $ROOT/tests/e2e/rawreq.py"
# every path streams (openai-chat), slowly enough for --top to show them in flight
start_sim --format openai-chat --ttft-ms 5 --itl-ms 150 --tokens 40
PATH1='/v1/chat/\x9b31mred\xc2\x9b2J\xff\xe2\x80\xae'
ID1='id\x1b]0;pwned\x07\xc2\x85\xfe'
MODEL1='m\\u001b[2J\\u009b\\u0007\xc2\x85\xf0\x28'
# U+E0041 (TAG LATIN CAPITAL LETTER A), U+200B (ZERO WIDTH SPACE)
PATH3='/t\xf3\xa0\x81\x81\xe2\x80\x8bx'
# what each escaping must make of them
TERM_PATH3='/t\U000e0041\u200bx'
TERM_PATH='/v1/chat/\x9b31mred\u009b2J\xff\u202e'
TERM_MODEL='m\x1b[2J\u009b\x07\u0085\xf0('

SOCK=tt-e2e-$$
tm() { tmux -L "$SOCK" "$@"; }
LANG_UTF8=C.UTF-8
locale -a 2>/dev/null | grep -qix 'c.utf-\?8' || LANG_UTF8=C
tm -f /dev/null new-session -d -s top -x 200 -y 40 \
	"LANG=$LANG_UTF8 LC_ALL= TERM=screen-256color $TT -p $SIM_PID --top 1 2>'$WORK/top.err'; echo \"rc=\$?\" >'$WORK/top.rc'; sleep 60"
PIDS+=("$(tm display -p -t top '#{pid}')")	# the tmux server: killed on any exit
"$TT" -p "$SIM_PID" --top 0 >"$WORK/piped.txt" 2>"$WORK/piped.err" &
PIPED=$!
PIDS+=("$PIPED")
start_tt --perfetto "$WORK/trace.json" --metrics 0 0
MPORT=$(sed -n 's|^tokentrace: metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics$|\1|p' "$WORK/tt.err")
wait_for "$WORK/piped.err" 'attached' 30 || die "--top piped did not start"
for _ in $(seq 300); do
	tm capture-pane -p -t top 2>/dev/null | grep -q 'CONNECTION' && break
	sleep 0.1
done

# one stream in flight with the hostile strings (~6 s), one whose request id tokensim refuses
$RAW "$SIM_PORT" "$PATH1" --model "$MODEL1" --max-tokens 40 >"$WORK/raw1.out" &
RAW1=$!
$RAW "$SIM_PORT" "$PATH3" --max-tokens 40 >"$WORK/raw3.out" &
RAW3=$!
$RAW "$SIM_PORT" '/v1/chat/x' --header "X-Request-Id: $ID1" >/dev/null || die "request 2 failed"

# --top on a terminal: the row shows the escaped path and model, the title is still there
ok=
for _ in $(seq 100); do
	tm capture-pane -p -t top >"$WORK/screen.txt" 2>/dev/null || true
	# cut to their columns: PATH 22 cells, MODEL 14
	if grep -qF '/v1/chat/\x9b31mred\u0' "$WORK/screen.txt" &&
	   grep -qF 'm\x1b[2J\u009b' "$WORK/screen.txt" &&
	   grep -qF "$TERM_PATH3" "$WORK/screen.txt"; then
		ok=1
		break
	fi
	sleep 0.1
done
[ -n "$ok" ] || die "--top does not show the escaped strings: $(cat "$WORK/screen.txt")"
grep -q '^ *tokentrace .* PID ' "$WORK/screen.txt" || die "--top's title is gone"
python3 - "$WORK/screen.txt" "$ROOT/tests/e2e" <<'PY' || die "control characters on the --top screen"
import sys
sys.path.insert(0, sys.argv[2])
from invisible import invisible
t = open(sys.argv[1], encoding="utf-8").read()
bad = [c for c in t if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f or invisible(c)]
assert not bad, bad
PY
echo "ok: --top on a terminal shows the path and model escaped"
wait "$RAW1" || die "request 1 failed: $(cat "$WORK/raw1.out")"
wait "$RAW3" || die "request 3 failed: $(cat "$WORK/raw3.out")"
# the client has it all; scrape once tokentrace has ended the request too
wait_for "$WORK/tt.jsonl" '"path":"/v1/chat/\\ufffd31mred' 10 || die "request 1 not traced"
wait_for "$WORK/tt.jsonl" '"path":"/t\\udb40\\udc41\\u200bx' 10 || die "request 3 not traced"
curl -sf "http://127.0.0.1:$MPORT/metrics" >"$WORK/scrape.txt" || die "scrape failed"
stop_tt
kill -INT "$PIPED"
wait "$PIPED" || die "--top piped exited $?"
tm send-keys -t top q
wait_for "$WORK/top.rc" 'rc=' 10 || die "--top did not stop"

# every file: valid UTF-8, no control character but newlines, the escapes where expected
python3 - "$WORK" "$TERM_PATH" "$TERM_MODEL" "$TERM_PATH3" "$ROOT/tests/e2e" <<'PY' || die "escaping"
import json, sys
w, term_path, term_model, term_path3 = sys.argv[1:5]
sys.path.insert(0, sys.argv[5])
from invisible import invisible

def clean(name):
    t = open(f"{w}/{name}", "rb").read().decode("utf-8")	# strict: valid UTF-8
    bad = [hex(ord(c)) for c in t if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f
           or ord(c) in (0x202e, 0x2028, 0x2029) or invisible(c)]
    assert not bad, (name, bad[:5])
    return t

for name in ("piped.txt", "piped.err", "tt.err", "scrape.txt", "tt.jsonl", "trace.json"):
    clean(name)
# text: the path cut to its column, escaped
piped = clean("piped.txt")
assert " POST " + term_path[:22] in piped, piped
assert " POST " + term_path3 + " " in piped, piped
# JSON: the decoded strings are what was sent, invalid bytes as U+FFFD
reqs = [r for r in map(json.loads, clean("tt.jsonl").splitlines()) if r["type"] == "request"]
by_path = {r["path"]: r for r in reqs}
assert "/t\U000e0041\u200bx" in by_path, list(by_path)
p1 = "/v1/chat/\ufffd31mred\u009b2J\ufffd\u202e"
assert p1 in by_path, list(by_path)
assert by_path[p1]["model"] == "m\x1b[2J\x9b\x07\x85\ufffd(", repr(by_path[p1]["model"])
ids = [r["request_id"] for r in reqs]
assert "id\x1b]0;pwned\x07\x85\ufffd" in ids, ids
# Perfetto: the same strings in the slices' args
ev = json.loads(clean("trace.json"))
args = [e.get("args", {}) for e in ev if e.get("cat") == "request"]
assert any(a.get("path") == p1 and a.get("model") == by_path[p1]["model"] for a in args), args
assert any(a.get("request_id") == "id\x1b]0;pwned\x07\x85\ufffd" for a in args), args
# Prometheus: the label values as text escapes
s = clean("scrape.txt")
assert 'path="/v1/chat/\\\\x9b31mred\\\\u009b2J\\\\xff\\\\u202e"' in s, [l for l in s.splitlines() if "path=" in l][:2]
assert 'model="m\\\\x1b[2J\\\\u009b\\\\x07\\\\u0085\\\\xf0("' in s
assert 'path="/t\\\\U000e0041\\\\u200bx"' in s, [l for l in s.splitlines() if "path=" in l][:3]
PY
echo "ok: text, --top piped, --json, --perfetto and Prometheus: escaped, valid UTF-8"
tm kill-server 2>/dev/null || true
