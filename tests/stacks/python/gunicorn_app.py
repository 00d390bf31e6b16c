"""An OpenAI-compatible streaming endpoint as FastAPI apps are deployed: gunicorn with
uvicorn workers (`gunicorn -w 2 -k uvicorn.workers.UvicornWorker gunicorn_app:app`).

POST /v1/chat/completions with "stream": true answers SSE: a role chunk, max_tokens content
chunks ITL_MS apart (TTFT_MS before the first), a finish chunk, [DONE]. Each worker appends
its truth to $TT_TRUTH, one JSON line per finished request (O_APPEND, one write: workers do
not interleave): request_id, pid (the worker that served it), chunks, t_token_ns (the
CLOCK_MONOTONIC time each content chunk was handed to the response, before the yield).
Environment: TT_TRUTH (required), TTFT_MS (default 20), ITL_MS (default 5).
"""
import asyncio
import json
import os
import time

from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

app = FastAPI()
TRUTH = os.environ["TT_TRUTH"]
TTFT = float(os.environ.get("TTFT_MS", "20")) / 1e3
ITL = float(os.environ.get("ITL_MS", "5")) / 1e3


def event(rid, delta, finish=None):
    return "data: " + json.dumps({
        "id": f"chatcmpl-{rid}", "object": "chat.completion.chunk", "model": "tokensim",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"


@app.post("/v1/chat/completions")
async def chat(request: Request):
    body = await request.json()
    rid = request.headers.get("x-request-id", "")
    n = int(body.get("max_tokens") or 16)

    async def stream():
        truth = {"request_id": rid, "pid": os.getpid(), "chunks": 0, "t_token_ns": []}
        yield event(rid, {"role": "assistant", "content": ""})
        await asyncio.sleep(TTFT)
        for i in range(n):
            if i:
                await asyncio.sleep(ITL)
            truth["t_token_ns"].append(time.monotonic_ns())
            truth["chunks"] += 1
            yield event(rid, {"content": f" tok{i}"})
        yield event(rid, {}, "length")
        yield "data: [DONE]\n\n"
        fd = os.open(TRUTH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, (json.dumps(truth) + "\n").encode())
        os.close(fd)

    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={"X-Request-Id": rid})
