# Time a request waited in the kernel before the server read it. tokensim's accept loop
# sleeps before each accept(), so new connections and their request bytes sit in the
# backlog: queue_ns must show that wait, measured against the client's send time (on
# loopback the bytes arrive within microseconds of it), and accept_wait_ns the time from
# the handshake (inside the client's connect()) to accept(), inside the interval the
# client's and the server's clock reads around those calls allow.
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
errs, qerr, aerr, awidth = [], [], [], []
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
    # from the handshake to accept(): on loopback the server's side of the handshake
    # completes inside the client's connect() (the ACK is processed as it is sent), and
    # tokentrace's accept is inside tokensim's accept4() call; a client preempted between
    # its connect and its send is why the send's time is not the handshake's
    if l["t_connect_ns"] is None:
        errs.append(f"{rid}: tokenload says it reused a connection (--no-keepalive)")
        continue
    lo = t["t_accept_call_ns"] - l["t_connected_ns"]
    hi = t["t_accept_ns"] - l["t_connect_ns"]
    aw = r["accept_wait_ns"]
    awidth.append(hi - lo)
    aerr.append(lo - aw if aw < lo else aw - hi if aw > hi else 0)
    if r["queue_ns"] < 10e6:
        errs.append(f"{rid}: queue_ns {r['queue_ns']/1e6:.1f} ms: the backlog wait is missing")
qerr.sort()
aerr.sort()
if aerr:
    awidth.sort()
    print(f"measured: accept_wait_ns vs the client's connect() and the server's accept4() "
          f"over {len(aerr)}: interval widths p50 {awidth[len(awidth)//2]/1e3:.1f}us max "
          f"{awidth[-1]/1e3:.1f}us, outside by max {aerr[-1]/1e3:.1f}us")
    if aerr[-1] > 0:
        errs.append(f"accept_wait_ns outside the truth's interval by {aerr[-1]/1e3:.1f}us")
if qerr:
    print(f"measured: queue_ns vs client send->server read over {len(qerr)}: "
          f"p50 {qerr[len(qerr)//2]/1e3:.1f}us max {qerr[-1]/1e3:.1f}us")
    if qerr[-1] > 1e6:
        errs.append(f"queue_ns off by {qerr[-1]/1e3:.0f}us")
for e in errs:
    print("FAIL:", e)
sys.exit(1 if errs else 0)
PY
