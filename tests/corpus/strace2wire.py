#!/usr/bin/env python3
"""A real server's socket traffic, as strace saw it, into the wire corpus's format.

  strace2wire.py STRACE TRUTH NAME NOTE...

STRACE: `strace -f -p PID -xx -s 1048576 -ttt -e trace=accept,accept4,read,readv,recvfrom,
recvmsg,write,writev,sendto,sendmsg,shutdown,close` of the server while a client streamed
from it. Every connection the server accepted becomes a `conn`, each of its reads and
writes one `recv`/`send` record with exactly the bytes the syscall moved, a read of 0
bytes `state close_wait`, its close `state close`; times are the syscall's start, relative
to the first accept. TRUTH: the server's own log (tests/stacks/*: one JSON line per
request). Writes NAME.wire (headed by NOTE: the stack and its version) and NAME.expect:
per request, in the order the server finished them, what tokentrace must report (the
truth's request id, chunks and model tokens, complete, not aborted, status 200); TRUTH "-"
writes no .expect (tests/corpus/h2/capture.sh writes its own). HTTP/2 connections with
prior knowledge (the client's preface first) count as HTTP connections.
"""
import json
import re
import sys

CALL = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(\w+)\((.*)\)\s+=\s+(-?\d+)")
UNFINISHED = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(\w+)\((.*) <unfinished \.\.\.>$")
RESUMED = re.compile(r"^(\d+)\s+\d+\.\d+\s+<\.\.\. (\w+) resumed>(.*)\)\s+=\s+(-?\d+)")
STR = re.compile(r'"((?:\\x[0-9a-f]{2})*)"')
RECV = {"read", "readv", "recvfrom", "recvmsg"}
SEND = {"write", "writev", "sendto", "sendmsg"}


def calls(path):
    """(time, name, args, ret) per finished syscall, resumed ones joined to their start."""
    pending = {}
    for line in open(path):
        line = line.rstrip("\n")
        m = CALL.match(line)
        if m:
            yield float(m[2]), m[3], m[4], int(m[5])
            continue
        m = UNFINISHED.match(line)
        if m:
            pending[m[1]] = (float(m[2]), m[3], m[4])
            continue
        m = RESUMED.match(line)
        if m and m[1] in pending:
            t, name, args = pending.pop(m[1])
            yield t, name, args + m[3], int(m[4])


def data(args, ret):
    """The bytes a call moved: its buffers' strings in order, cut at what it returned."""
    raw = b"".join(bytes.fromhex(s.replace("\\x", "")) for s in STR.findall(args))
    return raw[:ret]


def quote(b):
    out = []
    for c in b:
        ch = chr(c)
        if ch == "\r":
            out.append("\\r")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= c < 0x7f:
            out.append(ch)
        else:
            out.append(f"\\x{c:02x}")
    return "".join(out)


def strings(b):
    """The payload as quoted strings, one per line of it, continued with a tab."""
    parts = re.split(rb"(?<=\n)", b)
    return "\n\t".join(f'"{quote(p)}"' for p in parts if p)


def main():
    strace, truth_path, name = sys.argv[1:4]
    note = " ".join(sys.argv[4:])
    conns, nconn, t0, rec, first = {}, 0, None, [], {}
    for t, call, args, ret in calls(strace):
        fd = int(args.split(",")[0]) if args[:1].isdigit() else -1
        if call in ("accept", "accept4") and ret >= 0:
            nconn += 1
            conns[ret] = nconn
            t0 = t if t0 is None else t0
            rec.append((nconn, f"conn {nconn}"))
            continue
        if fd not in conns:
            continue
        ns = int(round((t - t0) * 1e9)) + 1000000000
        cid = conns[fd]
        if call in RECV and ret > 0:
            b = data(args, ret)
            first.setdefault(cid, b)
            rec.append((cid, f"recv {cid} {ns} {strings(b)}"))
        elif call in RECV and ret == 0:
            rec.append((cid, f"state {cid} {ns} close_wait"))
        elif call in SEND and ret > 0:
            rec.append((cid, f"send {cid} {ns} {strings(data(args, ret))}"))
        elif call in SEND and ret < 0 and ret != -11:
            rec.append((cid, f"send {cid} {ns} err={ret}"))
        elif call == "close" and ret == 0:
            rec.append((cid, f"state {cid} {ns} close"))
            del conns[fd]
    # the HTTP connections only: a server's own plumbing (ZMQ to its engine) is not the corpus
    http = {c for c, b in first.items()
            if re.match(rb"(GET|POST|PUT|HEAD) /|PRI \* HTTP/2\.0\r\n", b)}
    rec = [r for c, r in rec if c in http]
    with open(f"{name}.wire", "w") as f:
        f.write(f"# Recorded (tests/corpus/capture.sh), not written by hand: {note}\n\n")
        f.write("\n".join(rec) + "\n")
    if truth_path == "-":
        print(f"{name}: {len(http)} HTTP connections, {len(rec)} records")
        return
    truth = [json.loads(l) for l in open(truth_path) if l.strip()]
    with open(f"{name}.expect", "w") as f:
        f.write(f"# Recorded: {note}; the server's own truth says what was sent\n")
        for t in sorted(truth, key=lambda t: t["t_end_ns"]):
            e = {"request_id": t["request_id"], "status": 200, "chunks": t["chunks"],
                 "tokens": t["tokens"], "complete": True, "aborted": False,
                 "truncated": False, "error": False}
            f.write(json.dumps(e) + "\n")
    print(f"{name}: {len(http)} HTTP connections, {len(rec)} records, {len(truth)} requests")


if __name__ == "__main__":
    main()
