#!/usr/bin/python3
"""A Generate call (tests/stacks/grpc) over a raw HTTP/2 connection (python3-h2) that makes
the server wait mid-stream, one of two ways:

  h2_flow_client.py --port N --mode window|tcp --tokens N --pause-after K --pause-ms M
                    --id RID --out FILE

window  HTTP/2 flow control: the stream's window is --window bytes (SETTINGS_INITIAL_WINDOW_
        SIZE), given back with a WINDOW_UPDATE as each DATA frame is read, but after the
        K-th message the stream's updates are held back M ms (the connection's still go):
        the socket is read all along, the server cannot send for want of window.
tcp     a slow reader: windows as large as HTTP/2 allows, a small SO_RCVBUF, and after the
        K-th message the socket is not read for M ms: the server's sends wait on TCP.

One JSON line, tokenload's fields (request_id, status, grpc_status, grpc_message, t_sent_ns,
t_chunk_ns: when each message was read, chunks, final, aborted, error) and what the pause
was, CLOCK_MONOTONIC ns: window: {"t_blocked_ns": the read that used up the stream's window
as this client counts it, "t_update_ns": the WINDOW_UPDATE sent after the pause}; tcp:
{"t_from_ns", "t_to_ns"}: the time the socket was not read.
"""
import argparse
import json
import os
import select
import socket
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "stacks",
                                "grpc"))
import pb  # noqa: E402

MAX_WINDOW = 2 ** 31 - 1


def now():
    return time.monotonic_ns()


class Call:
    def __init__(self, a):
        self.a = a
        self.rec = {"request_id": a.id, "status": 0, "grpc_status": None, "grpc_message": None,
                    "t_sent_ns": 0, "t_chunk_ns": [], "chunks": 0, "final": False,
                    "aborted": False, "error": None, "pause": {}}
        self.buf = b""
        self.held = 0		# stream window bytes not given back yet
        self.unacked = 0	# read and not given back: the server's stream window is less this
        self.pause_until = None
        self.done = False

    def messages(self, data):
        self.buf += data
        while len(self.buf) >= 5 and len(self.buf) >= 5 + int.from_bytes(self.buf[1:5], "big"):
            n = int.from_bytes(self.buf[1:5], "big")
            self.buf = self.buf[5 + n:]
            self.rec["t_chunk_ns"].append(now())
            if len(self.rec["t_chunk_ns"]) == self.a.pause_after:
                self.pause_until = now() + int(self.a.pause_ms * 1e6)
                if self.a.mode == "tcp":
                    self.rec["pause"]["t_from_ns"] = now()

    @staticmethod
    def give_back(conn, n):
        """The stream's window: n bytes more, unless the stream ended in the same read."""
        try:
            conn.increment_flow_control_window(n, stream_id=1)
        except h2.exceptions.StreamClosedError:
            pass

    def on_event(self, conn, ev):
        if isinstance(ev, h2.events.ResponseReceived):
            self.rec["status"] = int(dict(ev.headers).get(b":status", b"0"))
        elif isinstance(ev, h2.events.DataReceived):
            self.messages(ev.data)
            n = ev.flow_controlled_length
            if n:
                conn.increment_flow_control_window(n)	# the connection's: always
                if self.pause_until and self.a.mode == "window":
                    self.held += n
                    self.unacked += n
                    if self.unacked >= self.a.window and "t_blocked_ns" not in self.rec["pause"]:
                        self.rec["pause"]["t_blocked_ns"] = now()
                else:
                    self.give_back(conn, n)
        elif isinstance(ev, h2.events.TrailersReceived):
            h = dict(ev.headers)
            self.rec["grpc_status"] = int(h.get(b"grpc-status", b"-1"))
            self.rec["grpc_message"] = h.get(b"grpc-message", b"").decode()
        elif isinstance(ev, h2.events.StreamEnded):
            self.done = True
            self.rec["final"] = self.rec["grpc_status"] == 0
        elif isinstance(ev, h2.events.StreamReset):
            self.done = True
            self.rec["error"] = f"reset {ev.error_code}"

    def end_pause(self, conn):
        """The pause is over: give back what was held (window), read again (tcp)."""
        if self.a.mode == "window":
            if self.held:
                self.give_back(conn, self.held)
            self.rec["pause"]["t_update_ns"] = now()
            self.held = self.unacked = 0
        else:
            self.rec["pause"]["t_to_ns"] = now()
        self.pause_until = 0


def connect(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if a.mode == "tcp":
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.connect(("127.0.0.1", a.port))
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    win = a.window if a.mode == "window" else MAX_WINDOW
    conn.local_settings = h2.settings.Settings(client=True, initial_values={
        h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: win,
        h2.settings.SettingCodes.ENABLE_PUSH: 0})
    conn.initiate_connection()
    if a.mode == "tcp":
        conn.increment_flow_control_window(MAX_WINDOW - 65535)
    return s, conn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--mode", choices=("window", "tcp"), required=True)
    ap.add_argument("--tokens", type=int, default=20)
    ap.add_argument("--window", type=int, default=120)
    ap.add_argument("--pause-after", type=int, default=8)
    ap.add_argument("--pause-ms", type=float, default=300)
    ap.add_argument("--id", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    s, conn = connect(a)
    call = Call(a)
    req = pb.generate_request(a.id, "the quick brown fox", list(range(101, 110)), a.tokens)
    conn.send_headers(1, [(":method", "POST"), (":scheme", "http"), (":path", pb.PATH),
                          (":authority", f"127.0.0.1:{a.port}"),
                          ("content-type", "application/grpc"), ("te", "trailers"),
                          ("x-request-id", a.id)])
    conn.send_data(1, b"\0" + len(req).to_bytes(4, "big") + req, end_stream=True)
    call.rec["t_sent_ns"] = now()
    s.sendall(conn.data_to_send())
    deadline = now() + 30 * 10**9
    while not call.done and now() < deadline:
        wait = 0.5
        if call.pause_until:
            left = (call.pause_until - now()) / 1e9
            if left <= 0:
                call.end_pause(conn)
                s.sendall(conn.data_to_send())
                continue
            if a.mode == "tcp":
                time.sleep(left)	# not reading: the receive buffer fills
                continue
            wait = left
        if not select.select([s], [], [], wait)[0]:
            continue
        data = s.recv(65536)
        if not data:
            call.rec["error"] = "closed"
            break
        for ev in conn.receive_data(data):
            call.on_event(conn, ev)
        s.sendall(conn.data_to_send())
    if not call.done and not call.rec["error"]:
        call.rec["error"] = "timeout"
    conn.close_connection()
    s.sendall(conn.data_to_send())
    s.close()
    call.rec["chunks"] = len(call.rec["t_chunk_ns"])
    with open(a.out, "a") as f:
        f.write(json.dumps(call.rec) + "\n")


if __name__ == "__main__":
    main()
