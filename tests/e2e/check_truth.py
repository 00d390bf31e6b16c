#!/usr/bin/env python3
"""Compare what tokentrace reported with what tokensim did (its truth file).

Every request of the truth must be reported, found by request id, with exactly the same
number of chunks (and model tokens where the stream carries them); TTFT and every single ITL
must agree with the truth's own clock: every one of them, not a percentile.

When a token was sent is an interval: tokensim reads its clock just before the send syscall
(t_token_ns) and right after it returned (t_token_end_ns); tokentrace stamps it inside the
syscall, when the socket layer is done with the bytes. The error of a token time is its
distance from that interval (0 inside it), and an ITL's error is its distance from the range
the two intervals allow. A token pinned to the wrong send is off by a whole ITL, far outside.
The tolerance is the truth's: the interval its two clock reads bracket around the send, nothing
added (--tol-us 0 by default; only tools/bench, which checks counts, widens it). The raw
difference from the before-send clock (the loopback send itself, tokensim preempted) is only
printed. A request tokentrace reports that the server never served fails the check. Prints 'measured:' lines; exits 1 on a failure.
"""
import argparse
import json
import sys


def load(path, typ=None):
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                o = json.loads(line)
            except ValueError as e:
                sys.exit(f"{path}:{n}: not JSON ({e}): {line[:120]}")
            if typ is None or o.get("type") == typ:
                out.append(o)
    return out


def pct(v, p):
    if not v:
        return 0
    v = sorted(v)
    k = max(0, min(len(v) - 1, int(-(-p * len(v) // 100)) - 1))
    return v[k]


def dist(v, lo, hi):
    """How far v is from the interval [lo, hi]."""
    return lo - v if v < lo else v - hi if v > hi else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("truth")
    ap.add_argument("trace")
    ap.add_argument("--tol-us", type=float, default=0.0,
                    help="microseconds a token may lie outside its send's interval (the "
                    "bench's count checks only; tests leave it 0)")
    ap.add_argument("--raw-tol-us", type=float, default=None,
                    help="ignored (the raw distances are only printed now)")
    ap.add_argument("--min-requests", type=int, default=1)
    ap.add_argument("--expect-format", default=None)
    ap.add_argument("--tokens", action="store_true", help="model tokens must match the truth")
    ap.add_argument("--no-timing", action="store_true",
                    help="counts only")
    args = ap.parse_args()

    truth = load(args.truth)
    reqs = load(args.trace, "request")
    by_id = {}
    for r in reqs:
        rid = r.get("request_id")
        if rid in by_id:
            sys.exit(f"FAIL: request id {rid} reported twice")
        by_id[rid] = r

    errors = []
    truth_ids = {t["request_id"] for t in truth}
    for rid in by_id:
        if rid not in truth_ids:
            errors.append(f"{rid}: reported, but the server never served it")
    ttft_err, itl_err, tok_raw, start_raw, early_tok, late_start = [], [], [], [], [], []
    for t in truth:
        rid = t["request_id"]
        r = by_id.get(rid)
        if r is None:
            errors.append(f"{rid}: in the truth, not reported")
            continue
        if r["chunks"] != t["chunks"]:
            errors.append(f"{rid}: chunks {r['chunks']} != truth {t['chunks']}")
            continue
        # model tokens: exact where the stream says how many it sent
        if args.tokens and t.get("count_on_wire", True) and r["tokens"] != t["tokens"]:
            errors.append(f"{rid}: tokens {r['tokens']} != truth {t['tokens']}")
        if args.expect_format and r["format"] != args.expect_format:
            errors.append(f"{rid}: format {r['format']} != {args.expect_format}")
        if r.get("status") != t.get("status", 200):
            errors.append(f"{rid}: status {r.get('status')} != truth {t.get('status')}")
        lo = t["t_token_ns"]
        hi = t.get("t_token_end_ns") or lo
        if not lo:
            continue
        if r["ttft_ns"] is None:
            errors.append(f"{rid}: no ttft reported")
            continue
        # TTFT's two ends, each against the server's own clocks: the first token's stamp in
        # its send's interval (below), and the read stamp at or before tokensim's clock
        # after that read returned (t_start_ns). Their difference is when tokensim got the
        # request back from the kernel, which tokentrace sees and tokensim cannot.
        if r.get("t_first_token_ns") is not None:
            ttft_err.append(dist(r["t_first_token_ns"], lo[0], hi[0]))
        if r.get("t_start_ns") is not None:
            start_raw.append(t["t_start_ns"] - r["t_start_ns"])
            if r["t_start_ns"] > t["t_start_ns"]:
                late_start.append(f"{rid}: read stamped {(r['t_start_ns'] - t['t_start_ns']) / 1e3:.1f}us "
                                  "after the server had it")
        if len(r["itl_ns"]) != len(lo) - 1:
            errors.append(f"{rid}: {len(r['itl_ns'])} gaps != truth {len(lo) - 1}")
            continue
        for i, g in enumerate(r["itl_ns"]):
            itl_err.append(dist(g, lo[i + 1] - hi[i], hi[i + 1] - lo[i]))
        # each token's own stamp against the clock tokensim read just before its send
        if r.get("t_first_token_ns") is not None:
            s = r["t_first_token_ns"]
            for i in range(len(lo)):
                if i:
                    s += r["itl_ns"][i - 1]
                tok_raw.append(s - lo[i])
                if s < lo[i]:
                    early_tok.append(f"{rid}: token {i} stamped {(lo[i] - s) / 1e3:.1f}us "
                                     "before the server's send began")

    if len(truth) < args.min_requests:
        errors.append(f"truth has {len(truth)} requests, expected >= {args.min_requests}")
    tol = args.tol_us * 1000
    for name, e in (("first token", ttft_err), ("itl", itl_err)):
        if e:
            print(f"measured: {name} error vs truth over {len(e)} samples: "
                  f"p50 {pct(e, 50) / 1e3:.1f}us p99 {pct(e, 99) / 1e3:.1f}us "
                  f"max {max(e) / 1e3:.1f}us")
            bad = [x for x in e if x > tol]
            if bad and not args.no_timing:
                errors.append(f"{name}: {len(bad)} of {len(e)} outside the truth's send "
                              f"interval, by up to {max(bad) / 1e3:.1f}us")
    # every stamp against the server's own clock: a token never before its send began, a
    # request never read after the server had it (same clock: no tolerance); and the
    # distances, whose medians catch noise or a late stamp on every token (their tails are
    # preemptions between the server's clock read and its syscall on a loaded machine)
    for name, raw in (("token stamp - before-send clock", tok_raw),
                      ("server's after-read clock - read stamp", start_raw)):
        if raw:
            print(f"measured: {name} over {len(raw)}: p50 {pct(raw, 50) / 1e3:.1f}us "
                  f"p99 {pct(raw, 99) / 1e3:.1f}us max {max(raw) / 1e3:.1f}us")
    errors += early_tok + late_start
    print(f"measured: {len(truth)} truth requests, {len(reqs)} reported")
    if errors:
        for e in errors[:20]:
            print("FAIL:", e)
        if len(errors) > 20:
            print(f"FAIL: ... and {len(errors) - 20} more")
        sys.exit(1)


if __name__ == "__main__":
    main()
