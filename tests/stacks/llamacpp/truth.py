#!/usr/bin/env python3
"""The server's truth for tests/e2e/check_stack.py, from what llama.cpp's server did.

Usage:
  truth.py --sends SENDS.log --client LOG.jsonl [--client ...] --pid PID --tokens T > TRUTH

llama-server cannot log its own hand-offs, so a tracer apart from tokentrace does
(sends_plain.bt.in / sends_tls.bt.in, bpftrace): each read of a request with its first bytes,
and each send (plaintext: SSL_write under TLS) with the time it was called and its length.
cpp-httplib serves a connection on one thread, reading a request and writing its response
there, so the sends of a thread after it read request X (its X-Request-Id) and before its
next request are X's response, in order, from its first byte. The client logged the offset of
every text event's last byte in that response; the send that held that byte is the event's
hand-off, stamped before the send entered the kernel.

A truth line per client request: request_id, pid, status 200, chunks (the text events the
client read; a stream the model ended early, or a byte the server held back, is a rig
failure: every request must carry exactly T), tokens T (count_on_wire: usage /
tokens_predicted), aborted false, t_token_ns[]. Rig failures exit 1 with a line.
"""
import argparse
import json
import re
import sys

RID = re.compile(rb"X-Request-Id: ([A-Za-z0-9_.-]+)\r\n")
ESC = re.compile(r"\\x([0-9a-f]{2})|(.)", re.S)


def unescape(text, n):
    """bpftrace's %r of a buffer back to its first n bytes"""
    out = bytearray()
    for m in ESC.finditer(text):
        out.append(int(m.group(1), 16) if m.group(1) else ord(m.group(2)))
        if len(out) == n:
            break
    return bytes(out)


def sends_by_request(path):
    """{request id: [(t, bytes sent)]}: a thread's sends after it read a request's id"""
    cur = {}	# tid -> request id it serves
    got = {}	# tid -> what it read since its last request id (OpenSSL: a byte a read)
    out = {}
    # bpftrace prints through a buffer per CPU: lines of a thread that moved between CPUs
    # come out of order. A thread's calls do not overlap, so their times order them.
    with open(path) as f:
        lines = [ln.rstrip("\n").split(" ", 4) for ln in f if ln[:2] in ("R ", "S ")]
    lines.sort(key=lambda p: int(p[2]))
    for p in lines:
        if p[0] == "R" and len(p) == 5:
            buf = got.get(p[1], b"") + unescape(p[4], int(p[3]))
            m = RID.search(buf)
            # a read with no request id: the rest of a request, or a peek
            if m and cur.get(p[1]) != m.group(1).decode():
                cur[p[1]] = m.group(1).decode()
                out.setdefault(cur[p[1]], [])
            got[p[1]] = buf[m.end():] if m else buf[-256:]
        elif p[0] == "S" and len(p) == 4 and p[1] in cur:
            n = int(p[3])
            if n > 0:
                out[cur[p[1]]].append((int(p[2]), n))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sends", required=True)
    ap.add_argument("--client", action="append", required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--tokens", type=int, required=True)
    a = ap.parse_args()
    sends = sends_by_request(a.sends)
    errs = []
    for path in a.client:
        for line in open(path):
            c = json.loads(line)
            rid = c["request_id"]
            if c.get("error") or c.get("status") != 200:
                errs.append(f"{rid}: client error {c.get('error')} status {c.get('status')}")
                continue
            if c["chunks"] != a.tokens or (c.get("final") and c.get("tokens") != a.tokens):
                errs.append(f"{rid}: {c['chunks']} text events, {c.get('tokens')} tokens "
                            f"counted by the server: not the {a.tokens} asked for")
                continue
            ss = sends.get(rid)
            if not ss:
                errs.append(f"{rid}: no send of the server seen for it")
                continue
            t_token, k, end = [], 0, ss[0][1]
            for off in c["end_off"]:
                while k + 1 < len(ss) and off >= end:
                    k += 1
                    end += ss[k][1]
                if off >= end:
                    errs.append(f"{rid}: the client read byte {off}, the server sent {end}")
                    break
                t_token.append(ss[k][0])
            else:
                if t_token != sorted(t_token):
                    errs.append(f"{rid}: the hand-offs found are out of order")
                    continue
                print(json.dumps({"request_id": rid, "pid": a.pid, "status": 200,
                                  "chunks": c["chunks"], "tokens": a.tokens,
                                  "count_on_wire": True, "aborted": False,
                                  "t_token_ns": t_token, "sends": len(ss)}))
    for e in errs:
        print("rig:", e, file=sys.stderr)
    sys.exit(1 if errs else 0)


if __name__ == "__main__":
    main()
