#!/usr/bin/python3
"""Noise at a TLS port, each on its own connection, each closed by us:

  tls_noise.py PORT CA
  garbage     a TLS record header, then random bytes (nginx takes a first byte other than
              0x16 or 0x80 for plaintext HTTP: that is plain-http's case)
  half-hello  the first half of a real ClientHello, then nothing: the handshake never ends
  plain-http  a plaintext HTTP request to the TLS port
  tls-binary  a full handshake, then binary that is not HTTP inside the TLS session
Prints one line per kind: "sent KIND". Never prints what the server answered.
"""
import os
import socket
import ssl
import sys
import time

port, ca = int(sys.argv[1]), sys.argv[2]
ctx = ssl.create_default_context(cafile=ca)


def conn():
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def drain(s):
    try:
        while s.recv(4096):
            pass
    except (OSError, ssl.SSLError):
        pass


s = conn()
s.sendall(b"\x16\x03\x01\x01\x2c" + os.urandom(300))
time.sleep(0.1)
s.close()
print("sent garbage")

inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
obj = ctx.wrap_bio(inc, out, server_hostname="127.0.0.1")
try:
    obj.do_handshake()
except ssl.SSLWantReadError:
    pass
hello = out.read()
s = conn()
s.sendall(hello[: len(hello) // 2])
time.sleep(0.3)
s.close()
print("sent half-hello")

s = conn()
s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
s.settimeout(2)
drain(s)
s.close()
print("sent plain-http")

s = ctx.wrap_socket(conn(), server_hostname="127.0.0.1")
s.sendall(bytes(range(256)) * 4)
s.settimeout(2)
drain(s)
s.close()
print("sent tls-binary")
