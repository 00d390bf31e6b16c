# Go's net/http serving OpenAI chat SSE as Ollama's OpenAI layer does: the role in every
# delta, one Write+Flush per chunk; the finish chunk, the usage chunk and [DONE] in one
# flush; the terminator on its own. 48 requests over 4 connections, three model tokens per
# delta (usage.completion_tokens counts them). Counts exact, all complete, per-token order.
. "$(dirname "$0")/stack_lib.bash"

build_go
start_server go "$GO_SERVER" --port 0 --truth "$WORK/truth.jsonl" --ttft-ms 30 --itl-ms 5 \
	--tokens 20 --tokens-per-chunk 3
trace "$SRV_PID"
load load --port "$SRV_PORT" --requests 48 --concurrency 4 --include-usage
stop_tt
stop "$SRV_PID"
check go-sse --truth "$WORK/truth.jsonl" --trace "$WORK/tt.jsonl" --client "$WORK/load.jsonl" \
	--port "$SRV_PORT" --expect-format sse --min-requests 48 --min-complete 48
finish
