#!/bin/bash
# Bursts on the vLLM-shaped Python stack (httptools, uvloop): the API server's event loop
# blocks for 150 ms every 500 ms (a synchronous call), tokens pile up, and when it runs again
# uvloop flushes every yield of that loop iteration in one writev, over 4096 bytes. Each
# event in it is a token: chunks exact, and send times between hand-off and receive.
[ -n "${STACK_PY_BOUNDED:-}" ] || STACK_PY_BOUNDED=1 exec timeout 85 bash "$0" "$@"
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/stacks/python/lib.sh"

start_py_stack --http httptools --loop uvloop --itl-ms 5 --ttft-ms 20 \
	--block-every-ms 500 --block-ms 150
start_tt
run_load --requests 40 --concurrency 4 --include-usage --max-tokens 120 --timeout-ms 20000
stop_tt
stop_py_stack
check_py_stack --min-requests 40 --expect-bursts --allow-stalls api_block ||
	die "tokentrace disagrees with the stack's truth after bursts"
echo "PASS: httptools+uvloop bursts agree with the truth"
