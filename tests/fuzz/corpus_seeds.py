#!/usr/bin/env python3
"""Turn the wire corpus (tests/corpus/*.wire) into seed inputs for the stream fuzzers.

    corpus_seeds.py FUZZER OUTDIR      FUZZER: fuzz_http, fuzz_sse, fuzz_ndjson, fuzz_classify,
                                       fuzz_h2 or fuzz_hpack

Each input is in the format its fuzzer takes (fuzz_script.h): what real servers send, cut where
their syscalls cut it, with the uncaptured tails as gaps, is where mutations do the most good.

  fuzz_http      one input per connection and direction: each record's captured bytes as feeds
                 (at most 256 bytes each), its uncaptured tail as gaps, TCP closes as EOFs; the
                 flags answer "is this a response to HEAD" from the requests seen.
  fuzz_sse       one input per connection with text/event-stream responses: their de-chunked
  fuzz_ndjson    bodies (application/x-ndjson), one feed per send, gaps where the capture ended,
                 end() after each response and reset() before the next, as the correlator does.
  fuzz_classify  one input per SSE event's data, NDJSON line and JSON request or response body,
                 with its SSE event name.
  fuzz_h2        from the HTTP/2 corpus (tests/corpus/h2): one input per prior-knowledge
                 connection, its records in order (an event names each one's direction), and
                 one joined at its middle record.
  fuzz_hpack     from the HTTP/2 corpus: one input per connection and direction, the
                 fragments of its header blocks, each block ended by an event.
  fuzz_record    the HTTP/2 corpus as recordings (-w's format): the corpus runner replays
                 each capture and writes its records (runner --record), so the recordings
                 the fuzzer mutates reach the correlator's HTTP/2 path.

Prints how many inputs it wrote. Files are named corpus-<case>-<n>; identical inputs are
written once.
"""
import glob
import hashlib
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "corpus")
OPS_MAX = 255
FEED_MAX = 256
GAP_MAX = 255
# fuzz_classify.c's events[], by index
CLASSIFY_EVENTS = [None, "", "message_start", "content_block_delta", "message_stop", "ping",
                   "error", "message_delta"]


# ------------------------------------------------------------------ .wire reader

def unquote(line):
    """The C-escaped strings of a line, concatenated (tests/corpus/README.md)."""
    out = bytearray()
    i = 0
    while True:
        i = line.find('"', i)
        if i < 0:
            return bytes(out)
        i += 1
        while i < len(line) and line[i] != '"':
            c = line[i]
            i += 1
            if c == "\\":
                e = line[i]
                i += 1
                if e == "x":
                    out.append(int(line[i:i + 2], 16))
                    i += 2
                    continue
                c = {"r": "\r", "n": "\n", "t": "\t", "0": "\0"}.get(e, e)
            out += c.encode("latin-1") if ord(c) < 256 else c.encode()
        i += 1


def read_wire(path):
    """Records as dicts: kind, conn, and for data records dir, t, data, cap, err."""
    recs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line[0] in " \t":
                if recs and "data" in recs[-1]:
                    recs[-1]["data"] += unquote(line)
                continue
            w = line.split()
            if not w or w[0].startswith("#"):
                continue
            if w[0] in ("recv", "send"):
                r = {"kind": "data", "dir": w[0], "conn": w[1], "data": unquote(line),
                     "cap": None, "err": None}
                m = re.search(r" cap=(\d+)", line)
                if m:
                    r["cap"] = int(m.group(1))
                if re.search(r" err=-?\d+", line):
                    r["err"] = True
                recs.append(r)
            elif w[0] == "state":
                recs.append({"kind": "state", "conn": w[1], "state": w[3]})
    return recs


# ------------------------------------------------------------------ fuzz_script.h inputs

class Script:
    def __init__(self, flags=0):
        self.flags = flags
        self.ops = []
        self.payload = bytearray()

    def full(self):
        return len(self.ops) >= OPS_MAX

    def feed(self, data):
        for i in range(0, len(data), FEED_MAX):
            if self.full():
                return
            piece = data[i:i + FEED_MAX]
            self.ops.append((0, len(piece) - 1))
            self.payload += piece

    def gap(self, data):
        """A gap over these (uncaptured) bytes, which the script skips in the payload."""
        for i in range(0, len(data), GAP_MAX):
            if self.full():
                return
            piece = data[i:i + GAP_MAX]
            self.ops.append((2, len(piece)))
            self.payload += piece

    def event(self, which):
        if not self.full():
            self.ops.append((3 | which << 2, 0))

    def bytes(self):
        out = bytearray([self.flags & 0xff, len(self.ops)])
        for k, a in self.ops:
            out += bytes([k, a])
        return bytes(out + self.payload)


# ------------------------------------------------------------------ HTTP framing, in Python

class Stream:
    """One direction of a connection: its bytes, with for each byte (record, captured)."""

    def __init__(self):
        self.data = bytearray()
        self.src = []

    def add(self, rec_no, data, cap):
        self.data += data
        n = len(data) if cap is None else min(cap, len(data))
        self.src += [(rec_no, i < n) for i in range(len(data))]


def parse_head(text):
    lines = text.split(b"\r\n") if b"\r\n" in text else text.split(b"\n")
    start = lines[0].decode("latin-1")
    hdrs = {}
    for l in lines[1:]:
        if b":" in l:
            k, v = l.split(b":", 1)
            hdrs[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
    return start, hdrs


def messages(st, is_request, methods):
    """The messages of a stream as (head fields, content type, body byte indexes)."""
    d = st.data
    i = 0
    out = []
    heads = 0
    while i < len(d):
        if d[i] in b"\r\n":
            i += 1
            continue
        start_ok = (re.match(rb"[A-Z]+ \S+ HTTP/1\.\d", d[i:i + 300]) if is_request
                    else d[i:i + 7] == b"HTTP/1.")
        end = d.find(b"\r\n\r\n", i)
        if not start_ok or end < 0:
            # not a message start (joined mid-stream, not HTTP): look for the next one
            nxt = d.find(b"HTTP/1.", i + 1) if not is_request else -1
            if nxt < 0:
                break
            i = nxt
            continue
        start, hdrs = parse_head(bytes(d[i:end]))
        i = end + 4
        body = []
        status = 0 if is_request else int(start.split()[1])
        if not is_request and status < 200:
            continue
        if not is_request:
            answers_head = heads < len(methods) and methods[heads] == "HEAD"
            heads += 1
        else:
            answers_head = False
        te = hdrs.get("transfer-encoding", "").lower()
        if answers_head or status in (204, 304):
            pass
        elif te.endswith("chunked"):
            while i < len(d):
                m = re.match(rb"([0-9a-fA-F]+)[^\n]*\n", d[i:i + 4096])
                if not m:
                    break
                size = int(m.group(1), 16)
                i += m.end()
                if size == 0:
                    t = d.find(b"\r\n\r\n", i - 2)
                    i = t + 4 if t >= 0 else len(d)
                    break
                body += range(i, min(i + size, len(d)))
                i += size + 2
        elif "content-length" in hdrs:
            n = int(hdrs["content-length"])
            body = list(range(i, min(i + n, len(d))))
            i += n
        elif not is_request:
            body = list(range(i, len(d)))
            i = len(d)
        out.append((start, hdrs.get("content-type", "").lower(), body))
    return out


def body_script(st, msgs, want_ct):
    """fuzz_sse / fuzz_ndjson input: the bodies of one connection's messages of a type."""
    s = Script()
    n = 0
    for _, ct, body in msgs:
        if not ct.startswith(want_ct):
            continue
        if n:
            s.event(1)		# reset(): a new response
        n += 1
        run = bytearray()
        key = None
        for idx in body + [None]:
            k = None if idx is None else st.src[idx]
            if k != key and run:
                (s.feed if key[1] else s.gap)(bytes(run))
                run = bytearray()
            key = k
            if idx is not None:
                run.append(st.data[idx])
        s.event(0)			# end(): the body ended
    return s.bytes() if n else None


def sse_events(body):
    """(event name, data) of each event of an SSE body."""
    out = []
    name, data, has = None, [], False
    for line in re.split(rb"\r\n|\n|\r", body):
        if not line:
            if has:
                out.append((name, b"\n".join(data)))
            name, data, has = None, [], False
            continue
        if line.startswith(b":"):
            continue
        field, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            data.append(value)
            has = True
        elif field == b"event":
            name = value.decode("utf-8", "replace")
    return out


def classify_input(text, event):
    idx = CLASSIFY_EVENTS.index(event) if event in CLASSIFY_EVENTS else (0 if event is None
                                                                          else 1)
    # a prefix length that varies with the text; not cut: the text is whole
    prefix = hashlib.sha1(text).digest()[0] >> 4
    return bytes([idx | prefix << 4]) + text


# ------------------------------------------------------------------ per case

def seeds_of(path, fuzzer):
    recs = read_wire(path)
    conns = []
    for r in recs:
        if r["conn"] not in conns:
            conns.append(r["conn"])
    out = []
    for cid in conns:
        crecs = [r for r in recs if r["conn"] == cid]
        streams = {"recv": Stream(), "send": Stream()}
        for no, r in enumerate(crecs):
            if r["kind"] == "data" and not r["err"]:
                streams[r["dir"]].add(no, r["data"], r["cap"])
        reqs = messages(streams["recv"], True, [])
        methods = [start.split()[0] for start, _, _ in reqs]
        resps = messages(streams["send"], False, methods)
        if fuzzer == "fuzz_http":
            flags = 0
            for i, m in enumerate(methods[:7]):
                flags |= (m == "HEAD") << (1 + i)
            for d in ("recv", "send"):
                s = Script(flags)
                for r in crecs:
                    if r["kind"] == "state":
                        s.event(0)
                    elif r["dir"] == d and not r["err"] and r["data"]:
                        cap = len(r["data"]) if r["cap"] is None else r["cap"]
                        s.feed(r["data"][:cap])
                        s.gap(r["data"][cap:])
                if s.ops:
                    out.append(s.bytes())
        elif fuzzer in ("fuzz_sse", "fuzz_ndjson"):
            ct = "text/event-stream" if fuzzer == "fuzz_sse" else "application/x-ndjson"
            b = body_script(streams["send"], resps, ct)
            if b:
                out.append(b)
        elif fuzzer == "fuzz_classify":
            for st, msgs in ((streams["recv"], reqs), (streams["send"], resps)):
                for _, ct, body in msgs:
                    text = bytes(st.data[i] for i in body)
                    if ct.startswith("text/event-stream"):
                        out += [classify_input(d, e) for e, d in sse_events(text)]
                    elif ct.startswith("application/x-ndjson"):
                        out += [classify_input(l.rstrip(b"\r"), None)
                                for l in text.split(b"\n") if l.strip()]
                    elif text:
                        out.append(classify_input(text, None))
    return out


# ------------------------------------------------------------------ HTTP/2

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def h2_conns():
    """(case, [(dir 0 client / 1 server, bytes, uncaptured)]) per HTTP/2 prior-knowledge
    connection of the HTTP/2 corpus, and a list of None for a close."""
    out = []
    for path in sorted(glob.glob(os.path.join(CORPUS, "h2", "*.wire"))):
        case = os.path.basename(path)[:-5]
        recs = read_wire(path)
        conns = []
        for r in recs:
            if r["conn"] not in conns:
                conns.append(r["conn"])
        for cid in conns:
            seq = []
            for r in recs:
                if r["conn"] != cid:
                    continue
                if r["kind"] == "state":
                    if r["state"] == "close":
                        seq.append(None)
                elif not r["err"] and r["data"]:
                    cap = len(r["data"]) if r["cap"] is None else r["cap"]
                    seq.append((0 if r["dir"] == "recv" else 1, r["data"][:cap],
                                r["data"][cap:]))
            first = next((x for x in seq if x and x[0] == 0), None)
            if first and first[1].startswith(H2_PREFACE):
                out.append((case, seq))
    return out


def h2_script(seq, flags):
    s = Script(flags)
    for x in seq:
        if x is None:
            s.event(2)
            continue
        s.event(x[0])
        s.feed(x[1])
        s.gap(x[2])
    return s.bytes()


def h2_blocks(data):
    """The header-block fragments of one direction's bytes, and where each block ends."""
    i = len(H2_PREFACE) if data.startswith(H2_PREFACE) else 0
    out = []
    while i + 9 <= len(data):
        n = int.from_bytes(data[i:i + 3], "big")
        typ, flags = data[i + 3], data[i + 4]
        p = data[i + 9:i + 9 + n]
        i += 9 + n
        if typ not in (1, 5, 9):
            continue
        lead, pad = 0, 0
        if flags & 0x08 and typ != 9 and p:
            pad = p[0]
            lead = 1
        if typ == 1 and flags & 0x20:
            lead += 5
        if typ == 5:
            lead += 4
        out.append((p[lead:len(p) - pad], bool(flags & 0x04)))
    return out


def h2_seeds(fuzzer):
    out = []
    for _, seq in h2_conns():
        if fuzzer == "fuzz_h2":
            out.append(h2_script(seq, 0))
            # joined at the middle record: what the tracer sees when it attaches then
            out.append(h2_script(seq[len(seq) // 2:], 2))
            continue
        for d in (0, 1):
            s = Script(0)
            data = b"".join(x[1] for x in seq if x and x[0] == d)
            for frag, end in h2_blocks(data):
                s.feed(frag)
                if end:
                    s.event(0)
            if s.ops:
                out.append(s.bytes())
    return out


def record_seeds(outdir):
    """Each HTTP/2 capture as a recording, through the corpus runner (it must be built)."""
    import subprocess
    runner = os.path.join(HERE, "..", "..", ".output", "tests", "corpus")
    n = 0
    for path in sorted(glob.glob(os.path.join(CORPUS, "h2", "*.wire"))):
        out = os.path.join(outdir, "corpus-h2-" + os.path.basename(path)[:-5] + ".ttr")
        subprocess.run([runner, "--record", out, path], check=True, stdout=subprocess.DEVNULL,
                       timeout=60)
        n += 1
    return n


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    fuzzer, outdir = sys.argv[1:]
    if fuzzer == "fuzz_record":
        os.makedirs(outdir, exist_ok=True)
        n = record_seeds(outdir)
        print(f"{n} seeds for {fuzzer} from {os.path.join(CORPUS, 'h2')}")
        return
    if fuzzer in ("fuzz_h2", "fuzz_hpack"):
        os.makedirs(outdir, exist_ok=True)
        seeds = {hashlib.sha1(d).hexdigest(): d for d in h2_seeds(fuzzer)}
        for i, (h, d) in enumerate(sorted(seeds.items())):
            with open(os.path.join(outdir, f"corpus-h2-{h[:12]}"), "wb") as f:
                f.write(d)
        print(f"{len(seeds)} seeds for {fuzzer} from {os.path.join(CORPUS, 'h2')}")
        return
    if fuzzer not in ("fuzz_http", "fuzz_sse", "fuzz_ndjson", "fuzz_classify"):
        # a fuzzer whose input is not a byte stream of the wire (tests/run.sh asks them all)
        print(f"0 seeds for {fuzzer}: its input is not made from the wire corpus")
        return
    os.makedirs(outdir, exist_ok=True)
    seen = set()
    n = 0
    for path in sorted(glob.glob(os.path.join(CORPUS, "*.wire"))):
        case = os.path.basename(path)[:-5]
        for i, data in enumerate(seeds_of(path, fuzzer)):
            h = hashlib.sha1(data).hexdigest()
            if h in seen:
                continue
            seen.add(h)
            with open(os.path.join(outdir, f"corpus-{case}-{i}"), "wb") as f:
                f.write(data)
            n += 1
    print(f"{n} seeds for {fuzzer} from {CORPUS}")


if __name__ == "__main__":
    main()
