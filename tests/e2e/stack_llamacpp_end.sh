# Streams that end the way llama.cpp's server ends them (tokensim --end-style llamacpp:
# every tail event in its own send, [DONE] last, then "0\r\n", then the last "\r\n", each
# its own send), read by a client that stops at the stream's own end and closes with the
# framing unread, as the OpenAI SDKs do (tokenload --close-at-final). OpenAI chat with usage
# and llama.cpp's /completion, 40 requests each over 4 connections, twice:
#   back-to-back: the framing follows [DONE] at once (the client's close seldom wins)
#   gap:          5 ms before "0\r\n", as when the server's thread is descheduled there:
#                 the client is always gone before the framing goes out
# Every request complete, none aborted, counts exact.
. "$(dirname "$0")/stack_lib.bash"

phase() {	# label, tokensim flags...
	local label=$1
	shift
	start_sim --ttft-ms 20 --itl-ms 4 --tokens 20 --end-style llamacpp "$@"
	trace "$SIM_PID"
	load "$label-chat" --port "$SIM_PORT" --requests 40 --concurrency 4 --include-usage \
		--close-at-final --id-prefix "$label-chat-"
	load "$label-completion" --port "$SIM_PORT" --path /completion --requests 40 \
		--concurrency 4 --close-at-final --id-prefix "$label-completion-"
	stop_tt
	stop_sim
	mv "$WORK/truth.jsonl" "$WORK/$label.truth"
	mv "$WORK/tt.jsonl" "$WORK/$label.tt"
	check "$label" --truth "$WORK/$label.truth" --trace "$WORK/$label.tt" \
		--client "$WORK/$label-chat.jsonl" --client "$WORK/$label-completion.jsonl" \
		--port "$SIM_PORT" --expect-format sse --min-requests 80 --min-complete 80
}

phase back-to-back
phase gap --end-gap-ms 5
finish
