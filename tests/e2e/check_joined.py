#!/usr/bin/env python3
"""tokentrace attached to a server while an HTTP/2 connection of it was already streaming:
what it reports of that connection against the server's truth and the client's log.

Usage: check_joined.py --truth TRUTH --trace TT --client CLIENT --port N [--min-joined N]

The reported streams have no request id to say which call they are (a joined connection's
header table is unknown: x-request-id cannot be decoded), so each is found by its tokens:
the one call for which every token the stream reports lies between that call's hand-off and
the client's receive of the same token, counting from the call's end (what was seen is the
end of a stream begun before). Then, each a FAIL line:
  - every stream is one call, none two; none invented;
  - every call with a token handed off after tokentrace was ready is reported;
  - a stream begun before tokentrace came says joined:true, its TTFT null, its path empty
    and listed unknown (or the call's), its status the call's or null, and counts at least
    every token handed off after the ready time; a stream begun after is joined:false with
    every token of the call, its t_start between the client's send and the first hand-off;
  - each that ended says complete and grpc_status as the client saw it.
Prints 'measured:' lines. Exits 1 on any failure.
"""
import argparse
import json
import sys


def load(path, typ=None):
    with open(path) as f:
        out = [json.loads(line) for line in f if line.strip()]
    return [o for o in out if typ is None or o.get("type") == typ]


def times(r):
    t = [r["t_first_token_ns"]] if r.get("t_first_token_ns") is not None else []
    for g in r.get("itl_ns") or []:
        t.append(t[-1] + g)
    return t


def fits(tt, t, c):
    """tt (a stream's token times) are the last len(tt) tokens of call t/c?"""
    hand, got = t["t_token_ns"], c.get("t_chunk_ns") or []
    k, n = len(tt), len(hand)
    if not k or k > n or len(got) != n:
        return False
    return all(hand[n - k + i] <= tt[i] <= got[n - k + i] for i in range(k))


def check_one(r, t, c, ready, errs):
    rid = t["request_id"]
    k, n = r["chunks"], t["chunks"]
    after = sum(1 for h in t["t_token_ns"] if h >= ready)
    if r["joined"]:
        if r.get("ttft_ns") is not None:
            errs.append(f"{rid}: joined, yet a TTFT {r['ttft_ns']}")
        if r["path"] not in ("", t["path"]) or (not r["path"] and "path" not in r["unknown"]):
            errs.append(f"{rid}: joined: path {r['path']!r}, unknown {r['unknown']}")
        if k < after:
            errs.append(f"{rid}: joined: {k} tokens reported, {after} handed off after ready")
    else:
        if k != n:
            errs.append(f"{rid}: begun after the attach: {k} tokens, the call had {n}")
        if not (c["t_sent_ns"] <= (r.get("t_start_ns") or 0) <= t["t_token_ns"][0]):
            errs.append(f"{rid}: t_start {r.get('t_start_ns')} not between the client's send "
                        f"{c['t_sent_ns']} and the first hand-off {t['t_token_ns'][0]}")
    if r["status"] not in (None, 200):
        errs.append(f"{rid}: status {r['status']}")
    if not r["complete"] or r["grpc_status"] not in (None, c["grpc_status"]):
        errs.append(f"{rid}: complete {r['complete']} grpc_status {r['grpc_status']}, the "
                    f"client got {c['grpc_status']}")
    if r["grpc_status"] is None and "grpc_status" not in r["unknown"]:
        errs.append(f"{rid}: no grpc_status, and not said unknown")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--truth", required=True)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--client", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--min-joined", type=int, default=1)
    a = ap.parse_args()
    truth = {t["request_id"]: t for t in load(a.truth)}
    clients = {c["request_id"]: c for c in load(a.client)}
    ready = load(a.trace, "ready")[0]["t_ns"]
    reqs = [r for r in load(a.trace, "request")
            if r["conn"].split("-")[0].endswith(f":{a.port}")]
    errs, used, joined = [], {}, 0
    for r in reqs:
        tt = times(r)
        cands = [rid for rid, t in truth.items() if rid in clients and fits(tt, t, clients[rid])]
        what = f"stream {r['conn_id']}/{r['stream_id']}"
        if len(cands) != 1:
            errs.append(f"{what}: {len(tt)} tokens fit {len(cands)} calls {cands[:4]}")
            continue
        rid = cands[0]
        if rid in used:
            errs.append(f"{what}: call {rid} already reported as stream {used[rid]}")
            continue
        used[rid] = r["stream_id"]
        joined += r["joined"]
        check_one(r, truth[rid], clients[rid], ready, errs)
    for rid, t in truth.items():
        if rid not in used and any(h >= ready for h in t["t_token_ns"]):
            errs.append(f"{rid}: handed off tokens after tokentrace was ready, not reported")
    print(f"measured: {len(truth)} calls, {len(reqs)} streams reported ({joined} joined "
          f"mid-way), {len(used)} found by their tokens")
    if joined < a.min_joined:
        errs.append(f"rig: {joined} streams joined mid-way, expected >= {a.min_joined}")
    for e in errs[:30]:
        print("FAIL:", e)
    sys.exit(1 if errs else 0)


if __name__ == "__main__":
    main()
