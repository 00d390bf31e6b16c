#!/usr/bin/python3
"""Stream one chat completion over HTTP/2 with python3-httpx (h2, prior knowledge on a plain
port) and print the SSE lines it read.  httpx_sse.py URL JSON-BODY"""
import sys

import httpx

url, body = sys.argv[1:3]
with httpx.Client(http1=False, http2=True, timeout=30) as c:
    with c.stream("POST", url, content=body, headers={"content-type": "application/json"}) as r:
        if r.http_version != "HTTP/2":
            sys.exit(f"httpx_sse: {r.http_version}, not HTTP/2")
        for line in r.iter_lines():
            print(line)
