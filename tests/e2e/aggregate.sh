# --aggregate: histograms in the kernel, no per-request records. What it gives up is said in
# the README (sends, not events); what it keeps must hold: one response counted per request,
# and the send-gap median within the bucket resolution (~20%) of the truth's median ITL.
. "$(dirname "$0")/lib.sh"

start_sim --ttft-ms 30 --itl-ms 8 --jitter-ms 2 --tokens 24
start_tt --aggregate
run_load --requests 40 --concurrency 4 --max-tokens 24
stop_tt
python3 - "$WORK/truth.jsonl" "$WORK/tt.jsonl" <<'PY'
import json, statistics, sys
truth = [json.loads(l) for l in open(sys.argv[1])]
out = [json.loads(l) for l in open(sys.argv[2])]
assert not [o for o in out if o["type"] == "request"], "--aggregate printed request lines"
final = [o for o in out if o["type"] == "summary" and o["final"]][0]
assert final["mode"] == "aggregate", final
assert final["requests"] == len(truth) == 40, final["requests"]
itl = statistics.median(b - a for t in truth for a, b in zip(t["t_token_ns"], t["t_token_ns"][1:]))
ttft = statistics.median(t["t_token_ns"][0] - t["t_start_ns"] for t in truth)
got_itl, got_ttft = final["itl_ns"]["p50"], final["ttft_ns"]["p50"]
print(f"measured: aggregate ITL p50 {got_itl/1e6:.2f} ms vs truth {itl/1e6:.2f} ms; "
      f"TTFT p50 {got_ttft/1e6:.2f} ms vs truth {ttft/1e6:.2f} ms")
assert abs(got_itl - itl) <= 0.2 * itl, "ITL p50 off by more than the bucket resolution"
assert abs(got_ttft - ttft) <= 0.2 * ttft, "TTFT p50 off by more than the bucket resolution"
assert final["lost_events"] == 0
PY
