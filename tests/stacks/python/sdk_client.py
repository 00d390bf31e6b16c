#!/usr/bin/python3
"""A streaming chat client the way Python SDKs call an LLM API over TLS.

  sdk_client.py --port N --ca CERT [--requests N] [--threads N] [--tokens N]
                [--id-prefix P] --out FILE [--wait-file PATH] [--stay-file PATH]

The standard library only: http.client.HTTPSConnection with an ssl context that verifies
the server against CERT, one keep-alive connection per thread, POST /v1/chat/completions
with "stream": true, the SSE read line by line as it arrives, stopping at [DONE]. A chunk is
what an application shows: an event whose delta carries content (not the role-only first
event, the finish or the usage event). Logs one JSON line per request, as tokenload does:
request_id, status, t_sent_ns, t_chunk_ns (the CLOCK_MONOTONIC time each chunk was read),
chunks, final. --wait-file: start once PATH exists (a client already running when the tracer
attaches); --stay-file: once done, stay up until PATH exists (an app keeps running). Never
prints payloads.
"""
import argparse
import http.client
import json
import os
import ssl
import sys
import threading
import time


def has_content(data):
    try:
        ch = json.loads(data).get("choices") or [{}]
        return bool((ch[0].get("delta") or {}).get("content"))
    except (ValueError, AttributeError):
        return False


def stream_one(conn, rid, tokens):
    body = json.dumps({"model": "tokensim", "stream": True, "max_tokens": tokens,
                       "messages": [{"role": "user", "content": "hello"}]})
    t_sent = time.monotonic_ns()
    conn.request("POST", "/v1/chat/completions", body=body,
                 headers={"Content-Type": "application/json", "Accept": "text/event-stream",
                          "X-Request-Id": rid})
    resp = conn.getresponse()
    rec = {"request_id": rid, "status": resp.status, "t_sent_ns": t_sent, "t_chunk_ns": [],
           "final": False, "error": None}
    while True:
        line = resp.readline()
        if not line:
            break
        now = time.monotonic_ns()
        line = line.strip()
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            rec["final"] = True
            break
        if has_content(data):
            rec["t_chunk_ns"].append(now)
    # drain what follows [DONE] (the chunked terminator) so the connection can be reused
    resp.read()
    rec["chunks"] = len(rec["t_chunk_ns"])
    return rec


def worker(args, ctx, ids, out, lock):
    conn = http.client.HTTPSConnection("127.0.0.1", args.port, context=ctx, timeout=30)
    for rid in ids:
        try:
            rec = stream_one(conn, rid, args.tokens)
        except (OSError, http.client.HTTPException) as e:
            rec = {"request_id": rid, "error": type(e).__name__, "t_chunk_ns": [], "chunks": 0,
                   "final": False}
            conn.close()
            conn = http.client.HTTPSConnection("127.0.0.1", args.port, context=ctx,
                                               timeout=30)
        with lock:
            out.write(json.dumps(rec) + "\n")
            out.flush()
    conn.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--id-prefix", default="py-")
    ap.add_argument("--out", required=True)
    ap.add_argument("--wait-file")
    ap.add_argument("--stay-file")
    args = ap.parse_args()
    ctx = ssl.create_default_context(cafile=args.ca)
    while args.wait_file and not os.path.exists(args.wait_file):
        time.sleep(0.01)
    ids = [f"{args.id_prefix}{i}" for i in range(args.requests)]
    lock = threading.Lock()
    with open(args.out, "w") as out:
        ts = [threading.Thread(target=worker, args=(args, ctx, ids[i::args.threads], out, lock))
              for i in range(args.threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    while args.stay_file and not os.path.exists(args.stay_file):
        time.sleep(0.01)


if __name__ == "__main__":
    main()
