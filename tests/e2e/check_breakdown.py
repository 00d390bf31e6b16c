#!/usr/bin/env python3
"""TTFT breakdown from markers against tokensim's truth.

For every request: admit_ns, prefill_ns and emit_to_wire_ns agree with what tokensim
recorded within the tolerance at p99, their sum equals ttft_ns exactly, and per-token
emit-to-wire delays exist for every chunk.

Each stamp tokensim records is an interval, not a point: a marker fires between the clock
read before its call and the one after it (t_admit_ns..t_admit_end_ns,
t_produced_ns[0]..t_first_end_ns), the first token's send between t_token_ns[0] and
t_token_end_ns[0]. A preemption inside one widens it (one of 40 admit stamps was 312 us from
the clock read before the call in a CI run), and tokentrace's stamp is right anywhere in it.
A part is the difference of two stamps, so its truth is the interval [x0 - y1, x1 - y0]; the
error is the distance from it.
"""
import argparse
import json
import sys


def pct(v, p):
    v = sorted(v)
    return v[max(0, min(len(v) - 1, -(-p * len(v) // 100) - 1))] if v else 0


def dist(v, x, y):
    """how far v is from the truth of x - y, x and y each an interval (lo, hi)"""
    lo, hi = x[0] - y[1], x[1] - y[0]
    return lo - v if v < lo else v - hi if v > hi else 0


ap = argparse.ArgumentParser()
ap.add_argument("truth")
ap.add_argument("trace")
ap.add_argument("--tol-us", type=float, default=200)
ap.add_argument("--label", default="")
a = ap.parse_args()
truth = {o["request_id"]: o for o in map(json.loads, open(a.truth)) if o.get("stream")}
reqs = [o for o in map(json.loads, open(a.trace)) if o.get("type") == "request"]
errs, diffs = [], {"admit": [], "prefill": [], "emit": []}
for r in reqs:
    t = truth.get(r["request_id"])
    if not t:
        continue
    for f in ("admit_ns", "prefill_ns", "emit_to_wire_ns"):
        if r[f] is None:
            errs.append(f"{r['request_id']}: {f} missing")
    if any(r[f] is None for f in ("admit_ns", "prefill_ns", "emit_to_wire_ns")):
        continue
    if r["admit_ns"] + r["prefill_ns"] + r["emit_to_wire_ns"] != r["ttft_ns"]:
        errs.append(f"{r['request_id']}: admit+prefill+emit != ttft")
    if r["markers_made"] != t["chunks"]:
        errs.append(f"{r['request_id']}: {r['markers_made']} token markers, {t['chunks']} chunks")
    admit = (t["t_admit_ns"], t.get("t_admit_end_ns") or t["t_admit_ns"])
    made = (t["t_produced_ns"][0], t.get("t_first_end_ns") or t["t_produced_ns"][0])
    sent = (t["t_token_ns"][0], (t.get("t_token_end_ns") or t["t_token_ns"])[0])
    start = (t["t_start_ns"], t["t_start_ns"])
    diffs["admit"].append(dist(r["admit_ns"], admit, start))
    diffs["prefill"].append(dist(r["prefill_ns"], made, admit))
    diffs["emit"].append(dist(r["emit_to_wire_ns"], sent, made))
if len([r for r in reqs if r["request_id"] in truth]) != len(truth):
    errs.append(f"{len(truth)} streamed requests in the truth, not all reported")
for k, v in diffs.items():
    if not v:
        errs.append(f"no {k} samples")
        continue
    print(f"measured: {a.label} {k} error vs truth over {len(v)}: p50 {pct(v, 50)/1e3:.1f}us "
          f"p99 {pct(v, 99)/1e3:.1f}us max {max(v)/1e3:.1f}us")
    if pct(v, 99) > a.tol_us * 1000:
        errs.append(f"{k} error p99 {pct(v, 99)/1e3:.1f}us > {a.tol_us}us")
for e in errs[:20]:
    print("FAIL:", e)
sys.exit(1 if errs else 0)
