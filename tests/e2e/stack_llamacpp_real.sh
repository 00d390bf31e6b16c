# rootfs: sid
# Debian's own llama.cpp server (llama.cpp-tools' llama-server, linked to OpenSSL) with a tiny
# model made here (tests/stacks/llamacpp/make_model.py: python3-gguf, seeded random weights),
# run from a Debian unstable root of its own, traced from the host with `tokentrace -p
# HOSTPID --json`. Four phases, each two loads (OpenAI chat with usage, read to the chunked
# framing's end; native /completion read to "stop": true and closed there, as SDKs do), 8
# requests of 32 tokens each, two at a time:
#   unshare-http   own PID and mount namespaces + chroot, on the host's loopback
#   unshare-tls    the same, over the server's own TLS (a certificate made here)
#   podman-http    podman (runc), in a network namespace this test makes
#   podman-tls     the same, over TLS
# Truth: a bpftrace script apart from tokentrace (tests/stacks/llamacpp/sends_*.bt.in) logs
# the server's request reads and its sends (SSL_write under TLS) with their times; the client
# logs every byte offset and read time (tests/stacks/llamacpp/client.py). check_stack.py then
# holds tokentrace to: every request reported once, by the server's host PID, chunks and
# tokens exact, complete, and each token's time between the server's send and the client's
# read.
. "$(dirname "$0")/stack_lib.bash"
. "$ROOT/tests/lib/container.bash"

STACK=$ROOT/tests/stacks/llamacpp
PY=/usr/bin/python3	# Debian's, with its ssl on the system's libssl.so.3
TOKENS=32
ROOTFS=$(ct_rootfs sid)

mkdir -p "$WORK/share"
cp "$STACK/make_model.py" "$WORK/share/"
ct_run "$ROOTFS" --bind "$WORK/share:w" -- python3 /mnt/w/make_model.py /mnt/w/tiny.gguf ||
	die "make_model.py: $(tail -n 5 "$WORK"/ct-run*.err)"
echo "note: model $(sha256sum "$WORK/share/tiny.gguf" | cut -c1-16) ($(du -h "$WORK/share/tiny.gguf" | cut -f1))"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
	-keyout "$WORK/share/key.pem" -out "$WORK/share/cert.pem" 2>"$WORK/openssl.err" ||
	die "openssl req: $(cat "$WORK/openssl.err")"

free_port() {
	$PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

phase() {	# label via tls|http
	local label=$1 via=$2 proto=$3 ns= net=() port tls=() ca=() scheme=http bt
	echo "--- $label"
	if [ "$via" = podman ]; then
		ct_netns "$label"
		ns=$CT_NETNS
		net=(ip netns exec "$ns")	# a command, not a function: timeout runs it
		port=8080
	else
		port=$(free_port)
	fi
	if [ "$proto" = tls ]; then
		tls=(--ssl-key-file /mnt/w/key.pem --ssl-cert-file /mnt/w/cert.pem)
		ca=(--ca "$WORK/share/cert.pem")
		scheme=https
	fi
	ct_start "$label" --root "$ROOTFS" --via "$via" ${ns:+--netns "$ns"} \
		--bind "$WORK/share:w" -- llama-server -m /mnt/w/tiny.gguf --host 127.0.0.1 \
		--port "$port" -t 1 -c 4096 -np 2 --no-webui "${tls[@]}"
	local pid=$CT_PID i
	for ((i = 0; i < 300; i++)); do
		"${net[@]}" curl -sf --max-time 5 --cacert "$WORK/share/cert.pem" "$scheme://127.0.0.1:$port/health" \
			>/dev/null 2>&1 && break
		kill -0 "$pid" 2>/dev/null || die "$label: llama-server exited: $(tail -n 5 "$WORK/ct-$label.err")"
		sleep 0.1
	done
	[ "$i" -lt 300 ] || die "$label: llama-server not healthy in 30 s"

	# the truth's tracer, on the server's own libssl under TLS
	if [ "$proto" = tls ]; then
		local ssl=/proc/$pid/root/usr/lib/x86_64-linux-gnu/libssl.so.3
		[ -e "$ssl" ] || die "$label: no $ssl"
		sed -e "s/@PID@/$pid/g" -e "s|@LIBSSL@|$ssl|g" "$STACK/sends_tls.bt.in" >"$WORK/$label.bt"
	else
		sed -e "s/@PID@/$pid/g" "$STACK/sends_plain.bt.in" >"$WORK/$label.bt"
	fi
	rm -f "$WORK/$label.sends"
	BPFTRACE_STRLEN=128 bpftrace "$WORK/$label.bt" >"$WORK/$label.sends" 2>"$WORK/$label.bt.err" &
	bt=$!
	PIDS+=("$bt")
	wait_for "$WORK/$label.sends" '^ready$' 60 || die "$label: bpftrace: $(tail -n 3 "$WORK/$label.bt.err")"

	trace "$pid"
	if [ "$proto" = tls ]; then
		if ! grep -q 'tls=[1-9]' "$WORK/tt.err"; then
			echo "FAIL: $label: OpenSSL not probed: $(grep -m 1 'tls=' "$WORK/tt.err")"
			FAILED+=("$label-openssl")
		fi
	fi
	timeout 90 "${net[@]}" $PY "$STACK/client.py" --port "$port" "${ca[@]}" --requests 8 --concurrency 2 \
		--tokens $TOKENS --id-prefix "$label-chat-" --out "$WORK/$label-chat.jsonl" \
		2>"$WORK/$label-chat.err" || die "$label: chat client: $(tail -n 3 "$WORK/$label-chat.err")"
	timeout 90 "${net[@]}" $PY "$STACK/client.py" --port "$port" "${ca[@]}" --path /completion \
		--requests 8 --concurrency 2 --tokens $TOKENS --close-at-final \
		--id-prefix "$label-completion-" --out "$WORK/$label-completion.jsonl" \
		2>"$WORK/$label-completion.err" ||
		die "$label: completion client: $(tail -n 3 "$WORK/$label-completion.err")"
	stop_tt
	mv "$WORK/tt.jsonl" "$WORK/$label.tt"
	mv "$WORK/tt.err" "$WORK/$label.tt.err"
	kill -INT "$bt"
	wait "$bt" || true
	ct_stop "$label"

	$PY "$STACK/truth.py" --sends "$WORK/$label.sends" --pid "$pid" --tokens $TOKENS \
		--client "$WORK/$label-chat.jsonl" --client "$WORK/$label-completion.jsonl" \
		>"$WORK/$label.truth" 2>"$WORK/$label.truth.err" ||
		die "$label: rig: $(head -n 5 "$WORK/$label.truth.err")"
	check "$label" --truth "$WORK/$label.truth" --trace "$WORK/$label.tt" \
		--client "$WORK/$label-chat.jsonl" --client "$WORK/$label-completion.jsonl" \
		--port "$port" --expect-format sse --min-requests 16 --min-complete 16
}

phase unshare-http unshare http
phase unshare-tls unshare tls
phase podman-http podman http
phase podman-tls podman tls
finish
