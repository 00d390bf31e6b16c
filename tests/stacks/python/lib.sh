# Helpers for e2e scripts against the Python stack; source after tests/e2e/lib.sh.
#
#   start_py_stack [server.py flags...]   truth in $WORK/truth.jsonl; sets PY_PORT,
#                                         PY_API_PID, PY_ENGINE_PID, and SIM_PORT and
#                                         SIM_PID (API,engine) so run_load and start_tt
#                                         from lib.sh work unchanged
#   check_py_stack [check.py flags...]    tests/stacks/python/check.py on truth, trace, load
PY_STACK=$ROOT/tests/stacks/python
PY=${PYTHON:-/usr/bin/python3}

start_py_stack() {
	local line
	line=$("$PY_STACK/run_server.sh" "$WORK/py.out" --port 0 --truth "$WORK/truth.jsonl" "$@") ||
		die "python stack did not start: $(tail -n 5 "$WORK/py.out.err")"
	eval "$line"
	PIDS+=("$PY_API_PID")
	SIM_PORT=$PY_PORT
	# tokentrace is pointed at the server's process tree, as a user would: the API server
	# that writes the responses and the engine it waits for
	SIM_PID=$PY_API_PID,$PY_ENGINE_PID
}

# stop_py_stack: SIGTERM and wait (uvicorn shuts down, its engine dies with it)
stop_py_stack() {
	local i
	kill -TERM "$PY_API_PID" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		kill -0 "$PY_API_PID" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$PY_API_PID" 2>/dev/null || true
}

check_py_stack() {
	"$PY" "$PY_STACK/check.py" "$WORK/truth.jsonl" "$WORK/tt.jsonl" "$WORK/load.jsonl" "$@"
}
