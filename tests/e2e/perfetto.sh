# --perfetto against tokensim: the file parses as JSON (Chrome Trace Event array), holds one
# request slice per request with its request id, TTFT and generation phases inside it, one
# token instant per chunk the JSON output counted, on one named track per connection of a
# process named after the target; stalls, when the request has them, are slices on that track.
. "$(dirname "$0")/lib.sh"

start_sim --ttft-ms 20 --itl-ms 4 --jitter-ms 2 --tokens 16 --stall-every 6 --stall-ms 80
start_tt --perfetto "$WORK/trace.json"
run_load --requests 24 --concurrency 4 --max-tokens 16
stop_tt

python3 - "$WORK/trace.json" "$WORK/tt.jsonl" "$WORK/truth.jsonl" "$SIM_PID" <<'PY'
import json, sys
from collections import Counter, defaultdict
events = json.load(open(sys.argv[1]))	# must parse: a JSON array
reqs = [json.loads(l) for l in open(sys.argv[2]) if '"type":"request"' in l]
truth = {json.loads(l)["request_id"] for l in open(sys.argv[3])}
pid = int(sys.argv[4])
assert isinstance(events, list) and events, "not a non-empty array of events"

for e in events:
    assert e["ph"] in ("X", "i", "M"), e
    assert isinstance(e["pid"], int) and isinstance(e["tid"], int) and e["name"], e
    if e["ph"] != "M":
        assert isinstance(e["ts"], (int, float)) and e["ts"] > 0, e
    if e["ph"] == "X":
        assert e["dur"] >= 0, e
    if e["ph"] == "i":
        assert e["s"] == "t", e

procs = [e for e in events if e["ph"] == "M" and e["name"] == "process_name"]
assert [(p["pid"], p["args"]["name"]) for p in procs] == [(pid, "tokensim")], procs
threads = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}

slices = [e for e in events if e["ph"] == "X" and e.get("cat") == "request" and e["name"] != "kernel queue"]
assert len(slices) == len(reqs) == 24, (len(slices), len(reqs))
by_id = {s["args"]["request_id"]: s for s in slices}
assert set(by_id) == {r["request_id"] for r in reqs} <= truth, "request ids"

# one track per connection, named like it
conns = {r["conn_id"]: r["conn"] for r in reqs}
assert len(threads) == len(conns), (threads, conns)
assert set(threads.values()) == set(conns.values()), (threads, conns)

tokens = [e for e in events if e["ph"] == "i" and e["name"] == "token"]
assert len(tokens) == sum(r["chunks"] for r in reqs), (len(tokens), sum(r["chunks"] for r in reqs))
phases = defaultdict(list)
for e in events:
    if e["ph"] == "X" and e.get("cat") in ("phase", "stall"):
        phases[(e["pid"], e["tid"])].append(e)
stalls = 0
eps = 0.0015	# µs: the file's ts and dur have ns decimals
for r in reqs:
    s = by_id[r["request_id"]]
    a = s["args"]
    assert s["pid"] == pid and threads[s["tid"]] == r["conn"], (s, r)
    assert a["chunks"] == r["chunks"] and a["status"] == r["status"] and a["ttft_ns"] == r["ttft_ns"], (a, r)
    assert a["model"] == r["model"] and a["path"] == r["path"]
    assert abs(s["ts"] - r["t_start_ns"] / 1e3) < eps and abs(s["dur"] - r["e2e_ns"] / 1e3) < eps, (s, r)
    b, e = s["ts"], s["ts"] + s["dur"]
    inside = lambda x: b - eps <= x["ts"] and x["ts"] + x.get("dur", 0) <= e + eps
    mine = [t for t in tokens if t["tid"] == s["tid"] and b - eps <= t["ts"] <= e + eps]
    assert len(mine) == r["chunks"], (len(mine), r["chunks"])
    assert [t["args"]["n"] for t in sorted(mine, key=lambda t: t["ts"])] == list(range(1, r["chunks"] + 1))
    ph = {p["name"]: p for p in phases[(s["pid"], s["tid"])] if inside(p)}
    assert abs(ph["prefill/TTFT"]["dur"] - r["ttft_ns"] / 1e3) < eps, ph
    assert abs(ph["prefill/TTFT"]["ts"] - s["ts"]) < eps
    assert abs(ph["generation"]["ts"] + ph["generation"]["dur"] - max(t["ts"] for t in mine)) < eps
    st = [p for p in phases[(s["pid"], s["tid"])] if inside(p) and p["cat"] == "stall"]
    assert len(st) == len(r.get("stalls") or []), (st, r.get("stalls"))
    for x in st:
        assert x["name"] == "stall: " + x["args"]["cause"], x
    stalls += len(st)
print(f"measured: {len(events)} events: {len(slices)} request slices, {len(tokens)} token instants, "
      f"{len(threads)} connection tracks, {stalls} stall slices")
PY
