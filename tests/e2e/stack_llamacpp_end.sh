# Streams that end the way llama.cpp's server ends them (tokensim --end-style llamacpp:
# [DONE], then "0\r\n", then the last "\r\n", each its own send), read by a client that
# stops at the stream's own end and closes with the framing unread, as the OpenAI SDKs do
# (tokenload --close-at-final). OpenAI chat with usage and llama.cpp's /completion, 40
# requests each over 4 connections: every one complete, none aborted, counts exact.
. "$(dirname "$0")/stack_lib.bash"

start_sim --ttft-ms 20 --itl-ms 4 --tokens 20 --end-style llamacpp
trace "$SIM_PID"
load chat --port "$SIM_PORT" --requests 40 --concurrency 4 --include-usage --close-at-final \
	--id-prefix chat-
load completion --port "$SIM_PORT" --path /completion --requests 40 --concurrency 4 \
	--close-at-final --id-prefix completion-
stop_tt
stop_sim
check llamacpp-end --truth "$WORK/truth.jsonl" --trace "$WORK/tt.jsonl" \
	--client "$WORK/chat.jsonl" --client "$WORK/completion.jsonl" --port "$SIM_PORT" \
	--expect-format sse --min-requests 80 --min-complete 80
finish
