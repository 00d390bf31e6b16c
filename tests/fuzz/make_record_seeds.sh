#!/bin/bash
# Re-record the fuzz_record seeds (and the recording cli tests replay) after a change of the
# record layout (bpf/events.h): a live run of tokensim traced with -w, 4 requests with a stall,
# and the same recording cut at 60%. Needs root. Usage: tests/fuzz/make_record_seeds.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$ROOT/tests/fuzz/seeds/fuzz_record
W=$(mktemp -d)
trap 'kill $SP 2>/dev/null || true; rm -rf "$W"' EXIT
"$ROOT/.output/tokensim" --port 0 --tokens 8 --itl-ms 5 --stall-every 5 --stall-ms 60 \
	>"$W/sim.out" 2>&1 &
SP=$!
for _ in $(seq 50); do grep -q '^listening' "$W/sim.out" && break; sleep 0.1; done
PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$W/sim.out")
"$ROOT/tokentrace" -p "$SP" --json -w "$W/r.ttr" 1 >"$W/tt.jsonl" 2>"$W/tt.err" &
TP=$!
for _ in $(seq 100); do grep -q '"type":"ready"' "$W/tt.jsonl" && break; sleep 0.1; done
"$ROOT/.output/tokenload" --port "$PORT" --requests 4 --concurrency 2 --max-tokens 8 \
	--out "$W/load.jsonl" 2>/dev/null
sleep 1.2
kill -INT $TP
wait $TP
cp "$W/r.ttr" "$OUT/tokensim_4req.ttr"
head -c $(($(stat -c %s "$W/r.ttr") * 6 / 10)) "$W/r.ttr" >"$OUT/cut.ttr"
echo "re-recorded $OUT: $(stat -c %s "$OUT/tokensim_4req.ttr") bytes"
