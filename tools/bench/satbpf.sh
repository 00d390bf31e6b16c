#!/bin/bash
# In-BPF time a token at saturation, by program (BENCHMARKS.md, "The budget"):
#   tools/bench/satbpf.sh [TOKENTRACE OPTIONS...]      e.g. --budget 0
# One tokensim in bench.py's saturation scenario, one tokentrace on it with the options given,
# tokenload's 1,500 requests of 256 tokens at 32 connections; bpf_stats' run_time_ns and
# run_cnt of every program, before and after the load, over the tokens. Then the final
# summary's requests, left out, data records and losses. Root; `make bench-bins` first.
# TT: the tokentrace binary (default: the tree's).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TT=${TT:-$ROOT/tokentrace}
REQS=1500
TOKENS=256
W=$(mktemp -d /tmp/tt-satbpf.XXXXXX)
trap 'kill "${SIM:-}" "${TTP:-}" 2>/dev/null || true; rm -rf "$W"' EXIT

old=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
"$ROOT/.output/tokensim" --port 0 --ttft-ms 0 --itl-ms 0 --max-batch 64 --tokens "$TOKENS" \
	>"$W/sim.out" 2>&1 &
SIM=$!
for _ in $(seq 50); do grep -q '^listening on' "$W/sim.out" && break; sleep 0.1; done
PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$W/sim.out")
"$TT" -p "$SIM" --json "$@" 0 >"$W/tt.jsonl" 2>"$W/tt.err" &
TTP=$!
for _ in $(seq 300); do grep -q '"type":"ready"' "$W/tt.jsonl" && break; sleep 0.1; done
grep -q '"type":"ready"' "$W/tt.jsonl" || { cat "$W/tt.err"; exit 1; }
bpftool prog show --json >"$W/before.json"
"$ROOT/.output/tokenload" --port "$PORT" --requests "$REQS" --concurrency 32 \
	--max-tokens "$TOKENS" 2>&1 | tail -n 1
bpftool prog show --json >"$W/after.json"
kill -INT "$TTP"
wait "$TTP"
sysctl -qw kernel.bpf_stats_enabled="$old"
python3 - "$W" $((REQS * TOKENS)) <<'PY'
import json, sys
w, tokens = sys.argv[1], int(sys.argv[2])
before = {p["id"]: p for p in json.load(open(f"{w}/before.json"))}
rows, total = [], 0.0
for p in json.load(open(f"{w}/after.json")):
    b = before.get(p["id"])
    if not b or "run_time_ns" not in p:
        continue
    ns = p["run_time_ns"] - b.get("run_time_ns", 0)
    runs = p["run_cnt"] - b.get("run_cnt", 0)
    if runs:
        rows.append((ns / tokens, runs / tokens, p.get("name", "?")))
        total += ns / tokens
for ns, runs, name in sorted(rows, reverse=True)[:8]:
    print(f"{name:20s} {ns:7.1f} ns/token {runs:5.2f} runs/token")
print(f"in BPF: {total:.0f} ns/token")
s = [json.loads(l) for l in open(f"{w}/tt.jsonl") if '"final":true' in l][0]
print({k: s[k] for k in ("requests", "left_out_by_budget", "data_records", "lost_events")})
PY
