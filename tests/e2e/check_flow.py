#!/usr/bin/env python3
"""An HTTP/2 stream the client made wait (h2_flow_client.py), as tokentrace reports it.

Usage: check_flow.py --mode window|tcp --truth TRUTH --trace TT --client CLIENT

For the call: reported once by its request id, its messages exact, each between the server's
hand-off and the client's read; then the wait is a stall that spans the client's end of it
(the WINDOW_UPDATE it sent, or the read it resumed), and
  window  its cause is flow_control, on the stream's window, and its flow-control part at
          least the time the client itself knew the window closed (from the read that used
          it up to the update it sent: the server's closed spell holds that one);
  tcp     its cause is not flow_control and has no flow-control part (the windows were as
          large as HTTP/2 allows), and the wait is TCP's: the peer's zero window is said (a
          thread blocked in its send), or the server's thread that waited was woken by TCP
          (the client's ACK once it read: an event loop's non-blocking send waits in its
          poll, where no zero window is seen);
and no other stall of the run is flow control. Exits 1 on any failure.
"""
import argparse
import json
import sys


def load(path, typ=None):
    with open(path) as f:
        out = [json.loads(line) for line in f if line.strip()]
    return [o for o in out if typ is None or o.get("type") == typ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("window", "tcp"), required=True)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--client", required=True)
    a = ap.parse_args()
    errs = []
    reqs = load(a.trace, "request")
    for c in load(a.client):
        rid = c["request_id"]
        t = next(t for t in load(a.truth) if t["request_id"] == rid)
        rs = [r for r in reqs if r.get("request_id") == rid]
        if len(rs) != 1 or c.get("error"):
            errs.append(f"{rid}: reported {len(rs)} times; client error {c.get('error')}")
            continue
        r = rs[0]
        if r["chunks"] != t["chunks"] or c["chunks"] != t["chunks"] or not r["complete"]:
            errs.append(f"{rid}: {r['chunks']} chunks reported, server {t['chunks']}, client "
                        f"{c['chunks']}; complete {r['complete']}")
            continue
        s = r["t_first_token_ns"]
        for i, (h, got) in enumerate(zip(t["t_token_ns"], c["t_chunk_ns"])):
            s += r["itl_ns"][i - 1] if i else 0
            if not h <= s <= got:
                errs.append(f"{rid}: message {i}: hand-off {h} <= tokentrace {s} <= read "
                            f"{got} does not hold")
        p = c["pause"]
        end = p["t_update_ns"] if a.mode == "window" else p["t_to_ns"]
        st = [x for x in r["stalls"] if x["t_start_ns"] <= end <= x["t_end_ns"]]
        if len(st) != 1:
            errs.append(f"{rid}: {len(st)} stalls span the client's pause "
                        f"(stalls {[(x['t_start_ns'], x['t_end_ns']) for x in r['stalls']]})")
            continue
        x = st[0]
        flow = x["parts_ns"]["flow_control"]
        print(f"measured: {a.mode}: stall of {x['gap_ns'] / 1e6:.1f}ms after token "
              f"{x['after_token']}: cause {x['cause']}, flow control {flow / 1e6:.1f}ms, zero "
              f"window {x['zero_window']}; {x['explain'][:100]}")
        if a.mode == "window":
            known = p["t_update_ns"] - p["t_blocked_ns"]
            if x["cause"] != "flow_control" or x["flow_window"] != "stream" or flow < known:
                errs.append(f"{rid}: cause {x['cause']}, window {x['flow_window']}, flow "
                            f"control {flow} ns < the {known} ns the client held it closed")
        elif x["cause"] == "flow_control" or flow or not (x["zero_window"] or any(
                h["woken_by"] in ("network", "loopback_tcp") for h in x["chain"])):
            errs.append(f"{rid}: a slow TCP reader: cause {x['cause']}, flow control {flow} "
                        f"ns, zero window {x['zero_window']}, woken by "
                        f"{[h['woken_by'] for h in x['chain']]}")
    others = [(r["request_id"], x["after_token"]) for r in reqs for x in r["stalls"]
              if x["cause"] == "flow_control"]
    if a.mode == "tcp" and others:
        errs.append(f"flow-control stalls with no window held back: {others}")
    for e in errs:
        print("FAIL:", e)
    sys.exit(1 if errs else 0)


if __name__ == "__main__":
    main()
