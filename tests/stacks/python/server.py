#!/usr/bin/python3
"""A vLLM-v1-shaped OpenAI chat server: FastAPI on uvicorn, and an EngineCore process.

The API server process runs FastAPI on uvicorn (--http httptools|h11, --loop uvloop|asyncio)
and starts the engine process (engine.py) the way vLLM's AsyncMPClient starts EngineCore:
a ROUTER socket it binds for requests, a PULL socket it binds for outputs, both ipc://,
msgpack on the wire. One task reads the output socket with zmq.asyncio, another
detokenizes and dispatches each step's outputs to per-request asyncio queues, and each
request's StreamingResponse generator turns them into OpenAI chat SSE.

Ground truth (tests/stacks/python/README.md, /work/wt/TRUTH.md): one JSON line per request
in --truth, written by this process after the response was handed over, with the clock read
just before every `yield` of a content chunk ("hand-off"). Stalls injected here or in the
engine are named functions and are logged with the requests they delayed.

Prints "listening on 127.0.0.1:PORT" (or "listening on unix:PATH") as its first stdout line
once it accepts connections, then "pids api=PID engine=PID".
"""
import argparse
import asyncio
import concurrent.futures
import functools
import json
import multiprocessing
import operator
import os
import random
import shutil
import sys
import tempfile
import threading
import time

import msgpack
import uvicorn
import zmq
import zmq.asyncio
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.background import BackgroundTask

sys.dont_write_bytecode = True	# no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engine as engine_mod  # noqa: E402

API_STALLS = ("api_cpu", "api_sleep", "api_gil")
ENGINE_STALLS = ("engine_cpu", "engine_sleep", "engine_lock")


def now():
    return time.monotonic_ns()


def texts_of(o):
    """An output's text: the detokenizer process's on the SGLang shape; else detokenized
    here, in the API server, as vLLM's OutputProcessor does."""
    return o["texts"] if "texts" in o else [engine_mod.detokenize(t) for t in o["new_token_ids"]]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8000, help="TCP port on 127.0.0.1, 0 = ephemeral")
    ap.add_argument("--uds", default=None, help="listen on this Unix socket instead")
    ap.add_argument("--http", choices=("httptools", "h11"), default="httptools")
    ap.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop")
    ap.add_argument("--shape", choices=("vllm", "sglang"), default="vllm",
                    help="vllm: one engine process with ZMQ I/O threads; sglang: a scheduler "
                         "process and a detokenizer process between it and this one")
    ap.add_argument("--engine-launch", choices=("spawn", "detached"), default="spawn",
                    help="vllm shape: spawn the engine (our child, as vLLM does), or start it "
                         "detached (no child of ours: tokentrace finds it as a Unix peer)")
    ap.add_argument("--zmq", choices=("ipc", "tcp"), default="ipc",
                    help="vllm shape: the engine's sockets on ipc:// (Unix sockets, one host) "
                         "or tcp://127.0.0.1 (as an engine on another host is reached)")
    ap.add_argument("--no-overlap", action="store_true",
                    help="sglang: the scheduler runs the model on its main thread, not on a "
                         "forward thread")
    ap.add_argument("--truth", default=None, help="ground-truth JSON lines, one per request")
    ap.add_argument("--model", default="tokentrace-py")
    ap.add_argument("--tokens", type=int, default=32, help="max_tokens when the request sets none")
    ap.add_argument("--ttft-ms", type=float, default=50.0, help="prefill time in the engine")
    ap.add_argument("--itl-ms", type=float, default=20.0, help="engine step time")
    ap.add_argument("--jitter-ms", type=float, default=0.0, help="uniform +- on each step")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--always-usage", action="store_true",
                    help="send the usage chunk even when stream_options.include_usage is unset")
    ap.add_argument("--coalesce", choices=("auto", "events", "deltas", "none"), default="auto",
                    help="what the generator does with content that piled up while the loop "
                         "was busy: one yield of all pending events, one event with all "
                         "pending text (vLLM's RequestOutputCollector), or one yield per "
                         "event; auto (default): none on uvloop, whose writev already "
                         "coalesces, events on asyncio")
    ap.add_argument("--block-every-ms", type=float, default=0.0,
                    help="block the event loop this often (bursts), 0 = never")
    ap.add_argument("--block-ms", type=float, default=150.0, help="length of each block")
    ap.add_argument("--stall", choices=API_STALLS + ENGINE_STALLS, default=None)
    ap.add_argument("--stall-ms", type=float, default=200.0)
    ap.add_argument("--stall-every-tokens", type=int, default=10,
                    help="stall before content chunk N, 2N, ... of a request")
    ap.add_argument("--stall-requests", type=int, default=1,
                    help="only the first N requests trigger stalls (0 = every request)")
    return ap.parse_args(argv)


class ReqState:
    """What the API server knows about one request; becomes its truth line."""

    def __init__(self, rid, seq, model, max_tokens, usage, t_start):
        self.rid = rid
        self.seq = seq
        self.model = model
        self.max_tokens = max_tokens
        self.usage = usage
        self.t_start = t_start
        self.queue = asyncio.Queue()
        self.t_token = []
        self.chunks = 0
        self.tokens = 0
        self.prompt_tokens = 0
        self.bursts = 0
        self.max_events_per_send = 0
        self.max_bytes_per_send = 0
        self.yields = 0
        self.finished = False
        self.next_stall = 0


class DetachedProc:
    """A detached engine, as much of multiprocessing.Process as the client uses."""

    def __init__(self, pid):
        self.pid = pid

    def is_alive(self):
        try:
            os.kill(self.pid, 0)
            return True
        except ProcessLookupError:
            return False

    def terminate(self):
        try:
            os.kill(self.pid, 15)
        except ProcessLookupError:
            pass

    def join(self, timeout):
        end = time.monotonic() + timeout
        while self.is_alive() and time.monotonic() < end:
            time.sleep(0.05)


class EngineClient:
    """vLLM's AsyncMPClient + AsyncLLM output handling, cut down to what the stream needs."""

    def __init__(self, args):
        self.args = args
        self.ipc_dir = tempfile.mkdtemp(prefix="ttpy-ipc-")
        self.ctx = zmq.asyncio.Context()
        self.requests = {}
        self.stalls = []
        self.proc = None
        self.messages = 0
        self.steps = set()
        self.max_outputs_per_message = 0
        self.open_sockets()

    def open_sockets(self):
        self.input_socket = self.ctx.socket(zmq.ROUTER)
        self.output_socket = self.ctx.socket(zmq.PULL)
        if self.args.zmq == "tcp":
            self.input_socket.bind("tcp://127.0.0.1:*")
            self.output_socket.bind("tcp://127.0.0.1:*")
            self.input_addr = self.input_socket.getsockopt_string(zmq.LAST_ENDPOINT)
            self.output_addr = self.output_socket.getsockopt_string(zmq.LAST_ENDPOINT)
        else:
            self.input_addr = f"ipc://{self.ipc_dir}/input"
            self.output_addr = f"ipc://{self.ipc_dir}/output"
            self.input_socket.bind(self.input_addr)
            self.output_socket.bind(self.output_addr)
        self.outputs_queue = asyncio.Queue()
        self.identity = None

    def engine_cfg(self):
        """What the engine side is told: its sockets, its timing, its injected stalls."""
        a = self.args
        cfg = {"input_addr": self.input_addr, "output_addr": self.output_addr,
               "ttft_ms": a.ttft_ms, "itl_ms": a.itl_ms, "jitter_ms": a.jitter_ms,
               "seed": a.seed}
        if a.stall in ENGINE_STALLS:
            cfg.update(stall=a.stall, stall_ms=a.stall_ms,
                       stall_every_tokens=a.stall_every_tokens, stall_requests=a.stall_requests)
        return cfg

    def dispatch(self, msg):
        """One step's message: its stalls noted, each output to its request's queue."""
        self.messages += 1
        self.steps.add(msg["step"])
        self.max_outputs_per_message = max(self.max_outputs_per_message, len(msg["outputs"]))
        self.stalls.extend(msg["stalls"])
        for o in msg["outputs"]:
            st = self.requests.get(o["request_id"])
            if st is not None:
                st.queue.put_nowait(o)

    async def start(self):
        if self.args.engine_launch == "detached":
            await self.launch_detached()
        else:
            mp = multiprocessing.get_context("spawn")
            self.proc = mp.Process(target=engine_mod.run_engine_core,
                                   args=(self.engine_cfg(),), name="EngineCore_0", daemon=True)
            self.proc.start()
        # the handshake: the engine's DEALER says READY, which tells us its identity and pid
        frames = await asyncio.wait_for(self.input_socket.recv_multipart(), 30)
        self.identity = frames[0]
        if self.proc is None:
            self.proc = DetachedProc(msgpack.unpackb(frames[2])["pid"])
        asyncio.get_running_loop().create_task(self.process_outputs_socket())
        asyncio.get_running_loop().create_task(self.output_handler())

    async def launch_detached(self):
        """The engine started as a supervisor starts a service (TGI's shards, an engine
        launched apart from its API server): in a new session, its parent gone, so it is
        no child of ours; it finds our sockets from its configuration file."""
        cfg = self.engine_cfg()
        cfg["api_pid"] = os.getpid()
        path = os.path.join(self.ipc_dir, "engine.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        sp = await asyncio.create_subprocess_exec(
            "setsid", "--fork", sys.executable, os.path.join(os.path.dirname(
                os.path.abspath(__file__)), "engine.py"), path, stdin=asyncio.subprocess.DEVNULL)
        await sp.wait()

    async def process_outputs_socket(self):
        while True:
            frame = await self.output_socket.recv()
            self.outputs_queue.put_nowait(msgpack.unpackb(frame))

    async def output_handler(self):
        """Detokenize each step's outputs and put them into the requests' queues."""
        while True:
            self.dispatch(await self.outputs_queue.get())

    async def add_request(self, st, n_prompt):
        self.requests[st.rid] = st
        await self.input_socket.send_multipart(
            [self.identity, engine_mod.REQ_ADD,
             msgpack.packb({"request_id": st.rid, "max_tokens": st.max_tokens,
                            "prompt_tokens": n_prompt})])

    async def abort_request(self, rid):
        await self.input_socket.send_multipart(
            [self.identity, engine_mod.REQ_ABORT, msgpack.packb({"request_ids": [rid]})])

    def shutdown(self):
        if self.proc is not None and self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(timeout=2)
        shutil.rmtree(self.ipc_dir, ignore_errors=True)


class SGLangClient(EngineClient):
    """SGLang's TokenizerManager side: requests PUSHed to the scheduler process, text PULLed
    from the detokenizer process, which the scheduler PUSHes its token ids to. Both
    processes are started as SGLang's launcher starts them (multiprocessing, each saying
    ready on a pipe); handle_loop reads the detokenizer's messages and hands each output to
    its request's queue."""

    def open_sockets(self):
        self.input_addr = f"ipc://{self.ipc_dir}/scheduler_input"
        self.detokenizer_addr = f"ipc://{self.ipc_dir}/detokenizer"
        self.output_addr = f"ipc://{self.ipc_dir}/tokenizer"
        self.output_socket = self.ctx.socket(zmq.PULL)
        self.output_socket.bind(self.output_addr)
        self.input_socket = self.ctx.socket(zmq.PUSH)
        self.input_socket.bind(self.input_addr)
        self.detok = None

    async def start(self):
        cfg = self.engine_cfg()
        cfg.update(detokenizer_addr=self.detokenizer_addr, overlap=not self.args.no_overlap)
        mp = multiprocessing.get_context("spawn")
        procs = []
        for target, name in ((engine_mod.run_scheduler, "scheduler"),
                             (engine_mod.run_detokenizer, "detokenizer")):
            reader, writer = mp.Pipe(duplex=False)
            p = mp.Process(target=target, args=(cfg, writer), name=name, daemon=True)
            p.start()
            writer.close()
            procs.append((p, reader))
        self.proc, self.detok = procs[0][0], procs[1][0]
        for p, reader in procs:
            if not reader.poll(30) or reader.recv() != "ready":
                sys.exit(f"{p.name} did not start")
        asyncio.get_running_loop().create_task(self.handle_loop())

    async def handle_loop(self):
        while True:
            self.dispatch(msgpack.unpackb(await self.output_socket.recv()))

    async def add_request(self, st, n_prompt):
        self.requests[st.rid] = st
        await self.input_socket.send_multipart(
            [engine_mod.REQ_ADD, msgpack.packb({"request_id": st.rid,
                                                "max_tokens": st.max_tokens,
                                                "prompt_tokens": n_prompt})])

    async def abort_request(self, rid):
        await self.input_socket.send_multipart(
            [engine_mod.REQ_ABORT, msgpack.packb({"request_ids": [rid]})])

    def shutdown(self):
        for p in (self.proc, self.detok):
            if p is not None and p.is_alive():
                p.terminate()
                p.join(timeout=2)
        shutil.rmtree(self.ipc_dir, ignore_errors=True)


# --- stalls injected into the API server ---

def render_template(ms):
    """api_cpu: the event loop renders a (pathological) chat template on its own thread."""
    t0 = now()
    end = t0 + int(ms * 1e6)
    x = 1
    while now() < end:
        for _ in range(200):
            x = (x * 1103515245 + 12345) & 0x7FFFFFFF
    return t0, now()


def load_adapter(ms):
    """api_sleep: a blocking call (loading a LoRA adapter from disk) inside the event loop."""
    t0 = now()
    time.sleep(ms / 1e3)
    return t0, now()


class PromptHasher:
    """api_gil: prefix-cache hashing on a worker thread, as one long C call that keeps the
    GIL (a big-int multiplication checks no eval breaker), so the event loop cannot run.
    Calibrated at start-up, before serving, to last about --stall-ms."""

    EXP = 1.585  # Karatsuba

    def __init__(self, ms):
        self.pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="hash_prompt")
        bits = 1 << 18
        for _ in range(6):
            self.mul = functools.partial(operator.mul, random.getrandbits(bits) | 1,
                                         random.getrandbits(bits) | 1)
            t0 = time.perf_counter()
            self.mul()
            took = max(time.perf_counter() - t0, 1e-5) * 1e3
            if abs(took - ms) < 0.1 * ms:
                break
            bits = max(1 << 12, int(bits * (ms / took) ** (1 / self.EXP)))

    def hash_prompt(self, rec):
        rec["tid"] = threading.get_native_id()
        # From the first clock read to the last, one chain of C calls with no bytecode in
        # between: the GIL is not let go from t0 to t1, and the times are in the record
        # (already in the stall list) before any other thread can run.
        rec["_t"].extend(map(operator.call, (time.monotonic_ns, self.mul, time.monotonic_ns)))
        rec["_t"][1] = 0


def log_stats(ms):
    """The bursts' block: a synchronous call in the loop (a stats logger writing to a slow
    file), now and then; tokens pile up behind it."""
    t0 = now()
    time.sleep(ms / 1e3)
    return t0, now()


def sse(obj):
    return "data: " + json.dumps(obj, separators=(",", ":")) + "\n\n"


class App:
    def __init__(self, args):
        self.args = args
        self.pid = os.getpid()
        self.tid = threading.get_native_id()
        self.stack = f"uvicorn-{args.http}-{args.loop}"
        self.coalesce = args.coalesce
        if self.coalesce == "auto":
            self.coalesce = "none" if args.loop == "uvloop" else "events"
        self.engine = (SGLangClient if args.shape == "sglang" else EngineClient)(args)
        self.truth = open(args.truth, "w", buffering=1) if args.truth else None
        self.seq = 0
        self.stall_pending = None
        self.hasher = PromptHasher(args.stall_ms) if args.stall == "api_gil" else None
        self.app = FastAPI()
        self.app.add_api_route("/v1/chat/completions", self.create_chat_completion,
                               methods=["POST"])
        self.app.add_api_route("/health", self.health, methods=["GET"])

    async def health(self):
        return JSONResponse({"status": "ok"})

    def start_blocker(self):
        a = self.args
        if a.block_every_ms <= 0:
            return
        loop = asyncio.get_running_loop()

        def tick():
            t0, t1 = log_stats(a.block_ms)
            self.engine.stalls.append({"kind": "api_block", "pid": self.pid, "tid": self.tid,
                                       "function": "log_stats", "t_start_ns": t0,
                                       "t_end_ns": t1})
            loop.call_later(a.block_every_ms / 1e3, tick)
        loop.call_later(a.block_every_ms / 1e3, tick)

    async def api_stall(self, st, first, n, suspending):
        """Stall before handing off content chunks first..first+n-1 when they reach the
        request's next due chunk: chunk N, then N chunks after the one the last stall
        preceded (a backlog drained after a stall does not set off the next one at once)."""
        a = self.args
        if a.stall not in API_STALLS or a.stall_every_tokens <= 0 or n == 0:
            return
        if a.stall_requests and st.seq >= a.stall_requests:
            return
        if first + n - 1 < st.next_stall:
            return
        st.next_stall = first + a.stall_every_tokens
        suspending()
        if self.stall_pending is not None and not self.stall_pending.done():
            # requests due together share one stall, as in the engine's step
            await asyncio.shield(self.stall_pending)
            return
        loop = asyncio.get_running_loop()
        done = self.stall_pending = loop.create_future()
        # The stall runs in a timer callback, not here: uvloop writes what was yielded at
        # the end of the loop iteration, so a block inside this task would also hold back
        # chunks other tasks handed over earlier in the same iteration. Timers run first in
        # an iteration, when everything handed over before has been written. (uvloop turns
        # a 0 s delay into call_soon, hence 1 ms.)
        loop.call_later(0.001, self.run_api_stall, done)
        await asyncio.shield(done)

    def run_api_stall(self, done):
        a = self.args
        rec = {"kind": a.stall, "pid": self.pid, "tid": self.tid}
        if a.stall == "api_cpu":
            rec["function"] = "render_template"
            rec["t_start_ns"], rec["t_end_ns"] = render_template(a.stall_ms)
        elif a.stall == "api_sleep":
            rec["function"] = "load_adapter"
            rec["t_start_ns"], rec["t_end_ns"] = load_adapter(a.stall_ms)
        else:
            rec.update(function="hash_prompt", _t=[])
            self.engine.stalls.append(rec)
            asyncio.get_running_loop().run_in_executor(
                self.hasher.pool, self.hasher.hash_prompt, rec).add_done_callback(
                    lambda f: done.set_result(f.result()))
            return
        self.engine.stalls.append(rec)
        done.set_result(None)

    async def create_chat_completion(self, raw_request: Request):
        body = await raw_request.body()
        t_start = now()
        req = json.loads(body)
        rid = raw_request.headers.get("x-request-id") or f"{self.pid}-{self.seq}"
        stream = bool(req.get("stream", False))
        usage = self.args.always_usage or bool(
            (req.get("stream_options") or {}).get("include_usage"))
        max_tokens = req.get("max_tokens") or req.get("max_completion_tokens") or self.args.tokens
        model = req.get("model") or self.args.model
        st = ReqState(rid, self.seq, model, int(max_tokens), usage, t_start)
        st.next_stall = self.args.stall_every_tokens
        self.seq += 1
        prompt = "".join(m.get("content") or "" for m in req.get("messages", [])
                         if isinstance(m.get("content"), str))
        n_prompt = max(1, len(prompt) // 4)
        await self.engine.add_request(st, n_prompt)
        headers = {"X-Request-Id": rid}
        if not stream:
            return await self.complete_json(st, headers)
        return StreamingResponse(self.chat_completion_stream_generator(st),
                                 media_type="text/event-stream", headers=headers,
                                 background=BackgroundTask(self.finish_request, st, True))

    async def complete_json(self, st, headers):
        text = []
        try:
            while not st.finished:
                o = await st.queue.get()
                text.extend(texts_of(o))
                st.tokens += len(o["new_token_ids"])
                st.prompt_tokens = o["num_prompt_tokens"]
                st.finished = o["finish_reason"] is not None
        finally:
            self.engine.requests.pop(st.rid, None)
        resp = {"id": f"chatcmpl-{st.rid}", "object": "chat.completion",
                "created": int(time.time()), "model": st.model,
                "choices": [{"index": 0, "message": {"role": "assistant",
                                                     "content": "".join(text)},
                             "logprobs": None, "finish_reason": "length"}],
                "usage": {"prompt_tokens": st.prompt_tokens, "total_tokens":
                          st.prompt_tokens + st.tokens, "completion_tokens": st.tokens}}
        return JSONResponse(resp, headers=headers,
                            background=BackgroundTask(self.finish_request, st, False))

    async def chat_completion_stream_generator(self, st):
        created = int(time.time())
        cid = f"chatcmpl-{st.rid}"
        coalesce = self.coalesce
        # How uvicorn writes what we yield (strace, both --http impls): every yield is one
        # transport.write, done before the next. The asyncio loop's transport sends it at
        # once: one send() per yield, a backlog goes out as a train of small sends. uvloop
        # queues the writes made in one loop iteration and flushes them after it as one
        # writev (one iovec per yield): yields with no suspension between them share a
        # send, so on uvloop the stack itself coalesces a backlog (and the role chunk with
        # the first token, and the stream's tail). On asyncio it does not, so by default
        # the generator drains its queue and yields all pending events as one string, as
        # servers do when the consumer fell behind (--coalesce).
        uvloop = self.args.loop == "uvloop"
        group = [0, 0]	# events and bytes handed over that will leave in one send

        def sent(n, nbytes):
            if n > 1:
                st.bursts += 1
                st.max_bytes_per_send = max(st.max_bytes_per_send, nbytes)
            st.max_events_per_send = max(st.max_events_per_send, n)

        def handed(s, n=1):
            st.yields += 1
            if uvloop:
                group[0] += n
                group[1] += len(s)
            else:
                sent(n, len(s))
            return s

        def suspending():
            if uvloop and group[0]:
                sent(*group)
            group[0] = group[1] = 0

        def chunk(delta, finish=None):
            return sse({"id": cid, "object": "chat.completion.chunk", "created": created,
                        "model": st.model, "choices": [{"index": 0, "delta": delta,
                                                        "logprobs": None,
                                                        "finish_reason": finish}]})

        first = True
        finish = None
        while finish is None:
            if st.queue.empty():
                suspending()
            outs = [await st.queue.get()]
            if coalesce != "none":
                while not st.queue.empty():
                    outs.append(st.queue.get_nowait())
            if first:
                # vLLM sends the role on the first output, in a yield of its own
                first = False
                yield handed(chunk({"role": "assistant", "content": ""}))
            texts = []
            for o in outs:
                texts.extend(texts_of(o))
                st.tokens += len(o["new_token_ids"])
                st.prompt_tokens = o["num_prompt_tokens"]
                finish = finish or o["finish_reason"]
            if coalesce == "deltas" and texts:
                # vLLM's RequestOutputCollector: what piled up becomes one delta
                texts = ["".join(texts)]
            events = [chunk({"content": t}) for t in texts]
            await self.api_stall(st, st.chunks, len(events), suspending)
            if coalesce == "none":
                for e in events:
                    st.t_token.append(now())
                    st.chunks += 1
                    yield handed(e)
            elif events:
                st.t_token.extend([now()] * len(events))
                st.chunks += len(events)
                yield handed("".join(events), len(events))
        yield handed(chunk({}, finish))
        if st.usage:
            usage = {"prompt_tokens": st.prompt_tokens, "completion_tokens": st.tokens,
                     "total_tokens": st.prompt_tokens + st.tokens}
            yield handed(sse({"id": cid, "object": "chat.completion.chunk",
                              "created": created, "model": st.model, "choices": [],
                              "usage": usage}))
        yield handed("data: [DONE]\n\n")
        suspending()
        st.finished = True

    async def finish_request(self, st, stream):
        """Runs after the response's last byte was handed over (or the client left)."""
        t_end = now()
        self.engine.requests.pop(st.rid, None)
        aborted = not st.finished
        if aborted:
            await self.engine.abort_request(st.rid)
        if self.truth is None:
            return
        stalls = []
        for s in self.engine.stalls:
            d = dict(s)
            if "_t" in d:	# api_gil: [t0, 0, t1] once the C call ran, [] before
                t = d.pop("_t")
                if len(t) < 3:
                    continue
                d["t_start_ns"], d["t_end_ns"] = t[0], t[2]
            if d["t_end_ns"] <= st.t_start or d["t_start_ns"] >= t_end:
                continue
            # the first content chunk handed off after the stall
            d["before_chunk"] = next((i for i, t in enumerate(st.t_token)
                                      if t >= d["t_end_ns"]), len(st.t_token))
            stalls.append(d)
        line = {"request_id": st.rid, "stack": self.stack, "pid": self.pid, "tid": self.tid,
                "engine_pid": self.engine.proc.pid, "method": "POST",
                "path": "/v1/chat/completions", "format": "sse" if stream else "json",
                "stream": stream, "status": 200, "model": st.model, "t_start_ns": st.t_start,
                "t_token_ns": st.t_token, "t_end_ns": t_end, "chunks": st.chunks,
                "tokens": st.tokens, "prompt_tokens": st.prompt_tokens,
                "count_on_wire": bool(stream and st.usage) or not stream,
                "aborted": aborted, "burst_sends": st.bursts,
                "max_events_per_send": st.max_events_per_send,
                "max_bytes_per_send": st.max_bytes_per_send, "yields": st.yields,
                "coalesce": self.coalesce, "stalls": stalls}
        self.truth.write(json.dumps(line, separators=(",", ":")) + "\n")


async def serve(args):
    app = App(args)
    await app.engine.start()
    config = uvicorn.Config(app.app, host="127.0.0.1", port=args.port, uds=args.uds,
                            http=args.http, loop=args.loop, lifespan="off",
                            log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    task = asyncio.get_running_loop().create_task(server.serve())
    while not server.started:
        if task.done():
            app.engine.shutdown()
            task.result()
            sys.exit("server did not start")
        await asyncio.sleep(0.01)
    if args.uds:
        print(f"listening on unix:{args.uds}", flush=True)
    else:
        host, port = server.servers[0].sockets[0].getsockname()[:2]
        print(f"listening on {host}:{port}", flush=True)
    detok = f" detokenizer={app.engine.detok.pid}" if args.shape == "sglang" else ""
    print(f"pids api={app.pid} engine={app.engine.proc.pid}{detok}", flush=True)
    app.start_blocker()
    try:
        await task
    finally:
        e = app.engine
        print(f"engine: {e.messages} messages for {len(e.steps)} steps, at most "
              f"{e.max_outputs_per_message} outputs in one", file=sys.stderr, flush=True)
        app.engine.shutdown()


def main():
    args = parse_args()
    # uvicorn.run() would do this: install the loop policy before the loop exists
    uvicorn.Config(None, loop=args.loop).setup_event_loop()
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
