#!/usr/bin/python3
"""What a running tokentrace holds in the kernel, read by bpftool (not by tokentrace):

  bpfmaps.py PID entries MAP     entries of its map named MAP (a hash: its live size)
  bpfmaps.py PID stat INDEX      its per-CPU "stats" counter INDEX (enum tt_stat), summed
  bpfmaps.py PID links PROG,...  its BPF links whose program is one of these (by name)
  bpfmaps.py PID fds             its file descriptors by kind: "bpf_link=N perf_event=N ..."

The maps and links are the ones PID holds open (/proc/PID/fdinfo's map_id, prog_id), so
another tracer's on the same machine are never read. Prints one number, or one line.
"""
import json
import os
import subprocess
import sys


def bpftool(*args):
    out = subprocess.run(["bpftool", "-j", *args], capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"bpftool {' '.join(args)}: {out.stderr.strip()}")
    return json.loads(out.stdout or "null")


def map_id(pid, name):
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf-map":
                continue
            info = dict(l.split(":", 1) for l in open(f"/proc/{pid}/fdinfo/{fd}") if ":" in l)
        except OSError:
            continue
        mid = info.get("map_id", "").strip()
        if mid and bpftool("map", "show", "id", mid).get("name") == name:
            return mid
    sys.exit(f"PID {pid} holds no map named {name}")


def fd_kind(pid, fd):
    """anon_inode:bpf_link -> bpf_link, anon_inode:[perf_event] -> perf_event, /x -> file"""
    t = os.readlink(f"/proc/{pid}/fd/{fd}")
    if t.startswith("anon_inode:"):
        return t[len("anon_inode:"):].strip("[]")
    return t.split(":", 1)[0] if ":" in t else "file"


def links(pid, names):
    progs, n = {}, 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if fd_kind(pid, fd) != "bpf_link":
                continue
            info = dict(l.split(":", 1) for l in open(f"/proc/{pid}/fdinfo/{fd}") if ":" in l)
        except OSError:
            continue
        pid_ = info.get("prog_id", "").strip()
        if pid_ not in progs:
            progs[pid_] = bpftool("prog", "show", "id", pid_).get("name") if pid_ else None
        n += progs[pid_] in names
    return n


def fds(pid):
    kinds = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            k = fd_kind(pid, fd)
        except OSError:
            continue
        kinds[k] = kinds.get(k, 0) + 1
    return " ".join(f"{k}={v}" for k, v in sorted(kinds.items()))


def main():
    pid, what, arg = (sys.argv[1:4] + [""])[:3]
    if what == "entries":
        print(len(bpftool("map", "dump", "id", map_id(pid, arg))))
    elif what == "stat":
        key = int(arg).to_bytes(4, "little")
        v = bpftool("map", "lookup", "id", map_id(pid, "stats"), "key", *map(str, key))
        print(sum(c["value"] for c in v["formatted"]["values"]))
    elif what == "links":
        print(links(pid, set(arg.split(","))))
    elif what == "fds":
        print(fds(pid))
    else:
        sys.exit(f"bpfmaps.py: unknown query {what}")


if __name__ == "__main__":
    main()
