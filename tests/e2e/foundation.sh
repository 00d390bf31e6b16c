# tokensim with jitter and stalls, traced live while tokenload streams 100 requests over 4
# keep-alive connections: every request in tokensim's truth is reported, found by its
# X-Request-Id, with exactly its chunk count, and TTFT and every ITL agree with the truth
# within 50 us at p99 (the median within 50 us of the clock read before each send).
. "$(dirname "$0")/lib.sh"

start_sim --ttft-ms 30 --itl-ms 6 --jitter-ms 3 --stall-every 9 --stall-ms 45 --tokens 20
start_tt
run_load --requests 100 --concurrency 4 --max-tokens 20
stop_tt
$CHECK --min-requests 100 --expect-format sse "$WORK/truth.jsonl" "$WORK/tt.jsonl"

# keep-alive: requests were read on reused connections, numbered per connection
python3 - "$WORK/tt.jsonl" <<'PY'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1]) if '"type":"request"' in l]
conns = {r["conn_id"] for r in reqs}
assert len(conns) <= 8, f"{len(conns)} connections for 4 keep-alive clients"
assert max(r["seq"] for r in reqs) >= 20, "no connection carried many requests"
s = [json.loads(l) for l in open(sys.argv[1]) if '"type":"summary"' in l][-1]
assert s["requests"] == 100 and s["lost_events"] == 0, s
assert s["ttft_ns"]["count"] == 100 and s["itl_ns"]["count"] == 100 * 19, s
print(f"measured: {len(conns)} connections; summary TTFT p50 {s['ttft_ns']['p50']/1e6:.1f} ms")
PY
