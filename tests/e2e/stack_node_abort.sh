# Clients that leave midway from Node's http server: every second request is abandoned
# after 6 of its 30 chunks (tokenload closes the connection), the others read to the end.
# Abandoned ones are aborted:true and not complete, with exactly the chunks the server sent
# before it saw the client go; the rest complete:true, aborted:false.
. "$(dirname "$0")/stack_lib.bash"

start_server node node "$NODE_SERVER" --port 0 --truth "$WORK/truth.jsonl" \
	--ttft-ms 20 --itl-ms 5 --tokens 30
trace "$SRV_PID"
load load --port "$SRV_PORT" --requests 48 --concurrency 4 --include-usage \
	--abort-after 6 --abort-every 2
stop_tt
stop "$SRV_PID"
check node-abort --truth "$WORK/truth.jsonl" --trace "$WORK/tt.jsonl" \
	--client "$WORK/load.jsonl" --port "$SRV_PORT" --expect-format sse --min-requests 48 \
	--min-complete 24 --min-aborted 24
finish
