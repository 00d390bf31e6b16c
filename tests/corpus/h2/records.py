"""The HTTP/2 captures through the correlator (tests/corpus/check.py runs this).

For each h2/NAME.wire, three checks:

  records   the corpus runner's request lines against h2/NAME.records (one JSON object per
            request in the order they finish, the fields to compare; as ../README.md's
            .expect files);
  parsers   every gRPC stream the correlator reports agrees with what the parsers alone
            report (h2wire, h2/README.md): as many chunks as the server's messages, each
            timed by the record that completed its message;
  joined    the capture replayed from each send that begins a run of the server's sends, as
            if the tracer attached there (runner --from): every stream begun after the cut
            is reported as in the whole run (its headers the decoder could not know listed
            in "unknown", never made up); a stream begun before it is joined:true, its tokens
            the last ones of the whole run's at the very same times, its fields the whole
            run's or unknown, its end the same; nothing reported that the whole run did not.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# what a joined run cannot know, or counts its own way
NOT_COMPARED = {"seq", "accept_wait_ns", "unknown"}
FIELD_OF = {"method": "method", "path": "path", "status": "status", "host": "host",
            "content_type": "format", "request_id": "request_id",
            "traceparent": None, "grpc_status": "grpc_status"}


def requests(runner, wire, start=None):
    cmd = [runner] + (["--from", str(start)] if start else []) + [wire]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if p.returncode:
        raise RuntimeError(f"runner exited {p.returncode}: {p.stderr.strip()[-300:]}")
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]


def token_times(r):
    if r.get("t_first_token_ns") is None:
        return []
    t = [r["t_first_token_ns"]]
    for gap in r["itl_ns"]:
        t.append(t[-1] + gap)
    return t


def data_records(wire):
    """(index from 1, 'recv'/'send', t) of every data record, in order."""
    out = []
    with open(wire, encoding="utf-8") as f:
        for line in f:
            w = line.split()
            if w and w[0] in ("recv", "send"):
                out.append((len(out) + 1, w[0], int(w[2])))
    return out


def compare(exp, got, what):
    return [f"{what}: {k}: {got.get(k)!r} != want {v!r}" for k, v in exp.items()
            if got.get(k) != v]


def check_records(got, exp_path):
    if not os.path.exists(exp_path):
        return [f"no {os.path.basename(exp_path)}"]
    exp = [json.loads(line) for line in open(exp_path) if line.strip() and line[0] != "#"]
    errs = []
    if len(got) != len(exp):
        errs.append(f"{len(got)} requests reported, {len(exp)} expected")
    for i, (e, g) in enumerate(zip(exp, got)):
        errs += compare(e, g, f"request {i + 1}")
    return errs


def check_parsers(got, wire, h2wire):
    """gRPC streams: chunks and their times as the parsers alone count them."""
    sys.path.insert(0, HERE)
    from check import read_wire, run  # noqa: E402  (h2/check.py)
    streams = {(int(s["conn"]), s["stream"]): s for s in run(h2wire, read_wire(wire))
               if s.get("type") != "conn"}
    errs = []
    for r in got:
        s = streams.get((r["conn_id"], r["stream_id"]))
        what = f"stream {r['conn_id']}/{r['stream_id']}"
        if not s:
            errs.append(f"{what}: not among the parsers' streams")
        elif r["format"] == "grpc" and token_times(r) != s["t_message_ns"]:
            errs.append(f"{what}: token times {token_times(r)} != messages' "
                        f"{s['t_message_ns']}")
    return errs


def same_or_unknown(w, g, what):
    """A joined stream's fields: the whole run's, or empty and listed unknown."""
    errs = []
    for field, key in FIELD_OF.items():
        if key is None or g.get(key) in ("", None, "none") or g.get(key) == w.get(key):
            continue
        errs.append(f"{what}: {key} {g.get(key)!r} != whole run's {w.get(key)!r}")
    return errs


def check_joined_stream(w, g, what):
    errs = same_or_unknown(w, g, what)
    tw, tg = token_times(w), token_times(g)
    if tg != tw[len(tw) - len(tg):]:
        errs.append(f"{what}: tokens {tg} are not the whole run's last ({tw})")
    for k in ("complete", "aborted", "abort_reason", "t_end_ns", "error"):
        # a status not decoded cannot say whether it was an error
        if k == "error" and {"status", "grpc_status"} & set(g["unknown"]):
            continue
        if g.get(k) != w.get(k):
            errs.append(f"{what}: {k} {g.get(k)!r} != whole run's {w.get(k)!r}")
    if g.get("ttft_ns") is not None and g["ttft_ns"] != w["ttft_ns"]:
        errs.append(f"{what}: ttft {g['ttft_ns']} != whole run's {w['ttft_ns']}")
    return errs


def check_joined(runner, wire, whole):
    errs = []
    by_key = {(r["conn_id"], r["stream_id"]): r for r in whole}
    recs = data_records(wire)
    cuts = [i for n, (i, kind, _) in enumerate(recs)
            if kind == "send" and (n == 0 or recs[n - 1][1] != "send")]
    for cut in cuts:
        t_cut = recs[cut - 1][2]
        got = requests(runner, wire, cut)
        seen = set()
        for g in got:
            key = (g["conn_id"], g["stream_id"])
            what = f"from record {cut}: stream {key[0]}/{key[1]}"
            w = by_key.get(key)
            if not w or key in seen:
                errs.append(f"{what}: {'again' if w else 'not in the whole run'}")
                continue
            seen.add(key)
            if g["joined"]:
                errs += check_joined_stream(w, g, what)
                continue
            skip = NOT_COMPARED | {FIELD_OF[f] for f in g["unknown"] if FIELD_OF.get(f)}
            errs += compare({k: v for k, v in w.items() if k not in skip},
                            {k: v for k, v in g.items() if k not in skip}, what)
        for key, w in by_key.items():
            if w["t_recv_ns"] >= t_cut and key not in seen:
                errs.append(f"from record {cut}: stream {key[0]}/{key[1]} begun after the "
                            "cut not reported")
    return errs


def run_all(runner, h2wire):
    """[(name, errors)] for every h2/*.wire."""
    out = []
    for wire in sorted(f for f in os.listdir(HERE) if f.endswith(".wire")):
        path = os.path.join(HERE, wire)
        name = "h2/" + wire[:-5]
        try:
            got = requests(runner, path)
            errs = check_records(got, path[:-5] + ".records")
            if os.path.exists(h2wire):
                errs += check_parsers(got, path, h2wire)
            errs += check_joined(runner, path, got)
        except RuntimeError as e:
            errs = [str(e)]
        out.append((name, errs))
    return out


if __name__ == "__main__":
    base = os.path.join(HERE, "..", "..", "..", ".output", "tests")
    for name, errs in run_all(os.path.join(base, "corpus"), os.path.join(base, "h2wire")):
        print(("FAIL  " if errs else "PASS  ") + name)
        for e in errs[:20]:
            print("      " + e)
