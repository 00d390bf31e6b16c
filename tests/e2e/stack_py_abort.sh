#!/bin/bash
# A client abandoning streams on the vLLM-shaped Python stack (httptools, uvloop): tokenload
# closes every 4th request's connection after 5 content chunks. Those requests, and only
# those, must be aborted (server truth and tokentrace alike); the others complete, exact.
[ -n "${STACK_PY_BOUNDED:-}" ] || STACK_PY_BOUNDED=1 exec timeout 85 bash "$0" "$@"
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/stacks/python/lib.sh"

start_py_stack --http httptools --loop uvloop --itl-ms 10 --ttft-ms 30
start_tt
run_load --requests 40 --concurrency 4 --include-usage --max-tokens 24 --timeout-ms 20000 \
	--abort-after 5 --abort-every 4
stop_tt
stop_py_stack
check_py_stack --min-requests 40 --expect-aborts ||
	die "tokentrace disagrees with the stack's truth on aborted streams"
echo "PASS: aborted streams agree with the truth"
