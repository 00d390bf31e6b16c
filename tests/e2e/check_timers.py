#!/usr/bin/env python3
"""A server that sleeps in a timer between tokens (Go's time.Sleep in the generating
goroutine, Node's setTimeout in the async generator): is every such stall reported as the
server idle, waiting for a timer?

  check_timers.py TRUTH TRACE PID [--native] [--sched FILE]

--native: the stalls are a thread held in a blocking syscall instead (Go's deviceWait, a
nanosleep as a driver call would be): each must be reported with a thread of the server
blocked (sleep) for >= 80% of the gap (less the kernel's count of its wait for a CPU in it,
with --sched), its user stack naming the function the truth names
under the syscall's wrapper (syscall.Nanosleep), the native stack walked from the exit.
A stall tokentrace calls unknown (no counters for the thread over the gap), in either kind
of phase, is said with tokentrace's loss counters, and fails.

The truth (tests/stacks/go, tests/stacks/node) lists each request's injected stalls, with
the index of the first chunk after each. For every one tokentrace must report a stall in
the same place (after_token == before_chunk) whose cause is idle, whose chain stays in the
server (pid), reaches a thread woken by a timer, and holds >= 80% of the gap as idle (of
the gap less the time the kernel's run queue says the chain's threads waited for a CPU); the
parts must add up to the gap. A stall where the truth has none is a false alarm, unless it
is a wait for a CPU the kernel's own run-queue account confirms (--sched: schedtruth.py's
record of the server's threads; a busy machine does stall a server). Prints 'measured:'
lines, 'FAIL:' lines and exits 1 on a failure.
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import schedtruth  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("truth")
    ap.add_argument("trace")
    ap.add_argument("pid", type=int)
    ap.add_argument("--native", action="store_true")
    ap.add_argument("--sched", help="schedtruth.py's record of the server's threads")
    a = ap.parse_args()
    truth_path, trace_path, pid, native = a.truth, a.trace, a.pid, a.native
    sched = schedtruth.load(a.sched) if a.sched else None
    cpu_waits = []
    truth = [json.loads(l) for l in open(truth_path) if l.strip()]
    reqs = {o["request_id"]: o for o in map(json.loads, open(trace_path))
            if o.get("type") == "request" and o.get("request_id")}
    errs, shares, seen, unknown = [], [], 0, []
    for t in truth:
        r = reqs.get(t["request_id"])
        if r is None:
            errs.append(f"{t['request_id']}: not reported")
            continue
        stalls = {s["after_token"]: s for s in r["stalls"]}
        for ts in t.get("stalls", []):
            if ts["before_chunk"] == 0:	# in the TTFT: no gap between tokens
                continue
            seen += 1
            where = f"{t['request_id']} stall before chunk {ts['before_chunk']}"
            s = stalls.pop(ts["before_chunk"], None)
            if s is None:
                errs.append(f"{where}: not reported (tokentrace has {sorted(stalls)})")
                continue
            parts = s["parts_ns"]
            # on a busy machine part of the gap is the server's threads waiting for a CPU
            # after the timer or the syscall: the kernel's own account of that wait (never
            # tokentrace's) is left out of the share
            rest = max(s["gap_ns"] - (schedtruth.waited_in_gap(sched, s) or 0), 1)
            if any(h["pid"] != pid for h in s["chain"]):
                errs.append(f"{where}: the chain leaves the server: {s['explain']}")
            # tokentrace saying it does not know is a miss, not a wrong blame: counted and
            # said, and a failure (a thread with no counters
            # over the gap, seen in CI about once a full run, in either kind of phase)
            if s["cause"] == "unknown" and all(h["cause"] == "unknown" for h in s["chain"]):
                unknown.append(where)
                continue
            if native:
                # the thread held in the syscall: the stall's own, or the one its chain
                # followed to (the sending thread woken by it)
                held = [h for h in s["chain"] if h["cause"] == "sleep"]
                share = max((h["ns"] for h in held), default=0) / rest
                shares.append(share)
                # "...`syscall.Nanosleep <- go-server`main.deviceWait": the wrapper's caller
                want = r"`syscall\.Nanosleep <- \S+`" + re.escape(ts["function"]) + r"( |$)"
                if not held or share < 0.8:
                    errs.append(f"{where}: no thread blocked (sleep) for 80% of the gap "
                                f"({share:.0%}): {s['explain']}")
                elif not re.search(want, s["stack"] or ""):
                    errs.append(f"{where}: the stack does not name {ts['function']} under "
                                f"syscall.Nanosleep: {s['stack']}")
            else:
                share = parts["idle"] / rest
                shares.append(share)
                if s["cause"] != "idle" or share < 0.8:
                    errs.append(f"{where}: cause {s['cause']}, idle {share:.0%} of the gap: "
                                f"{s['explain']}")
                if not any(h["woken_by"] == "timer" for h in s["chain"]):
                    errs.append(f"{where}: no thread woken by a timer: {s['explain']}")
            if sum(parts.values()) != s["gap_ns"]:
                errs.append(f"{where}: parts add up to {sum(parts.values())}, the gap is "
                            f"{s['gap_ns']}")
        for after, s in stalls.items():
            why = schedtruth.confirm_runqueue(sched, s)
            if why is None:
                cpu_waits.append(s)
                continue
            errs.append(f"{t['request_id']}: a stall after token {after} the server did not "
                        f"inject ({why}): {s['explain']}")
    if unknown:
        # what tokentrace counted: records dropped, switches it did not see or mended
        fin = [o for o in map(json.loads, open(trace_path))
               if o.get("type") == "summary" and o.get("final")]
        said = (f"lost {fin[-1]['lost']}, switches mended {fin[-1]['switches_mended']}"
                if fin else "no final summary")
        print(f"measured: {len(unknown)} of {seen} stalls not explained (unknown): {unknown}; "
              f"tokentrace's counts: {said}")
    if unknown:
        errs.append(f"{len(unknown)} stalls unknown to tokentrace")
    if not seen:
        errs.append("the truth holds no stall: the run tested nothing")
    if cpu_waits:
        gaps = ", ".join(f"{s['gap_ns'] / 1e6:.0f} ms" for s in cpu_waits)
        print(f"measured: {len(cpu_waits)} stalls nobody injected, each a wait for a CPU the "
              f"kernel's run queue confirms: {gaps}")
    for e in errs[:12]:
        print("FAIL:", e)
    if shares:
        shares.sort()
        what = "blocked-syscall stalls" if native else "timer stalls"
        part = "the held thread's sleep" if native else "idle"
        print(f"measured: {seen} {what}, {len(shares)} reported; {part} share of the gap "
              f"min {shares[0]:.1%} median {shares[len(shares) // 2]:.1%}")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
