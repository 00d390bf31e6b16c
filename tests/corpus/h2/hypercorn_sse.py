#!/usr/bin/python3
"""An OpenAI-style SSE chat stream on hypercorn (python3-hypercorn: h11 and h2), one process:
HTTP/2 over cleartext both by prior knowledge and by "Upgrade: h2c", which uvicorn does not
speak. POST /v1/chat/completions streams a role chunk, --tokens content chunks " tokN"
--itl-ms apart, a finish chunk and [DONE].

  hypercorn_sse.py --port N [--tokens N] [--itl-ms F]
"""
import argparse
import asyncio
import json

from hypercorn.asyncio import serve
from hypercorn.config import Config


def chunk(i, delta, finish=None):
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def make_app(args):
    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream; charset=utf-8"),
                                (b"cache-control", b"no-cache")]})
        events = [chunk(0, {"role": "assistant", "content": ""})]
        events += [chunk(i, {"content": f" tok{i}"}) for i in range(1, args.tokens + 1)]
        events.append(chunk(0, {}, "length"))
        for e in events:
            await send({"type": "http.response.body", "more_body": True,
                        "body": f"data: {json.dumps(e)}\n\n".encode()})
            await asyncio.sleep(args.itl_ms / 1000)
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})
    return app


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--tokens", type=int, default=5)
    ap.add_argument("--itl-ms", type=float, default=2)
    args = ap.parse_args()
    cfg = Config()
    cfg.bind = [f"127.0.0.1:{args.port}"]
    cfg.accesslog = None
    print(f"listening on 127.0.0.1:{args.port}", flush=True)
    asyncio.run(serve(make_app(args), cfg))


if __name__ == "__main__":
    main()
