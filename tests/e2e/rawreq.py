#!/usr/bin/env python3
"""A raw HTTP/1.1 client for requests no real client library would send: odd bytes in the
path, the request id or the model name. Arguments take Python escapes (\\x9b, \\xc2\\x9b), so
the bytes on the wire are exactly those given.

  rawreq.py PORT PATH [--header 'Name: value']... [--model M] [--max-tokens N]

Sends one streaming chat request with Connection: close and reads the response to its end.
Prints the status line; exit 0 when a status line came back."""
import argparse
import codecs
import socket
import sys


def raw(s):
    return codecs.escape_decode(s.encode())[0]


def done(got):
    head, sep, body = got.partition(b"\r\n\r\n")
    if not sep:
        return False
    h = head.lower()
    for line in h.split(b"\r\n")[1:]:
        if line.startswith(b"content-length:"):
            return len(body) >= int(line.split(b":", 1)[1])
    if b"transfer-encoding: chunked" in h:
        return body.endswith(b"0\r\n\r\n")
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("path")
    ap.add_argument("--header", action="append", default=[])
    ap.add_argument("--model", default="tokensim")
    ap.add_argument("--max-tokens", type=int, default=4)
    a = ap.parse_args()
    body = (b'{"model":"' + raw(a.model) + b'","stream":true,"max_tokens":'
            + str(a.max_tokens).encode() + b',"messages":[{"role":"user","content":"hi"}]}')
    head = [b"POST " + raw(a.path) + b" HTTP/1.1", b"Host: 127.0.0.1",
            b"Content-Type: application/json", b"Connection: close",
            b"Content-Length: " + str(len(body)).encode()]
    head += [raw(h) for h in a.header]
    s = socket.create_connection(("127.0.0.1", a.port), timeout=20)
    s.sendall(b"\r\n".join(head) + b"\r\n\r\n" + body)
    got = b""
    # to the response's end: its Content-Length, the chunked terminator, or the close
    while not done(got):
        b = s.recv(65536)
        if not b:
            break
        got += b
    s.close()
    line = got.split(b"\r\n", 1)[0]
    print(line.decode("latin-1"))
    return 0 if line.startswith(b"HTTP/1.") else 1


if __name__ == "__main__":
    sys.exit(main())
