#!/usr/bin/env python3
"""Run every tests/corpus/*.wire through the corpus runner and compare with its .expect; then
the HTTP/2 captures of tests/corpus/h2 (h2/records.py: their .records, the parsers' own
count, and every capture joined mid-way).

Prints one PASS/FAIL line per case and 'N passed, N failed'; exits 1 on any failure.
"""
import glob
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
runner = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "../../.output/tests/corpus")


def compare(exp, got):
    diffs = []
    for k, v in exp.items():
        if k not in got:
            diffs.append(f"{k}: missing (want {v!r})")
        elif got[k] != v:
            diffs.append(f"{k}: {got[k]!r} != want {v!r}")
    return diffs


def run(wire):
    name = os.path.basename(wire)[:-5]
    exp_path = wire[:-5] + ".expect"
    if not os.path.exists(exp_path):
        return name, [f"no {os.path.basename(exp_path)}"]
    p = subprocess.run([runner, wire], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        return name, [f"runner exited {p.returncode}: {p.stderr.strip()}"]
    got = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    exp = [json.loads(l) for l in open(exp_path) if l.strip() and not l.startswith("#")]
    errs = []
    if len(got) != len(exp):
        errs.append(f"{len(got)} requests reported, {len(exp)} expected")
    for i, (e, g) in enumerate(zip(exp, got)):
        errs += [f"request {i + 1}: {d}" for d in compare(e, g)]
    return name, errs


def cases():
    for wire in sorted(glob.glob(os.path.join(here, "*.wire"))):
        yield run(wire)
    sys.path.insert(0, os.path.join(here, "h2"))
    import records  # noqa: E402
    yield from records.run_all(runner, os.path.join(os.path.dirname(runner), "h2wire"))


def main():
    passed = failed = 0
    for name, errs in cases():
        if errs:
            failed += 1
            print(f"FAIL  {name}")
            for e in errs:
                print(f"      {e}")
        else:
            passed += 1
            print(f"PASS  {name}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
