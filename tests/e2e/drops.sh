# Forced drops (issue 11): a 1 MiB ring buffer, tokensim streaming flat out to 8 clients,
# and tokentrace's consumer stopped (SIGSTOP) for 150 ms every 400 ms, so the ring fills
# and the kernel drops records (load_stuttered). --budget 0: every request is let in (the
# default budget leaves requests out whole while the ring is half full: stack_budget.sh).
# Then:
# - the summary's ring buffer drops equal the kernel's own counter (read by bpftool);
# - every request tokentrace reports unflagged is exactly right: check_truth.py's gates on
#   exactly those (chunks, TTFT, every ITL); the ones touched by a drop say "lost":true;
# - drops happened (else the test tested nothing), and the requests they cost are counted;
# - nothing parses wrong after a drop: the rest of the response it hit is not sent.
. "$(dirname "$0")/lib.sh"

start_sim --ttft-ms 1 --itl-ms 0 --tokens 300
start_tt -b 1 --budget 0
load_stuttered "$SIM_PORT" --requests 160 --concurrency 8 --max-tokens 300
RB_DROPS=$(python3 "$ROOT/tests/e2e/bpfmaps.py" "$TT_PID" stat 1) || die "bpftool: $RB_DROPS"
stop_tt

python3 - "$WORK" "$RB_DROPS" "$ROOT/tests/e2e" <<'PY' || die "drops"
import json, sys
w, rb_drops = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, sys.argv[3])
from check_stack import drop_gates   # the gates every drops test shares
rows = [json.loads(l) for l in open(f"{w}/tt.jsonl")]
truth = {t["request_id"]: t for t in map(json.loads, open(f"{w}/truth.jsonl"))}
final = [r for r in rows if r["type"] == "summary" and r["final"]][0]
reqs = [r for r in rows if r["type"] == "request"]
lost = [r for r in reqs if r["lost"]]
clean = [r for r in reqs if not r["lost"]]
errs = []
print(f"measured: the kernel's drop counter {rb_drops}; {len(reqs)} requests reported; conns "
      f"{final['conns']}, lost {final['lost']}")
if final["lost"]["ringbuf"] != rb_drops:
    errs.append(f"the summary says {final['lost']['ringbuf']} records dropped, the kernel {rb_drops}")
# drops happened and touched requests, counted as such; unseen ones counted between
# requests; no parse error (the kernel sends nothing more of a run that lost a record)
drop_gates(final, len(lost), len(truth) - len(reqs), len(truth), errs)
# the unflagged ones, and their truth, for check_truth.py's gates
with open(f"{w}/clean.jsonl", "w") as f:
    for r in clean:
        f.write(json.dumps(r) + "\n")
with open(f"{w}/truth-clean.jsonl", "w") as f:
    for r in clean:
        if r["request_id"] in truth:
            f.write(json.dumps(truth[r["request_id"]]) + "\n")
        else:
            errs.append(f"{r['request_id']}: reported, unflagged, not served")
for e in errs:
    print("FAIL:", e)
sys.exit(1 if errs else 0)
PY
N=$(wc -l <"$WORK/truth-clean.jsonl")
$CHECK --min-requests "$N" --expect-format sse "$WORK/truth-clean.jsonl" "$WORK/clean.jsonl" ||
	die "a request not flagged lost is wrong"
