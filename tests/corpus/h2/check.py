#!/usr/bin/env python3
"""Run every tests/corpus/h2/*.wire through h2wire and compare with its .expect; then run
each again joined mid-way, from every record where a send begins, and check that what it
reports agrees with the whole run.

  check.py [H2WIRE]          default .output/tests/h2wire

.expect: one JSON object per line. {"type":"conn",...} lines are the connections' lines in
order; every other line is a stream, found among the reported streams by its request_id
(or else its path, in order), whose listed fields must be equal. Every stream reported must
be expected, and every connection.

Joined runs: the records from a send onward, each connection taken as joined (h2wire
--joined). Then: no framing error (a send begins at a frame); a stream that began after the
cut is reported exactly as in the whole run; one that began before it is marked joined,
counts no more messages, events or bytes than in the whole run, any field it reports is the
whole run's, and it ends as there; when the client's END_STREAM came before the cut, its
server's END_STREAM must come, and then whatever closes it (the connection's end, a late
RST_STREAM) says nothing more about its response. A header the decoder could not know (the dynamic table's older entries)
is listed unknown, never made up.

Prints one PASS/FAIL line per case and 'N passed, N failed'; exits 1 on any failure.
"""
import glob
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fuzz"))
from corpus_seeds import unquote  # noqa: E402

RUNNER = os.path.join(HERE, "..", "..", "..", ".output", "tests", "h2wire")


def read_wire(path):
    """(kind, conn, dir, t, data, cap) per record: kind C, D or E; dir c (recv) or s (send)."""
    recs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line[0] in " \t":
                if recs and recs[-1][0] == "D":
                    k, c, d, t, data, cap = recs[-1]
                    recs[-1] = (k, c, d, t, data + unquote(line), cap)
                continue
            w = line.split()
            if not w or w[0].startswith("#"):
                continue
            if w[0] == "conn":
                recs.append(("C", w[1], None, 0, b"", None))
            elif w[0] in ("recv", "send"):
                if re.search(r" err=-?\d+", line):
                    continue
                m = re.search(r" cap=(\d+)", line)
                recs.append(("D", w[1], "c" if w[0] == "recv" else "s", int(w[2]),
                             unquote(line), int(m.group(1)) if m else None))
            elif w[0] == "state" and w[3] == "close":
                recs.append(("E", w[1], None, int(w[2]), b"", None))
    return recs


def run(runner, recs, joined=False):
    """h2wire's lines; connections keep their ids of the .wire file."""
    out = bytearray()
    seen = set()
    for kind, c, d, t, data, cap in recs:
        if c not in seen:
            # a connection's first record (its conn line, or the first the cut left)
            seen.add(c)
            out += f"C {c}\n".encode()
        if kind == "D":
            n = len(data) if cap is None else min(cap, len(data))
            out += f"D {c} {d} {t} {len(data)} {n}\n".encode() + data[:n]
        elif kind == "E":
            out += f"E {c} {t}\n".encode()
    p = subprocess.run([runner] + (["--joined"] if joined else []), input=bytes(out),
                       capture_output=True, timeout=60)
    if p.returncode:
        raise RuntimeError(f"h2wire exited {p.returncode}: {p.stderr.decode()[-300:]}")
    return [json.loads(line) for line in p.stdout.decode().splitlines() if line.strip()]


def compare(exp, got, what):
    return [f"{what}: {k}: {got.get(k)!r} != want {v!r}" for k, v in exp.items()
            if got.get(k) != v]


def check_expect(got, exp):
    errs = []
    gconns = [g for g in got if g.get("type") == "conn"]
    econns = [e for e in exp if e.get("type") == "conn"]
    if len(gconns) != len(econns):
        errs.append(f"{len(gconns)} connections, {len(econns)} expected")
    for i, (e, g) in enumerate(zip(econns, gconns)):
        errs += compare(e, g, f"conn {i + 1}")
    streams = [g for g in got if g.get("type") != "conn"]
    used = set()
    for e in (e for e in exp if e.get("type") != "conn"):
        key = "request_id" if e.get("request_id") else "path"
        idx = next((i for i, g in enumerate(streams)
                    if i not in used and g.get(key) == e.get(key)), None)
        if idx is None:
            errs.append(f"no stream with {key} {e.get(key)!r}")
            continue
        used.add(idx)
        errs += compare(e, streams[idx], f"stream {e.get(key)}")
    for i, g in enumerate(streams):
        if i not in used:
            errs.append(f"unexpected stream {g['stream']} ({g.get('path')!r})")
    return errs


def check_joined(runner, recs, whole):
    """Joined from each send that begins a run of the server's sends."""
    errs = []
    by_stream = {(g["conn"], g["stream"]): g for g in whole if g.get("type") != "conn"}
    cuts = [i for i, r in enumerate(recs) if r[0] == "D" and r[2] == "s"]
    for cut in cuts:
        got = run(runner, recs[cut:], joined=True)
        for g in got:
            if g.get("type") == "conn":
                if g["errors"]:
                    errs.append(f"joined at record {cut}: conn {g['conn']}: {g['errors']} errors")
                continue
            conn = g["conn"]
            w = by_stream.get((conn, g["stream"]))
            what = f"joined at record {cut}: stream {conn}/{g['stream']}"
            if not w:
                errs.append(f"{what}: not in the whole run")
                continue
            if not g["joined"]:
                # begun after the cut: as in the whole run, but for headers the decoder
                # could not know (the dynamic table's older entries) and says so, and
                # windows: no window of a joined connection is known
                skip = set(g["unknown"]) | {"t_message_ns", "unknown", "blocked"}
                errs += compare({k: v for k, v in w.items() if k not in skip},
                                {k: v for k, v in g.items() if k not in skip}, what)
                continue
            for k in ("messages", "req_messages", "events", "data_bytes"):
                if g[k] > w[k]:
                    errs.append(f"{what}: {k} {g[k]} > {w[k]}")
            for k in ("method", "path", "content_type", "request_id", "status", "grpc_status",
                      "grpc_message"):
                if g[k] not in ("", None) and g[k] != w[k]:
                    errs.append(f"{what}: {k} {g[k]!r} != {w[k]!r}")
            # a client END_STREAM before the cut leaves the stream open after the server's:
            # to the connection's end, or to a late RST_STREAM the whole run took as stray
            if g["server_ended"] != w["server_ended"] or not (
                    g["end"] == w["end"] or (w["end"] == "done" and g["server_ended"])):
                errs.append(f"{what}: end {g['end']} (server ended {g['server_ended']}) != "
                            f"{w['end']} ({w['server_ended']})")
        if len(errs) > 20:
            break
    return errs, len(cuts)


def main():
    runner = sys.argv[1] if len(sys.argv) > 1 else RUNNER
    passed = failed = 0
    for wire in sorted(glob.glob(os.path.join(HERE, "*.wire"))):
        name = os.path.basename(wire)[:-5]
        exp_path = wire[:-5] + ".expect"
        recs = read_wire(wire)
        try:
            got = run(runner, recs)
            exp = [json.loads(l) for l in open(exp_path) if l.strip() and not l.startswith("#")]
            errs = check_expect(got, exp)
            jerrs, ncuts = check_joined(runner, recs, got)
            errs += jerrs
        except (OSError, RuntimeError, ValueError) as e:
            errs, ncuts = [str(e)], 0
        if errs:
            failed += 1
            print(f"FAIL  {name}")
            for e in errs[:30]:
                print(f"      {e}")
        else:
            passed += 1
            print(f"PASS  {name} (and joined at {ncuts} sends)")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
