#!/usr/bin/python3
"""What a running tokentrace holds in the kernel, read by bpftool (not by tokentrace):

  bpfmaps.py PID entries MAP     entries of its map named MAP (a hash: its live size)
  bpfmaps.py PID stat INDEX      its per-CPU "stats" counter INDEX (enum tt_stat), summed

The maps are the ones PID holds open (/proc/PID/fdinfo's map_id), so another tracer's maps
on the same machine are never read. Prints one number.
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


def main():
    pid, what, arg = sys.argv[1:4]
    if what == "entries":
        print(len(bpftool("map", "dump", "id", map_id(pid, arg))))
    elif what == "stat":
        key = int(arg).to_bytes(4, "little")
        v = bpftool("map", "lookup", "id", map_id(pid, "stats"), "key", *map(str, key))
        print(sum(c["value"] for c in v["formatted"]["values"]))
    else:
        sys.exit(f"bpfmaps.py: unknown query {what}")


if __name__ == "__main__":
    main()
