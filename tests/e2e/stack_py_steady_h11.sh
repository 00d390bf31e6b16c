#!/bin/bash
# The vLLM-shaped Python stack, steady streams: FastAPI on uvicorn with h11 and the asyncio loop,
# an EngineCore process over ZMQ. Every request of the server's truth must be reported,
# counted exactly, complete, and every token's send time must lie between the server's
# hand-off and the client's receive.
[ -n "${STACK_PY_BOUNDED:-}" ] || STACK_PY_BOUNDED=1 exec timeout 85 bash "$0" "$@"
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/stacks/python/lib.sh"

start_py_stack --http h11 --loop asyncio --itl-ms 10 --jitter-ms 2 --ttft-ms 30
start_tt
run_load --requests 40 --concurrency 4 --include-usage --max-tokens 24 --timeout-ms 20000
stop_tt
stop_py_stack
check_py_stack --min-requests 40 || die "tokentrace disagrees with the stack's truth"
echo "PASS: h11+asyncio steady streams agree with the truth"
