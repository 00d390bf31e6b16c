# Secrets a client sends (issue 12): an API key in the query string, an Authorization header,
# a cookie, an X-Api-Key header. None of them appears in any default output: --json lines,
# --top without a terminal (a second tracer), the text lines (replayed from the run's
# recording: the same code), --perfetto, a --metrics scrape, stderr. The recording holds the raw bytes (it is the
# traffic) and is 0600. --show-query brings the query string back, and only that.
. "$(dirname "$0")/lib.sh"

RAW="python3 $ROOT/tests/e2e/rawreq.py"
start_sim --ttft-ms 5 --itl-ms 2 --tokens 5
start_tt --metrics 0 --perfetto "$WORK/trace.json" -w "$WORK/run.ttr" 0
MPORT=$(sed -n 's|^tokentrace: metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics$|\1|p' "$WORK/tt.err")
[ -n "$MPORT" ] || die "no metrics port: $(cat "$WORK/tt.err")"
"$TT" -p "$SIM_PID" --top 0 >"$WORK/top.txt" 2>"$WORK/top.err" &
TOP_PID=$!
PIDS+=("$TOP_PID")
wait_for "$WORK/top.err" 'attached' 30 || die "--top did not start: $(cat "$WORK/top.err")"

$RAW "$SIM_PORT" '/v1/chat/completions?api_key=SECRETQ1&x=1' \
	--header 'Authorization: Bearer SECRETAUTH' --header 'X-Request-Id: sec-1' \
	--header 'Cookie: session=SECRETCOOKIE' --header 'X-Api-Key: SECRETHDR' >/dev/null ||
	die "request failed"
$RAW "$SIM_PORT" '/v1/chat/completions#SECRETFRAG' --header 'X-Request-Id: sec-2' >/dev/null ||
	die "request failed"
wait_for "$WORK/tt.jsonl" '"request_id":"sec-2"' 10 || die "the requests were not traced"
curl -sf "http://127.0.0.1:$MPORT/metrics" >"$WORK/scrape.txt" || die "scrape failed"
stop_tt
kill -INT "$TOP_PID"
wait "$TOP_PID" || die "--top exited $?: $(cat "$WORK/top.err")"

"$TT" -r "$WORK/run.ttr" >"$WORK/replay.txt" 2>"$WORK/replay.err" || die "replay: $(cat "$WORK/replay.err")"

# the requests are there, with their paths cut before the query
python3 - "$WORK/tt.jsonl" <<'PY' || die "JSON paths"
import json, sys
reqs = {r["request_id"]: r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "request"}
assert reqs["sec-1"]["path"] == "/v1/chat/completions", reqs["sec-1"]["path"]
assert reqs["sec-2"]["path"] == "/v1/chat/completions", reqs["sec-2"]["path"]
assert reqs["sec-1"]["status"] == 200 and reqs["sec-1"]["chunks"] > 0
PY
grep -qE '^[0-9:.]+ +[0-9]+ +[0-9.:-]+ +POST /v1/chat/completions +200 ' "$WORK/replay.txt" ||
	die "no text line for the request: $(cat "$WORK/replay.txt")"
grep -qE ' POST /v1/chat/completions +200 ' "$WORK/top.txt" || die "no --top line: $(cat "$WORK/top.txt")"
grep -q 'path="/v1/chat/completions"' "$WORK/scrape.txt" || die "no path label in the scrape"
grep -q '"path":"/v1/chat/completions"' "$WORK/trace.json" || die "no path in the timeline"

for f in tt.jsonl tt.err trace.json scrape.txt top.txt top.err replay.txt replay.err; do
	if grep -qE 'SECRET|api_key' "$WORK/$f"; then
		die "a secret in $f: $(grep -oE '.{0,40}(SECRET|api_key).{0,20}' "$WORK/$f" | head -n 3)"
	fi
done
echo "ok: no query string, Authorization, cookie or key header in --json, text, --top (piped), --perfetto, --metrics, stderr"

# the recording is the traffic: it has the bytes, and nobody else may read it
grep -q SECRETAUTH "$WORK/run.ttr" || die "the recording lacks the request bytes: the check above proves nothing"
[ "$(stat -c %a "$WORK/run.ttr")" = 600 ] || die "recording mode $(stat -c %a "$WORK/run.ttr")"
echo "ok: the recording holds the raw request (mode 0600)"

# --show-query: the query string, on request, and still no header value
"$TT" -r "$WORK/run.ttr" --json --show-query >"$WORK/show.jsonl" 2>/dev/null || die "replay --show-query"
grep -q '"path":"/v1/chat/completions?api_key=SECRETQ1&x=1"' "$WORK/show.jsonl" ||
	die "--show-query did not keep the query: $(grep -o '"path":"[^"]*"' "$WORK/show.jsonl")"
grep -qE 'SECRET(AUTH|COOKIE|HDR)' "$WORK/show.jsonl" && die "--show-query printed a header value"
echo "ok: --show-query keeps the query string, no header value"
