# Workers that come and go (issue 14): FastAPI under gunicorn with two uvicorn workers, as
# FastAPI apps are deployed (tests/stacks/python/gunicorn_app.py), traced by the master's PID
# only. The workers forked before attach are followed; one is killed mid-run and gunicorn
# forks its replacement, which must be traced too. Every request of every worker is
# reported once, by the worker that served it (the truth's pid), with its exact chunks, and
# the ready line and stderr say who was traced.
. "$(dirname "$0")/stack_lib.bash"

command -v gunicorn >/dev/null || die "no gunicorn (tools/install-deps.sh installs it)"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
TT_TRUTH=$WORK/truth.jsonl TTFT_MS=20 ITL_MS=5 gunicorn --chdir "$ROOT/tests/stacks/python" \
	-w 2 -k uvicorn.workers.UvicornWorker --bind "127.0.0.1:$PORT" \
	--pid "$WORK/gunicorn.pid" gunicorn_app:app >"$WORK/gunicorn.out" 2>&1 &
PIDS+=($!)
workers() { pgrep -P "$(cat "$WORK/gunicorn.pid" 2>/dev/null || echo 0)" | sort; }
for _ in $(seq 200); do
	[ "$(workers | wc -l)" = 2 ] && curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break
	sleep 0.1
done
[ "$(workers | wc -l)" = 2 ] || die "gunicorn's 2 workers did not start: $(tail -5 "$WORK/gunicorn.out")"
MASTER=$(cat "$WORK/gunicorn.pid")
BEFORE=$(workers | tr '\n' ' ')
trace "$MASTER"
grep -q '2 child processes' "$WORK/tt.err" || die "the workers were not followed: $(cat "$WORK/tt.err")"

# a new connection per request, 4 at a time: the kernel hands them to both workers
load before --port "$PORT" --requests 24 --concurrency 4 --max-tokens 12 --no-keepalive \
	--id-prefix before-
VICTIM=$(workers | head -n 1)
kill -TERM "$VICTIM"
for _ in $(seq 200); do
	NEW=$(workers | grep -vxF -f <(echo "$BEFORE" | tr ' ' '\n' | sed '/^$/d') || true)
	[ -n "$NEW" ] && [ "$(workers | wc -l)" = 2 ] && break
	sleep 0.1
done
[ -n "$NEW" ] || die "gunicorn did not replace worker $VICTIM"
sleep 1	# the new worker accepts
# until the new worker has served some (the kernel picks who accepts)
for round in 1 2 3 4; do
	load "after$round" --port "$PORT" --requests 12 --concurrency 4 --max-tokens 12 \
		--no-keepalive --id-prefix "after$round-"
	grep -q "\"pid\": $NEW" "$WORK/truth.jsonl" && break
done
stop_tt

python3 - "$WORK/truth.jsonl" "$WORK/tt.jsonl" "$NEW" "$BEFORE" <<'PY'
import json, sys
truth = {t["request_id"]: t for t in map(json.loads, open(sys.argv[1]))}
rows = [json.loads(l) for l in open(sys.argv[2])]
reqs = [r for r in rows if r["type"] == "request"]
new, before = int(sys.argv[3]), [int(p) for p in sys.argv[4].split()]
errs, seen = [], {}
for r in reqs:
    seen[r["request_id"]] = seen.get(r["request_id"], 0) + 1
    t = truth.get(r["request_id"])
    if t is None:
        errs.append(f"{r['request_id']}: reported, not served")
        continue
    if r["pid"] != t["pid"] or r["chunks"] != t["chunks"] or not r["complete"] or r["aborted"]:
        errs.append(f"{r['request_id']}: pid {r['pid']} (served by {t['pid']}), chunks "
                    f"{r['chunks']} (truth {t['chunks']}), complete {r['complete']}")
for rid in truth:
    if seen.get(rid) != 1:
        errs.append(f"{rid}: reported {seen.get(rid, 0)} times")
by = {}
for t in truth.values():
    by[t["pid"]] = by.get(t["pid"], 0) + 1
if not by.get(new):
    errs.append(f"the new worker {new} served nothing: the test tested nothing")
joined = [r for r in rows if r["type"] == "target" and r.get("pid") == new]
if not joined:
    errs.append(f"the new worker {new} joining is not said")
print(f"measured: {len(truth)} requests served by {by} (new worker {new}), {len(reqs)} reported")
for e in errs[:12]:
    print("FAIL:", e)
sys.exit(1 if errs else 0)
PY
