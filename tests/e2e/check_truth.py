#!/usr/bin/env python3
"""Compare what tokentrace reported with what tokensim did (its truth file).

Every request of the truth must be reported, found by request id, with exactly the same
number of chunks (and model tokens where the stream carries them); TTFT and every single ITL
must agree within the tolerance at the 99th percentile. Prints the measured errors as
'measured:' lines; exits 1 with the reasons on the first mismatch class.
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("truth")
    ap.add_argument("trace")
    ap.add_argument("--tol-us", type=float, default=200.0, help="p99 tolerance, microseconds")
    ap.add_argument("--min-requests", type=int, default=1)
    ap.add_argument("--expect-format", default=None)
    ap.add_argument("--tokens", action="store_true", help="model tokens must match the truth")
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
    ttft_err, itl_err = [], []
    for t in truth:
        rid = t["request_id"]
        r = by_id.get(rid)
        if r is None:
            errors.append(f"{rid}: in the truth, not reported")
            continue
        if r["chunks"] != t["chunks"]:
            errors.append(f"{rid}: chunks {r['chunks']} != truth {t['chunks']}")
            continue
        if args.tokens and r["tokens"] != t["tokens"]:
            errors.append(f"{rid}: tokens {r['tokens']} != truth {t['tokens']}")
        if args.expect_format and r["format"] != args.expect_format:
            errors.append(f"{rid}: format {r['format']} != {args.expect_format}")
        if r.get("status") != t.get("status", 200):
            errors.append(f"{rid}: status {r.get('status')} != truth {t.get('status')}")
        tt = t["t_token_ns"]
        if not tt:
            continue
        # tokentrace stamps a chunk with the end of the send that carried it; tokensim
        # stamps it just before that send: the difference is the send itself
        ttft_t = tt[0] - t["t_start_ns"]
        if r["ttft_ns"] is None:
            errors.append(f"{rid}: no ttft reported")
            continue
        ttft_err.append(abs(r["ttft_ns"] - ttft_t))
        itl_t = [b - a for a, b in zip(tt, tt[1:])]
        if len(r["itl_ns"]) != len(itl_t):
            errors.append(f"{rid}: {len(r['itl_ns'])} gaps != truth {len(itl_t)}")
            continue
        itl_err += [abs(a - b) for a, b in zip(r["itl_ns"], itl_t)]

    if len(truth) < args.min_requests:
        errors.append(f"truth has {len(truth)} requests, expected >= {args.min_requests}")
    tol = args.tol_us * 1000
    for name, e in (("ttft", ttft_err), ("itl", itl_err)):
        if e:
            print(f"measured: {name} error vs truth over {len(e)} samples: "
                  f"p50 {pct(e, 50) / 1e3:.1f}us p99 {pct(e, 99) / 1e3:.1f}us "
                  f"max {max(e) / 1e3:.1f}us")
            if pct(e, 99) > tol:
                errors.append(f"{name} error p99 {pct(e, 99) / 1e3:.1f}us > {args.tol_us}us")
    print(f"measured: {len(truth)} truth requests, {len(reqs)} reported")
    if errors:
        for e in errors[:20]:
            print("FAIL:", e)
        if len(errors) > 20:
            print(f"FAIL: ... and {len(errors) - 20} more")
        sys.exit(1)


if __name__ == "__main__":
    main()
