#!/usr/bin/python3
"""An SGLang-shaped gRPC token streamer on grpcio's asyncio server (grpc.aio, C-core).

SGLang's gRPC entry point (and vLLM's) serve `rpc Generate(GenerateRequest) returns (stream
GenerateResponse)` from a grpc.aio server: the servicer hands each request to a request
manager, which feeds it to the scheduler and gets the scheduler's step outputs back on an
asyncio queue per request; the servicer's async generator yields one GenerateResponse per
token, then one with the completion. Here the scheduler is an asyncio task of the same
process that steps every --itl-ms for the whole running batch (a request's first token comes
with the first step --ttft-ms after it arrived), and the service is registered with grpc's
generic handlers over the hand-written protobuf of pb.py (no protoc in Debian's grpcio).

  --port N               127.0.0.1:N, 0 picks one; first stdout line "listening on ADDR:PORT"
  --ttft-ms F, --itl-ms F, --tokens N (when the request sets no max_new_tokens)
  --stall-every-tokens N --stall-ms M --stall-kind sleep|cpu
                         before the steps that make tokens N, 2N, ... of a request, the
                         scheduler waits M ms more: sleep awaits (the loop idles), cpu spins
                         on the event loop (nothing else runs, grpc's own I/O included)
  --fail-every N --fail-after K
                         every N-th request fails after K messages: the servicer aborts with
                         INTERNAL "engine failure", as SGLang's does when the scheduler dies
  --reject-over N        a request asking for more than N tokens is refused at once with
                         INVALID_ARGUMENT (before any message: a trailers-only response)
  --pad-bytes N          each token's text carries N more bytes (large messages: a client
                         that stops reading fills the sockets' buffers)
  --truth FILE           one JSON line per request (TRUTH.md's fields, and below)

Truth: request_id (the GenerateRequest's), method, path, format "grpc", status 200 (HTTP),
grpc_status (the code's value) and grpc_message, t_start_ns (the servicer got the request),
t_token_ns (the clock just before each `yield`: every message, the completion included),
t_end_ns, chunks (messages handed to grpc), tokens (token messages), aborted (the client
cancelled), stalls [{kind, pid, tid, function, t_start_ns, t_end_ns, before_chunk}].
Times are CLOCK_MONOTONIC ns.
"""
import argparse
import asyncio
import json
import os
import sys
import threading
import time

import grpc

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pb  # noqa: E402


def now():
    return time.monotonic_ns()


class Scheduler:
    """One step per --itl-ms for the running batch; outputs go to per-request queues."""

    def __init__(self, args):
        self.args = args
        self.running = {}	# request id -> state
        self.wake = asyncio.Event()
        self.stalls = []

    def add(self, rid, n, q):
        self.running[rid] = {"n": n, "made": 0, "q": q, "ready": now() + int(self.args.ttft_ms * 1e6)}
        self.wake.set()

    def drop(self, rid):
        self.running.pop(rid, None)

    def stall_due(self):
        a = self.args
        if not a.stall_every_tokens:
            return False
        return any(r["ready"] <= now() and (r["made"] + 1) % a.stall_every_tokens == 0
                   for r in self.running.values())

    async def stall(self):
        t0 = now()
        if self.args.stall_kind == "cpu":
            end = t0 + int(self.args.stall_ms * 1e6)
            while now() < end:
                pass
            fn = "Scheduler.stall_cpu"
        else:
            await asyncio.sleep(self.args.stall_ms / 1000)
            fn = "Scheduler.stall_sleep"
        rec = {"kind": self.args.stall_kind, "pid": os.getpid(), "tid": threading.get_native_id(),
               "function": fn, "t_start_ns": t0, "t_end_ns": now()}
        self.stalls.append(rec)

    async def run(self):
        itl = self.args.itl_ms / 1000
        while True:
            if not self.running:
                self.wake.clear()
                await self.wake.wait()
            await asyncio.sleep(itl)
            if self.stall_due():
                await self.stall()
            t = now()
            for rid, r in list(self.running.items()):
                if r["ready"] > t:
                    continue
                r["made"] += 1
                r["q"].put_nowait(("token", 1000 + r["made"], f" tok{r['made']}"))
                if r["made"] >= r["n"]:
                    r["q"].put_nowait(("done", r["made"], None))
                    del self.running[rid]


class Servicer:
    def __init__(self, args, sched):
        self.args = args
        self.sched = sched
        self.count = 0
        self.truth = open(args.truth, "a", buffering=1) if args.truth else None

    def log(self, t):
        if self.truth:
            t["stalls"] = [s for s in self.sched.stalls
                           if s["t_end_ns"] >= t["t_start_ns"] and s["t_start_ns"] <= t["t_end_ns"]]
            for s in t["stalls"]:
                s["before_chunk"] = next((i for i, x in enumerate(t["t_token_ns"])
                                          if x >= s["t_end_ns"]), len(t["t_token_ns"]))
            self.truth.write(json.dumps(t) + "\n")

    async def generate(self, request, context):
        t = {"request_id": "", "stack": f"grpcio {grpc.__version__} aio", "pid": os.getpid(),
             "method": "POST", "path": pb.PATH, "format": "grpc", "stream": True,
             "status": 200, "grpc_status": 0, "grpc_message": "", "t_start_ns": now(),
             "t_token_ns": [], "chunks": 0, "tokens": 0, "count_on_wire": False,
             "aborted": False}
        self.count += 1
        nth = self.count
        req = pb.parse_generate_request(request)
        rid = req["request_id"]
        t["request_id"] = rid
        n = req["max_new_tokens"] or self.args.tokens
        q = asyncio.Queue()
        try:
            if self.args.reject_over and n > self.args.reject_over:
                t["grpc_status"] = grpc.StatusCode.INVALID_ARGUMENT.value[0]
                t["grpc_message"] = f"max_new_tokens {n} over {self.args.reject_over}"
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, t["grpc_message"])
            fail = self.args.fail_every and nth % self.args.fail_every == 0
            self.sched.add(rid, n, q)
            while True:
                kind, a, b = await q.get()
                if fail and t["chunks"] >= self.args.fail_after:
                    self.sched.drop(rid)
                    t["grpc_status"] = grpc.StatusCode.INTERNAL.value[0]
                    t["grpc_message"] = "engine failure"
                    await context.abort(grpc.StatusCode.INTERNAL, "engine failure")
                if kind == "token":
                    msg = pb.chunk_response(rid, a, b + "." * self.args.pad_bytes,
                                            len(req["input_ids"]), t["tokens"] + 1)
                    t["tokens"] += 1
                else:
                    msg = pb.complete_response(rid, list(range(1001, 1001 + a)),
                                               len(req["input_ids"]), a)
                t["chunks"] += 1
                t["t_token_ns"].append(now())
                yield msg
                if kind == "done":
                    break
        except asyncio.CancelledError:
            # the client cancelled (RST_STREAM): grpc.aio cancels the handler's task
            self.sched.drop(rid)
            t["aborted"] = True
            t["grpc_status"] = grpc.StatusCode.CANCELLED.value[0]
            raise
        finally:
            t["t_end_ns"] = now()
            self.log(t)


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=50051)
    ap.add_argument("--ttft-ms", type=float, default=50)
    ap.add_argument("--itl-ms", type=float, default=20)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--stall-every-tokens", type=int, default=0)
    ap.add_argument("--stall-ms", type=float, default=0)
    ap.add_argument("--stall-kind", choices=("sleep", "cpu"), default="sleep")
    ap.add_argument("--fail-every", type=int, default=0)
    ap.add_argument("--fail-after", type=int, default=0)
    ap.add_argument("--reject-over", type=int, default=0)
    ap.add_argument("--pad-bytes", type=int, default=0)
    ap.add_argument("--truth")
    args = ap.parse_args()

    sched = Scheduler(args)
    svc = Servicer(args, sched)
    # SGLang's server raises the message size limits; the rest is grpc's default
    server = grpc.aio.server(options=[("grpc.max_send_message_length", 256 << 20),
                                      ("grpc.max_receive_message_length", 256 << 20)])
    handler = grpc.method_handlers_generic_handler(pb.SERVICE, {
        pb.METHOD: grpc.unary_stream_rpc_method_handler(svc.generate),
    })
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port(f"127.0.0.1:{args.port}")
    await server.start()
    task = asyncio.ensure_future(sched.run())
    print(f"listening on 127.0.0.1:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    import signal
    for s in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(s, stop.set)
    await stop.wait()
    task.cancel()
    await server.stop(0.5)


if __name__ == "__main__":
    asyncio.run(main())
