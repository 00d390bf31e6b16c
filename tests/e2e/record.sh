# -w then -r: one live run prints JSON, serves --metrics, writes --perfetto and records, all at
# once; the replay of its recording prints the same JSON (stalls and their stacks included)
# and writes the same Perfetto file, byte for byte, without root; so does the text output
# (wall-clock times included). A cut or damaged recording is a one-line error and exit 1,
# never a crash; a replay refuses the options of a live run.
. "$(dirname "$0")/lib.sh"

start_sim --ttft-ms 15 --itl-ms 3 --jitter-ms 2 --tokens 12 --stall-every 5 --stall-ms 70 --stall-kind lock \
	--error-every 9
start_tt -w "$WORK/run.ttr" --metrics 0 --perfetto "$WORK/live.perfetto.json" 0.5
MPORT=$(sed -n 's|^tokentrace: metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics$|\1|p' "$WORK/tt.err")
run_load --requests 30 --concurrency 3 --max-tokens 12
sleep 1.1	# a periodic summary or two with requests in them
# the scrape whole, then the look: grep -q leaving a pipe early fails curl (pipefail)
curl -sf "http://127.0.0.1:$MPORT/metrics" >"$WORK/scrape.txt" ||
	die "--metrics did not serve while recording"
grep -q '^tokentrace_requests_total{.*} ' "$WORK/scrape.txt" ||
	die "--metrics served no tokentrace_requests_total while recording"
stop_tt
[ "$(grep -c '"type":"request"' "$WORK/tt.jsonl")" -eq 30 ] || die "live run: not 30 requests"
[ "$(grep -c '"type":"summary","final":false' "$WORK/tt.jsonl")" -ge 2 ] || die "no periodic summaries"
[ "$(stat -c %a "$WORK/run.ttr")" = 600 ] || die "recording is not mode 0600"
# lock stalls: their stack texts go into the recording for the replay to print the same
grep -q '"cause":"lock"' "$WORK/tt.jsonl" || die "no lock stall in the live run"
echo "measured: $(grep -o '"cause":"lock"' "$WORK/tt.jsonl" | wc -l) lock stalls, $(grep -oE '"stack":"[^"]+' "$WORK/tt.jsonl" | wc -l) with a stack"
echo "ok: live run with --json, --metrics, --perfetto and -w at once"

# replay as nobody: no root, no BPF
cp "$WORK/run.ttr" "$WORK/pub.ttr"
chmod 644 "$WORK/pub.ttr"
chmod 777 "$WORK"
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all \
	"$TT" -r "$WORK/pub.ttr" --json --perfetto "$WORK/replay.perfetto.json" \
	>"$WORK/replay.jsonl" 2>"$WORK/replay.err" || die "replay failed: $(cat "$WORK/replay.err")"
grep -q "replaying $WORK/pub.ttr: PID $SIM_PID (tokensim)" "$WORK/replay.err" ||
	die "no replay note: $(cat "$WORK/replay.err")"
cmp "$WORK/tt.jsonl" "$WORK/replay.jsonl" || die "replayed --json differs from the live run"
cmp "$WORK/live.perfetto.json" "$WORK/replay.perfetto.json" || die "replayed --perfetto differs"
echo "ok: replay (as nobody) = live run: $(wc -l <"$WORK/tt.jsonl") JSON lines and the Perfetto file, byte for byte"

# the text output, wall-clock times and all
"$TT" -p "$SIM_PID" -w "$WORK/text.ttr" 0.5 >"$WORK/live.txt" 2>"$WORK/tt2.err" &
TT2=$!
PIDS+=("$TT2")
wait_for "$WORK/tt2.err" 'attached' 30 || die "text run did not start"
run_load --requests 10 --concurrency 2 --max-tokens 12
sleep 0.6
kill -INT "$TT2"
wait "$TT2" || die "text run exited $?"
"$TT" -r "$WORK/text.ttr" >"$WORK/replay.txt" 2>/dev/null || die "text replay failed"
cmp "$WORK/live.txt" "$WORK/replay.txt" || die "replayed text differs from the live run"
grep -qE '^[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} ' "$WORK/replay.txt" || die "no timed lines"
echo "ok: text replay = live run ($(wc -l <"$WORK/live.txt") lines)"

# a reader that goes away, full disks: no crash, a clear word, the right exit status
set +e +o pipefail
"$TT" -r "$WORK/run.ttr" --json 2>"$WORK/pipe.err" | true
rc=${PIPESTATUS[0]}
set -e -o pipefail
[ "$rc" -eq 0 ] || die "replay into a closed pipe exited $rc: $(cat "$WORK/pipe.err")"
grep -q 'failed' "$WORK/pipe.err" && die "a closed pipe is not an error: $(cat "$WORK/pipe.err")"
rc=0
"$TT" -r "$WORK/run.ttr" --json >/dev/full 2>"$WORK/full.err" || rc=$?
[ $rc -eq 1 ] || die "replay to a full disk exited $rc"
grep -q 'writing stdout failed: No space left on device' "$WORK/full.err" || die "$(cat "$WORK/full.err")"
rc=0
"$TT" -p "$SIM_PID" -w /dev/full --json 0.3 1 >"$WORK/wfull.out" 2>"$WORK/wfull.err" || rc=$?
[ $rc -eq 1 ] || die "-w to a full disk exited $rc: $(cat "$WORK/wfull.err")"
grep -q -- '-w /dev/full: write failed: No space left on device; the recording stops here' \
	"$WORK/wfull.err" || die "-w /dev/full said: $(cat "$WORK/wfull.err")"
grep -q '"type":"summary","final":true' "$WORK/wfull.out" || die "tracing stopped with the recording"
echo "ok: closed pipe -> exit 0, quietly; full disk -> one line, exit 1, tracing goes on"

# damaged recordings
expect_err() {	# FILE REGEX: exit 1, last stderr line matches, no crash
	local rc=0
	"$TT" -r "$1" --json >"$WORK/bad.out" 2>"$WORK/bad.err" || rc=$?
	[ $rc -eq 1 ] || die "-r $1 exited $rc (expected 1): $(cat "$WORK/bad.err")"
	tail -n 1 "$WORK/bad.err" | grep -qE "^tokentrace: $1: $2" ||
		die "-r $1 said: $(cat "$WORK/bad.err") (expected /$2/)"
	echo "ok: $(tail -n 1 "$WORK/bad.err")"
}
size=$(stat -c %s "$WORK/run.ttr")
head -c $((size / 2)) "$WORK/run.ttr" >"$WORK/cut.ttr"
expect_err "$WORK/cut.ttr" "truncated recording at byte $((size / 2))\$"
head -c $((size - 28)) "$WORK/run.ttr" >"$WORK/noend.ttr"	# no end mark: cut between entries
expect_err "$WORK/noend.ttr" "truncated recording at byte [0-9]+"
head -c 100 "$WORK/run.ttr" >"$WORK/head.ttr"
expect_err "$WORK/head.ttr" "truncated recording at byte 100\$"
[ ! -s "$WORK/bad.out" ] || die "a cut header printed something"
cp "$WORK/run.ttr" "$WORK/flip.ttr"
# one byte inverted in the payload of the entry a third of the way in (user/core/record.h:
# the header's length at byte 10, then entries of u8 type, u8 flags, u16, u32 length, u32
# CRC, payload), not in an entry's header, which is refused before its checksum is looked at
python3 - "$WORK/flip.ttr" <<'PY' || die "no entry to flip a byte in"
import struct, sys
with open(sys.argv[1], "r+b") as f:
    data = f.read()
    off = struct.unpack_from("<H", data, 10)[0]
    while True:
        ln = struct.unpack_from("<I", data, off + 4)[0]
        if ln and off + 12 + ln >= len(data) // 3:
            break
        off += 12 + ln
    at = off + 12 + ln // 2
    f.seek(at)
    f.write(bytes([data[at] ^ 0xff]))
PY
expect_err "$WORK/flip.ttr" "corrupt recording at byte [0-9]+: checksum mismatch"
expect_err /etc/os-release "not a tokentrace recording\$"
expect_err "$WORK/missing.ttr" "No such file or directory\$"
: >"$WORK/empty.ttr"
expect_err "$WORK/empty.ttr" "not a tokentrace recording\$"

# command lines a replay refuses
for args in "-p $SIM_PID" "--top" "-w $WORK/x.ttr" "--metrics 0" "-s 256" "1"; do
	rc=0
	# shellcheck disable=SC2086
	"$TT" -r "$WORK/run.ttr" $args >/dev/null 2>"$WORK/usage.err" || rc=$?
	[ $rc -eq 2 ] || die "-r with $args exited $rc: $(cat "$WORK/usage.err")"
done
echo "ok: -r refuses -p, --top, -w, --metrics, -s, INTERVAL (exit 2)"
