# nginx in front (tests/stacks/nginx: proxy_buffering off, HTTP/1.1 keep-alive upstream),
# the client talking to nginx, tokentrace tracing the upstream server: Node (SSE) and Go
# (Ollama NDJSON), each upstream over TCP and over a unix socket. Each phase 40 requests
# over 4 connections; the same checks as direct: every request the server logged is
# reported, by the id nginx passes on, counts exact, all complete, and per token hand-off
# <= tokentrace's send <= the client's read (through nginx).
. "$(dirname "$0")/stack_lib.bash"

build_go

phase() {	# label, server kind (node|go), transport (tcp|unix)
	local label=$1 kind=$2 transport=$3 listen upstream srv path fmt nginx
	if [ "$transport" = unix ]; then
		listen=(--uds "$WORK/$label.sock")
		upstream=unix:$WORK/$label.sock
	else
		listen=(--port 0)
	fi
	if [ "$kind" = node ]; then
		start_server "$label" node "$NODE_SERVER" "${listen[@]}" \
			--truth "$WORK/$label.truth" --ttft-ms 20 --itl-ms 5 --tokens 20
		path=/v1/chat/completions
		fmt=sse
	else
		start_server "$label" "$GO_SERVER" "${listen[@]}" --truth "$WORK/$label.truth" \
			--ttft-ms 20 --itl-ms 5 --tokens 20
		path=/api/chat
		fmt=ndjson
	fi
	srv=$SRV_PID
	[ "$transport" = tcp ] && upstream=127.0.0.1:$SRV_PORT
	local port_check=()
	[ "$transport" = tcp ] && port_check=(--port "$SRV_PORT")
	start_server "$label-nginx" "$NGINX_START" --upstream "$upstream" --dir "$WORK/$label-nginx"
	nginx=$SRV_PID
	trace "$srv"
	load "$label" --port "$SRV_PORT" --path "$path" --requests 40 --concurrency 4 \
		--include-usage --id-prefix "$label-"
	stop_tt
	stop "$nginx"
	stop "$srv"
	mv "$WORK/tt.jsonl" "$WORK/$label.tt"
	check "$label" --truth "$WORK/$label.truth" --trace "$WORK/$label.tt" \
		--client "$WORK/$label.jsonl" "${port_check[@]}" --expect-format "$fmt" \
		--min-requests 40 --min-complete 40
}

phase node-tcp node tcp
phase node-unix node unix
phase go-tcp go tcp
phase go-unix go unix
finish
