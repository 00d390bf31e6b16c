#!/usr/bin/python3
"""A gRPC client of the Generate stream (grpc.aio, C-core), the way a router calls SGLang's
scheduler: one channel (one HTTP/2 connection) for every call, calls concurrent on it.

  --port N --requests N --concurrency C --max-tokens T[,T...]   (call i asks for the list's
                                      i-th, cycled: streams of different lengths)
  --cancel-every N --cancel-after K   every N-th call is cancelled (RST_STREAM CANCEL) after
                                      its K-th message
  --id-prefix P                       request ids P-1, P-2, ... (in the request and as
                                      x-request-id metadata)
  --out FILE                          one JSON line per call (tokenload's fields and below)

Each line: request_id, status (200 once the response headers came), grpc_status (the code's
value), grpc_message, t_sent_ns, t_chunk_ns (the clock when each message was received:
completion included), chunks (messages), tokens (token messages), aborted (cancelled here),
final (the completion and status OK came), error, t_done_ns. CLOCK_MONOTONIC ns.
"""
import argparse
import asyncio
import json
import os
import sys
import time

import grpc

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pb  # noqa: E402

PROMPT = "the quick brown fox jumps over the lazy dog"


def now():
    return time.monotonic_ns()


async def one(call_fn, args, i, out):
    rid = f"{args.id_prefix}-{i}"
    sizes = [int(x) for x in str(args.max_tokens).split(",")]
    req = pb.generate_request(rid, PROMPT, list(range(101, 110)), sizes[(i - 1) % len(sizes)])
    rec = {"request_id": rid, "status": 0, "grpc_status": None, "grpc_message": None,
           "t_sent_ns": now(), "t_chunk_ns": [], "chunks": 0, "tokens": 0,
           "aborted": False, "final": False, "error": None}
    cancel = args.cancel_every and i % args.cancel_every == 0
    call = call_fn(req, metadata=(("x-request-id", rid),))
    complete = False
    try:
        async for msg in call:
            rec["t_chunk_ns"].append(now())
            rec["chunks"] += 1
            kind, _ = pb.parse_generate_response(msg)
            rec["tokens"] += kind == "chunk"
            complete |= kind == "complete"
            if cancel and rec["chunks"] >= args.cancel_after:
                call.cancel()
                rec["aborted"] = True
                break
    except grpc.aio.AioRpcError:
        pass	# its code and details below
    code = await call.code()
    rec["grpc_status"] = code.value[0]
    rec["grpc_message"] = await call.details()
    md = await call.initial_metadata()
    rec["status"] = 200 if md is not None and (rec["chunks"] or code != grpc.StatusCode.UNAVAILABLE) else 0
    rec["final"] = complete and code == grpc.StatusCode.OK
    if code not in (grpc.StatusCode.OK, grpc.StatusCode.CANCELLED):
        rec["error"] = code.name
    rec["t_done_ns"] = now()
    out.write(json.dumps(rec) + "\n")


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--max-tokens", default="8")
    ap.add_argument("--cancel-every", type=int, default=0)
    ap.add_argument("--cancel-after", type=int, default=1)
    ap.add_argument("--id-prefix", default=f"gc-{os.getpid()}")
    ap.add_argument("--out")
    args = ap.parse_args()

    out = open(args.out, "a", buffering=1) if args.out else sys.stdout
    async with grpc.aio.insecure_channel(f"127.0.0.1:{args.port}") as ch:
        call_fn = ch.unary_stream(pb.PATH)
        sem = asyncio.Semaphore(args.concurrency)

        async def run(i):
            async with sem:
                await one(call_fn, args, i, out)

        await asyncio.gather(*(run(i) for i in range(1, args.requests + 1)))
        # a router keeps its channel: let a cancelled call's RST_STREAM go out before it closes
        await asyncio.sleep(0.2)


if __name__ == "__main__":
    asyncio.run(main())
