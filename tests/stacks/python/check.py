#!/usr/bin/env python3
"""Compare tokentrace's requests with the Python stack's truth and with what tokenload got.

  check.py TRUTH TRACE LOAD [--min-requests N] [--expect-aborts] [--expect-bursts]

For every request of the server's truth (joined by X-Request-Id):
- tokentrace reported it, once, and the client logged it;
- aborted as the client did it: the truth and tokentrace say aborted exactly for the
  requests tokenload closed early; a full stream is complete:true, aborted:false;
- chunks: a full stream's chunks equal the truth's; an aborted one lies between what the
  client received and what the server handed over;
- tokens: a full stream that carried usage reports the truth's model tokens;
- E2E is present;
- t_start: tokentrace's (the read that completed the request) is not after the handler's;
- per token, hand-off (server clock before the yield) <= tokentrace's send time
  (t_first_token_ns + sum of the ITLs before it) <= the client's receive time.
--expect-bursts: the truth must show bursts (sends of several events over 4096 bytes),
else the run did not test what it meant to. Without injection the truth must hold no stalls
(--allow-stalls KINDS for the kinds a run injects).
Prints 'measured:' lines; 'FAIL:' lines and exit 1 on any failure.
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
                sys.exit(f"{path}:{n}: not JSON ({e})")
            if typ is None or o.get("type") == typ:
                out.append(o)
    return out


def by_id(rows, what):
    out = {}
    for r in rows:
        rid = r.get("request_id")
        if rid in out:
            sys.exit(f"FAIL: {what}: request id {rid} twice")
        out[rid] = r
    return out


def send_times(r):
    t = r.get("t_first_token_ns")
    if t is None:
        return []
    out = [t]
    for g in r.get("itl_ns") or []:
        t += g
        out.append(t)
    return out


class Check:
    """One named check: how many requests it failed for, how badly, a few examples."""

    def __init__(self, name):
        self.name = name
        self.checked = 0
        self.failed = 0
        self.examples = []
        self.worst = 0

    def ok(self, cond, rid, msg, by=0):
        self.checked += 1
        if cond:
            return True
        self.failed += 1
        self.worst = max(self.worst, by)
        if len(self.examples) < 3:
            self.examples.append(f"{rid}: {msg}")
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("truth")
    ap.add_argument("trace")
    ap.add_argument("load")
    ap.add_argument("--min-requests", type=int, default=1)
    ap.add_argument("--expect-aborts", action="store_true",
                    help="the client aborted some requests on purpose")
    ap.add_argument("--expect-bursts", action="store_true")
    ap.add_argument("--allow-stalls", default="", help="comma-separated stall kinds injected")
    args = ap.parse_args()

    truth = load(args.truth)
    trace = by_id(load(args.trace, "request"), "tokentrace")
    client = by_id(load(args.load), "tokenload")
    allowed = set(filter(None, args.allow_stalls.split(",")))

    checks = {n: Check(n) for n in (
        "found", "aborted", "complete", "chunks", "tokens", "e2e", "t_start", "causality",
        "truth_stalls", "stall_truth")}
    handoff_late = []	# ns by which tokentrace's send time preceded the hand-off
    recv_early = []	# ns by which the client received before tokentrace's send time
    lead = []		# tokentrace send - hand-off, for the record
    n_aborted = n_bursts = max_burst = 0
    for t in truth:
        rid = t["request_id"]
        c = client.get(rid)
        r = trace.get(rid)
        if not checks["found"].ok(r is not None and c is not None, rid,
                                  "not in tokentrace's output" if r is None
                                  else "not in the client log"):
            continue
        cut = bool(c.get("aborted"))
        n_aborted += cut
        n_bursts += t.get("burst_sends", 0)
        max_burst = max(max_burst, t.get("max_bytes_per_send", 0))
        bad = [s["kind"] for s in t.get("stalls", []) if s["kind"] not in allowed]
        checks["truth_stalls"].ok(not bad, rid, f"stalls nobody injected: {bad}")
        # the truth itself: a stall's before_chunk is the first chunk the client got after it
        got = c.get("t_chunk_ns") or []
        for s in t.get("stalls", []) if not cut else []:
            bc = s["before_chunk"]
            if bc >= len(got):
                continue
            checks["stall_truth"].ok((bc == 0 or got[bc - 1] < s["t_end_ns"])
                                     and got[bc] >= s["t_end_ns"], rid,
                                     f"{s['kind']} before_chunk {bc} does not match when the "
                                     f"client received the chunks around it")
        checks["aborted"].ok(t["aborted"] == cut and r["aborted"] == cut, rid,
                             f"client aborted={cut}, truth {t['aborted']}, "
                             f"tokentrace {r['aborted']}")
        if not cut:
            checks["complete"].ok(r.get("complete") is True, rid,
                                  f"complete={r.get('complete')} for a full stream")
            checks["chunks"].ok(r["chunks"] == t["chunks"], rid,
                                f"chunks {r['chunks']} != truth {t['chunks']}",
                                abs(r["chunks"] - t["chunks"]))
            if t.get("count_on_wire"):
                checks["tokens"].ok(r["tokens"] == t["tokens"], rid,
                                    f"tokens {r['tokens']} != truth {t['tokens']}",
                                    abs((r["tokens"] or 0) - t["tokens"]))
        else:
            checks["chunks"].ok(c["chunks"] <= r["chunks"] <= t["chunks"], rid,
                                f"aborted: chunks {r['chunks']} outside client "
                                f"{c['chunks']} .. truth {t['chunks']}")
        checks["e2e"].ok(isinstance(r.get("e2e_ns"), int) and r["e2e_ns"] > 0, rid,
                         f"e2e_ns {r.get('e2e_ns')}")
        checks["t_start"].ok(r["t_start_ns"] <= t["t_start_ns"], rid,
                             f"t_start {(r['t_start_ns'] - t['t_start_ns']) / 1e3:.0f}us "
                             f"after the handler's", r["t_start_ns"] - t["t_start_ns"])
        sends = send_times(r)
        hand = t["t_token_ns"]
        recv = c.get("t_chunk_ns") or []
        n = min(len(sends), len(hand), len(recv))
        worst_msg = None
        worst = 0
        for i in range(n):
            lead.append(sends[i] - hand[i])
            if sends[i] < hand[i]:
                handoff_late.append(hand[i] - sends[i])
                if hand[i] - sends[i] > worst:
                    worst = hand[i] - sends[i]
                    worst_msg = (f"token {i}: tokentrace send {worst / 1e3:.0f}us before "
                                 f"the server handed it over")
            if sends[i] > recv[i]:
                recv_early.append(sends[i] - recv[i])
                if sends[i] - recv[i] > worst:
                    worst = sends[i] - recv[i]
                    worst_msg = (f"token {i}: tokentrace send {worst / 1e3:.0f}us after "
                                 f"the client received it")
        if n < len(hand) and not cut:
            worst_msg = worst_msg or f"only {n} of {len(hand)} tokens comparable"
        checks["causality"].ok(worst_msg is None, rid, worst_msg or "", worst)

    errors = []
    if len(truth) < args.min_requests:
        errors.append(f"truth has {len(truth)} requests, expected >= {args.min_requests}")
    if args.expect_aborts and not n_aborted:
        errors.append("the client aborted nothing: the run did not test aborts")
    if not args.expect_aborts and n_aborted:
        errors.append(f"the client aborted {n_aborted} requests unasked")
    if args.expect_bursts and not (n_bursts and max_burst > 4096):
        errors.append(f"no burst over 4096 bytes in the truth (burst_sends {n_bursts}, "
                      f"largest {max_burst} bytes): the run did not test bursts")

    print(f"measured: {len(truth)} truth requests, {len(trace)} reported, {len(client)} in "
          f"the client log, {n_aborted} aborted by the client; truth burst_sends {n_bursts}, "
          f"largest send {max_burst} bytes")
    if lead:
        lead.sort()
        print(f"measured: tokentrace send - hand-off over {len(lead)} tokens: p50 "
              f"{lead[len(lead) // 2] / 1e3:.0f}us min {lead[0] / 1e3:.0f}us "
              f"max {lead[-1] / 1e3:.0f}us; send before hand-off {len(handoff_late)}, "
              f"after client receive {len(recv_early)}")
    for ch in checks.values():
        print(f"measured: check {ch.name}: {ch.checked - ch.failed}/{ch.checked} requests ok"
              + (f", worst off by {ch.worst if ch.name in ('chunks', 'tokens') else ch.worst / 1e3:.0f}"
                 f"{'' if ch.name in ('chunks', 'tokens') else 'us'}" if ch.failed and ch.worst
                 else ""))
        if ch.failed:
            errors.append(f"{ch.name}: {ch.failed} of {ch.checked} requests: "
                          + "; ".join(ch.examples))
    for e in errors:
        print("FAIL:", e)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
