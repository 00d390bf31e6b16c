#!/usr/bin/python3
"""OpenAI-style chat streams over HTTP/2, logged as tokenload logs them.

  h2_sse_client.py --via httpx|curl --url URL [--ca CERT] [--requests N] [--concurrency C]
                   [--tokens N] [--id-prefix P] --out FILE

httpx: python3-httpx with h2, one client, so its calls are concurrent streams of one
connection (TLS with ALPN h2 for https://, prior knowledge for http://). curl: one
`curl --http2` (https://) or `curl --http2-prior-knowledge` (http://) process a call, C at
once, its output read from a pipe. Each call POSTs a streamed chat completion with its own
X-Request-Id; a chunk is an event whose delta carries content. One JSON line per call:
request_id, status, t_sent_ns, t_chunk_ns (CLOCK_MONOTONIC when each chunk was read: later
than the client library got it, never earlier), chunks, final ([DONE] read), aborted, error.
Never prints payloads.
"""
import argparse
import asyncio
import json
import time

import httpx


def has_content(data):
    try:
        ch = json.loads(data).get("choices") or [{}]
        return bool((ch[0].get("delta") or {}).get("content"))
    except (ValueError, AttributeError):
        return False


def body(tokens):
    return json.dumps({"model": "tokentrace-py", "stream": True, "max_tokens": tokens,
                       "messages": [{"role": "user", "content": "hello"}]})


def record(rid):
    return {"request_id": rid, "status": 0, "t_sent_ns": time.monotonic_ns(), "t_chunk_ns": [],
            "chunks": 0, "final": False, "aborted": False, "error": None}


def line_seen(rec, line):
    """One SSE line; True at [DONE]."""
    now = time.monotonic_ns()
    line = line.strip()
    if not line.startswith("data:"):
        return False
    data = line[5:].strip()
    if data == "[DONE]":
        rec["final"] = True
        return True
    if has_content(data):
        rec["t_chunk_ns"].append(now)
    return False


async def via_httpx(client, args, rid):
    rec = record(rid)
    try:
        async with client.stream("POST", args.url, content=body(args.tokens),
                                 headers={"content-type": "application/json",
                                          "x-request-id": rid}) as r:
            rec["status"] = r.status_code
            if r.http_version != "HTTP/2":
                rec["error"] = f"not HTTP/2: {r.http_version}"
            async for line in r.aiter_lines():
                if line_seen(rec, line):
                    break
    except httpx.HTTPError as e:
        rec["error"] = type(e).__name__
    return rec


async def via_curl(args, rid):
    rec = record(rid)
    tls = args.url.startswith("https:")
    cmd = ["curl", "-sS", "-N", "--http2" if tls else "--http2-prior-knowledge",
           "-H", "content-type: application/json", "-H", f"x-request-id: {rid}",
           "-w", "\n%{http_code} %{http_version}\n", "--data-binary", body(args.tokens)]
    if args.ca:
        cmd += ["--cacert", args.ca]
    p = await asyncio.create_subprocess_exec(*cmd, args.url, stdout=asyncio.subprocess.PIPE,
                                             stderr=asyncio.subprocess.PIPE)
    last = ""
    async for raw in p.stdout:
        line = raw.decode(errors="replace")
        if line.strip():
            last = line.strip()
        line_seen(rec, line)
    await p.wait()
    code, _, version = last.partition(" ")
    rec["status"] = int(code) if code.isdigit() else 0
    if p.returncode or version != "2":
        rec["error"] = f"curl exit {p.returncode}, HTTP version {version!r}"
    return rec


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--via", choices=("httpx", "curl"), required=True)
    ap.add_argument("--url", required=True)
    ap.add_argument("--ca")
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--id-prefix", default="h2-")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    sem = asyncio.Semaphore(args.concurrency)
    out = open(args.out, "a", buffering=1)
    client = httpx.AsyncClient(http1=False, http2=True, verify=args.ca or False, timeout=60) \
        if args.via == "httpx" else None

    async def one(i):
        async with sem:
            rid = f"{args.id_prefix}{i}"
            rec = await (via_httpx(client, args, rid) if client else via_curl(args, rid))
            rec["chunks"] = len(rec["t_chunk_ns"])
            rec["t_done_ns"] = time.monotonic_ns()
            out.write(json.dumps(rec) + "\n")

    await asyncio.gather(*(one(i) for i in range(args.requests)))
    if client:
        await client.aclose()


if __name__ == "__main__":
    asyncio.run(main())
