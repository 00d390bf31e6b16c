#!/usr/bin/env python3
"""Where a loaded BPF program spends its time, by source line, without a JIT disassembler.

    bpfprof.py --prog sock_send_length [--seconds 10] [--comm ts-front] [--top 30]

Samples every CPU with perf (cpu-clock, software: works in guests without hardware counters)
for --seconds while the program runs under whatever load you drive, then ranks the source
lines of the program the samples landed in. bpftool cannot print a JIT image here (it needs
libbfd for that); the kernel's own line table is enough: BPF_OBJ_GET_INFO_BY_FD returns, for
each line-info record, the address its JITed code starts at (jited_line_info) and the
instruction it is for (line_info), and `bpftool prog dump xlated linum` names the source line
of each instruction. A sample's address maps to the last line record at or below it.

Reads: samples whose leaf is in the program ("self"), then, apart, the samples with the
program deeper in their stack, by their leaf: what it called (helpers, the hash lookup), and
an interrupt that came while it ran (handle_softirqs), or the tracepoint's call into it as the
frame-pointer unwinder shows it (bpf_trace_run3). A stalled load is charged to the
instruction after it, so read a line and the one before it together. Samples before the
first line record are the program's prologue, counted as "(entry)".

Root only; the program must stay loaded until the report is printed.
"""
import argparse
import bisect
import collections
import ctypes
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

SYS_BPF = 321  # x86-64
BPF_PROG_GET_FD_BY_ID = 13
BPF_OBJ_GET_INFO_BY_FD = 15
INFO_SIZE = 232  # struct bpf_prog_info up to attach_btf_id
# offsets in struct bpf_prog_info (include/uapi/linux/bpf.h)
OFF_NR_LINE_INFO = 148
OFF_LINE_INFO = 152
OFF_JITED_LINE_INFO = 160
OFF_NR_JITED_LINE_INFO = 168
OFF_LINE_INFO_REC_SIZE = 172
OFF_JITED_LINE_INFO_REC_SIZE = 176

libc = ctypes.CDLL(None, use_errno=True)


def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    r = libc.syscall(SYS_BPF, cmd, buf, 128)
    if r < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return r


def prog_info(fd, req):
    ib = ctypes.create_string_buffer(bytes(req), INFO_SIZE)
    bpf(BPF_OBJ_GET_INFO_BY_FD, struct.pack("IIQ", fd, INFO_SIZE, ctypes.addressof(ib)))
    return ib.raw


def line_table(prog_id):
    """[(jit address, instruction offset)], sorted by address"""
    fd = bpf(BPF_PROG_GET_FD_BY_ID, struct.pack("I", prog_id))
    try:
        raw = prog_info(fd, bytearray(INFO_SIZE))
        nr_line = struct.unpack_from("I", raw, OFF_NR_LINE_INFO)[0]
        nr_jline = struct.unpack_from("I", raw, OFF_NR_JITED_LINE_INFO)[0]
        lrs = struct.unpack_from("I", raw, OFF_LINE_INFO_REC_SIZE)[0]
        jlrs = struct.unpack_from("I", raw, OFF_JITED_LINE_INFO_REC_SIZE)[0]
        if not nr_line or nr_jline != nr_line:
            sys.exit(f"bpfprof: program {prog_id} has no JIT line table (BTF line info missing)")
        li = ctypes.create_string_buffer(nr_line * lrs)
        jli = ctypes.create_string_buffer(nr_jline * jlrs)
        req = bytearray(INFO_SIZE)
        struct.pack_into("I", req, OFF_NR_LINE_INFO, nr_line)
        struct.pack_into("Q", req, OFF_LINE_INFO, ctypes.addressof(li))
        struct.pack_into("Q", req, OFF_JITED_LINE_INFO, ctypes.addressof(jli))
        struct.pack_into("I", req, OFF_NR_JITED_LINE_INFO, nr_jline)
        struct.pack_into("I", req, OFF_LINE_INFO_REC_SIZE, lrs)
        struct.pack_into("I", req, OFF_JITED_LINE_INFO_REC_SIZE, jlrs)
        prog_info(fd, req)
    finally:
        os.close(fd)
    rows = [(struct.unpack_from("Q", jli.raw, k * jlrs)[0],
             struct.unpack_from("I", li.raw, k * lrs)[0]) for k in range(nr_line)]
    return sorted(rows)


def source_of_insns(prog_id):
    """instruction offset -> the source line bpftool prints above it"""
    out = subprocess.run(["bpftool", "prog", "dump", "xlated", "id", str(prog_id), "linum"],
                         capture_output=True, text=True, check=True).stdout
    src, cur = {}, "?"
    for line in out.splitlines():
        if line.startswith(";"):
            m = re.match(r";\s*(.*?)\s*\[file:(\S+) line_num:(\d+)", line)
            cur = f"{os.path.basename(m.group(2))}:{m.group(3)}  {m.group(1)[:90]}" if m else line
            continue
        m = re.match(r"\s*(\d+):", line)
        if m:
            src[int(m.group(1))] = cur
    return src


def find_prog(name):
    progs = json.loads(subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True,
                                      text=True, check=True).stdout)
    ids = [p["id"] for p in progs if p.get("name") == name]
    if not ids:
        sys.exit(f"bpfprof: no loaded BPF program named {name!r}")
    if len(ids) > 1:
        print(f"bpfprof: {len(ids)} programs named {name!r}; the newest, id {max(ids)}",
              file=sys.stderr)
    return max(ids)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prog", required=True, help="the program's name (bpftool prog show)")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--freq", type=int, default=10000, help="samples a second a CPU")
    ap.add_argument("--comm", help="only samples of this task name")
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    if a.seconds <= 0 or a.freq <= 0 or a.top <= 0:
        sys.exit("bpfprof: --seconds, --freq and --top must be positive")

    pid = find_prog(a.prog)
    table = line_table(pid)
    src = source_of_insns(pid)
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        subprocess.run(["perf", "record", "-q", "-a", "-g", "-e", "cpu-clock", "-F", str(a.freq),
                        "-o", data, "--", "sleep", str(a.seconds)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cmd = ["perf", "script", "-i", data, "-F", "comm,ip,sym"]
        if a.comm:
            cmd[4:4] = ["--comm", a.comm]
        script = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout

    addrs = [ad for ad, _ in table]
    self_lines, callees = collections.Counter(), collections.Counter()
    in_tree = 0
    for block in script.split("\n\n"):
        frames = [ln.split(None, 1) for ln in block.strip().splitlines()[1:]]
        frames = [(int(f[0], 16), f[1] if len(f) > 1 else "?") for f in frames if f]
        depth = next((i for i, (_, sym) in enumerate(frames) if a.prog in sym), None)
        if depth is None:
            continue
        in_tree += 1
        if depth > 0:
            callees[frames[0][1]] += 1
            continue
        k = bisect.bisect_right(addrs, frames[0][0]) - 1
        self_lines["(entry)" if k < 0 else src.get(table[k][1], "?")] += 1
    if not in_tree:
        sys.exit(f"bpfprof: no sample in {a.prog} (is it running under load?)")
    nself = sum(self_lines.values())
    print(f"{a.prog} (id {pid}): {in_tree} samples in it or under it; "
          f"{nself} in its own code, {in_tree - nself} under it")
    print(f"\nits own code, by source line (% of the {in_tree}):")
    for line, n in self_lines.most_common(a.top):
        print(f"{100 * n / in_tree:6.1f}%  {line}")
    print(f"\nunder it (what it called, or what came while it ran), by leaf (% of the {in_tree}):")
    for sym, n in callees.most_common(a.top):
        print(f"{100 * n / in_tree:6.1f}%  {sym}")


if __name__ == "__main__":
    main()
