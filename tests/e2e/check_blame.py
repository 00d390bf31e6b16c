#!/usr/bin/env python3
"""Does tokentrace blame the stall the server injected? Truth against trace, per stall.

  check_blame.py TRUTH TRACE KIND [CROSS] [--sched FILE]

The truth (tests/stacks/python: server.py and engine.py) lists for each request the stalls
it injected: kind, the pid and tid of the thread that stalled, its Python function, its
start and end (CLOCK_MONOTONIC), the index of the first chunk after it, and for a lock the
thread that held it and what it did. For every such stall tokentrace must report a stall
in the same place (after_token == before_chunk) whose chain reaches that very thread
(pid, tid), in the cause the kind is (or runnable, when the machine is busy and most of the
stall went waiting for a CPU), in that Python function, for as long as the stall overlapped
the gap less what the thread spent runnable; and the stall's own cause must be the kind's.
In the engine, the hop that crosses from the API server into the engine process must have
been woken by data on a Unix socket (ZMQ's ipc://), or as CROSS says (loopback_tcp: tcp://). A stall tokentrace reports where the
truth has none is a false alarm: a failure too, unless it is a wait for a CPU the kernel's
own run-queue account confirms (--sched: schedtruth.py's record of the stack's threads).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import schedtruth  # noqa: E402

# kind -> (cause of the thread that stalled, cause of the whole stall)
EXPECT = {
    "engine_cpu": ("on_cpu", "on_cpu"),
    "engine_sleep": ("sleep", "sleep"),
    # the main thread waits at the lock; its holder sleeps with it held: a lock, holder told
    "engine_lock": ("lock", "lock"),
    "api_cpu": ("on_cpu", "on_cpu"),
    "api_sleep": ("sleep", "sleep"),
    # a worker thread holds the GIL in a long C call: the event loop waits for the GIL
    "api_gil": ("on_cpu", "gil"),
}


SLACK_NS = 500000


def func_name(s):
    """'KVSwapper.wait_for_kv (engine.py:112)' -> 'wait_for_kv'"""
    return (s or "").split(" (")[0].split(".")[-1]


def py_summary(text):
    """'ran: a (f.py:3) 62%, b (g.py:9) 30%; thread 7 blocked in c (h.py:4)' ->
    {'ran': 'a', 'blocked': 'c'} (None where the summary has no such part)"""
    out = {"ran": None, "blocked": None}
    for part in (text or "").split("; "):
        if part.startswith("ran: "):
            out["ran"] = func_name(part[len("ran: "):])
        elif " blocked in " in part:
            out["blocked"] = func_name(part.split(" blocked in ", 1)[1])
    return out


def main():
    args, sched = sys.argv[1:], None
    if "--sched" in args:
        i = args.index("--sched")
        sched = schedtruth.load(args[i + 1])
        del args[i:i + 2]
    truth_path, trace_path, kind = args[:3]
    cross_wake = args[3] if len(args) > 3 else "unix_socket"
    cpu_waits = []
    want_hop, want_cause = EXPECT[kind]
    truth = [json.loads(l) for l in open(truth_path) if l.strip()]
    reqs = {}
    for l in open(trace_path):
        o = json.loads(l)
        if o.get("type") == "request" and o.get("request_id"):
            reqs[o["request_id"]] = o
    errs, short, cpu_short, seen, unknown, unknown_stalls = [], [], [], 0, [], set()
    for t in truth:
        r = reqs.get(t["request_id"])
        if r is None:
            errs.append(f"{t['request_id']}: not reported")
            continue
        stalls = {s["after_token"]: s for s in r.get("stalls", [])}
        for ts in t.get("stalls", []):
            # before the first chunk a stall is part of the TTFT: no gap between tokens to
            # explain (another request's stall, shared, can land in this one's prefill)
            if ts["kind"] != kind or ts["before_chunk"] == 0:
                continue
            where = f"{t['request_id']} stall before chunk {ts['before_chunk']}"
            # a stall another request's work caused (a GIL held for another prompt) can land
            # in this stream as a gap under the stall rule (over 5 x the running median and
            # over 50 ms): by the server's own hand-off clock it is no stall here
            c, tok = ts["before_chunk"], t.get("t_token_ns") or []
            if 0 < c < len(tok):
                gaps = sorted(tok[i] - tok[i - 1] for i in range(max(1, c - 32), c))
                thr = max(5 * gaps[len(gaps) // 2], 50_000_000) if gaps else 50_000_000
                if tok[c] - tok[c - 1] <= thr and ts["before_chunk"] not in stalls:
                    print(f"measured: {kind}: {where}: the server's own gap "
                          f"{(tok[c] - tok[c - 1]) / 1e6:.1f} ms is under the stall rule "
                          f"({thr / 1e6:.0f} ms): not one in this stream")
                    continue
            seen += 1
            s = stalls.pop(ts["before_chunk"], None)
            if s is None:
                errs.append(f"{where}: tokentrace reports no stall there "
                            f"(it has {sorted(stalls)})")
                continue
            dur = ts["t_end_ns"] - ts["t_start_ns"]
            hops = s["chain"]
            # tokentrace saying it does not know (the sender's counters missing at the send:
            # a rare gap in the kernel side's bookkeeping, not understood yet) is a miss, not
            # a wrong blame: counted, and a failure (requests due together
            # share one, so several requests may show the same)
            if len(hops) == 1 and hops[0]["cause"] == "unknown" and s["cause"] == "unknown":
                unknown.append(where)
                unknown_stalls.add(ts["t_start_ns"])
                continue
            hi = next((i for i, h in enumerate(hops)
                       if h["pid"] == ts["pid"] and h["tid"] == ts["tid"]), None)
            if hi is None:
                errs.append(f"{where}: the chain does not reach pid {ts['pid']} tid "
                            f"{ts['tid']}: {s['explain']}")
                continue
            h = hops[hi]
            parts = s["parts_ns"]
            runq = parts.get("runqueue", 0)
            # the stall may begin before the gap does (the engine stalls while the front
            # end still sends the token before): what of it lies in the gap
            overlap = (min(ts["t_end_ns"], s["t_end_ns"]) -
                       max(ts["t_start_ns"], s["t_start_ns"]))
            busy = h["cause"] == "runqueue" and parts.get(want_hop, 0) > 0
            if ((h["cause"] != want_hop and not busy) or
                    func_name(h["function"]) != ts["function"]):
                errs.append(f"{where}: thread {ts['tid']} is {h['cause']} in "
                            f"{h['function']}, the truth: {want_hop} in {ts['function']}: "
                            f"{s['explain']}")
            if s["cause"] != want_cause and not (busy and s["cause"] == "runqueue"):
                errs.append(f"{where}: cause {s['cause']}, the truth: {want_cause}: "
                            f"{s['explain']}")
            # Blocked (a sleep, a lock, the GIL): the kernel saw the whole wait, so the
            # thread's time in it is the stall's time in the gap, less only the truth's own
            # brackets (the server's clock reads and calls around the blocking call) and its
            # time runnable on this shared machine. On CPU the truth cannot say how the
            # interpreter split it (its other threads take the GIL every 5 ms), nor when the
            # event loop, idle in epoll at first, began to want the GIL back: measured.
            blocked = hi if want_hop != "on_cpu" else None
            mine = parts.get(want_hop, 0) if busy else h["ns"]
            if blocked is not None:
                b = hops[blocked]["ns"]
                if b + runq < overlap - SLACK_NS or b > s["gap_ns"]:
                    errs.append(f"{where}: {b / 1e6:.3f} ms {hops[blocked]['cause']} "
                                f"(+{runq / 1e6:.3f} ms runnable) for a stall "
                                f"{overlap / 1e6:.3f} ms of which lay in the "
                                f"{s['gap_ns'] / 1e6:.3f} ms gap")
                short.append(overlap - b - runq)
            else:
                cpu_short.append(overlap - mine)
            # the API server waited on the engine's socket: the hop that crosses into the
            # engine process says so (ZMQ's ipc:// is a Unix stream socket), the way a user
            # learns who the front end was waiting for
            if kind.startswith("engine_"):
                cross = next((i for i in range(hi) if hops[i]["pid"] != ts["pid"] and
                              hops[i + 1]["pid"] == ts["pid"]), None)
                if cross is None or hops[cross]["woken_by"] != cross_wake:
                    errs.append(f"{where}: the wait on the engine is not told as "
                                f"{cross_wake} from pid {ts['pid']}: {s['explain']}")
            if kind == "engine_lock":
                n = hops[hi + 1] if hi + 1 < len(hops) else None
                if (not n or n["tid"] != ts["holder_tid"] or n["cause"] != "sleep" or
                        func_name(n["function"]) != ts["holder_function"]):
                    errs.append(f"{where}: the lock's holder (tid {ts['holder_tid']}, "
                                f"sleeping in {ts['holder_function']}) is not told: "
                                f"{s['explain']}")
            if kind == "api_gil" and (hi == 0 or hops[hi - 1]["cause"] != "gil"):
                errs.append(f"{where}: no thread waits for the GIL its holder held: "
                            f"{s['explain']}")
            # the line's Python summary names the same function as the chain, not another
            # block of the same threads later in the gap
            py = py_summary(s.get("python"))
            want = ts.get("holder_function", ts["function"])
            if want_hop == "on_cpu":
                if py["ran"] != want:
                    errs.append(f"{where}: Python says it ran {py['ran']!r} most, the truth: "
                                f"{want}: {s['explain']}")
                if kind != "api_gil" and py["blocked"] is not None:
                    errs.append(f"{where}: Python tells a block ({py['blocked']}) for a "
                                f"stall on CPU: {s['explain']}")
            elif py["blocked"] != want:
                errs.append(f"{where}: Python says blocked in {py['blocked']!r}, the truth: "
                            f"{want}: {s['explain']}")
        for after, s in stalls.items():
            why = schedtruth.confirm_runqueue(sched, s)
            if why is None:
                cpu_waits.append(s)
                continue
            errs.append(f"{t['request_id']}: a stall after token {after} the server did not "
                        f"inject ({why}): {s['explain']}")
    if unknown:
        print(f"measured: {kind}: {len(unknown)} of {seen} stalls not explained (unknown): "
              f"{unknown}")
    if unknown_stalls:
        errs.append(f"{len(unknown_stalls)} injected stalls unknown to tokentrace")
    if not seen:
        errs.append(f"the truth holds no {kind} stall: the run did not test it")
    if cpu_waits:
        gaps = ", ".join(f"{s['gap_ns'] / 1e6:.0f} ms" for s in cpu_waits)
        print(f"measured: {kind}: {len(cpu_waits)} stalls nobody injected, each a wait for "
              f"a CPU the kernel's run queue confirms: {gaps}")
    for e in errs[:12]:
        print("FAIL:", e)
    if short:
        short.sort()
        print(f"measured: {kind}: {len(short)} stalls blamed; the stall's time in the gap "
              f"less the thread's time so accounted: median {short[len(short) // 2] / 1e3:.0f} "
              f"us, max {short[-1] / 1e3:.0f} us")
    if cpu_short:
        cpu_short.sort()
        print(f"measured: {kind}: the stall's time in the gap less the thread's time on CPU: "
              f"median {cpu_short[len(cpu_short) // 2] / 1e3:.0f} us, max "
              f"{cpu_short[-1] / 1e3:.0f} us (the GIL's hand-offs, the run queue)")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
