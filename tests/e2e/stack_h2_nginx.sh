#!/bin/bash
# OpenAI-style SSE over HTTP/2: nginx (Debian's 1.22, "listen ... http2") in front of the
# vLLM-shaped Python stack (tests/stacks/python, HTTP/1.1 upstream), tokentrace tracing
# nginx. TLS with ALPN h2 (its plaintext from OpenSSL's calls), clients curl --http2 (a
# connection a call), python3-httpx with h2 (one connection, its calls concurrent streams)
# and h2load (many concurrent streams on two connections); then h2c with prior knowledge
# (curl --http2-prior-knowledge, httpx). Every stream the server logged is reported once by
# its request id, http_version 2, SSE, chunks exact, complete, paired with nginx's upstream
# call, and per token the server's hand-off <= nginx's send <= the client's read
# (check_stack.py; h2load logs counts only: --client-count).
[ -n "${STACK_H2_BOUNDED:-}" ] || STACK_H2_BOUNDED=1 exec timeout 250 bash "$0" "$@"
source "$(dirname "$0")/stack_lib.bash"
source "$ROOT/tests/stacks/python/lib.sh"
CLIENT="$PY $ROOT/tests/e2e/h2_sse_client.py"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
	-keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>"$WORK/openssl.err" ||
	die "openssl req: $(cat "$WORK/openssl.err")"
printf '%s' '{"model":"tokentrace-py","stream":true,"max_tokens":12,"messages":[{"role":"user","content":"hello"}]}' \
	>"$WORK/body.json"

phase() {	# label, tls|h2c
	local label=$1 mode=$2 tls=() scheme=http nginx succeeded count=0
	[ "$mode" = tls ] && tls=(--tls "$WORK/cert.pem" "$WORK/key.pem") && scheme=https
	rm -f "$WORK/truth.jsonl"
	start_py_stack --ttft-ms 30 --itl-ms 10 --tokens 12
	start_server "$label-nginx" "$NGINX_START" --upstream "127.0.0.1:$PY_PORT" \
		--dir "$WORK/$label-nginx" --http2 "${tls[@]}"
	nginx=$SRV_PID
	trace "$(cat "$WORK/$label-nginx/nginx.pid")"
	local url=$scheme://127.0.0.1:$SRV_PORT/v1/chat/completions
	$CLIENT --via curl --url "$url" --ca "$WORK/cert.pem" --requests 8 --concurrency 4 \
		--tokens 12 --id-prefix "$label-curl-" --out "$WORK/$label.curl" ||
		die "curl client failed"
	$CLIENT --via httpx --url "$url" --ca "$WORK/cert.pem" --requests 16 --concurrency 6 \
		--tokens 12 --id-prefix "$label-httpx-" --out "$WORK/$label.httpx" ||
		die "httpx client failed"
	if [ "$mode" = tls ]; then
		h2load -n 40 -c 2 -m 10 -d "$WORK/body.json" -H 'content-type: application/json' \
			"$url" >"$WORK/$label.h2load" 2>&1 || die "h2load: $(tail -n 5 "$WORK/$label.h2load")"
		succeeded=$(sed -n 's/^requests: .* \([0-9]*\) succeeded.*$/\1/p' "$WORK/$label.h2load")
		[ "$succeeded" = 40 ] || die "h2load: $(grep '^requests:' "$WORK/$label.h2load")"
		count=40
	fi
	stop_tt
	stop "$nginx"
	stop_py_stack
	mv "$WORK/tt.jsonl" "$WORK/$label.tt"
	check "$label" --truth "$WORK/truth.jsonl" --trace "$WORK/$label.tt" --port "$SRV_PORT" \
		--client "$WORK/$label.curl" --client "$WORK/$label.httpx" --client-count "$count" \
		--expect-format sse --proxy --min-requests $((24 + count)) \
		--min-complete $((24 + count))
	python3 - "$WORK/$label.tt" "$SRV_PORT" <<'PY' || FAILED+=("$label: streams")
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1]) if '"type":"request"' in l]
down = [r for r in reqs if r["conn"].split("-")[0].endswith(":" + sys.argv[2])]
bad = [r["request_id"] for r in down if r["http_version"] != "2" or not r["stream_id"]]
conns = {r["conn_id"] for r in down}
print(f"measured: {len(down)} HTTP/2 streams on {len(conns)} connections")
if bad:
    sys.exit(f"FAIL: not HTTP/2 streams: {bad[:5]}")
PY
}

phase h2-tls tls
phase h2c h2c
finish
echo "PASS: SSE over HTTP/2 through nginx agrees with the server's truth and the clients"
