#!/usr/bin/env python3
"""A streaming client for llama.cpp's server that logs what it read, byte for byte.

Usage:
  client.py --port N [--ca CERT] --path /v1/chat/completions|/completion --requests N
            [--concurrency C] [--per-conn K] [--tokens T] [--close-at-final]
            --id-prefix P --out LOG.jsonl

Each of C threads opens a connection (TLS when --ca is given, checked against that
certificate) and sends K requests on it, one after another, until N are sent in all. A request
is written by hand so that "X-Request-Id" is its first header (a tracer of the server's reads
finds it in a short prefix: tests/stacks/llamacpp/sends.bt.in). The response is read with
recv() into an HTTP/1.1 parser (head, chunked framing) and an SSE parser; every event's end is
stamped with CLOCK_MONOTONIC taken when the recv() that brought its last byte returned, and
with that byte's offset in the response as the server wrote it (the head included), so that
the server's sends can be laid against the client's reads.

--close-at-final: stop reading at the stream's own end ([DONE]; /completion's "stop": true)
and close the connection with the chunked framing unread, as the OpenAI SDKs do; each request
then gets a connection of its own.

One line per request (the fields tests/e2e/check_stack.py reads as a client log): request_id,
status, chunks (events carrying text), t_chunk_ns[], end_off[] (their end offsets), tokens
(usage.completion_tokens / tokens_predicted of the last event), final (the stream's own end
read), aborted (false), error, conn (the client's local port).
"""
import argparse
import bisect
import json
import socket
import ssl
import sys
import threading
import time

PROMPT = "the token stream of a small model, read by a client"


class Response:
    """One HTTP/1.1 response, fed as read: head, chunked body, SSE events."""

    def __init__(self, final_of):
        self.raw = 0		# bytes of the response fed so far
        self.head = b""
        self.status = None
        self.chunked = False
        self.left = None	# bytes left of the current chunk (None: reading a size line)
        self.line = b""
        self.clen = None
        self.body = bytearray()
        self.map_body = []	# body offset where a segment starts
        self.map_raw = []	# ... and its raw offset
        self.scan = 0
        self.events = []	# (data text, end raw offset, t)
        self.done = False	# the whole response (framing included) read
        self.final = False	# the stream's own end event read
        self.final_of = final_of

    def _body(self, data, raw_off, t):
        self.map_body.append(len(self.body))
        self.map_raw.append(raw_off)
        self.body += data
        while True:
            end = self.body.find(b"\n\n", self.scan)
            if end < 0:
                self.scan = max(0, len(self.body) - 1)
                return
            ev = bytes(self.body[self.scan:end])
            last = end + 1	# the event's last byte, in the body
            i = bisect.bisect_right(self.map_body, last) - 1
            raw = self.map_raw[i] + (last - self.map_body[i])
            self.scan = end + 2
            data = "\n".join(ln[5:].lstrip(" ") for ln in ev.decode().split("\n")
                             if ln.startswith("data:"))
            self.events.append((data, raw, t))
            if self.final_of(data):
                self.final = True

    def feed(self, data, t):
        pos = 0
        while pos < len(data) and not self.done:
            base = self.raw + pos
            if self.status is None:
                take = data[pos:]
                self.head += take
                end = self.head.find(b"\r\n\r\n")
                if end < 0:
                    pos = len(data)
                    continue
                used = end + 4 - (len(self.head) - len(take))
                self.head = self.head[:end + 4]
                pos += used
                lines = self.head.decode("latin-1").split("\r\n")
                self.status = int(lines[0].split()[1])
                for ln in lines[1:]:
                    k, _, v = ln.partition(":")
                    k, v = k.strip().lower(), v.strip()
                    if k == "transfer-encoding" and "chunked" in v.lower():
                        self.chunked = True
                    elif k == "content-length":
                        self.clen = int(v)
                if not self.chunked and not self.clen:
                    self.done = True
                continue
            if not self.chunked:
                n = min(self.clen, len(data) - pos)
                self._body(data[pos:pos + n], base, t)
                self.clen -= n
                pos += n
                self.done = self.clen == 0
                continue
            if self.left is None:
                nl = data.find(b"\n", pos)
                if nl < 0:
                    self.line += data[pos:]
                    pos = len(data)
                    continue
                self.line += data[pos:nl + 1]
                pos = nl + 1
                size = int(self.line.strip().split(b";")[0], 16)
                self.line = b""
                # the chunk and its CRLF; size 0: the last chunk, then a CRLF (no trailers)
                self.left = size + 2
                self.size = size
                continue
            n = min(self.left, len(data) - pos)
            # chunk data (not its CRLF) goes to the body
            data_n = max(0, min(n, self.left - 2))
            if data_n:
                self._body(data[pos:pos + data_n], base, t)
            self.left -= n
            pos += n
            if self.left == 0:
                self.left = None
                if self.size == 0:
                    self.done = True
        self.raw += len(data)


def final_chat(data):
    return data == "[DONE]"


def final_completion(data):
    try:
        return json.loads(data).get("stop") is True
    except ValueError:
        return False


def text_of(data, chat):
    """the text an event carries ("" for role, finish, usage chunks and [DONE])"""
    if data == "[DONE]":
        return ""
    try:
        o = json.loads(data)
    except ValueError:
        return ""
    if chat:
        ch = o.get("choices") or []
        return ((ch[0].get("delta") or {}).get("content") or "") if ch else ""
    return o.get("content") or ""


def tokens_of(data, chat):
    try:
        o = json.loads(data)
    except ValueError:
        return None
    if chat:
        return (o.get("usage") or {}).get("completion_tokens")
    return o.get("tokens_predicted") if o.get("stop") else None


def request(a, sock, rid, seed):
    chat = a.path == "/v1/chat/completions"
    if chat:
        body = {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": a.tokens,
                "stream": True, "stream_options": {"include_usage": True}}
    else:
        body = {"prompt": PROMPT, "n_predict": a.tokens, "stream": True}
    body.update(seed=seed, ignore_eos=True)
    body = json.dumps(body).encode()
    head = (f"POST {a.path} HTTP/1.1\r\nX-Request-Id: {rid}\r\nHost: 127.0.0.1:{a.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
    rec = {"request_id": rid, "status": None, "chunks": 0, "t_chunk_ns": [], "end_off": [],
           "tokens": None, "final": False, "aborted": False, "error": None,
           "conn": sock.getsockname()[1], "t_send_ns": time.monotonic_ns()}
    sock.sendall(head.encode() + body)
    r = Response(final_chat if chat else final_completion)
    seen = 0
    while not r.done and not (a.close_at_final and r.final):
        data = sock.recv(65536)
        t = time.monotonic_ns()
        if not data:
            rec["error"] = "closed by the server"
            break
        r.feed(data, t)
    for data, off, t in r.events:
        n = tokens_of(data, chat)
        if n is not None:
            rec["tokens"] = n
        if text_of(data, chat):
            rec["chunks"] += 1
            rec["t_chunk_ns"].append(t)
            rec["end_off"].append(off)
        seen += 1
    rec["status"] = r.status
    rec["final"] = r.final
    rec["events"] = seen
    return rec


def connect(a):
    s = socket.create_connection(("127.0.0.1", a.port), timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if a.ca:
        ctx = ssl.create_default_context(cafile=a.ca)
        s = ctx.wrap_socket(s, server_hostname="127.0.0.1")
    return s


def worker(a, jobs, out, lock):
    while True:
        with lock:
            if not jobs:
                return
            batch = [jobs.pop(0) for _ in range(min(a.per_conn, len(jobs)))]
        s = connect(a)
        for n in batch:
            rid = f"{a.id_prefix}{n:04d}"
            try:
                rec = request(a, s, rid, 1000 + n)
            except (OSError, ValueError) as e:
                rec = {"request_id": rid, "status": None, "chunks": 0, "t_chunk_ns": [],
                       "aborted": False, "error": repr(e), "final": False}
            with lock:
                out.write(json.dumps(rec) + "\n")
                out.flush()
            if rec.get("error"):
                break
        s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ca")
    ap.add_argument("--path", default="/v1/chat/completions",
                    choices=["/v1/chat/completions", "/completion"])
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--per-conn", type=int, default=1)
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--close-at-final", action="store_true")
    ap.add_argument("--id-prefix", default="r-")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.close_at_final:
        a.per_conn = 1	# the framing left unread: the connection cannot carry another
    jobs = list(range(a.requests))
    lock = threading.Lock()
    with open(a.out, "w") as out:
        ths = [threading.Thread(target=worker, args=(a, jobs, out, lock))
               for _ in range(a.concurrency)]
        for t in ths:
            t.start()
        for t in ths:
            t.join()
    recs = [json.loads(ln) for ln in open(a.out)]
    bad = [r for r in recs if r.get("error") or r.get("status") != 200 or not r.get("final")]
    print(f"client: {len(recs)} requests, {sum(r['chunks'] for r in recs)} chunks, "
          f"{len(bad)} failed", file=sys.stderr)
    sys.exit(1 if bad or len(recs) != a.requests else 0)


if __name__ == "__main__":
    main()
