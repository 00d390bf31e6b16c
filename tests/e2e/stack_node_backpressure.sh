# A slow reader against Node's http server: the client (small receive buffer, the small MSS
# of a far client, so the server's send buffer stays small; a new connection per request,
# each with a fresh send buffer) stops reading for a while after every K chunks. The kernel
# refuses Node's writes (EAGAIN), Node queues the following res.write()s and sends them all
# in one writev when the socket drains: hundreds of iovecs, IOV_MAX (1024) when the pause
# is long, the stream's end often among them (the client pauses after its last chunk too).
# The server logs which chunks it wrote behind such a backlog ("backpressured_chunks"): a
# phase must have made some, or it tested nothing. Every chunk must still be counted and
# every stream complete; a send longer than the capture may be marked truncated.
#   steady: 40 requests, 4 connections at a time, 300 ms pauses every 100 chunks
#   deep:   8 requests, 4 at a time, 1.5 s pauses every 350 chunks (1024-iovec writevs)
. "$(dirname "$0")/stack_lib.bash"

backpressured() {	# truth file: most requests must have written behind a backlog
	python3 - "$1" <<'PY' || die "no back-pressure: the slow reader did not fill Node's socket"
import json, sys
t = [json.loads(l) for l in open(sys.argv[1])]
bp = [o for o in t if o.get("backpressured_chunks", 0) > 0]
print(f"measured: {len(bp)} of {len(t)} requests wrote behind a backlog; "
      f"{sum(o['backpressured_chunks'] for o in t)} chunks queued in Node, "
      f"up to {max((o['max_queued_bytes'] for o in t), default=0)} bytes")
sys.exit(0 if len(bp) * 2 >= len(t) else 1)
PY
}

phase() {	# label, requests, tokens, pause-every, pause-ms
	local label=$1 n=$2 tokens=$3 every=$4 ms=$5
	start_server "$label" node "$NODE_SERVER" --port 0 --truth "$WORK/$label.truth" \
		--ttft-ms 10 --itl-ms 1 --tokens "$tokens"
	trace "$SRV_PID"
	load "$label" --port "$SRV_PORT" --requests "$n" --concurrency 4 --include-usage \
		--no-keepalive --rcvbuf 4096 --mss 256 --pause-every "$every" --pause-ms "$ms"
	stop_tt
	stop "$SRV_PID"
	mv "$WORK/tt.jsonl" "$WORK/$label.tt"
	backpressured "$WORK/$label.truth"
	check "$label" --truth "$WORK/$label.truth" --trace "$WORK/$label.tt" \
		--client "$WORK/$label.jsonl" --port "$SRV_PORT" --expect-format sse \
		--min-requests "$n" --min-complete "$n" --allow-truncated
}

phase steady 40 300 100 300
phase deep 8 700 350 1500
finish
