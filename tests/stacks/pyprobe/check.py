#!/usr/bin/env python3
"""Check pydriver's records of busy.py against what busy.py says about itself.

  check.py TRUTH.jsonl DRIVER.jsonl

busy.py's truth: its threads' native ids, the lines of its marked statements (read from its
own source), when each thread entered its function (records of a thread before that are of
its way there, and left out), and each interval hold_gil spent inside its long C call. What
must hold:
  - CPU samples of spin_cpu's thread name spin_cpu at one of its loop's lines, in busy.py;
  - samples of hold_gil's thread inside its C call name hold_gil at the call's line, holding
    the GIL;
  - every blocking switch-out of sleep_in_here's thread in a sleep names sleep_in_here at
    the time.sleep line;
  - wait_for_gil's thread, blocked on the GIL inside a hold interval, names wait_for_gil and
    hold_gil's thread as the holder; no GIL wait ever names the waiter as the holder;
  - pysamples' summary of spin_cpu's thread puts spin_cpu first.
"""
import json
import sys

NR_SLEEPS = {35, 230}	# nanosleep, clock_nanosleep (x86-64)
MIN_SHARE = 0.9		# of a thread's records that must name the right place
# Inside a hold interval. Before the call the holder may still drop the GIL between its clock
# read and the call, and wait a few switch intervals (5 ms) to get it back. After it, the
# holder drops the GIL at once to a waiter that asked for it, and reads its clock only once it
# has it back: t1 is late by a switch interval or two.
MARGIN_NS = 30_000_000
END_MARGIN_NS = 12_000_000


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    truth, recs = load(sys.argv[1]), load(sys.argv[2])
    start = next(o for o in truth if o["type"] == "start")
    holds = [(o["t0_ns"] + MARGIN_NS, o["t1_ns"] - END_MARGIN_NS) for o in truth
             if o["type"] == "hold" and o["t1_ns"] - o["t0_ns"] > 2 * MARGIN_NS]
    tids, lines, path = start["tids"], start["lines"], start["file"]
    entered = {o["role"]: o["t_ns"] for o in truth if o["type"] == "entered"}
    errs = [f"{r} never entered its function" for r in tids if r not in entered]

    def in_hold(ts):
        return any(a <= ts <= b for a, b in holds)

    def leaf(o):
        return tuple(o["frames"][0]) if o["frames"] else ("", "", -1)

    def at(o, fn, tag):
        name, file, line = leaf(o)
        return name == fn and file == path and line in lines[tag]

    def share(what, rs, ok, need):
        good = sum(1 for o in rs if ok(o))
        print(f"measured: {what}: {good}/{len(rs)} right")
        if len(rs) < need:
            errs.append(f"{what}: {len(rs)} records, want at least {need}")
        elif good < MIN_SHARE * len(rs):
            bad = next(o for o in rs if not ok(o))
            errs.append(f"{what}: only {good}/{len(rs)} right; e.g. {json.dumps(bad)[:400]}")

    samples = [o for o in recs if o["type"] == "sample"]
    blocked = [o for o in recs if o["type"] == "blocked"]
    by = lambda rs, role: [o for o in rs if o["tid"] == tids[role] and
                           o["ts"] > entered.get(role, 1 << 63)]
    print(f"measured: {len(samples)} samples, {len(blocked)} blocked records, "
          f"{len(holds)} hold intervals")

    share("spin_cpu samples at its loop", by(samples, "spin"),
          lambda o: at(o, "spin_cpu", "spin"), 10)
    share("hold_gil samples inside its C call, holding the GIL",
          [o for o in by(samples, "hold") if in_hold(o["ts"])],
          lambda o: at(o, "hold_gil", "hold") and o["flags"] & 0x20, 5)
    share("sleep_in_here blocked in its sleep",
          [o for o in by(blocked, "sleep") if o["sysnr"] in NR_SLEEPS and o["gil"] == "none"],
          lambda o: at(o, "sleep_in_here", "sleep"), 3)
    share("wait_for_gil waiting for the GIL held by hold_gil's thread",
          [o for o in by(blocked, "wait") if o["gil"] == "wait" and in_hold(o["ts"])],
          lambda o: at(o, "wait_for_gil", "wait") and o["gil_holder"] == tids["hold"], 3)
    selfheld = [o for o in blocked if o["gil"] == "wait" and o["gil_holder"] == o["tid"]]
    if selfheld:
        errs.append(f"{len(selfheld)} GIL waits name the waiter as the holder, e.g. "
                    f"{json.dumps(selfheld[0])[:300]}")
    # busy.py's main thread holds the GIL too: when its long sleep ends it stops and joins
    # the others, inside the window when tracing started late on a loaded machine
    named = set(tids.values()) | {start["main_tid"]}
    stray = [o for o in blocked if o["gil"] == "wait" and o["gil_holder"] not in named]
    if stray:
        errs.append(f"{len(stray)} GIL waits name a holder that is not one of busy.py's "
                    f"threads {sorted(named)}, e.g. {json.dumps(stray[0])[:300]}")

    top = next((o for o in recs if o["type"] == "top" and o["tid"] == tids["spin"]), None)
    if not top or not top["entries"]:
        errs.append("no pysamples summary for spin_cpu's thread")
    else:
        t = top["entries"][0]
        print(f"measured: pysamples top of spin_cpu's thread: {t['name']} {t['share']:.2f}")
        if not t["name"].startswith("spin_cpu (busy.py:") or t["share"] < MIN_SHARE:
            errs.append(f"pysamples top of spin_cpu's thread: {t}")
    stats = next((o for o in recs if o["type"] == "stats"), None)
    if not stats:
        errs.append("no stats from pydriver")
    else:
        print("measured: kernel side: " + ", ".join(f"{k} {v}" for k, v in stats.items()
                                                   if k != "type"))
    for e in errs:
        print("FAIL:", e)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
