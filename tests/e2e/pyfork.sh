# Forked children that exit while tokentrace looks at them (issue 32): a CPython parent,
# traced with -p (children followed), forks 2000 children 4 at a time, each exiting 0-20 ms
# after its fork, so that many go while their interpreter is being read. A process that
# vanished is not a custom build: per child tokentrace says it was forked, that it exited, and
# at most that its Python functions are named; nothing else (no refused layout, no second
# line), and the parent's interpreter is named once.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3	# Debian's CPython 3.11
N=2000
$PY - "$WORK/go" "$N" >"$WORK/parent.out" 2>"$WORK/parent.err" <<'PY' &
import os, random, sys, time
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
random.seed(1)
live = set()
for _ in range(int(sys.argv[2])):
    while len(live) >= 4:
        live.discard(os.wait()[0])
    pid = os.fork()
    if pid == 0:
        time.sleep(random.random() * 0.02)
        os._exit(0)
    live.add(pid)
while live:
    live.discard(os.wait()[0])
print("done", flush=True)
PY
PARENT=$!
PIDS+=("$PARENT")
"$TT" -p "$PARENT" --json >"$WORK/tt.jsonl" 2>"$WORK/tt.err" &
TT_PID=$!
PIDS+=("$TT_PID")
wait_for "$WORK/tt.jsonl" '"type":"ready"' 30 || die "tokentrace not ready: $(cat "$WORK/tt.err")"
touch "$WORK/go"
wait_for "$WORK/parent.out" '^done' 240 || die "the parent did not finish: $(cat "$WORK/parent.err")"
stop_tt

$PY - "$WORK/tt.err" "$PARENT" "$N" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
parent, n = sys.argv[2], int(sys.argv[3])
kids, errs, per = set(), [], {}
for l in lines:
    m = re.match(r"tokentrace: tracing PID (\d+) \(python3\): forked by PID (\d+)$", l)
    if m and m.group(2) == parent:
        kids.add(m.group(1))
for l in lines:
    m = re.match(r"tokentrace: (?:tracing )?PID (\d+)\b", l)
    if not m or m.group(1) not in kids:
        continue
    pid = m.group(1)
    if re.fullmatch(rf"tokentrace: tracing PID {pid} \(python3\): forked by PID {parent}", l):
        kind = "forked"
    elif l == f"tokentrace: PID {pid} (python3) exited":
        kind = "exited"
    elif l == f"tokentrace: PID {pid} runs CPython 3.11.2: stalls name its Python functions":
        kind = "named"
    else:
        errs.append(f"child {pid}: {l}")
        continue
    per.setdefault(pid, []).append(kind)
for pid in sorted(kids):
    k = per.get(pid, [])
    if k.count("forked") != 1 or k.count("exited") != 1 or k.count("named") > 1:
        errs.append(f"child {pid}: said {k}")
named_parent = [l for l in lines if l.startswith(f"tokentrace: PID {parent} runs CPython")]
if len(named_parent) != 1:
    errs.append(f"the parent's interpreter named {len(named_parent)} times")
if len(kids) != n:
    errs.append(f"{len(kids)} children said forked, {n} forked")
named = sum(1 for k in per.values() if "named" in k)
print(f"measured: {n} children: {named} had their Python functions named before they exited")
for e in errs[:20]:
    print("FAIL:", e)
sys.exit(1 if errs else 0)
PY
