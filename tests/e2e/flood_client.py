#!/usr/bin/python3
"""Connection floods against a server, on loopback, phase by phase:

  flood_client.py PHASE PORT N [--batch B]
  hold       N connections open at once; 1 in 10 sends random bytes and 1 in 10 a TLS
             ClientHello's first bytes, the rest nothing; then all closed with a FIN
  cycles     N connect/close cycles, each closed with a FIN, B at a time
  reset-pre  N connections reset (SO_LINGER {1,0}) right after connecting, B at a time:
             against a server slow to accept they are reset before accept()
  reset-post N connections that send part of a request, wait for the server to have
             accepted them (it answers nothing yet), then reset, B at a time
Prints "PHASE: N done, E errors" (connect failures), one line. Needs N + a few file
descriptors (raise RLIMIT_NOFILE first).
"""
import argparse
import os
import socket
import struct
import sys
import time

LINGER_RST = struct.pack("ii", 1, 0)
# a TLS 1.x handshake record header and the start of a ClientHello
TLS_BYTES = bytes.fromhex("16030100c4010000c00303") + os.urandom(32)


def connect(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    return s


def hold(port, n, _batch):
    socks, errors = [], 0
    for i in range(n):
        try:
            s = connect(port)
        except OSError:
            errors += 1
            continue
        if i % 10 == 1:
            s.send(os.urandom(200))
        elif i % 10 == 2:
            s.send(TLS_BYTES)
        socks.append(s)
    time.sleep(1)	# all open at once, for a moment
    for s in socks:
        s.close()
    return len(socks), errors


def batches(port, n, batch, before_close):
    done = errors = 0
    while done + errors < n:
        socks = []
        for _ in range(min(batch, n - done - errors)):
            try:
                socks.append(connect(port))
            except OSError:
                errors += 1
        before_close(socks)
        for s in socks:
            s.close()
        done += len(socks)
    return done, errors


def cycles(port, n, batch):
    return batches(port, n, batch, lambda socks: None)


def reset_pre(port, n, batch):
    def rst(socks):
        for s in socks:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RST)
    return batches(port, n, batch, rst)


def reset_post(port, n, batch):
    def partial_then_rst(socks):
        for s in socks:
            s.send(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Len")
        time.sleep(0.2)	# the server accepts them and reads what came
        for s in socks:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RST)
    return batches(port, n, batch, partial_then_rst)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["hold", "cycles", "reset-pre", "reset-post"])
    ap.add_argument("port", type=int)
    ap.add_argument("n", type=int)
    ap.add_argument("--batch", type=int, default=100)
    a = ap.parse_args()
    fn = {"hold": hold, "cycles": cycles, "reset-pre": reset_pre, "reset-post": reset_post}
    done, errors = fn[a.phase](a.port, a.n, a.batch)
    print(f"{a.phase}: {done} done, {errors} errors")
    sys.exit(0 if done else 1)


if __name__ == "__main__":
    main()
