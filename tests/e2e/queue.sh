# Time a request waited in the kernel before the server read it. tokensim's accept loop
# sleeps before each accept(), so new connections and their request bytes sit in the
# backlog: queue_ns must show that wait, measured against the client's send time (on
# loopback the bytes arrive within microseconds of it), and accept_wait_ns the time from
# the handshake to accept().
. "$(dirname "$0")/lib.sh"

start_sim --accept-delay-ms 40 --ttft-ms 5 --itl-ms 2 --tokens 4
start_tt
run_load --requests 12 --concurrency 1 --max-tokens 4 --no-keepalive
stop_tt
python3 - "$WORK/truth.jsonl" "$WORK/tt.jsonl" "$WORK/load.jsonl" <<'PY'
import json, sys
truth = {o["request_id"]: o for o in map(json.loads, open(sys.argv[1]))}
reqs = {o["request_id"]: o for o in map(json.loads, open(sys.argv[2])) if o.get("type") == "request"}
load = {o["request_id"]: o for o in map(json.loads, open(sys.argv[3]))}
errs, qerr, aerr = [], [], []
for rid, l in load.items():
    r, t = reqs.get(rid), truth.get(rid)
    if not r or not t:
        errs.append(f"{rid}: missing")
        continue
    if r["queue_ns"] is None or r["accept_wait_ns"] is None:
        errs.append(f"{rid}: queue_ns {r['queue_ns']} accept_wait_ns {r['accept_wait_ns']}")
        continue
    # waited from the client's send until tokensim read it: t_start (its read returned)
    expect = t["t_start_ns"] - l["t_sent_ns"]
    qerr.append(abs(r["queue_ns"] - expect))
    # the handshake completes as the client connects, just before it sends
    aerr.append(abs(r["accept_wait_ns"] - (t["t_accept_ns"] - l["t_sent_ns"])))
    if r["queue_ns"] < 10e6:
        errs.append(f"{rid}: queue_ns {r['queue_ns']/1e6:.1f} ms: the backlog wait is missing")
qerr.sort()
aerr.sort()
if aerr:
    print(f"measured: accept_wait_ns vs client send->server accept over {len(aerr)}: "
          f"p50 {aerr[len(aerr)//2]/1e3:.1f}us max {aerr[-1]/1e3:.1f}us")
    if aerr[-1] > 1e6:
        errs.append(f"accept_wait_ns off by {aerr[-1]/1e3:.0f}us")
if qerr:
    print(f"measured: queue_ns vs client send->server read over {len(qerr)}: "
          f"p50 {qerr[len(qerr)//2]/1e3:.1f}us max {qerr[-1]/1e3:.1f}us")
    if qerr[-1] > 1e6:
        errs.append(f"queue_ns off by {qerr[-1]/1e3:.0f}us")
for e in errs:
    print("FAIL:", e)
sys.exit(1 if errs else 0)
PY
