# Go's net/http serving Ollama's NDJSON (tests/stacks/go): /api/chat and /api/generate, 40
# requests each over 4 connections; two model tokens per line (eval_count counts them) and
# a 40 ms sleep in the generation goroutine before every 10th token. One Write+Flush per
# line, the done:true line in its own write, the chunked terminator in another. Counts
# exact, eval_count as tokens, all complete; per token hand-off <= send <= client read.
. "$(dirname "$0")/stack_lib.bash"

build_go
start_server go "$GO_SERVER" --port 0 --truth "$WORK/truth.jsonl" --ttft-ms 30 --itl-ms 5 \
	--tokens 24 --tokens-per-chunk 2 --stall-every-tokens 10 --stall-ms 40
trace "$SRV_PID"
load chat --port "$SRV_PORT" --path /api/chat --requests 40 --concurrency 4 --id-prefix chat-
load gen --port "$SRV_PORT" --path /api/generate --requests 40 --concurrency 4 --id-prefix gen-
stop_tt
stop "$SRV_PID"
check go-ndjson --truth "$WORK/truth.jsonl" --trace "$WORK/tt.jsonl" --client "$WORK/chat.jsonl" \
	--client "$WORK/gen.jsonl" --port "$SRV_PORT" --expect-format ndjson --min-requests 80 \
	--min-complete 80
finish
