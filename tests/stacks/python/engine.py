"""EngineCore: the model side of a vLLM-v1-shaped server, in its own process.

Shaped like vLLM v1's EngineCoreProc: a busy loop on the main thread (take new requests,
run one batched step, hand the step's outputs on), one thread that reads requests from the
API server's ROUTER socket (our DEALER) and one that pushes each step's outputs, msgpack
encoded, to the API server's PULL socket, both over ipc:// (Unix sockets). Every step
produces one token for every running request whose prefill is done, and all of them go in
one message: one engine->API message per step that produced anything.

There is no model: a step is a timed wait (execute_model), a token is an id the API
server's detokenizer turns into text. Injected stalls run in the named functions below, on
the threads a real engine would block in, and travel to the API server with the step that
follows them, so that it can put them into the truth of every request they delayed.
"""
import ctypes
import json
import os
import queue
import random
import sys
import threading
import time

import msgpack
import zmq

# request types on the input socket (vLLM's EngineCoreRequestType values)
REQ_ADD = b"\x00"
REQ_ABORT = b"\x01"
REQ_SHUTDOWN = b"\xff"
VOCAB_SIZE = 97
WORDS = ("the", "model", "token", "stream", "answer", "quick", "brown", "fox", "jumps",
         "over", "lazy", "dog", "and", "then", "some", "more", "text", "arrives", "in",
         "order", "while", "latency", "is", "measured", "by", "tracer")

PR_SET_NAME = 15
PR_SET_PDEATHSIG = 1


def _prctl(option, arg):
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(option, arg, 0, 0, 0)
    except OSError:
        pass


def now():
    return time.monotonic_ns()


def token_id(seq, i):
    return (seq * 31 + i * 7 + 3) % VOCAB_SIZE


def detokenize(tok):
    """A token id's text: in the API server on the vLLM shape (its OutputProcessor), in the
    detokenizer process on the SGLang shape."""
    w = WORDS[tok % len(WORDS)]
    return " " + w if tok % 5 else w + ","


class Request:
    __slots__ = ("rid", "seq", "max_tokens", "n_prompt", "t_ready", "n_out", "stalled_at")

    def __init__(self, rid, seq, max_tokens, n_prompt, t_ready):
        self.rid = rid
        self.seq = seq
        self.max_tokens = max_tokens
        self.n_prompt = n_prompt
        self.t_ready = t_ready
        self.n_out = 0
        self.stalled_at = set()


# --- injected stalls: each runs in a function named for what a real engine would be doing ---

def schedule_heavy(ms):
    """engine_cpu: the scheduler burns CPU (think a huge prefix-cache walk)."""
    t0 = now()
    end = t0 + int(ms * 1e6)
    x = 1
    while now() < end:
        for _ in range(200):
            x = (x * 1103515245 + 12345) & 0x7FFFFFFF
    return t0, now()


def device_wait(ms):
    """engine_sleep: blocked waiting for the device (a CUDA sync is a sleep to the kernel)."""
    t0 = now()
    time.sleep(ms / 1e3)
    return t0, now()


class KVSwapper:
    """engine_lock: a KV-cache swap thread holds the block-table lock for the stall's length;
    the engine's main thread blocks on that lock in wait_for_kv."""

    def __init__(self):
        self.lock = threading.Lock()
        self.go = threading.Event()
        self.held = threading.Event()
        self.ms = 0
        self.tid = 0
        self.thread = threading.Thread(target=self.run, name="kv_swap", daemon=True)
        self.thread.start()

    def run(self):
        self.tid = threading.get_native_id()
        while True:
            self.go.wait()
            self.go.clear()
            self.swap_blocks(self.ms)

    def swap_blocks(self, ms):
        with self.lock:
            self.held.set()
            # a blocking copy while holding the lock (the GIL is released meanwhile)
            time.sleep(ms / 1e3)

    def wait_for_kv(self):
        t0 = now()
        self.lock.acquire()
        t1 = now()
        self.lock.release()
        return t0, t1

    def stall(self, ms):
        self.ms = ms
        self.held.clear()
        self.go.set()
        self.held.wait()
        return self.wait_for_kv()


class EngineCore:
    def __init__(self, cfg):
        self.cfg = cfg
        self.pid = os.getpid()
        self.rng = random.Random(cfg.get("seed", 1))
        self.running = {}
        self.seq = 0
        self.steps = 0
        self.messages = 0
        self.input_queue = queue.Queue()
        self.output_queue = queue.Queue()
        self.swapper = KVSwapper() if cfg.get("stall") == "engine_lock" else None

    # the two IO threads, as vLLM's process_input_sockets / process_output_sockets
    def process_input_socket(self, ctx, addr):
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.IDENTITY, b"engine-0")
        sock.connect(addr)
        # the ROUTER only learns our identity from a first message: say we are ready
        sock.send_multipart([b"READY", msgpack.packb({"pid": self.pid})])
        while True:
            typ, payload = sock.recv_multipart()
            self.input_queue.put((typ, msgpack.unpackb(payload)))
            if typ == REQ_SHUTDOWN:
                return

    def process_output_socket(self, ctx, addr):
        sock = ctx.socket(zmq.PUSH)
        sock.connect(addr)
        while True:
            msg = self.output_queue.get()
            if msg is None:
                sock.close(linger=1000)
                return
            sock.send(msgpack.packb(msg))

    def handle(self, typ, m):
        if typ == REQ_ADD:
            t_ready = now() + int(self.cfg["ttft_ms"] * 1e6)
            self.running[m["request_id"]] = Request(m["request_id"], self.seq, m["max_tokens"],
                                                    m["prompt_tokens"], t_ready)
            self.seq += 1
        elif typ == REQ_ABORT:
            for rid in m["request_ids"]:
                self.running.pop(rid, None)
        elif typ == REQ_SHUTDOWN:
            return False
        return True

    def process_input_queue(self):
        if not self.running:
            # idle: block for work, as EngineCoreProc does (no empty steps)
            if not self.handle(*self.input_queue.get()):
                return False
        while not self.input_queue.empty():
            if not self.handle(*self.input_queue.get_nowait()):
                return False
        return True

    def stall_due(self):
        """Requests (of the first stall_requests, 0 = all) about to produce token k*N, k >= 1."""
        n = self.cfg.get("stall_every_tokens", 0)
        limit = self.cfg.get("stall_requests", 0)
        if not self.cfg.get("stall", "").startswith("engine_") or n <= 0:
            return []
        t = now()
        due = []
        for r in self.running.values():
            if (limit and r.seq >= limit) or t < r.t_ready:
                continue
            if r.n_out > 0 and r.n_out % n == 0 and r.n_out not in r.stalled_at:
                due.append(r)
        return due

    def run_stall(self):
        kind, ms = self.cfg["stall"], self.cfg["stall_ms"]
        # the thread that stalls: the main thread, or the SGLang shape's forward thread
        rec = {"kind": kind, "pid": self.pid, "tid": threading.get_native_id()}
        if kind == "engine_cpu":
            rec["function"] = "schedule_heavy"
            t0, t1 = schedule_heavy(ms)
        elif kind == "engine_sleep":
            rec["function"] = "device_wait"
            t0, t1 = device_wait(ms)
        else:
            rec["function"] = "wait_for_kv"
            t0, t1 = self.swapper.stall(ms)
            rec["holder_tid"] = self.swapper.tid
            rec["holder_function"] = "swap_blocks"
        rec["t_start_ns"], rec["t_end_ns"] = t0, t1
        return rec

    def execute_model(self, t_step_start):
        """The forward pass: the step's length, with jitter, from the step's start."""
        ms = self.cfg["itl_ms"]
        j = self.cfg.get("jitter_ms", 0)
        if j:
            ms = max(0.0, ms + self.rng.uniform(-j, j))
        left = t_step_start + int(ms * 1e6) - now()
        if left > 0:
            time.sleep(left / 1e9)

    def step(self):
        t0 = now()
        self.process_batch_result(self.forward(t0))

    def forward(self, t0):
        """The model's part of a step (and any stall injected into it): its stalls."""
        stalls = []
        due = self.stall_due()
        if due:
            stalls.append(self.run_stall())
            for r in due:
                r.stalled_at.add(r.n_out)
        self.execute_model(t0)
        return stalls

    def process_batch_result(self, stalls):
        """A token for every running request whose prefill is done, in one message."""
        t = now()
        outputs = []
        for r in list(self.running.values()):
            if t < r.t_ready:
                continue
            tok = token_id(r.seq, r.n_out)
            r.n_out += 1
            fin = "length" if r.n_out >= r.max_tokens else None
            outputs.append({"request_id": r.rid, "new_token_ids": [tok],
                            "finish_reason": fin, "num_prompt_tokens": r.n_prompt})
            if fin:
                del self.running[r.rid]
        self.steps += 1
        if outputs or stalls:
            self.messages += 1
            self.emit({"engine_index": 0, "step": self.steps, "timestamp": t,
                       "outputs": outputs, "stalls": stalls, "messages": self.messages})

    def emit(self, msg):
        """vLLM: the step's outputs go to the output thread, which sends them."""
        self.output_queue.put(msg)

    def run_busy_loop(self):
        while self.process_input_queue():
            if self.running:
                self.step()


def exit_with(pid):
    """A detached engine has no parent to die with: it ends when the API server pid does."""
    def watch():
        while True:
            time.sleep(0.2)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                os._exit(0)
    threading.Thread(target=watch, name="watchdog", daemon=True).start()


def run_engine_core(cfg):
    """Entry point of the engine process (multiprocessing target, or __main__ when it was
    started detached)."""
    if cfg.get("api_pid"):
        exit_with(cfg["api_pid"])
    else:
        _prctl(PR_SET_PDEATHSIG, 15)	# die with the API server, as vLLM's engine does
    _prctl(PR_SET_NAME, ctypes.c_char_p(b"EngineCore_0"))
    engine = EngineCore(cfg)
    ctx = zmq.Context()
    tin = threading.Thread(target=engine.process_input_socket, args=(ctx, cfg["input_addr"]),
                           name="engine_input", daemon=True)
    tout = threading.Thread(target=engine.process_output_socket,
                            args=(ctx, cfg["output_addr"]), name="engine_output", daemon=True)
    tout.start()
    tin.start()
    try:
        engine.run_busy_loop()
    except KeyboardInterrupt:
        pass
    engine.output_queue.put(None)
    tout.join(timeout=2)


# --- the SGLang shape: a scheduler process and a detokenizer process ---
#
# SGLang's launcher is its API server (TokenizerManager under uvicorn); it starts a Scheduler
# process and a DetokenizerManager process. The tokenizer manager PUSHes requests to the
# scheduler; the scheduler's main thread runs the batch loop and PUSHes each step's token ids
# to the detokenizer, from that thread, with no I/O thread of its own; the detokenizer's main
# thread receives them (a blocking recv), turns ids into text and PUSHes the text on to the
# tokenizer manager. All ipc://, one message per step; SGLang pickles, we use msgpack. A
# token's wakeup crosses three processes and their ZMQ I/O threads.

class Scheduler(EngineCore):
    """SGLang's Scheduler: the same steps and injected stalls as EngineCore, its sockets
    read and written by its main thread. With overlap (SGLang's default: event_loop_overlap,
    TpModelWorkerClient) the model runs on a forward thread, injected stalls included, and
    the main thread waits for each batch's result on a queue before it sends the tokens."""

    def __init__(self, cfg, recv_sock, send_sock):
        super().__init__(cfg)
        self.recv_sock = recv_sock
        self.send_sock = send_sock
        self.overlap = cfg.get("overlap", False)
        if self.overlap:
            self.fwd_in = queue.Queue()
            self.fwd_out = queue.Queue()
            threading.Thread(target=self.forward_thread_func, name="forward",
                             daemon=True).start()

    def forward_thread_func(self):
        while True:
            self.fwd_out.put(self.forward(self.fwd_in.get()))

    def step(self):
        if not self.overlap:
            return super().step()
        self.fwd_in.put(now())
        self.process_batch_result(self.fwd_out.get())

    def emit(self, msg):
        self.send_sock.send(msgpack.packb(msg))

    def recv_one(self, flags=0):
        typ, payload = self.recv_sock.recv_multipart(flags)
        return typ, msgpack.unpackb(payload)

    def process_input_queue(self):
        """recv_requests(): block for work when idle, then take what waits without blocking."""
        if not self.running:
            if not self.handle(*self.recv_one()):
                return False
        while True:
            try:
                typ, m = self.recv_one(zmq.NOBLOCK)
            except zmq.Again:
                return True
            if not self.handle(typ, m):
                return False


def sglang_process(title, recv_addr, recv_bind, send_addr):
    """An SGLang child process's start: dies with its parent, named as setproctitle(title)
    leaves the kernel's comm (15 bytes), a PULL socket (bound or connected) and a PUSH one."""
    _prctl(PR_SET_PDEATHSIG, 15)
    _prctl(PR_SET_NAME, ctypes.c_char_p(title.encode()[:15]))
    ctx = zmq.Context()
    recv_sock = ctx.socket(zmq.PULL)
    (recv_sock.bind if recv_bind else recv_sock.connect)(recv_addr)
    send_sock = ctx.socket(zmq.PUSH)
    send_sock.connect(send_addr)
    return recv_sock, send_sock


def say_ready(pipe):
    pipe.send("ready")
    pipe.close()


def run_scheduler(cfg, ready):
    """Entry point of the SGLang-shaped scheduler process (multiprocessing target); says
    "ready" on the pipe once its sockets are up."""
    recv_sock, send_sock = sglang_process("sglang::scheduler", cfg["input_addr"], False,
                                          cfg["detokenizer_addr"])
    sched = Scheduler(cfg, recv_sock, send_sock)
    say_ready(ready)
    try:
        sched.run_busy_loop()
    except KeyboardInterrupt:
        pass
    send_sock.close(linger=1000)


def run_detokenizer(cfg, ready):
    """Entry point of the SGLang-shaped detokenizer process: DetokenizerManager.event_loop."""
    recv_sock, send_sock = sglang_process("sglang::detokenizer", cfg["detokenizer_addr"], True,
                                          cfg["output_addr"])
    say_ready(ready)
    try:
        while True:
            msg = msgpack.unpackb(recv_sock.recv())
            for o in msg["outputs"]:
                o["texts"] = [detokenize(t) for t in o["new_token_ids"]]
            send_sock.send(msgpack.packb(msg))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    # started detached (server.py --engine-launch detached): its configuration in a file
    with open(sys.argv[1]) as f:
        run_engine_core(json.load(f))
