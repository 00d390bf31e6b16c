#!/usr/bin/env python3
"""Threads in known Python places, for tests/e2e/pystack.sh.

  spin_cpu       pure Python on CPU (needs the GIL)
  sleep_in_here  blocked in time.sleep
  hold_gil       holds the GIL in one long C call (sum over a range: no bytecode runs, so
                 the GIL is never dropped inside it), then sleeps a little
  wait_for_gil   wakes every 2 ms and needs the GIL: waits for it while hold_gil has it

The truth file (JSON lines) says what each thread is (native thread ids), which source lines
each function's marked statements are on (read from this file, not hard-coded), when each
thread entered its function (from then on it stays there until the end), and every interval
hold_gil spent inside its C call, on CLOCK_MONOTONIC.
"""
import argparse
import json
import os
import sys
import threading
import time

STOP = False


def spin_cpu(entered):
    entered()
    x = 0
    while not STOP:  # @spin
        x += 1  # @spin
    return x


def sleep_in_here(entered):
    entered()
    while not STOP:
        time.sleep(0.05)  # @sleep


def hold_gil(entered, hold_ms, log):
    entered()
    n = calibrate(hold_ms)
    while not STOP:
        t0 = time.monotonic_ns()
        sum(range(n))  # @hold
        t1 = time.monotonic_ns()
        log({"type": "hold", "t0_ns": t0, "t1_ns": t1})
        # the machine is shared: keep each hold near hold_ms whatever else runs
        n = int(n * min(2.0, max(0.5, hold_ms * 1e6 / max(1, t1 - t0))))
        time.sleep(0.1)


def wait_for_gil(entered):
    entered()
    while not STOP:
        time.sleep(0.002)  # @wait


def marked_lines():
    """{"spin": [lines], ...} from the '# @tag' marks of this file."""
    marks = {}
    with open(__file__, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            code, sep, tag = line.partition("# @")
            if sep and code.strip() and tag.strip().isalpha():
                marks.setdefault(tag.strip(), []).append(no)
    return marks


def calibrate(hold_ms):
    """A range length whose sum takes about hold_ms here."""
    n = 1 << 18
    while True:
        t0 = time.monotonic_ns()
        sum(range(n))
        dt = time.monotonic_ns() - t0
        if dt > 20e6 or n > 1 << 30:
            return max(1, int(n * hold_ms * 1e6 / dt))
        n *= 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--hold-ms", type=float, default=250.0)
    ap.add_argument("--truth", required=True)
    a = ap.parse_args()
    global STOP
    out = open(a.truth, "w", encoding="utf-8")
    lock = threading.Lock()

    def log(obj):
        with lock:
            out.write(json.dumps(obj) + "\n")
            out.flush()

    tids = {}
    started = threading.Barrier(5)

    def run(role, fn, *args):
        tids[role] = threading.get_native_id()
        started.wait()
        fn(lambda: log({"type": "entered", "role": role, "t_ns": time.monotonic_ns()}), *args)

    roles = [("spin", spin_cpu), ("sleep", sleep_in_here), ("hold", hold_gil, a.hold_ms, log),
             ("wait", wait_for_gil)]
    threads = [threading.Thread(target=run, args=(r[0], *r[1:]), name=r[0]) for r in roles]
    for t in threads:
        t.start()
    started.wait()
    log({"type": "start", "pid": os.getpid(), "tids": tids,
         "main_tid": threading.get_native_id(), "file": os.path.abspath(__file__),
         "lines": marked_lines(), "t_ns": time.monotonic_ns()})
    time.sleep(a.seconds)
    STOP = True
    for t in threads:
        t.join()
    log({"type": "end", "t_ns": time.monotonic_ns()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
