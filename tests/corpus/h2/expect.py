#!/usr/bin/env python3
"""What h2wire must report for a recorded case, from the stacks' own logs (capture.sh).

  expect.py grpc NOTE CONNS TRUTH CLIENT...   a gRPC stack: the server's truth and the clients'
                                             lines, per request id
  expect.py files NOTE CONNS MODE PATH=BYTES...  static files: each path's stream, its size
  expect.py sse NOTE CONNS COUNTS MODE METHOD SSE: COUNTS has "PATH EVENTS" lines, one per
                                             stream, the events its client read

CONNS: how many HTTP/2 connections; every one must say no error and drop nothing. Prints the
.expect file.
"""
import json
import sys


def conns(n, mode="preface"):
    return [{"type": "conn", "mode": mode, "errors": 0, "dropped": 0} for _ in range(int(n))]


def grpc(truth_path, clients):
    truth = {t["request_id"]: t for t in map(json.loads, open(truth_path)) if t}
    seen = {}
    for path in clients:
        for line in open(path):
            if line.strip():
                c = json.loads(line)
                seen[c["request_id"]] = c
    out = []
    for rid, c in sorted(seen.items()):
        t = truth[rid]
        e = {"request_id": rid, "method": "POST", "path": t["path"], "status": 200,
             "content_type": "application/grpc", "req_messages": 1, "joined": False,
             "unknown": []}
        if c["aborted"] and t["aborted"]:
            # cancelled by the client, and the server saw it: its trailers never come
            e.update(end="reset", by="client", code=8, grpc_status=None)
        elif not c["aborted"]:
            e.update(end="done", grpc_status=c["grpc_status"], grpc_message=c["grpc_message"])
        # what went on the wire lies between what the client read and what the server
        # handed over: exact when both agree
        if c["chunks"] == t["chunks"]:
            e["messages"] = t["chunks"]
        out.append(e)
    return out


def files(args):
    out = []
    for a in args:
        path, size = a.rsplit("=", 1)
        out.append({"path": path, "method": "GET", "status": 200, "data_bytes": int(size),
                    "end": "done", "joined": False})
    return out


def sse(counts, method):
    out = []
    for line in open(counts):
        if line.strip():
            path, events = line.split()
            out.append({"path": path, "method": method, "status": 200, "events": int(events),
                        "content_type": "text/event-stream; charset=utf-8", "end": "done",
                        "joined": False})
    return out


def main():
    kind, note, n = sys.argv[1:4]
    rest = sys.argv[4:]
    print(f"# Recorded: {note}; the stacks' own logs say what was sent and read")
    if kind == "grpc":
        lines = conns(n) + grpc(rest[0], rest[1:])
    elif kind == "files":
        lines = conns(n, rest[0]) + files(rest[1:])
    elif kind == "sse":
        lines = conns(n, rest[1]) + sse(rest[0], rest[2])
    else:
        sys.exit(__doc__)
    for l in lines:
        print(json.dumps(l))


if __name__ == "__main__":
    main()
