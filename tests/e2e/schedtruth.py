#!/usr/bin/env python3
"""The kernel's own account of each server thread's wait for a CPU, as ground truth for a
stall nobody injected: on a busy machine a server thread can wait 100 ms for a CPU, and
tokentrace is right to report it; the server's truth file does not know of it, this does.

  schedtruth.py sample OUT PID...   until SIGTERM: every 3 ms, each thread's run_delay (the
                                    second field of /proc/PID/task/TID/schedstat, ns spent
                                    runnable and waiting) for PID and its descendants, on
                                    CLOCK_MONOTONIC (tokentrace's clock). OUT gets a
                                    ["p", ts] line per poll and a ["d", ts, tid, delay] line
                                    per change.

As a module: load(path) and confirm_runqueue(truth, stall) for the checkers. The kernel adds
a wait to run_delay when the thread gets a CPU, so a wait inside [t0, t1] is in the growth
between the last poll at or before t0 and the first at or after t1.
"""
import bisect
import json
import os
import signal
import sys
import time

POLL_S = 0.003
# the sampler is itself a thread that can wait for a CPU: a window it stretched past the
# gap by more than this confirms nothing (the stall then fails)
WINDOW_SLACK_NS = 10_000_000
# tokentrace's runqueue starts at the wake, the kernel's at the enqueue that follows it
AGREE_NS = 1_000_000


def threads_of(pid, out):
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return
    for tid in tids:
        out.add(int(tid))
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids = f.read().split()
        except OSError:
            continue
        for k in kids:
            if int(k) not in out:
                threads_of(int(k), out)


def sample(out_path, pids):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    # each thread's file kept open and read again from its start: a poll is one pread a
    # thread, cheap enough not to load the machine it watches
    last, fds, rescan = {}, {}, 0.0
    with open(out_path, "w") as out:
        while not stop:
            now = time.monotonic()
            if now >= rescan:	# threads and children come and go: look again each 100 ms
                tids = set()
                for p in pids:
                    threads_of(p, tids)
                for tid in set(fds) - tids:
                    os.close(fds.pop(tid))
                for tid in tids - set(fds):
                    try:
                        fds[tid] = os.open(f"/proc/{tid}/schedstat", os.O_RDONLY)
                    except OSError:
                        pass
                rescan = now + 0.1
            for tid, fd in list(fds.items()):
                try:
                    delay = int(os.pread(fd, 64, 0).split()[1])
                except (OSError, IndexError, ValueError):	# gone: its file says so
                    os.close(fds.pop(tid))
                    continue
                if last.get(tid) != delay:
                    last[tid] = delay
                    out.write(json.dumps(["d", time.monotonic_ns(), tid, delay]) + "\n")
            out.write(json.dumps(["p", time.monotonic_ns()]) + "\n")
            time.sleep(POLL_S)


class Truth:
    def __init__(self, polls, changes):
        self.polls = polls		# sorted poll times
        self.changes = changes		# tid -> sorted [(ts, delay)]

    def delay_at(self, tid, ts):
        """run_delay as the last change at or before ts left it (None: not seen yet)"""
        ch = self.changes.get(tid, [])
        i = bisect.bisect_right(ch, (ts, float("inf")))
        return ch[i - 1][1] if i else None

    def waited(self, tid, t0, t1):
        """(ns the kernel says tid waited for a CPU in a window holding [t0, t1], the
        window's length), or None when the polls do not enclose it"""
        i = bisect.bisect_right(self.polls, t0)
        j = bisect.bisect_left(self.polls, t1)
        if i == 0 or j == len(self.polls):
            return None
        w0, w1 = self.polls[i - 1], self.polls[j]
        a, b = self.delay_at(tid, w0), self.delay_at(tid, w1)
        if b is None:
            return None
        return b - (a or 0), w1 - w0


def load(path):
    polls, changes = [], {}
    for line in open(path):
        try:
            o = json.loads(line)
        except ValueError:	# the sampler killed mid-line
            continue
        if o[0] == "p":
            polls.append(o[1])
        else:
            changes.setdefault(o[2], []).append((o[1], o[3]))
    for v in changes.values():
        v.sort()
    polls.sort()
    return Truth(polls, changes)


def waited_in_gap(truth, s):
    """ns the threads of stall s's chain waited for a CPU within its gap by the kernel's
    account (capped at the gap); None without a record, or with one too coarse to say"""
    if truth is None:
        return None
    total = 0
    for tid in {h["tid"] for h in s["chain"]}:
        got = truth.waited(tid, s["t_start_ns"], s["t_end_ns"])
        if got is None or got[1] > s["gap_ns"] + WINDOW_SLACK_NS:
            return None
        total += got[0]
    return min(total, s["gap_ns"])


def confirm_runqueue(truth, s):
    """None when a stall tokentrace names as a wait for a CPU is one by the kernel's own
    account (every runnable hop's thread waited at least that long, to within AGREE_NS, in a
    window no longer than the gap and WINDOW_SLACK_NS); else why not"""
    if truth is None:
        return "no record of the machine's run queue to check it by"
    if s["cause"] != "runqueue":
        return f"its cause is {s['cause']}, not a wait for a CPU"
    hops = [h for h in s["chain"] if h["cause"] == "runqueue"]
    if not hops:
        return "no hop of its chain waits for a CPU"
    for h in hops:
        got = truth.waited(h["tid"], s["t_start_ns"], s["t_end_ns"])
        if got is None:
            return f"thread {h['tid']} has no run-queue record around the gap"
        waited, window = got
        if window > s["gap_ns"] + WINDOW_SLACK_NS:
            return (f"the run-queue record's window ({window / 1e6:.1f} ms) is too wide "
                    f"for the gap ({s['gap_ns'] / 1e6:.1f} ms)")
        if waited + AGREE_NS < h["ns"]:
            return (f"thread {h['tid']} waited {waited / 1e6:.1f} ms for a CPU by the "
                    f"kernel's account, tokentrace says {h['ns'] / 1e6:.1f} ms")
    return None


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] != "sample":
        sys.exit(__doc__)
    sample(sys.argv[2], [int(p) for p in sys.argv[3:]])
