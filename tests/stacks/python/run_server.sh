#!/bin/bash
# Start the vLLM-shaped Python stack in the background and say where it is.
#
#   run_server.sh OUTFILE [server.py flags...]
#
# server.py's stdout goes to OUTFILE (its stderr to OUTFILE.err). Once it accepts
# connections this prints one line for the shell to eval, and exits 0:
#   PY_PORT=40123 PY_UDS= PY_API_PID=1234 PY_ENGINE_PID=1240 PY_DETOK_PID=
# (--shape sglang: the engine is the scheduler process, and PY_DETOK_PID the detokenizer's)
# (with --uds, PY_PORT is empty and PY_UDS the socket path). The server runs until it is
# sent SIGTERM or SIGINT (its engine process dies with it). Exit 1 if it did not start
# within 30 s. Debian's python3 (PYTHON to override): FastAPI, uvicorn, pyzmq and msgpack
# come from its packages (tools/install-deps.sh).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=${PYTHON:-/usr/bin/python3}
[ $# -ge 1 ] || { echo "usage: run_server.sh OUTFILE [server.py flags...]" >&2; exit 2; }
out=$1
shift
: >"$out"
"$PY" "$HERE/server.py" "$@" >"$out" 2>"$out.err" </dev/null &
pid=$!
for ((i = 0; i < 300; i++)); do
	if grep -q '^pids ' "$out"; then
		port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$out")
		uds=$(sed -n 's/^listening on unix:\(.*\)$/\1/p' "$out")
		engine=$(sed -n 's/^pids api=[0-9]* engine=\([0-9]*\).*$/\1/p' "$out")
		detok=$(sed -n 's/^pids .* detokenizer=\([0-9]*\)$/\1/p' "$out")
		echo "PY_PORT=$port PY_UDS=$uds PY_API_PID=$pid PY_ENGINE_PID=$engine PY_DETOK_PID=$detok"
		exit 0
	fi
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "run_server: server.py exited: $(tail -n 5 "$out.err")" >&2
		exit 1
	fi
	sleep 0.1
done
kill -TERM "$pid" 2>/dev/null || true
echo "run_server: server.py did not start in 30 s: $(tail -n 5 "$out.err")" >&2
exit 1
