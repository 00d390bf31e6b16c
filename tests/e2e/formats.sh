# Every wire format tokensim speaks (OpenAI chat and completions, llama.cpp, TGI, Ollama
# generate and chat, Anthropic), sent with write(2), send(2) and Node-style writev(2), with
# several events batched into one send and several tokens per event: chunk counts exact,
# model tokens exact where the stream carries a count, TTFT and every ITL within 50 us at
# p99 of the truth (over the whole run: a p99 needs more samples than one format gives), and
# the format detected from the wire alone.
. "$(dirname "$0")/lib.sh"

PATHS="/v1/chat/completions:sse /v1/completions:sse /completion:sse /generate_stream:sse
/api/generate:ndjson /api/chat:ndjson /v1/messages:sse"

for mode in "write --events-per-send 3" "send --tokens-per-event 2 --usage" "writev --crlf"; do
	start_sim --ttft-ms 15 --itl-ms 4 --jitter-ms 2 --tokens 12 --write-mode $mode
	start_tt
	for pf in $PATHS; do
		"$LOAD" --port "$SIM_PORT" --path "${pf%%:*}" --requests 6 --concurrency 3 \
			--max-tokens 12 --id-prefix "${mode%% *}${pf%%:*}-" --out "$WORK/load.jsonl" \
			2>"$WORK/load.err" || die "tokenload ${pf%%:*}: $(tail -n 2 "$WORK/load.err")"
	done
	stop_tt
	stop_sim
	for pf in $PATHS; do
		p=${pf%%:*}
		grep -F "\"path\":\"$p\"" "$WORK/truth.jsonl" >"$WORK/truth.one"
		grep -F "\"path\":\"$p\"" "$WORK/tt.jsonl" >"$WORK/tt.one"
		$CHECK --no-timing --min-requests 6 --tokens --expect-format "${pf##*:}" "$WORK/truth.one" \
			"$WORK/tt.one" >"$WORK/check.out" ||
			{ cat "$WORK/check.out"; die "$mode $p"; }
		echo "ok: ${mode%% *} $p: $(grep -c . "$WORK/truth.one") requests, counts exact"
	done
	cat "$WORK/truth.jsonl" >>"$WORK/truth.all"
	cat "$WORK/tt.jsonl" >>"$WORK/tt.all"
	rm -f "$WORK/truth.jsonl"
done
$CHECK --min-requests 126 "$WORK/truth.all" "$WORK/tt.all"
