# A proxy traced: nginx (its master by -p: the worker it forked before attach is followed)
# in front of tokensim. Every downstream stream nginx served is reported with exact counts,
# paired with the upstream call nginx made for it (direction "client", by the stream's own
# id), and its TTFT splits exactly into nginx's delay before the call, the upstream's TTFT and
# nginx's delay forwarding the first token. The upstream call's own record agrees with
# tokensim's truth as the client saw it: every token received after tokensim sent it. With
# nginx holding tokens back (a downstream rate limit), the delay shows up as the proxy's.
. "$(dirname "$0")/lib.sh"

start_sim --ttft-ms 25 --itl-ms 5 --jitter-ms 2 --tokens 16
for BUF in off on; do
rm -rf "$WORK/nginx" "$WORK/nginx.out"
# "on": nginx holding tokens back. proxy_buffering on alone does not (measured: nginx still
# passes each chunk on as it reads it); a downstream rate limit, as gateways set, does
EXTRA=()
[ $BUF = on ] && EXTRA=(--buffering on --directive "limit_rate 3k;")
"$ROOT/tests/stacks/nginx/start.sh" --upstream "127.0.0.1:$SIM_PORT" --dir "$WORK/nginx" \
	"${EXTRA[@]}" >"$WORK/nginx.out" 2>"$WORK/nginx.err" &
NGX=$!
PIDS+=($NGX)
PIDS+=($!)
wait_for "$WORK/nginx.out" '^listening on ' 15 || die "nginx did not start: $(cat "$WORK/nginx.err")"
NGX_PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$WORK/nginx.out")
NGX_MASTER=$(cat "$WORK/nginx/nginx.pid")
rm -f "$WORK/tt.jsonl"	# no earlier ready line to wait on
"$TT" -p "$NGX_MASTER" --json >"$WORK/tt.jsonl" 2>"$WORK/tt.err" &
TT_PID=$!
PIDS+=("$TT_PID")
wait_for "$WORK/tt.jsonl" '"type":"ready"' 30 || die "not ready: $(cat "$WORK/tt.err")"
grep -q 'child process' "$WORK/tt.err" || die "nginx's worker was not followed: $(cat "$WORK/tt.err")"
"$LOAD" --port "$NGX_PORT" --requests 40 --concurrency 4 --max-tokens 16 --include-usage \
	--id-prefix "buf$BUF-" --out "$WORK/load.jsonl" 2>"$WORK/load.err" || die "load through nginx failed"
stop_tt
kill -TERM $NGX; wait $NGX 2>/dev/null || true
python3 - "$WORK/truth.jsonl" "$WORK/tt.jsonl" "$WORK/load.jsonl" "$BUF" <<'PY'
import json, sys
buffering = sys.argv[4] == "on"
truth = {t["request_id"]: t for t in map(json.loads, open(sys.argv[1]))
         if t["request_id"].startswith(f"buf{sys.argv[4]}-")}
reqs = [o for o in map(json.loads, open(sys.argv[2])) if o.get("type") == "request"]
load = {c["request_id"]: c for c in map(json.loads, open(sys.argv[3]))}
down = [r for r in reqs if r["direction"] == "server"]
up = [r for r in reqs if r["direction"] == "client"]
errs = []
if len(down) != 40 or len(up) != 40:
    errs.append(f"{len(down)} downstream and {len(up)} upstream requests, 40 each expected")
gaps = []
for r in down:
    rid = r["request_id"]
    t = truth.get(rid)
    if t is None:
        errs.append(f"downstream {rid}: not in tokensim's truth")
        continue
    if r["chunks"] != t["chunks"] or not r["complete"] or r["aborted"]:
        errs.append(f"downstream {rid}: chunks {r['chunks']} (truth {t['chunks']}), complete "
                    f"{r['complete']}, aborted {r['aborted']}")
    u = r.get("upstream")
    if not u:
        errs.append(f"downstream {rid}: not paired with its upstream call")
        continue
    if u["paired_by"] != "stream_id":
        errs.append(f"downstream {rid}: paired by {u['paired_by']}")
    # TTFT = nginx's delay before the call + upstream TTFT + forwarding the first token
    if r["ttft_ns"] != u["request_delay_ns"] + u["ttft_ns"] + u["first_token_delay_ns"]:
        errs.append(f"downstream {rid}: TTFT {r['ttft_ns']} != {u['request_delay_ns']} + "
                    f"{u['ttft_ns']} + {u['first_token_delay_ns']}")
    if u["request_delay_ns"] < 0 or u["first_token_delay_ns"] < 0 or u["token_delay_p50_ns"] is None:
        errs.append(f"downstream {rid}: negative or missing proxy delays {u}")
        continue
    gaps.append(u["token_delay_p99_ns"])
    # held back: nginx's rate limit lets the stream fall behind the upstream, so its last
    # tokens wait at nginx a good part of the stream's length, and the delay says so
    span = t["t_token_ns"][-1] - t["t_token_ns"][0]
    held = u["token_delay_max_ns"] >= span / 4
    if held != buffering:
        errs.append(f"downstream {rid}: held back {sys.argv[4]}, nginx held a token at most "
                    f"{u['token_delay_max_ns'] / 1e6:.1f} ms in a {span / 1e6:.1f} ms stream")
for r in up:
    rid = r["request_id"]
    t = truth.get(rid)
    if t is None:
        errs.append(f"upstream {rid}: not in tokensim's truth")
        continue
    if r["chunks"] != t["chunks"] or not r["complete"]:
        errs.append(f"upstream {rid}: chunks {r['chunks']} (truth {t['chunks']}) complete {r['complete']}")
        continue
    # as nginx received them: never before tokensim's send began
    s = r["t_first_token_ns"]
    for i, lo in enumerate(t["t_token_ns"]):
        if i:
            s += r["itl_ns"][i - 1]
        if s < lo:
            errs.append(f"upstream {rid}: token {i} received {(lo - s) / 1e3:.1f} us before it was sent")
            break
    c = load.get(rid)
    if c and c["t_chunk_ns"] and r["t_first_token_ns"] > c["t_chunk_ns"][0]:
        errs.append(f"upstream {rid}: nginx got the first token after the client did")
for e in errs[:20]:
    print("FAIL:", e)
if gaps:
    gaps.sort()
    print(f"measured: buffering {sys.argv[4]}: nginx's per-token delay p99 over {len(gaps)} "
          f"streams: median {gaps[len(gaps) // 2] / 1e3:.1f} us, max {gaps[-1] / 1e3:.1f} us")
sys.exit(1 if errs else 0)
PY
done
