# Node's http module streaming OpenAI chat SSE (tests/stacks/node), steady pace, usage chunk
# on: 48 requests over 4 keep-alive connections. Every request the server logged is
# reported once, by its id, with its exact chunk and token counts, complete and not
# aborted; every token's send time lies between the server's hand-off and the client's read.
# Node ends each stream with one writev of 17 iovecs (last delta, finish, usage, [DONE], the
# chunked terminator).
. "$(dirname "$0")/stack_lib.bash"

start_server node node "$NODE_SERVER" --port 0 --truth "$WORK/truth.jsonl" \
	--ttft-ms 30 --itl-ms 5 --tokens 24 --tokens-per-chunk 2
trace "$SRV_PID"
load load --port "$SRV_PORT" --requests 48 --concurrency 4 --include-usage
stop_tt
stop "$SRV_PID"
check node-sse --truth "$WORK/truth.jsonl" --trace "$WORK/tt.jsonl" --client "$WORK/load.jsonl" \
	--port "$SRV_PORT" --expect-format sse --min-requests 48 --min-complete 48
finish
