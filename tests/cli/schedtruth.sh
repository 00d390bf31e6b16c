# The e2e checkers' truth for a stall nobody injected (tests/e2e/schedtruth.py): its sampler
# records a thread that really waited for a CPU (two spinners on one CPU: each waits while
# the other runs), and its check confirms a stall tokentrace says was that wait only when
# the kernel's account agrees: a claim longer than the kernel saw, a window the sampler
# stretched, or another cause each fails. Root-free.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$(mktemp -d)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; rm -rf "$W"' EXIT
cpu=$(taskset -pc $$ | sed 's/.*: *//; s/[,-].*//')
for i in 1 2; do
	taskset -c "$cpu" sh -c 'while :; do :; done' &
	PIDS+=($!)
done
python3 "$ROOT/tests/e2e/schedtruth.py" sample "$W/s.jsonl" "${PIDS[0]}" &
SAMPLER=$!
t0=$(python3 -c 'import time; print(time.monotonic_ns())')
sleep 1
t1=$(python3 -c 'import time; print(time.monotonic_ns())')
kill -TERM "$SAMPLER"
wait "$SAMPLER"
python3 - "$ROOT/tests/e2e" "$W/s.jsonl" "${PIDS[0]}" "$t0" "$t1" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import schedtruth as st
truth = st.load(sys.argv[2])
tid, t0, t1 = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
waited, window = truth.waited(tid, t0 + 200_000_000, t1 - 200_000_000)
# sharing one CPU with another spinner, it waits about half of the time
span = t1 - t0 - 400_000_000
assert 0.2 * span < waited <= window, (waited, window, span)
print(f"ok: a spinner sharing its CPU waited {waited / 1e6:.0f} ms of {span / 1e6:.0f} ms, "
      "by the sampler's record")

def stall(cause, hop_ns, a, b):
    return {"cause": cause, "t_start_ns": a, "t_end_ns": b, "gap_ns": b - a,
            "chain": [{"tid": tid, "cause": cause, "ns": hop_ns}]}

a, b = t0 + 300_000_000, t0 + 400_000_000
got, win = truth.waited(tid, a, b)
assert st.confirm_runqueue(truth, stall("runqueue", got, a, b)) is None, "a true claim refused"
for why, s in (("a longer claim", stall("runqueue", got + 2 * st.AGREE_NS, a, b)),
               ("another cause", stall("on_cpu", got, a, b)),
               ("no record", None)):
    r = st.confirm_runqueue(None if s is None else truth, s or stall("runqueue", got, a, b))
    assert r is not None, f"{why} confirmed"
    print(f"ok: {why} refused: {r}")
# a record whose polls stop: the window around a later gap is not enclosed
late = truth.polls[-1] + 1
assert st.confirm_runqueue(truth, stall("runqueue", 1, late, late + 10)) is not None
print("ok: a gap past the record refused")
PY
