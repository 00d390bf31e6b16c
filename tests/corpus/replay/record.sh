#!/bin/bash
# Record the replay tests (tests/cli/replay.sh) anew, after a change of the record layout.
# Needs root; run under the e2e lock. Each is issue 32's user run (80 ms stalls every 7th
# token, 6 requests, --stall-ms 40, lazy hooks), kept only when it shows what the recording
# is for: its first stall's closing send came with the hooks still off (no scheduler
# counters in the record: before the fix, all of that gap was "unknown").
#   flock /tmp/tt-e2e.lock tests/corpus/replay/record.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
OUT=$ROOT/tests/corpus/replay
W=$(mktemp -d)
trap 'kill $SP $TP 2>/dev/null || true; rm -rf "$W"' EXIT
late_first() {	# recording: does the send that ends the first stall carry no TT_DF_CUM?
	python3 - "$1" "$2" <<'PY'
import json, struct, sys
rec, trace = sys.argv[1], sys.argv[2]
st = [s for o in map(json.loads, open(trace)) if o.get("type") == "request" for s in o["stalls"]]
end = st[0]["t_end_ns"] if st else 0
f = open(rec, "rb").read()
off = struct.unpack_from("<H", f, 10)[0]
while off + 12 <= len(f):
    ty, _, _, ln, _ = struct.unpack_from("<BBHII", f, off)
    p = f[off + 12:off + 12 + ln]
    off += 12 + ln
    if ty != 2 or struct.unpack_from("<H", p, 16)[0] != 2:
        continue
    ts = struct.unpack_from("<Q", p, 0)[0]
    d, flags = struct.unpack_from("<BB", p, 52)
    t_ready = struct.unpack_from("<Q", p, 72)[0]
    if d == 1 and end in (ts, t_ready):
        sys.exit(0 if not flags & 0x20 else 1)
sys.exit(1)
PY
}
for kind in spin contention; do
	for try in $(seq 20); do
		"$ROOT/.output/tokensim" --port 0 --truth "$W/truth.jsonl" --ttft-ms 20 --itl-ms 8 \
			--tokens 20 --stall-kind $kind --stall-every 7 --stall-ms 80 >"$W/sim.out" 2>&1 &
		SP=$!
		for _ in $(seq 50); do grep -q '^listening' "$W/sim.out" && break; sleep 0.1; done
		PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$W/sim.out")
		"$ROOT/tokentrace" -p "$SP" --json --stall-ms 40 -w "$W/r.ttr" >"$W/tt.jsonl" 2>/dev/null &
		TP=$!
		for _ in $(seq 300); do grep -q '"type":"ready"' "$W/tt.jsonl" && break; sleep 0.1; done
		"$ROOT/.output/tokenload" --port "$PORT" --requests 6 --concurrency 1 --max-tokens 20 \
			--out "$W/load.jsonl" 2>/dev/null
		sleep 0.3
		kill -INT $TP; wait $TP
		kill $SP; wait $SP || true
		if late_first "$W/r.ttr" "$W/tt.jsonl"; then
			cp "$W/r.ttr" "$OUT/late-hooks-$kind.ttr"
			cp "$W/truth.jsonl" "$OUT/late-hooks-$kind.truth.jsonl"
			echo "recorded late-hooks-$kind (try $try)"
			break
		fi
	done
done
