#!/usr/bin/env python3
"""Compare tokentrace's report on a real stack with the server's truth and the client's log.

Usage:
  check_stack.py --truth TRUTH.jsonl --trace TT.jsonl --client LOAD.jsonl [--client ...]
                 [--port N] [--allow-truncated] [--min-requests N] [--min-complete N]
                 [--min-aborted N] [--expect-format sse|ndjson]

  TRUTH   the server's own log, one line per request (tests/stacks: TRUTH.md; tokensim's
          truth works too): request_id, chunks, tokens, count_on_wire, aborted, t_token_ns[]
          (hand-off: the clock just before the chunk went to the HTTP stack), pid if known
  TT      tokentrace --json output; its "request" lines are checked
  LOAD    tokenload --out files (t_chunk_ns[]: when the client read each content chunk)
  --port  the traced server's local port: only reported requests on it are checked (a
          proxy's upstream calls are left to --expect-paired); without it, every reported
          request must be in the truth
  --client-count N  a client that logs no request of its own (h2load: counts only) made
          N of the truth's requests, all successful: the truth's requests no client log
          has must be exactly N, each taken as ended, with no receive-time bound
  --proxy the traced process is a proxy in front of the truth's server (its pid is not the
          truth's): every request checked is a downstream stream paired with its upstream
          call (upstream.paired_by set)

What must hold, each failure a FAIL line:
  - every truth request is reported, found by its request id, once, by the server's pid;
    every reported request (on --port) is in the truth;
  - chunks exactly the truth's; for a stream the client abandoned, between what the client
    read and what the server handed over (its last hand-offs can meet a closed socket);
    tokens the truth's where the stream carries a count and the client got the stream's end
    (a count comes with the end);
  - complete:true and aborted:false exactly when the client got the stream's end (status 200,
    no error, not abandoned, and the stream's own end event read: tokenload's "final");
    aborted:true, complete not true, exactly when the client abandoned the stream midway;
  - truncated:false unless --allow-truncated; lost:false; e2e_ns present when complete;
  - with --drops (records dropped on purpose): a request flagged lost, or not reported at
    all, is exempt from the rest; the drops happened, the summary's lost_requests is the
    flagged count, lost_events covers the ring's drops, requests never seen come with
    drops counted between requests, and no parse error came of them;
  - with --budget N (tokentrace ran with --budget N, under a load over it): a request not
    reported is exempt, and each is counted left out by the budget, none more (the
    summary's left_out_by_budget is exactly the truth's unreported requests); some were
    (else the test forced nothing); nothing was lost; and the sends and reads delivered
    kept to the budget: at most N a second over the trace, plus the burst of a second's
    worth, plus what the exchanges in flight could still send once let in and what the
    connections had not paid for yet (each of --concurrency connections pays for an
    exchange at its next: two exchanges each, of a request's read and a send per chunk and
    three more);
  - per token i: hand-off <= tokentrace's send time <= the client's receive time, where
    tokentrace's send time is t_first_token_ns + sum(itl_ns[:i]) (the receive bound for the
    chunks the client read);
  - with --grpc (tests/stacks/grpc: HTTP/2, a token per message): the client got the call's
    end when its status came (OK or not), and then complete:true, grpc_status and
    grpc_message the client's and the server's, error exactly when the status is not OK;
    a cancelled call is aborted (client_closed) with no status; every request says
    http_version "2", a stream_id and format "grpc"; each stall the server injected between
    two tokens of a stream whose gap the stall rule calls a stall is reported after that
    token, and no stall is reported where the server injected none (--min-stalls N: at
    least N found).
Rig problems (a client request the server never logged, a client error) are FAIL lines
prefixed "rig:". Prints 'measured:' lines: p50/p99/max of tokentrace minus hand-off and of
client receive minus tokentrace. Exits 1 on any failure.
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
                sys.exit(f"FAIL: {path}:{n}: not JSON ({e})")
            if typ is None or o.get("type") == typ:
                out.append(o)
    return out


def pct(v, p):
    v = sorted(v)
    k = max(0, min(len(v) - 1, int(-(-p * len(v) // 100)) - 1))
    return v[k]


def local_port(conn):
    """'127.0.0.1:8000-127.0.0.1:51234' or '[::1]:8000-[::1]:5123' -> 8000; None if not TCP."""
    if not isinstance(conn, str) or "-" not in conn:
        return None
    local = conn.split("-", 1)[0]
    head, _, port = local.rpartition(":")
    return int(port) if head and port.isdigit() else None


def us(ns):
    return f"{ns / 1e3:.1f}us"


def kind_of(err):
    """An error message without its request id and numbers: what rule it broke."""
    words = err.split(": ", 1)[-1] if not err.startswith("rig:") else err
    return "".join("#" if ch.isdigit() else ch for ch in words)[:60]


def client_got_end(c, grpc=False):
    if grpc:	# the call's status came: its end, whatever the status says
        return not c.get("aborted") and c.get("grpc_status") is not None
    return (c.get("status") == 200 and not c.get("aborted") and c.get("error") is None
            and c.get("final", True))


def grpc_gates(rid, r, t, c, ended, errs):
    """--grpc: the stream, its status, and the server's injected stalls"""
    if r.get("http_version") != "2" or not r.get("stream_id") or r.get("format") != "grpc":
        errs.append(f"{rid}: http_version {r.get('http_version')} stream_id "
                    f"{r.get('stream_id')} format {r.get('format')}: not a gRPC stream")
    if ended:
        for k in ("grpc_status", "grpc_message"):
            if r.get(k) != c.get(k) or r.get(k) != t.get(k):
                errs.append(f"{rid}: {k} {r.get(k)!r}, client {c.get(k)!r}, server "
                            f"{t.get(k)!r}")
        if r.get("error") != (c.get("grpc_status") != 0):
            errs.append(f"{rid}: error {r.get('error')} with grpc_status {c.get('grpc_status')}")
    elif c.get("aborted") and (r.get("abort_reason") != "client_closed" or
                               r.get("grpc_status") is not None):
        errs.append(f"{rid}: cancelled: abort_reason {r.get('abort_reason')}, grpc_status "
                    f"{r.get('grpc_status')}")
    # the stall rule (README: over max(5 x the median of the last 32 gaps, 50 ms)) applied
    # to the gaps measured, checked above against the server's and the client's clocks:
    # each injected stall the rule calls one is reported there, and no other gap is
    after = {st["after_token"] for st in r.get("stalls") or []}
    injected = {st.get("before_chunk", 0) for st in t.get("stalls") or []}
    itl = r.get("itl_ns") or []
    found = 0
    for k in range(1, len(itl) + 1):
        prev = sorted(itl[max(0, k - 1 - 32):k - 1])
        over = itl[k - 1] > max(5 * prev[len(prev) // 2] if prev else 0, 50_000_000)
        if over and k in injected:
            found += 1
        if over and k in injected and k not in after:
            errs.append(f"{rid}: the server stalled before token {k + 1}, a gap of "
                        f"{itl[k - 1] / 1e6:.0f}ms: no stall reported after token {k}")
        if k in after and k not in injected:
            errs.append(f"{rid}: a stall after token {k} that the server did not make")
    return found


def drop_gates(final, n_lost, n_unseen, n_truth, errs):
    """--drops: the drops happened, were counted, and broke nothing that was not flagged"""
    if final is None:
        errs.append("no final summary")
        return
    rb = final["lost"]["ringbuf"]
    between = final["lost_between_requests"]
    print(f"measured: ring buffer drops {rb}, lost_events {final['lost_events']}; of "
          f"{n_truth} requests {n_lost} flagged lost, {n_unseen} not seen at all; losses "
          f"between requests {between}; parse errors {final['parse_errors']}")
    if not rb:
        errs.append("rig: no record was dropped: the test forced nothing")
    if rb and not n_lost and not n_unseen:
        errs.append(f"{rb} records dropped and no request touched")
    if final["lost_requests"] != n_lost:
        errs.append(f"the summary counts {final['lost_requests']} requests with events lost, "
                    f"{n_lost} of the truth's say lost")
    # a request never seen: its loss is told by a later record of its connection (counted
    # between requests: the loss crossed a request and its answer, or nothing was in flight
    # when told, or it came on a state record), or never, if its close was lost too
    # (the connection ends orphaned)
    if n_unseen and not between and not final["lost"]["conns_orphaned"]:
        errs.append(f"{n_unseen} requests never seen, and no loss counted between requests")
    if final["lost_events"] < rb:
        errs.append(f"lost_events {final['lost_events']} < the ring's drops {rb}")
    # after a drop the kernel sends nothing more of that run: parsing starts over at the
    # next message, never inside the response the drop hit
    if final["parse_errors"]:
        errs.append(f"{final['parse_errors']} parse errors after drops")


def budget_gates(final, budget, concurrency, n_unseen, truth, errs):
    """--budget: whole requests left out, each counted, and the rate kept"""
    if final is None:
        errs.append("no final summary")
        return
    left, recs, secs = final["left_out_by_budget"], final["data_records"], final["interval_s"]
    # in flight when the budget ran out: let in, never cut; and a connection pays for an
    # exchange at its next one, so one more each; a read and a send a chunk each, at most
    flight = 2 * concurrency * (1 + max((t["chunks"] for t in truth), default=0) + 3)
    bound = budget * secs + budget + flight
    print(f"measured: budget {budget}/s over {secs:.2f}s: {recs} sends and reads delivered "
          f"({recs / secs if secs else 0:.0f}/s; bound {bound:.0f}), {left} requests left "
          f"out ({final['left_out_records']} sends and reads not sent), {n_unseen} not "
          f"reported")
    if not left:
        errs.append("rig: the budget left nothing out: the test forced nothing")
    if left != n_unseen:
        errs.append(f"{left} requests counted left out by the budget, {n_unseen} of the "
                    f"truth's not reported")
    if recs > bound:
        errs.append(f"{recs} sends and reads delivered in {secs:.2f}s: over the budget's "
                    f"{bound:.0f}")
    if final["lost_events"] or final["lost_requests"] or final["lost_between_requests"]:
        errs.append(f"losses under the budget: {final['lost_events']} events, "
                    f"{final['lost_requests']} requests, {final['lost_between_requests']} "
                    f"between requests")
    if final["parse_errors"]:
        errs.append(f"{final['parse_errors']} parse errors")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--truth", required=True)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--client", action="append", default=[])
    ap.add_argument("--port", type=int)
    ap.add_argument("--allow-truncated", action="store_true")
    ap.add_argument("--min-requests", type=int, default=1)
    ap.add_argument("--min-complete", type=int, default=0)
    ap.add_argument("--min-aborted", type=int, default=0)
    ap.add_argument("--expect-format")
    ap.add_argument("--budget", type=int,
                    help="tokentrace ran with --budget N over it: see --budget above")
    ap.add_argument("--concurrency", type=int, default=1,
                    help="with --budget: the client's connections")
    ap.add_argument("--drops", action="store_true",
                    help="the ring dropped records on purpose: see DROPS below")
    ap.add_argument("--grpc", action="store_true", help="a gRPC stack: see --grpc above")
    ap.add_argument("--client-count", type=int, default=0)
    ap.add_argument("--proxy", action="store_true")
    ap.add_argument("--min-stalls", type=int, default=0,
                    help="with --grpc: injected stalls the stall rule must find, at least")
    a = ap.parse_args()

    truth = load(a.truth)
    reqs = load(a.trace, "request")
    summaries = load(a.trace, "summary")
    clients = [o for p in a.client for o in load(p)]
    errs = []

    if a.port is not None:
        reqs = [r for r in reqs if local_port(r.get("conn")) in (a.port, None)]
    by_id = {}
    for r in reqs:
        rid = r.get("request_id")
        if rid in by_id:
            errs.append(f"{rid}: reported twice")
        by_id[rid] = r
    t_by_id = {t["request_id"]: t for t in truth}
    c_by_id = {}
    for c in clients:
        if c["request_id"] in c_by_id:
            errs.append(f"rig: {c['request_id']}: twice in the client logs")
        c_by_id[c["request_id"]] = c

    for rid, r in by_id.items():
        if rid in t_by_id:
            continue
        if a.port is not None and local_port(r.get("conn")) not in (a.port, None):
            continue
        errs.append(f"{rid}: reported (conn {r.get('conn')}, {r.get('path')}), not in the truth")
    for rid, c in c_by_id.items():
        if rid not in t_by_id:
            errs.append(f"rig: {rid}: the client sent it, the server did not log it "
                        f"(client error {c.get('error')})")

    to_tt, tt_to_client = [], []
    n_complete = n_aborted = n_unseen = n_lost = n_stalls = n_counted = 0
    for t in truth:
        rid = t["request_id"]
        r, c = by_id.get(rid), c_by_id.get(rid)
        if c is None and n_counted < a.client_count:
            # one of the counting client's: it said they all succeeded
            n_counted += 1
            c = {"request_id": rid, "status": 200, "final": True, "grpc_status": 0}
        if c is None:
            errs.append(f"rig: {rid}: in the truth, not in the client logs")
            continue
        ended, abandoned = client_got_end(c, a.grpc), bool(c.get("aborted"))
        if not ended and not abandoned:
            errs.append(f"rig: {rid}: the client got neither the end nor left on purpose "
                        f"(status {c.get('status')}, error {c.get('error')})")
        if abandoned and not t.get("aborted"):
            errs.append(f"rig: {rid}: the client left midway, the server did not see it")
        n_complete += ended
        n_aborted += abandoned
        if r is None:
            if a.drops or a.budget:
                n_unseen += 1	# its records among the drops; counted on the connection
                continue
            errs.append(f"{rid}: in the truth, not reported")
            continue
        if a.drops and r.get("lost"):
            n_lost += 1	# flagged: its numbers are not claimed
            continue
        if "pid" in t and r.get("pid") != t["pid"] and not a.proxy:
            errs.append(f"{rid}: pid {r.get('pid')} != truth {t['pid']}")
        if r.get("status") != t.get("status", 200):
            errs.append(f"{rid}: status {r.get('status')} != truth {t.get('status')}")
        if a.expect_format and r.get("format") != a.expect_format:
            errs.append(f"{rid}: format {r.get('format')} != {a.expect_format}")
        if a.grpc:
            n_stalls += grpc_gates(rid, r, t, c, ended, errs)
        if a.proxy and not (r.get("upstream") or {}).get("paired_by"):
            errs.append(f"{rid}: not paired with its upstream call")
        # a stream the client left: the server's last hand-offs may have met a closed
        # socket and never become a send; what the client read was sent, at least
        if abandoned:
            if not c.get("chunks", 0) <= r["chunks"] <= t["chunks"]:
                errs.append(f"{rid}: abandoned after {c.get('chunks')} chunks read, server "
                            f"handed over {t['chunks']}: {r['chunks']} reported")
        elif r["chunks"] != t["chunks"]:
            errs.append(f"{rid}: chunks {r['chunks']} != truth {t['chunks']}"
                        f" (complete {r.get('complete')}, aborted {r.get('aborted')},"
                        f" truncated {r.get('truncated')})")
        if t.get("count_on_wire") and ended and r.get("tokens") != t["tokens"]:
            errs.append(f"{rid}: tokens {r.get('tokens')} != truth {t['tokens']}")
        if ended and (r.get("complete") is not True or r.get("aborted") is not False):
            errs.append(f"{rid}: the client got the stream's end; reported complete "
                        f"{r.get('complete')} aborted {r.get('aborted')} "
                        f"({r.get('abort_reason')})")
        if abandoned and (r.get("aborted") is not True or r.get("complete") is True):
            errs.append(f"{rid}: the client left after {c['chunks']} chunks; reported "
                        f"aborted {r.get('aborted')} complete {r.get('complete')}")
        if r.get("truncated") and not a.allow_truncated:
            errs.append(f"{rid}: truncated")
        if r.get("lost"):
            errs.append(f"{rid}: lost records")
        if r.get("complete") and r.get("e2e_ns") is None:
            errs.append(f"{rid}: complete without e2e_ns")

        # per token: hand-off <= tokentrace's send <= the client's read
        hand = t.get("t_token_ns") or []
        itl = r.get("itl_ns") or []
        if abandoned:
            hand = hand[:r["chunks"]]
        if not hand or r["chunks"] != len(hand):
            continue
        if r.get("t_first_token_ns") is None or len(itl) != len(hand) - 1:
            errs.append(f"{rid}: {len(itl)} gaps and t_first_token_ns "
                        f"{r.get('t_first_token_ns')} for {len(hand)} chunks")
            continue
        got = c.get("t_chunk_ns") or []
        s = r["t_first_token_ns"]
        for i, h in enumerate(hand):
            if i:
                s += itl[i - 1]
            to_tt.append(s - h)
            if s < h:
                errs.append(f"{rid}: chunk {i}: tokentrace send {us(h - s)} before the "
                            f"server handed it over")
            if i < len(got):
                tt_to_client.append(got[i] - s)
                if got[i] < s:
                    errs.append(f"{rid}: chunk {i}: tokentrace send {us(s - got[i])} after "
                                f"the client read it")

    if len(truth) < a.min_requests:
        errs.append(f"rig: truth has {len(truth)} requests, expected >= {a.min_requests}")
    if n_complete < a.min_complete:
        errs.append(f"rig: the client got {n_complete} streams' ends, expected >= "
                    f"{a.min_complete}")
    if a.grpc:
        print(f"measured: {n_stalls} injected stalls over the stall rule, each reported")
    if n_counted != a.client_count:
        errs.append(f"rig: the counting client made {a.client_count} requests, "
                    f"{n_counted} of the truth's are in no client log")
    if a.min_stalls and n_stalls < a.min_stalls:
        errs.append(f"rig: {n_stalls} injected stalls over the stall rule, expected >= "
                    f"{a.min_stalls}")
    if n_aborted < a.min_aborted:
        errs.append(f"rig: the client left {n_aborted} streams midway, expected >= "
                    f"{a.min_aborted}")
    final = [s for s in summaries if s.get("final")]
    if a.budget:
        budget_gates(final[-1] if final else None, a.budget, a.concurrency, n_unseen, truth,
                     errs)
    if a.drops:
        drop_gates(final[-1] if final else None, n_lost, n_unseen, len(truth), errs)
    elif final and final[-1].get("lost_events"):
        lost = final[-1]["lost"]
        # probe runs the kernel skipped (a program re-entered from an interrupt on its CPU:
        # the scheduler's hooks) are counted, and tell no request; every other loss fails,
        # and a skipped data probe would show in the requests checked above
        other = {k: v for k, v in lost.items() if v and k != "probe_misses"}
        if other:
            errs.append(f"tokentrace lost {final[-1]['lost_events']} events: {other}")
        else:
            print(f"note: {lost['probe_misses']} probe runs skipped by the kernel (counted)")

    print(f"measured: {len(truth)} truth requests ({n_complete} ended, {n_aborted} left "
          f"midway by the client), {len(reqs)} reported, "
          f"{sum(1 for r in reqs if r.get('complete'))} complete, "
          f"{sum(1 for r in reqs if r.get('aborted'))} aborted, "
          f"{sum(1 for r in reqs if r.get('truncated'))} truncated")
    for name, v in (("tokentrace send - hand-off", to_tt),
                    ("client read - tokentrace send", tt_to_client)):
        if v:
            print(f"measured: {name} over {len(v)} chunks: p50 {us(pct(v, 50))} "
                  f"p99 {us(pct(v, 99))} max {us(max(v))}")
    if errs:
        # a few of each kind: one broken rule should not hide another
        kinds = {}
        for e in errs:
            kinds.setdefault(kind_of(e), []).append(e)
        for k, es in kinds.items():
            for e in es[:4]:
                print("FAIL:", e)
            if len(es) > 4:
                print(f"FAIL: ... and {len(es) - 4} more like that ({k})")
        sys.exit(1)


if __name__ == "__main__":
    main()
