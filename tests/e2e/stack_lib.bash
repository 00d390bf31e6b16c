# Helpers for the real-stack tests (stack_*.sh) on top of lib.sh. Sourced, not a test:
# tests/run.sh runs tests/e2e/*.sh, and this file is .bash.
#
#   start_server NAME CMD...   run a stack server (node, go, nginx...), wait for its
#                              "listening on" line; sets SRV_PID and SRV_PORT (empty for a
#                              unix socket); stdout/stderr in $WORK/NAME.out/.err
#   trace PID [FLAGS...]       start tokentrace on PID (lib.sh's start_tt) with FLAGS,
#                              JSON to $WORK/tt.jsonl, waits for "ready"
#   load NAME tokenload-flags  tokenload --out $WORK/NAME.jsonl; dies if tokenload fails
#   stop PID                   SIGTERM and wait
#   build_go                   tests/stacks/go/build.sh; sets GO_SERVER
#   check LABEL flags...       check_stack.py; a failure is noted in FAILED, not fatal, so
#                              every phase of a script runs; finish() dies if any failed
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NODE_SERVER=$ROOT/tests/stacks/node/server.js
NGINX_START=$ROOT/tests/stacks/nginx/start.sh
FAILED=()

start_server() {
	local name=$1
	shift
	"$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
	SRV_PID=$!
	PIDS+=("$SRV_PID")
	wait_for "$WORK/$name.out" '^listening on ' 20 ||
		die "$name did not start: $(tail -n 3 "$WORK/$name.err")"
	SRV_PORT=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$WORK/$name.out" | head -n 1)
}

trace() {
	SIM_PID=$1
	shift
	start_tt "$@"
}

load() {
	local name=$1
	shift
	"$LOAD" --out "$WORK/$name.jsonl" "$@" 2>"$WORK/$name.err" ||
		die "tokenload ($name) failed: $(tail -n 3 "$WORK/$name.err")"
	tail -n 1 "$WORK/$name.err" | sed 's/^/note: /'
}

stop() {
	kill -TERM "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

build_go() {
	GO_SERVER=$("$ROOT/tests/stacks/go/build.sh" 2>"$WORK/go-build.err") ||
		die "go build: $(tail -n 5 "$WORK/go-build.err")"
}

check() {
	local label=$1
	shift
	echo "--- $label"
	if python3 "$ROOT/tests/e2e/check_stack.py" "$@" >"$WORK/check.out"; then
		sed 's/^measured:/measured: '"$label"':/' "$WORK/check.out"
		echo "ok: $label"
	else
		sed 's/^measured:/measured: '"$label"':/' "$WORK/check.out"
		FAILED+=("$label")
	fi
}

finish() {
	[ ${#FAILED[@]} -eq 0 ] || die "${#FAILED[@]} phase(s) failed: ${FAILED[*]}"
}
