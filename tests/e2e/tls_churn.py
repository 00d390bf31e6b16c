#!/usr/bin/python3
"""The processes of tests/e2e/tls_churn.sh: short-lived TLS users and one that stays.

  tls_churn.py sink --cert C --key K --port-file F   a TLS server that reads and drops
  tls_churn.py once --port N --ca C --tokens T --out-dir D
        one streaming request through nginx, its record (as sdk_client.py logs it) in
        D/PID.json, exit
  tls_churn.py spawn --exe E --n N --par P -- ARGS   N processes E ARGS, P at a time
  tls_churn.py steady --sink-port N --ngx-port N --ca C
        stays up; commands on stdin, one a line, each answered with one line on stdout:
        cost N          N timed 64-byte SSL writes to the sink: "cost MEDIAN_NS P90_NS"
        stream NAME K T K streaming requests of T tokens through nginx, logged as
                        sdk_client.py does to NAME: "stream done"
        quit

The sink and spawn run under a name tokentrace does not trace; once and steady under the
traced one (a link to the interpreter). Never prints payloads.
"""
import argparse
import os
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "stacks",
                                "python"))


def sink(a):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)

    class H(socketserver.BaseRequestHandler):
        def handle(self):
            try:
                with ctx.wrap_socket(self.request, server_side=True) as s:
                    while s.recv(65536):
                        pass
            except (OSError, ssl.SSLError):
                pass

    socketserver.ThreadingTCPServer.daemon_threads = True
    socketserver.ThreadingTCPServer.allow_reuse_address = True
    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), H)
    with open(a.port_file + ".tmp", "w") as f:
        f.write(f"{srv.server_address[1]}\n")
    os.rename(a.port_file + ".tmp", a.port_file)
    srv.serve_forever()


def connect(port, ca):
    ctx = ssl.create_default_context(cafile=ca)
    raw = socket.create_connection(("127.0.0.1", port), timeout=30)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return ctx.wrap_socket(raw, server_hostname="127.0.0.1")


def once(a):
    import http.client
    import json
    from sdk_client import stream_one

    ctx = ssl.create_default_context(cafile=a.ca)
    conn = http.client.HTTPSConnection("127.0.0.1", a.port, context=ctx, timeout=30)
    rec = stream_one(conn, f"churn-{os.getpid()}", a.tokens)
    conn.close()
    with open(os.path.join(a.out_dir, f"{os.getpid()}.json"), "w") as out:
        out.write(json.dumps(rec) + "\n")


def spawn(a):
    running, started, failed = [], 0, 0
    while started < a.n or running:
        while started < a.n and len(running) < a.par:
            running.append(subprocess.Popen([a.exe] + a.args))
            started += 1
        p = running.pop(0)
        if p.wait() != 0:
            failed += 1
    print(f"spawned {a.n} failed {failed}", flush=True)
    sys.exit(1 if failed else 0)


def cost(s, n):
    buf, ts = b"x" * 64, []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        s.send(buf)	# one SSL_write_ex
        ts.append(time.perf_counter_ns() - t0)
    ts.sort()
    return ts[len(ts) // 2], ts[len(ts) * 9 // 10]


def steady(a):
    import http.client
    import json
    from sdk_client import stream_one

    s = connect(a.sink_port, a.ca)
    ctx = ssl.create_default_context(cafile=a.ca)
    print("ready", flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "cost":
            med, p90 = cost(s, int(cmd[1]))
            print(f"cost {med} {p90}", flush=True)
        elif cmd[0] == "stream":
            conn = http.client.HTTPSConnection("127.0.0.1", a.ngx_port, context=ctx,
                                               timeout=30)
            with open(cmd[1], "w") as out:
                for i in range(int(cmd[2])):
                    rec = stream_one(conn, f"{os.path.basename(cmd[1])}-{i}", int(cmd[3]))
                    out.write(json.dumps(rec) + "\n")
            conn.close()
            print("stream done", flush=True)
        elif cmd[0] == "quit":
            break
    s.close()


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("sink")
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--port-file", required=True)
    p = sub.add_parser("once")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--ca", required=True)
    p.add_argument("--tokens", type=int, default=4)
    p.add_argument("--out-dir", required=True)
    p = sub.add_parser("spawn")
    p.add_argument("--exe", required=True)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--par", type=int, default=4)
    p.add_argument("args", nargs=argparse.REMAINDER)
    p = sub.add_parser("steady")
    p.add_argument("--sink-port", type=int, required=True)
    p.add_argument("--ngx-port", type=int, required=True)
    p.add_argument("--ca", required=True)
    a = ap.parse_args()
    if a.mode == "spawn" and a.args[:1] == ["--"]:
        a.args = a.args[1:]
    {"sink": sink, "once": once, "spawn": spawn, "steady": steady}[a.mode](a)


if __name__ == "__main__":
    main()
