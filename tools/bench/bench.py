#!/usr/bin/env python3
"""make bench: tokentrace's overhead, measured (method and results: BENCHMARKS.md).

Sections (--only picks some; each is independent and a failure in one does not stop the
others):

  send        ns per send() with tokentrace attached, against no tracer, the floor programs
              (filter-only, reserve+submit of a same-size record, direct copy) and bpftrace;
              then one pass with kernel.bpf_stats_enabled for per-program ns per run
  markers     ns added per uprobe / USDT hit (own minimal programs; tokentrace's own
              --uprobe/--usdt when its --help lists them)
  startup     exec -> every probe attached, and peak RSS: tokentrace, a bare libbpf skeleton,
              bpftrace
  throughput  tokensim tokens/s and CPU per token with and without tokentrace, at saturation
              and at ~10k tokens/s; tokentrace's CPU per million tokens; fidelity vs truth
  cpu         the server's CPU per token at ~10k tokens/s, A/B in one server process under one
              steady load: windows with tokentrace attached against windows without
  pycpu       the same on the vLLM-shaped Python stack (uvicorn API server + engine process)
  satcpu      throughput at saturation the same way: tokens/s in windows with tokentrace
              attached against windows without, one tokensim under one saturating load
  records     ring-buffer records per token by type, tokensim and the Python stack, with and
              without injected stalls
  consumer    records/s one tokentrace consumer thread keeps up with (synthetic records into
              its real ring buffer), and what it reports past that

Every comparison is A/B interleaved: each repetition runs every configuration once, in an
order rotated by one per repetition. Results are medians over repetitions with their
interquartile range; ratios are computed per repetition, then the median taken.

Output: a table on stdout, .output/bench/results.json (every raw run) and results.md (the
tables BENCHMARKS.md quotes); --update-md rewrites BENCHMARKS.md's results block.
"""
import argparse
import bisect
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, ".output", "bench")
SIM = os.path.join(ROOT, ".output", "tokensim")
LOAD = os.path.join(ROOT, ".output", "tokenload")
CHECK = os.path.join(ROOT, "tests", "e2e", "check_truth.py")
SENDBENCH = os.path.join(OUT, "sendbench")
FLOORLOAD = os.path.join(OUT, "floorload")
RINGFEED = os.path.join(OUT, "ringfeed")
MARKERBENCH = os.path.join(OUT, "markerbench")
CTXBENCH = os.path.join(OUT, "ctxbench")
BT_SCRIPT = os.path.join(ROOT, "tools", "bench", "sendgap.bt")
MD_BEGIN = "<!-- bench:results:begin -->"
MD_END = "<!-- bench:results:end -->"

TT = os.path.join(ROOT, "tokentrace")
WORK = None
PROCS = []
LOG = None


def log(msg):
    print(msg, flush=True)
    if LOG:
        LOG.write(msg + "\n")
        LOG.flush()


def now_ns():
    return time.monotonic_ns()   # CLOCK_MONOTONIC, the clock tokentrace's t_ns uses


# ------------------------------------------------------------------ statistics

def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def iqr(v):
    v = sorted(x for x in v if x is not None)
    if len(v) < 2:
        return (v[0], v[0]) if v else (None, None)
    q = statistics.quantiles(v, n=4, method="inclusive")
    return q[0], q[2]


def summ(v):
    lo, hi = iqr(v)
    return {"median": med(v), "q1": lo, "q3": hi, "n": len([x for x in v if x is not None]),
            "runs": v}


def rotate(cfgs, rep):
    k = rep % len(cfgs)
    return cfgs[k:] + cfgs[:k]


# ------------------------------------------------------------------ processes

class Proc:
    """A process we started. stdout goes to a pipe (lines timestamped on arrival by a reader
    thread) or straight to a file (for high volume: no Python in the data path)."""

    def __init__(self, argv, name, stdin=False, stdout_file=None, cpu=None, env=None):
        if cpu is not None:
            argv = ["taskset", "-c", str(cpu)] + list(argv)   # taskset execs: same PID
        self.name = name
        self.argv = argv
        self.err_path = os.path.join(WORK, f"{name}.{len(PROCS)}.err")
        self.out_path = stdout_file
        self.lines = []
        self.cond = threading.Condition()
        self.eof = False
        self.rusage = None
        self.status = None
        self.hwm = None
        err = open(self.err_path, "w")
        out = open(stdout_file, "w") if stdout_file else subprocess.PIPE
        self.t_exec = now_ns()
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                  stdout=out, stderr=err, cwd=ROOT, env=env,
                                  text=True, bufsize=1)
        err.close()
        if stdout_file:
            out.close()
        else:
            self.thread = threading.Thread(target=self._reader, daemon=True)
            self.thread.start()
        PROCS.append(self)

    @property
    def pid(self):
        return self.p.pid

    def _reader(self):
        for line in self.p.stdout:
            t = now_ns()
            with self.cond:
                self.lines.append((t, line.rstrip("\n")))
                self.cond.notify_all()
        with self.cond:
            self.eof = True
            self.cond.notify_all()

    def _file_lines(self):
        try:
            with open(self.out_path) as f:
                return [(None, l.rstrip("\n")) for l in f]
        except OSError:
            return []

    def wait_line(self, pred, timeout=30.0, start=0):
        """First line matching pred (from index start): (arrival_ns or None, line)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.out_path:
                lines = self._file_lines()
                for t, l in lines[start:]:
                    if pred(l):
                        return t, l
                if self.p.poll() is not None:
                    raise RuntimeError(f"{self.name} exited ({self.p.returncode}): {self.stderr_tail()}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self.name}: timed out waiting: {self.stderr_tail()}")
                time.sleep(0.002)
                continue
            with self.cond:
                while True:
                    for t, l in self.lines[start:]:
                        if pred(l):
                            return t, l
                    if self.eof:
                        raise RuntimeError(f"{self.name} exited: {self.stderr_tail()}")
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise RuntimeError(f"{self.name}: timed out waiting: {self.stderr_tail()}")
                    self.cond.wait(left)

    def all_lines(self):
        if self.out_path:
            return [l for _, l in self._file_lines()]
        with self.cond:
            return [l for _, l in self.lines]

    def send(self, s):
        self.p.stdin.write(s)
        self.p.stdin.flush()

    def stderr_tail(self, n=5):
        try:
            with open(self.err_path) as f:
                return " | ".join(f.read().strip().splitlines()[-n:])
        except OSError:
            return ""

    def wait(self, timeout=60.0):
        """Reap with wait4: exit status and rusage (CPU seconds, peak RSS)."""
        if self.rusage is not None:
            return self.status
        deadline = time.monotonic() + timeout
        while True:
            pid, status, ru = os.wait4(self.p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                os.kill(self.p.pid, signal.SIGKILL)
                pid, status, ru = os.wait4(self.p.pid, 0)
                break
            time.sleep(0.005)
        self.rusage = ru
        self.status = os.waitstatus_to_exitcode(status)
        self.p.returncode = self.status
        if not self.out_path:
            self.thread.join(5.0)   # every line it wrote, before anyone reads them
        if self in PROCS:
            PROCS.remove(self)
        return self.status

    def read_hwm(self):
        """VmHWM of the live process. Not ru_maxrss: at exec the kernel carries the forking
        parent's high-water mark over into it (here: the harness's own Python)."""
        try:
            with open(f"/proc/{self.p.pid}/status") as fh:
                for l in fh:
                    if l.startswith("VmHWM:"):
                        self.hwm = int(l.split()[1]) / 1024.0
        except (OSError, ValueError):
            pass

    def stop(self, sig=None, timeout=None):
        # bpftrace sometimes sits on SIGINT for a long time: it gets a short grace
        if sig is None:
            sig = signal.SIGINT
        if timeout is None:
            timeout = 3.0 if self.name == "bpftrace" else 20.0
        if self.rusage is None:
            self.read_hwm()
            try:
                os.kill(self.p.pid, sig)
            except ProcessLookupError:
                pass
        return self.wait(timeout)

    def cpu_s(self):
        return self.rusage.ru_utime + self.rusage.ru_stime

    def maxrss_mib(self):
        """Peak RSS in MiB up to the stop (VmHWM)."""
        return getattr(self, "hwm", None)


def kill_all():
    for p in list(PROCS):
        try:
            os.kill(p.pid, signal.SIGKILL)
            os.waitpid(p.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    PROCS.clear()


def vm_rss_mib(pid):
    """Resident set now (VmRSS), MiB: the steady state, where ru_maxrss is the peak."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for l in fh:
                if l.startswith("VmRSS:"):
                    return int(l.split()[1]) / 1024.0
    except (OSError, ValueError):
        pass
    return None


def task_cpu_ns(pid):
    """CPU time of every live thread of pid, ns (schedstat: exact, not ticks)."""
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
    except OSError:
        pass
    return total


def sleeper():
    """A process that does nothing: a target for tracers that must trace someone else."""
    return Proc(["sleep", "3600"], "sleep")


# ------------------------------------------------------------------ tracers

def tt_features():
    try:
        h = subprocess.run([TT, "--help"], capture_output=True, text=True, timeout=10).stdout
    except OSError:
        return {}
    return {"uprobe": "--uprobe" in h, "usdt": "--usdt" in h, "aggregate": "--aggregate" in h,
            "no_stalls": "--no-stalls" in h, "stall_hooks": "--stall-hooks" in h, "help": h}


def tt_start(pids, extra=(), name="tokentrace", cpu=None, prefix=()):
    out = os.path.join(WORK, f"{name}.{len(PROCS)}.jsonl")
    p = Proc(list(prefix) + [TT, "-p", ",".join(str(x) for x in pids), "--json"] + list(extra),
             name, stdout_file=out, cpu=cpu)
    _, line = p.wait_line(lambda l: '"type":"ready"' in l, timeout=30)
    p.t_ready = json.loads(line)["t_ns"]
    p.hooks = json.loads(line).get("hooks", "")
    return p


def tt_final_summary(p):
    s = None
    for l in p.all_lines():
        if '"type":"summary"' in l:
            try:
                s = json.loads(l)
            except ValueError:
                pass
    return s


def floor_start(prog, pids=(), size=64, extra=(), name=None):
    argv = [FLOORLOAD, "--prog", prog, "--size", str(size)] + list(extra)
    if pids:
        argv += ["--pid", ",".join(str(x) for x in pids)]
    p = Proc(argv, name or f"floor-{prog}")
    _, line = p.wait_line(lambda l: '"type":"ready"' in l, timeout=30)
    p.t_ready = json.loads(line)["t_ns"]
    return p


def floor_done(p):
    for l in p.all_lines():
        if '"type":"done"' in l:
            return json.loads(l)
    return {}


def bt_script(ready):
    with open(BT_SCRIPT) as f:
        text = f.read()
    if ready:
        text = text.replace("// READY", 'if (@ready == 0) { @ready = 1; printf("ready\\n"); }')
    path = os.path.join(WORK, "sendgap-ready.bt" if ready else "sendgap.bt")
    with open(path, "w") as f:
        f.write(text)
    return path


def bt_start(pid, ready=False):
    """bpftrace sendgap.bt PID. ready=True: ready when the probe first fires (the target must
    be sending); else when it says Attaching, plus a margin for the attach itself."""
    p = Proc(["bpftrace", "-B", "none", bt_script(ready), str(pid)], "bpftrace")
    if ready:
        t, _ = p.wait_line(lambda l: l.strip() == "ready", timeout=60)
        p.t_ready = t
    else:
        p.wait_line(lambda l: l.startswith("Attaching"), timeout=60)
        time.sleep(0.3)
        p.t_ready = None
    return p


# ------------------------------------------------------------------ BPF program stats

def prog_stats(pid):
    """{prog_id: (run_cnt, run_time_ns)} of the BPF programs a process holds."""
    out = {}
    d = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(d):
        try:
            with open(os.path.join(d, fd)) as f:
                kv = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
        except OSError:
            continue
        if "prog_id" in kv and "run_cnt" in kv:
            out[int(kv["prog_id"])] = (int(kv["run_cnt"]), int(kv["run_time_ns"]))
    return out


def prog_name(pid_id):
    try:
        j = json.loads(subprocess.run(["bpftool", "prog", "show", "id", str(pid_id), "-j"],
                                      capture_output=True, text=True, timeout=10).stdout)
        return j.get("name", str(pid_id))
    except (OSError, ValueError):
        return str(pid_id)


def progs_delta(p0, p1):
    """Every program's runs and run time between two prog_stats(), by name: {name: (runs, ns)}."""
    progs = {}
    for i, (n1, t1) in p1.items():
        n0, t0 = p0.get(i, (0, 0))
        if n1 > n0:
            nm = prog_name(i)
            r, t = progs.get(nm, (0, 0))
            progs[nm] = (r + n1 - n0, t + t1 - t0)
    return progs


class BpfStats:
    """kernel.bpf_stats_enabled on for a while (it adds two clock reads per program run)."""

    def __enter__(self):
        with open("/proc/sys/kernel/bpf_stats_enabled") as f:
            self.old = f.read().strip()
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        return self

    def __exit__(self, *a):
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(self.old)


# ------------------------------------------------------------------ section: send

def send_tracer(cfg, sender_pid, dummy_pid, size, variants):
    if cfg == "base":
        return None
    if cfg == "filter":
        return floor_start("filter", [dummy_pid], size)
    if cfg in ("rb", "copy"):
        return floor_start(cfg, [sender_pid], size)
    if cfg == "tokentrace":
        return tt_start([sender_pid])
    if cfg == "tokentrace-untraced":
        return tt_start([dummy_pid])
    if cfg == "bpftrace":
        return bt_start(sender_pid)
    if cfg in variants:
        return tt_start([sender_pid], variants[cfg], name=cfg)
    raise ValueError(cfg)


def send_once(cfg, a, size, dummy, variants, stats=False):
    sb = Proc([SENDBENCH, "--wait", "--cpu", str(a.sender_cpu), "--reader-cpu", str(a.reader_cpu),
               "--sends", str(a.sends), "--size", str(size)], "sendbench", stdin=True)
    _, l = sb.wait_line(lambda l: l.startswith("pid "))
    spid = int(l.split()[1])
    tr = None
    run = {"cfg": cfg, "size": size}
    try:
        tr = send_tracer(cfg, spid, dummy.pid, size, variants)
        time.sleep(0.05)
        c0 = task_cpu_ns(tr.pid) if tr else 0
        sb.send("go\n")
        _, l = sb.wait_line(lambda l: l.startswith("{"), timeout=120)
        run.update(json.loads(l))
        if tr:
            run["tracer_cpu_s"] = (task_cpu_ns(tr.pid) - c0) / 1e9
            if stats:
                run["progs"] = {prog_name(k): v for k, v in prog_stats(tr.pid).items()}
    finally:
        if tr:
            tr.stop()
            run["tracer_rss_mib"] = tr.maxrss_mib()
            if tr.name.startswith("floor"):
                run["drops"] = floor_done(tr).get("drops")
            elif tr.name != "bpftrace":
                s = tt_final_summary(tr)
                run["lost"] = s.get("lost_events") if s else None
                run["tt_requests"] = s.get("requests") if s else None
        sb.wait(60)
    return run


def sec_send(a, feat, variants):
    dummy = sleeper()
    res = {"sizes": {}, "configs": None}
    try:
        cfgs = ["base", "filter", "rb", "copy", "tokentrace", "tokentrace-untraced"]
        if shutil.which("bpftrace") and not a.no_bpftrace:
            cfgs.append("bpftrace")
        cfgs += list(variants)
        res["configs"] = cfgs
        for si, size in enumerate(a.send_sizes):
            # the other sizes only for what the size changes: the record and its copy
            cf = cfgs if si == 0 else ["base", "rb", "copy", "tokentrace"]
            nreps = a.reps if si == 0 else max(3, a.reps // 2 + 1)
            runs = []
            for rep in range(nreps):
                for cfg in rotate(cf, rep):
                    r = send_once(cfg, a, size, dummy, variants)
                    r["rep"] = rep
                    runs.append(r)
                log(f"  send {size} B rep {rep + 1}/{nreps}: " + " ".join(
                    f"{r['cfg']}={r['ns_per_send']:.0f}" for r in runs if r["rep"] == rep))
            res["sizes"][size] = analyze_send(runs, cf)
        # per-program in-BPF time with bpf_stats on: far less noisy than wall-clock deltas
        size = a.send_sizes[0]
        scfgs = [c for c in cfgs if c not in ("base", "bpftrace")]
        raw = {c: [] for c in scfgs}
        with BpfStats():
            for rep in range(a.reps_stats):
                for cfg in rotate(scfgs, rep):
                    raw[cfg].append(send_once(cfg, a, size, dummy, variants, stats=True))
        prog = {}
        for cfg, rs in raw.items():
            names = sorted({n for r in rs for n in r.get("progs", {})})
            prog[cfg] = {"sends": med([r["sends"] for r in rs]), "progs": {
                n: {"runs": med([r["progs"][n][0] for r in rs if n in r.get("progs", {})]),
                    "ns_per_run": summ([r["progs"][n][1] / r["progs"][n][0] for r in rs
                                        if r.get("progs", {}).get(n, (0,))[0]])}
                for n in names}}
        # every program that ran, per timed send: what the workload paid in BPF, all hooks
        # together (a tracer's send path is more than its send hook)
        for cfg, v in prog.items():
            v["ns_per_send"] = sum((p["runs"] or 0) * (p["ns_per_run"]["median"] or 0)
                                   for p in v["progs"].values()) / max(1, v["sends"])
        res["bpf_stats"] = prog

        def tot(cfg):
            return prog.get(cfg, {}).get("ns_per_send")
        res["bpf_ratio"] = {}
        for num, den in [("tokentrace", "rb"), ("tokentrace-untraced", "filter")] + [
                (c, "rb") for c in prog if c.startswith("tokentrace-") and c != "tokentrace-untraced"]:
            if tot(num) is not None and tot(den):
                res["bpf_ratio"][f"{num}/{den}"] = tot(num) / tot(den)
    finally:
        dummy.stop(signal.SIGKILL)
    return res


def analyze_send(runs, cfgs):
    by = {c: {} for c in cfgs}
    for r in runs:
        by[r["cfg"]][r["rep"]] = r
    reps = sorted(by["base"])
    out = {"ns_per_send": {}, "ns_per_send_med": {}, "added_ns": {}, "ratio": {}, "extra": {}}
    for c in cfgs:
        out["ns_per_send"][c] = summ([by[c][i]["ns_per_send"] for i in reps if i in by[c]])
        out["ns_per_send_med"][c] = summ([by[c][i]["ns_per_send_med"] for i in reps if i in by[c]])
        if c != "base":
            out["added_ns"][c] = summ([by[c][i]["ns_per_send"] - by["base"][i]["ns_per_send"]
                                       for i in reps if i in by[c]])
        out["extra"][c] = {
            k: summ([by[c][i].get(k) for i in reps if i in by[c] and by[c][i].get(k) is not None])
            for k in ("tracer_cpu_s", "tracer_rss_mib", "drops", "lost", "sys_s")}

    def ratio(num, den):
        v = []
        for i in reps:
            if i in by.get(num, {}) and i in by.get(den, {}):
                d = by[den][i]["ns_per_send"] - by["base"][i]["ns_per_send"]
                n = by[num][i]["ns_per_send"] - by["base"][i]["ns_per_send"]
                v.append(n / d if d > 0 else None)
        return summ(v)
    # ratios of medians are steadier than medians of per-rep ratios when the denominators
    # are a few hundred ns on a noisy machine: both are kept, the table shows the former
    pairs = [("tokentrace", "rb"), ("tokentrace-untraced", "filter"), ("copy", "rb"),
             ("bpftrace", "rb")] + [(c, "rb") for c in cfgs if c.startswith("tokentrace-")
                                    and c != "tokentrace-untraced"]
    for num, den in pairs:
        if num in by and den in by:
            r = ratio(num, den)
            n_, d_ = out["added_ns"][num]["median"], out["added_ns"][den]["median"]
            r["of_medians"] = n_ / d_ if d_ and d_ > 0 else None
            out["ratio"][f"{num}/{den}"] = r
    return out


# ------------------------------------------------------------------ section: ctx

def pinned_runs(a, cfgs, argv, start, tag, key):
    """Runs of a pinned bench program (argv; it says 'pid PID', waits for a line, prints one
    JSON line) for every configuration in turn, rotated per repetition, each with the tracer
    start(cfg, pid) returns (or none) attached while it runs; their JSON lines."""
    runs = []
    for rep in range(a.reps):
        for c in rotate(cfgs, rep):
            p = Proc(argv[:1] + ["--wait", "--cpu", str(a.sender_cpu)] + argv[1:],
                     os.path.basename(argv[0]), stdin=True)
            _, l = p.wait_line(lambda l: l.startswith("pid "))
            tr = None
            try:
                tr = start(c, int(l.split()[1]))
                time.sleep(0.05)
                p.send("go\n")
                _, l = p.wait_line(lambda l: l.startswith("{"), timeout=120)
                r = json.loads(l)
                r.update(cfg=c, rep=rep)
                runs.append(r)
            finally:
                if tr:
                    tr.stop()
                p.wait(30)
        log(f"  {tag} rep {rep + 1}/{a.reps}: " + " ".join(
            f"{r['cfg']}={r[key]:.0f}" for r in runs if r["rep"] == rep))
    return runs


def added_vs_base(runs, cfgs, key, base_cfg="base"):
    """Per configuration: the key's median, and what it adds to the same repetition's base."""
    base = {r["rep"]: r[key] for r in runs if r["cfg"] == base_cfg}
    per, added = {}, {}
    for c in cfgs:
        rs = [r for r in runs if r["cfg"] == c]
        per[c] = summ([r[key] for r in rs])
        if c != base_cfg:
            added[c] = summ([r[key] - base[r["rep"]] for r in rs])
    return per, added


def sec_ctx(a, feat, variants):
    """Context switches of untraced processes: what scheduler hooks cost everyone else."""
    dummy = sleeper()
    cfgs = ["base", "sched filter (floor)", "tokentrace-untraced"] + \
        [f"{v}-untraced" for v in ("tokentrace-no-stalls", "tokentrace-always") if v in variants]

    def start(c, _pid):
        if c == "sched filter (floor)":
            return floor_start("sched", [dummy.pid])
        if c == "tokentrace-untraced":
            return tt_start([dummy.pid])
        if c.endswith("-untraced"):
            return tt_start([dummy.pid], variants[c[:-len("-untraced")]], name=c)
        return None
    try:
        runs = pinned_runs(a, cfgs, [CTXBENCH, "--rounds", str(a.ctx_rounds)], start, "ctx",
                           "ns_per_round")
    finally:
        dummy.stop(signal.SIGKILL)
    out = {}
    out["ns_per_round"], out["added_ns"] = added_vs_base(runs, cfgs, "ns_per_round")
    fl = out["added_ns"]["sched filter (floor)"]["median"]
    out["ratio"] = {c: (out["added_ns"][c]["median"] / fl if fl and fl > 0 else None)
                    for c in cfgs if c.startswith("tokentrace")}
    return out


def sec_syscalls(a, feat, variants):
    """Syscalls of untraced processes: what syscall hooks cost everyone else."""
    dummy = sleeper()
    cfgs = ["base", "tokentrace-untraced"] + [f"{v}-untraced" for v in
                                               ("tokentrace-no-stalls", "tokentrace-aggregate")
                                               if v in variants]
    hooks = {}

    def start(c, _pid):
        if c == "base":
            return None
        tr = tt_start([dummy.pid], variants.get(c[:-len("-untraced")], ()), name=c)
        hooks[c] = tr.hooks
        return tr
    try:
        runs = pinned_runs(a, cfgs, [CTXBENCH, "--syscall", "--rounds", str(a.syscall_calls)],
                           start, "syscalls", "ns_per_round_med")
    finally:
        dummy.stop(signal.SIGKILL)
    out = {"hooks": hooks}
    out["ns_per_call"], out["added_ns"] = added_vs_base(runs, cfgs, "ns_per_round_med")
    return out


# ------------------------------------------------------------------ section: markers

def sec_markers(a, feat):
    mb = MARKERBENCH
    cfgs = {
        "none": None,
        "uprobe": ("uprobe_empty", ["--binary", mb, "--symbol", "mb_token"]),
        "uprobe+record": ("uprobe_rb", ["--binary", mb, "--symbol", "mb_token"]),
        "usdt": ("usdt_empty", ["--binary", mb, "--usdt", "markerbench:token"]),
        "usdt+record": ("usdt_rb", ["--binary", mb, "--usdt", "markerbench:token"]),
        "uprobe-singlestep": ("uprobe_empty", ["--binary", mb, "--symbol", "mb_token_ss"]),
    }
    if feat.get("uprobe"):
        cfgs["tokentrace --uprobe"] = ("tt", ["--uprobe", f"token={mb}:mb_token"])
    if feat.get("usdt"):
        cfgs["tokentrace --usdt"] = ("tt", ["--usdt", f"token={mb}:markerbench:token"])
    names = list(cfgs)

    def start(c, pid):
        spec = cfgs[c]
        if spec and spec[0] == "tt":
            return tt_start([pid], spec[1], name="tokentrace-markers")
        return floor_start(spec[0], [pid], extra=spec[1]) if spec else None
    runs = pinned_runs(a, names, [mb, "--count", str(a.marker_hits)], start, "markers",
                       "ns_per_iter")
    out = {}
    out["ns_per_iter"], out["added_ns"] = added_vs_base(runs, names, "ns_per_iter", "none")
    out["tokentrace_options"] = {"uprobe": bool(feat.get("uprobe")), "usdt": bool(feat.get("usdt"))}
    return out


# ------------------------------------------------------------------ section: startup

def sec_startup(a, feat, variants):
    # a steady trickle of sends, so bpftrace's probe fires (and says ready) right after attach
    pinger = Proc([SENDBENCH, "--gap-us", "100", "--sends", "1000000000", "--per-response",
                   "50", "--warmup", "0"], "pinger")
    time.sleep(0.2)
    cfgs = ["tokentrace"] + list(variants) + ["libbpf skeleton (floorload)"]
    if shutil.which("bpftrace") and not a.no_bpftrace:
        cfgs.append("bpftrace")
    runs = []
    try:
        for rep in range(a.reps):
            for c in rotate(cfgs, rep):
                if c == "tokentrace":
                    p = tt_start([pinger.pid])
                elif c in variants:
                    p = tt_start([pinger.pid], variants[c], name=c)
                elif c == "bpftrace":
                    p = bt_start(pinger.pid, ready=True)
                else:
                    p = floor_start("rb", [pinger.pid])
                ms = (p.t_ready - p.t_exec) / 1e6
                time.sleep(0.1)
                rss_now = vm_rss_mib(p.pid)
                p.stop()
                runs.append({"cfg": c, "rep": rep, "startup_ms": ms, "rss_mib": p.maxrss_mib(),
                             "vmrss_mib": rss_now, "cpu_s": p.cpu_s()})
            log(f"  startup rep {rep + 1}/{a.reps}: " + " ".join(
                f"{r['cfg'].split()[0]}={r['startup_ms']:.0f}ms/{r['rss_mib']:.0f}MiB"
                for r in runs if r["rep"] == rep))
        # what tracing an idle process costs: the 20 ms poll loop alone
        tgt = sleeper()
        p = tt_start([tgt.pid])
        c0 = task_cpu_ns(p.pid)
        time.sleep(2.0)
        idle_pct = (task_cpu_ns(p.pid) - c0) / 2e9 * 100
        p.stop()
        tgt.stop(signal.SIGKILL)
    finally:
        pinger.stop(signal.SIGKILL)
    out = {c: {k: summ([r[k] for r in runs if r["cfg"] == c and r.get(k) is not None])
               for k in ("startup_ms", "rss_mib", "vmrss_mib", "cpu_s")} for c in cfgs}
    out["tokentrace_idle_cpu_pct"] = idle_pct
    if "bpftrace" in cfgs:
        bt = {r["rep"]: r["startup_ms"] for r in runs if r["cfg"] == "bpftrace"}
        out["ratio_tt_bpftrace"] = summ([r["startup_ms"] / bt[r["rep"]] for r in runs
                                         if r["cfg"] == "tokentrace" and r["rep"] in bt])
    return out


# ------------------------------------------------------------------ section: throughput

SCENARIOS = {
    # flat out: no prefill, no pacing, 64 streams in the batch, 32 client connections
    "saturation": {"sim": ["--ttft-ms", "0", "--itl-ms", "0", "--max-batch", "64",
                           "--tokens", "256"],
                   "load": ["--concurrency", "32", "--max-tokens", "256"],
                   "requests": 768},
    # ~10k tokens/s: 32 streams, a token every 3.2 ms each
    "10k tokens/s": {"sim": ["--ttft-ms", "5", "--itl-ms", "3.2", "--max-batch", "32",
                             "--tokens", "64"],
                     "load": ["--concurrency", "32", "--max-tokens", "64"],
                     "requests": 320},
}


def load_stats(path):
    rs = [json.loads(l) for l in open(path) if l.strip()]
    t0 = min(r["t_sent_ns"] for r in rs)
    t1 = max(r["t_done_ns"] for r in rs)
    chunks = sum(max(r["chunks"], 0) for r in rs)
    errors = sum(1 for r in rs if r.get("error"))
    return {"tokens": chunks, "seconds": (t1 - t0) / 1e9, "tokens_per_s": chunks / ((t1 - t0) / 1e9),
            "requests": len(rs), "errors": errors}


def check_truth(truth, trace):
    p = subprocess.run([sys.executable, CHECK, "--tol-us", "1e9", truth, trace],
                       capture_output=True, text=True, timeout=300)
    out = {"fail_lines": 0}
    for l in p.stdout.splitlines():
        m = re.match(r"measured: (\w+) error vs truth over (\d+) samples: p50 ([\d.]+)us "
                     r"p99 ([\d.]+)us max ([\d.]+)us", l)
        if m:
            out[m.group(1)] = {"samples": int(m.group(2)), "p50_us": float(m.group(3)),
                               "p99_us": float(m.group(4)), "max_us": float(m.group(5))}
        m = re.match(r"measured: (\d+) truth requests, (\d+) reported", l)
        if m:
            out["truth_requests"], out["reported"] = int(m.group(1)), int(m.group(2))
        if l.startswith("FAIL"):
            out["fail_lines"] += 1
            m = re.match(r"FAIL: \.\.\. and (\d+) more", l)
            if m:
                out["fail_lines"] += int(m.group(1)) - 1
    return out


TP_SEQ = 0


def tp_once(scn, cfg, a, rep, variants, stats=False):
    sc = SCENARIOS[scn]
    global TP_SEQ
    TP_SEQ += 1
    tag = f"tp-{TP_SEQ}"
    truth = os.path.join(WORK, f"{tag}.truth.jsonl")
    loadout = os.path.join(WORK, f"{tag}.load.jsonl")
    sim = Proc([SIM, "--port", "0", "--truth", truth] + sc["sim"], "tokensim")
    _, l = sim.wait_line(lambda l: l.startswith("listening on"))
    port = l.rsplit(":", 1)[1]
    tr = None
    run = {"scenario": scn, "cfg": cfg, "rep": rep}
    try:
        if cfg != "base":
            tr = tt_start([sim.pid], variants.get(cfg, []), name=cfg,
                          prefix=LEVERS.get(cfg, ()))
        time.sleep(0.05)
        c0 = task_cpu_ns(tr.pid) if tr else 0
        s0 = proc_cpu_ns(sim.pid)
        p0 = prog_stats(tr.pid) if stats and tr else None
        lp = subprocess.run([LOAD, "--port", port, "--requests", str(sc["requests"] * a.load_scale // 100),
                             "--out", loadout] + sc["load"], capture_output=True, text=True,
                            timeout=300)
        if lp.returncode:
            raise RuntimeError(f"tokenload failed: {lp.stderr.strip()[-300:]}")
        run.update(load_stats(loadout))
        if tr:
            time.sleep(0.15)   # the consumer polls every 20 ms: let it drain
            if p0 is not None:
                run["progs"] = progs_delta(p0, prog_stats(tr.pid))
            run["tt_cpu_s"] = (task_cpu_ns(tr.pid) - c0) / 1e9
            run["tt_cpu_s_per_mtok"] = run["tt_cpu_s"] / run["tokens"] * 1e6
        run["sim_cpu_window_s"] = (proc_cpu_ns(sim.pid) - s0) / 1e9
    finally:
        if tr:
            run["tt_vmrss_mib"] = vm_rss_mib(tr.pid)
            tr.stop()
            run["tt_rss_mib"] = tr.maxrss_mib()
            s = tt_final_summary(tr)
            if s:
                run["lost"] = s.get("lost_events")
                run["tt_requests"] = s.get("requests")
                run["parse_errors"] = s.get("parse_errors")
        sim.stop(signal.SIGTERM)
    # whole-life rusage is exact but counts the idle seconds: it is the CPU the server spent
    run["sim_cpu_s"] = sim.cpu_s()
    run["sim_cpu_us_per_token"] = run["sim_cpu_s"] / run["tokens"] * 1e6
    if tr and scn == "saturation" and any('"type":"request"' in l for l in tr.all_lines()):
        run["accuracy"] = check_truth(truth, tr.out_path)   # not in summary-only modes
    for f in (truth, loadout):
        if os.path.exists(f) and not a.keep:
            os.unlink(f)
    return run


# What-if rows: tokentrace unchanged, run differently. They preview a lever (here: the
# consumer thread's scheduling priority) before it is built in.
LEVERS = {"tokentrace nice -10": ["nice", "-n", "-10"]}
# at saturation, the other way: the consumer yielding the CPU to the server
SAT_LEVERS = {"tokentrace nice 19": ["nice", "-n", "19"]}
# A diagnostic row, not a lever: tokentrace stopped (SIGSTOP) for its whole window once it
# has started, so the ring fills at once and nothing more is delivered: what every hook and
# the held-back path cost the server with no record delivered and no consumer running
STOPPED = "tokentrace, consumer stopped"
SAT_LEVERS[STOPPED] = []


def sec_throughput(a, feat, variants):
    cfgs = ["base", "tokentrace"] + list(variants) + (list(LEVERS) if a.levers else [])
    out = {}
    for scn in SCENARIOS:
        runs = []
        for rep in range(a.reps_tp):
            for c in rotate(cfgs, rep):
                runs.append(tp_once(scn, c, a, rep, variants))
            log(f"  throughput {scn} rep {rep + 1}/{a.reps_tp}: " + " ".join(
                f"{r['cfg']}={r['tokens_per_s']:.0f}tok/s,{r['sim_cpu_us_per_token']:.2f}us/tok"
                for r in runs if r["rep"] == rep))
        base = {r["rep"]: r for r in runs if r["cfg"] == "base"}
        o = {"configs": {}}
        for c in cfgs:
            rs = [r for r in runs if r["cfg"] == c]
            o["configs"][c] = {k: summ([r.get(k) for r in rs if r.get(k) is not None])
                               for k in ("tokens_per_s", "sim_cpu_us_per_token", "tt_cpu_s_per_mtok",
                                         "tt_rss_mib", "tt_vmrss_mib", "lost", "tokens", "seconds",
                                         "parse_errors")}
            if c != "base":
                o["configs"][c]["throughput_ratio"] = summ(
                    [r["tokens_per_s"] / base[r["rep"]]["tokens_per_s"] for r in rs if r["rep"] in base])
                o["configs"][c]["cpu_per_token_ratio"] = summ(
                    [r["sim_cpu_us_per_token"] / base[r["rep"]]["sim_cpu_us_per_token"]
                     for r in rs if r["rep"] in base])
                acc = [r["accuracy"] for r in rs if "accuracy" in r]
                if acc:
                    o["configs"][c]["accuracy"] = {
                        f"{m}_{k}": summ([x[m][k] for x in acc if m in x])
                        for m in ("ttft", "itl") for k in ("p50_us", "p99_us", "max_us")}
                    o["configs"][c]["accuracy"]["mismatched_requests"] = summ(
                        [x["fail_lines"] for x in acc])
                    o["configs"][c]["accuracy"]["truth_requests"] = summ(
                        [x.get("truth_requests") for x in acc])
        o["runs"] = runs
        out[scn] = o
    # in-BPF time per token delivered, by program, at the paced rate: the low-noise view of
    # what each hook costs (whole-life CPU per token moves by several percent run to run)
    scn = "10k tokens/s"
    scfgs = [c for c in cfgs if c != "base" and c not in LEVERS]
    raw = {c: [] for c in scfgs}
    with BpfStats():
        for rep in range(a.reps_stats):
            for c in rotate(scfgs, rep):
                raw[c].append(tp_once(scn, c, a, rep, variants, stats=True))
    st = {}
    for c, rs in raw.items():
        rs = [r for r in rs if r.get("progs") is not None and r.get("tokens")]
        names = sorted({n for r in rs for n in r["progs"]})
        st[c] = {"progs": {n: {
            "runs_per_token": med([r["progs"].get(n, (0, 0))[0] / r["tokens"] for r in rs]),
            "ns_per_run": summ([r["progs"][n][1] / r["progs"][n][0] for r in rs
                                if r["progs"].get(n, (0,))[0]]),
            "ns_per_token": med([r["progs"].get(n, (0, 0))[1] / r["tokens"] for r in rs])}
            for n in names},
            "ns_per_token": summ([sum(t for _, t in r["progs"].values()) / r["tokens"] for r in rs])}
        log(f"  throughput bpf_stats {c}: {st[c]['ns_per_token']['median'] or 0:.0f} ns in BPF per token")
    out[scn]["bpf_stats"] = st
    return out


# ------------------------------------------------------------------ section: cpu

def proc_cpu_ns(pid):
    """utime + stime of the whole process, threads that exited included (tokensim's
    connection threads come and go; /proc/PID/task only lists the live ones). The kernel
    scales both from the exact runtime, so their sum is exact; ns."""
    with open(f"/proc/{pid}/stat") as fh:
        fl = fh.read().rsplit(")", 1)[1].split()
    return (int(fl[11]) + int(fl[12])) * 1e9 / os.sysconf("SC_CLK_TCK")


# paired_windows' configuration that traces an idle process: the hooks' untraced paths
UNTRACED = "tokentrace-untraced"


def paired_windows(a, variants, server_pids, port, load_argv, rate, tag, stats=True,
                   chunk_times=True, levers=None, pause_start=False):
    """Windows without a tracer alternating with windows with each configuration attached to
    server_pids[0] (started before its window opens, stopped after it closes, so startup and
    teardown are outside), order rotated per pair, under one steady tokenload. A window's CPU
    per token is the CPU of every process in server_pids over it (proc_cpu_ns) over the
    chunks tokenload received in it (its per-chunk receive times, same clock); each pair's
    ratio is against that pair's window without a tracer. Without chunk_times (a saturating
    load, whose per-chunk times would be ~4 MB a second) a window's tokens are the chunks of
    the requests that ended in it: one request in flight per connection is the error at
    each edge, a few tokens in a thousand. stats: then a bpf_stats pass (in-BPF ns a token).
    levers: more configurations, tokentrace unchanged under a command prefix (STOPPED: stopped
    for its window instead). pause_start: the
    server is stopped (SIGSTOP) while tokentrace starts: a saturated server leaves a starting
    tokentrace one thread's share of the CPU, ~16 s of startup here; windows open 0.5 s after
    it runs again."""
    levers = levers or {}
    cfgs = ["tokentrace"] + [c for c in variants if c != "tokentrace"] + list(levers)
    W = a.cpu_window_s
    reps_stats = a.reps_stats if stats else 0
    loadout = os.path.join(WORK, f"{tag}.load.jsonl")
    # long enough for every window, and its slow starts, with room to spare (a load that
    # ends first fails the section)
    est_s = (1.5 if chunk_times else 3) * (a.cpu_pairs * (W + len(cfgs) * (W + 2.5)) +
                                           reps_stats * len(cfgs) * (W + 2.5) + 10)
    per_req = int(load_argv[load_argv.index("--max-tokens") + 1])
    load = Proc([LOAD, "--port", str(port), "--requests", str(int(est_s * rate / per_req)),
                 "--out", loadout] + load_argv + ([] if chunk_times else ["--no-chunk-times"]),
                f"tokenload-{tag}")
    cpu = lambda: sum(proc_cpu_ns(p) for p in server_pids)
    wins = []
    try:
        time.sleep(1.5)   # the load ramps up: every connection in its first request
        for rep in range(a.cpu_pairs):
            for c in rotate(["off"] + cfgs, rep):
                tr = None
                if c != "off":
                    if pause_start:
                        for p_ in server_pids:
                            os.kill(p_, signal.SIGSTOP)
                    try:
                        tr = tt_start(server_pids[:1], variants.get(c, []), name=c,
                                      prefix=levers.get(c, ()))
                    finally:
                        if pause_start:
                            for p_ in server_pids:
                                os.kill(p_, signal.SIGCONT)
                    time.sleep(0.5 if pause_start else 0.2)
                    if c == STOPPED:
                        os.kill(tr.pid, signal.SIGSTOP)
                t0, c0 = time.monotonic_ns(), cpu()
                tc0 = proc_cpu_ns(tr.pid) if tr else None
                time.sleep(W)
                t1, c1 = time.monotonic_ns(), cpu()
                w = {"cfg": c, "rep": rep, "t0": t0, "t1": t1, "cpu_ns": c1 - c0}
                if tr:
                    # tokentrace's own CPU over the window: what it costs the machine
                    # besides the server's share (its consumer; the hooks run in the server)
                    w["tracer_cpu_ns"] = proc_cpu_ns(tr.pid) - tc0
                    if c == STOPPED:
                        os.kill(tr.pid, signal.SIGCONT)
                    tr.stop()
                    sm = tt_final_summary(tr) or {}
                    w["lost"] = sm.get("lost_events")
                    time.sleep(0.2)
                wins.append(w)
            log(f"  {tag} pair {rep + 1}/{a.cpu_pairs}")
            if load.p.poll() is not None:
                raise RuntimeError("tokenload ended before the windows did")
        # then in-BPF time over windows of each configuration under the same load: what the
        # hooks cost the machine per token, resolved far finer than the server's CPU is. And
        # tokentrace tracing an idle process instead: every hook fires as often and takes
        # its untraced path, the part of the cost that is the hooks being there at all
        # (the harness's exit cleanup stops the idle process if this fails midway)
        idle = Proc(["sleep", "100000"], f"idle-{tag}")
        with BpfStats() if reps_stats else contextlib.nullcontext():
            for rep in range(reps_stats):
                for c in rotate(cfgs + [UNTRACED], rep):
                    tr = (tt_start([idle.pid], name=c) if c == UNTRACED else
                          tt_start(server_pids[:1], variants.get(c, []), name=c))
                    time.sleep(0.2)
                    if c == STOPPED:
                        os.kill(tr.pid, signal.SIGSTOP)
                    t0, p0 = time.monotonic_ns(), prog_stats(tr.pid)
                    time.sleep(W)
                    t1, progs = time.monotonic_ns(), progs_delta(p0, prog_stats(tr.pid))
                    if c == STOPPED:
                        os.kill(tr.pid, signal.SIGCONT)
                    tr.stop()
                    time.sleep(0.2)
                    wins.append({"cfg": c, "rep": rep, "t0": t0, "t1": t1, "progs": progs,
                                 "stats": True})
        idle.stop(signal.SIGTERM)
        if load.p.poll() is not None:
            raise RuntimeError("tokenload ended before the windows did")
    finally:
        if load.p.returncode is None:   # not reaped by the poll above
            load.stop(signal.SIGINT)
    ts, ends = [], []
    for line in open(loadout):
        try:
            r = json.loads(line)
            if chunk_times:
                ts += r["t_chunk_ns"]
            else:
                ends.append((r["t_done_ns"], max(r["chunks"], 0)))
        except (ValueError, KeyError):
            pass
    ts.sort()
    ends.sort()
    cum = [0]
    for _, n in ends:
        cum.append(cum[-1] + n)
    ends_t = [t for t, _ in ends]
    for w in wins:
        if chunk_times:
            w["tokens"] = bisect.bisect_left(ts, w["t1"]) - bisect.bisect_left(ts, w["t0"])
        else:
            w["tokens"] = (cum[bisect.bisect_left(ends_t, w["t1"])] -
                           cum[bisect.bisect_left(ends_t, w["t0"])])
        w["tokens_per_s"] = w["tokens"] / ((w["t1"] - w["t0"]) / 1e9)
        if w.get("stats"):
            w["bpf_ns_per_token"] = (sum(r for _, r in w["progs"].values()) / w["tokens"]
                                     if w["tokens"] else None)
        else:
            w["us_per_token"] = w["cpu_ns"] / w["tokens"] / 1e3 if w["tokens"] else None
            if w.get("tracer_cpu_ns") is not None and w["tokens"]:
                w["tracer_us_per_token"] = w["tracer_cpu_ns"] / w["tokens"] / 1e3
    out = {"window_s": W, "pairs": a.cpu_pairs, "configs": {}, "windows": wins,
           "load": load_argv}
    off = {w["rep"]: w for w in wins if w["cfg"] == "off"}
    off_us = med([w["us_per_token"] for w in off.values() if w["us_per_token"]])
    for c in ["off"] + cfgs + ([UNTRACED] if reps_stats else []):
        sw = [w for w in wins if w["cfg"] == c and w.get("bpf_ns_per_token")]
        ws = [w for w in wins if w["cfg"] == c and w.get("us_per_token")]
        o = {"us_per_token": summ([w["us_per_token"] for w in ws]),
             "tokens_per_window": summ([w["tokens"] for w in ws]),
             "tokens_per_s": summ([w["tokens_per_s"] for w in ws])}
        if c != "off":
            o["ratio"] = summ([w["us_per_token"] / off[w["rep"]]["us_per_token"] for w in ws
                               if off.get(w["rep"], {}).get("us_per_token")])
            o["throughput_ratio"] = summ([w["tokens_per_s"] / off[w["rep"]]["tokens_per_s"]
                                          for w in ws if off.get(w["rep"], {}).get("tokens_per_s")])
            o["lost"] = summ([w["lost"] for w in ws if w.get("lost") is not None])
            o["tracer_us_per_token"] = summ([w["tracer_us_per_token"] for w in ws
                                             if w.get("tracer_us_per_token") is not None])
            o["bpf_ns_per_token"] = summ([w["bpf_ns_per_token"] for w in sw])
            # the hooks' own time against the server's CPU per token without them: the
            # share they add, short of their cache and branch effects on the server
            o["bpf_share"] = (o["bpf_ns_per_token"]["median"] / (off_us * 1e3)
                              if o["bpf_ns_per_token"]["median"] and off_us else None)
            names = sorted({n for w in sw for n in w["progs"]})
            o["progs"] = {n: {
                "runs_per_token": med([w["progs"].get(n, (0, 0))[0] / w["tokens"] for w in sw]),
                "ns_per_token": med([w["progs"].get(n, (0, 0))[1] / w["tokens"] for w in sw])}
                for n in names}
        out["configs"][c] = o
        log(f"  {tag} {c}: {o['us_per_token']['median'] or 0:.2f} us/token"
            + (f", ratio {o['ratio']['median']:.3f}" if c != "off" and o["ratio"]["median"] else "")
            + (f", {o['bpf_ns_per_token']['median']:.0f} ns in BPF a token"
               if c != "off" and o["bpf_ns_per_token"]["median"] else ""))
    return out


def sec_cpu(a, feat, variants):
    """Server CPU per token at ~10k tokens/s, paired windows in one tokensim under one load.

    Separate tokensim processes differ by more than what is measured (the whole-life figure
    of the throughput section moves 10-15% between untraced runs on these VMs: where its
    threads land, what the host does that minute). Here one tokensim serves one steady
    load for the whole section (paired_windows)."""
    sim, port = tokensim_start([], "tokensim-cpu")
    try:
        return paired_windows(a, variants, [sim.pid], port, SCENARIOS["10k tokens/s"]["load"],
                              10000, "cpu")
    finally:
        sim.stop(signal.SIGTERM)


def sec_satcpu(a, feat, variants):
    """Throughput at saturation, paired windows: the throughput section's saturation scenario
    in one tokensim under one steady saturating load, windows with each configuration against
    the window without a tracer next to it. Separate runs of fresh processes (the throughput
    section) put one configuration anywhere from 0.71 to 1.0 of its untraced run on these VMs;
    here a pair shares the process, its threads' places and the host's minute."""
    sim, port = tokensim_start([], "tokensim-sat", "saturation")
    try:
        return paired_windows(a, variants, [sim.pid], port, SCENARIOS["saturation"]["load"],
                              300000, "satcpu", stats=False, chunk_times=False, pause_start=True,
                              levers=SAT_LEVERS if a.levers else None)
    finally:
        sim.stop(signal.SIGTERM)


# the vLLM-shaped stack: 48 streams, an engine step every 10 ms, so at most 4.8k tokens/s
# (~4.6k measured: a step takes a little longer than its 10 ms)
PY_STACK = {"server": ["--http", "httptools", "--loop", "uvloop", "--ttft-ms", "5",
                       "--itl-ms", "10", "--tokens", "64"],
            "load": ["--concurrency", "48", "--max-tokens", "64"],
            "rate": 4800}


def pystack_start(extra, name):
    """tests/stacks/python/server.py with PY_STACK's options and extra, under Debian's python3
    (whose packages the stack uses: tools/install-deps.sh): (proc, port, engine pid)."""
    srv = Proc([os.environ.get("PYTHON", "/usr/bin/python3"),
                os.path.join(ROOT, "tests", "stacks", "python", "server.py"),
                "--port", "0"] + PY_STACK["server"] + list(extra), name)
    _, l = srv.wait_line(lambda l: l.startswith("listening on"))
    port = l.rsplit(":", 1)[1]
    _, l = srv.wait_line(lambda l: l.startswith("pids "))
    return srv, port, int(re.search(r"engine=(\d+)", l).group(1))


def tokensim_start(extra, name, scenario="10k tokens/s"):
    """tokensim in a SCENARIOS scenario with extra: (proc, port)."""
    sim = Proc([SIM, "--port", "0"] + SCENARIOS[scenario]["sim"] + list(extra), name)
    _, l = sim.wait_line(lambda l: l.startswith("listening on"))
    return sim, l.rsplit(":", 1)[1]


def sec_pycpu(a, feat, variants):
    """The same on a real stack: the vLLM-shaped Python server of tests/stacks/python (FastAPI
    on uvicorn with httptools and uvloop, its EngineCore process over ZMQ), whose two
    processes' CPU is the server's. tokentrace is given the API server's pid only, as a user
    who does not know of the engine would; it follows the engine itself."""
    srv, port, engine = pystack_start([], "pystack-cpu")
    try:
        out = paired_windows(a, variants, [srv.pid, engine], port, PY_STACK["load"],
                             PY_STACK["rate"], "pycpu")
    finally:
        srv.stop(signal.SIGTERM)
    out["server"] = PY_STACK
    return out


# ------------------------------------------------------------------ section: records

# enum tt_ev_type (bpf/events.h)
EV_NAMES = {1: "conn", 2: "data", 3: "state", 4: "marker", 5: "sched", 6: "tcp", 7: "stack",
            8: "pystack", 9: "proc", 10: "pyname"}


def recording_counts(path):
    """Ring-buffer records of a recording (-w; format in user/core/record.h) by type: the
    header's length, then entries of u8 type, u8 flags, u16, u32 length, u32 CRC, payload;
    a RECORD entry (2) is a record as the kernel wrote it, struct tt_hdr first (u64 ts,
    u32 tgid, u32 tid, u16 type)."""
    import struct as st
    counts = {}
    with open(path, "rb") as fh:
        data = fh.read()
    off = st.unpack_from("<H", data, 10)[0]
    while off + 12 <= len(data):
        typ, _, _, ln, _ = st.unpack_from("<BBHII", data, off)
        off += 12
        if typ == 2 and ln >= 18:
            t = st.unpack_from("<H", data, off + 16)[0]
            n = EV_NAMES.get(t, str(t))
            counts[n] = counts.get(n, 0) + 1
        off += ln
    return counts


def records_once(label, start, load_argv, requests):
    """One server (start(): (proc, port, ...)), one load of `requests`, tokentrace -w over it:
    records by type per token the client received."""
    rec = os.path.join(WORK, f"rec-{len(PROCS)}.ttrec")
    loadout = os.path.join(WORK, f"rec-{len(PROCS)}.load.jsonl")
    srv, port = start()[:2]
    try:
        tr = tt_start([srv.pid], ["-w", rec], name=f"tokentrace-rec-{label}")
        lp = subprocess.run([LOAD, "--port", port, "--requests", str(requests), "--out", loadout]
                            + load_argv, capture_output=True, text=True, timeout=300)
        if lp.returncode:
            raise RuntimeError(f"tokenload failed: {lp.stderr.strip()[-300:]}")
        time.sleep(0.3)   # the consumer polls every 20 ms: let it drain
        tr.stop()
        s = tt_final_summary(tr) or {}
    finally:
        srv.stop(signal.SIGTERM)
    tokens = load_stats(loadout)["tokens"]
    # stack and pyname entries are written by userspace into recordings, not by the kernel
    counts = {k: v for k, v in recording_counts(rec).items() if k not in ("stack", "pyname")}
    return {"label": label, "tokens": tokens, "counts": counts,
            "per_token": {k: v / tokens for k, v in counts.items()},
            "all_per_token": sum(counts.values()) / tokens,
            "stalls": (s.get("stalls") or {}).get("total"), "lost": s.get("lost_events")}


def sec_records(a, feat):
    """Ring-buffer records per token, by type, with and without injected stalls: what the
    kernel side sends the consumer (the scheduler's hooks send only spans over the floor and
    counter samples, not every switch)."""
    sim_load = SCENARIOS["10k tokens/s"]["load"]
    stall_sim = ["--stall-every", "8", "--stall-ms", "60", "--stall-kind", "sleep"]
    stall_py = ["--stall", "engine_sleep", "--stall-ms", "150", "--stall-every-tokens", "12",
                "--stall-requests", "0"]
    runs = []
    for label, start, load, n in (
            ("tokensim, no stalls", lambda: tokensim_start([], "tokensim"), sim_load, 160),
            ("tokensim, a 60 ms sleep every 8th token",
             lambda: tokensim_start(stall_sim, "tokensim"), sim_load, 160),
            ("Python stack, no stalls", lambda: pystack_start([], "pystack"),
             PY_STACK["load"], 96),
            ("Python stack, a 150 ms engine sleep every 12th token",
             lambda: pystack_start(stall_py, "pystack"), PY_STACK["load"], 96)):
        r = records_once(label, start, load, n)
        runs.append(r)
        log(f"  records {label}: {r['all_per_token']:.2f} a token "
            + ", ".join(f"{k} {v:.3f}" for k, v in sorted(r["per_token"].items()))
            + f"; stalls {r['stalls']}, lost {r['lost']}")
    return {"runs": runs}


# ------------------------------------------------------------------ section: consumer

def perf_top(path, sort, n=15):
    p = subprocess.run(["perf", "report", "-i", path, "--stdio", "--no-children", "--sort", sort],
                       capture_output=True, text=True, timeout=120)
    out = []
    for l in p.stdout.splitlines():
        m = re.match(r"\s+([\d.]+)%\s+(.*\S)", l)
        if m and not l.lstrip().startswith("#"):
            out.append((float(m.group(1)), re.sub(r"\s+-\s+-\s*$", "", m.group(2)).strip()))
    return out[:n]


def consumer_profile(a):
    """perf record of tokentrace's consumer at 500k records/s: where its time goes."""
    if not shutil.which("perf"):
        return None
    tgt = sleeper()
    tr = None
    data = os.path.join(WORK, "consumer.perf.data")
    try:
        tr = tt_start([tgt.pid], cpu=a.reader_cpu, name="tokentrace-profile")
        rf = Proc([RINGFEED, "--tt-pid", str(tr.pid), "--target-pid", str(tgt.pid), "--cpu",
                   str(a.sender_cpu), "--step-s", "3", "--rates", "500000"], "ringfeed")
        time.sleep(0.3)
        pr = subprocess.run(["perf", "record", "-F", "999", "-p", str(tr.pid), "-o", data, "--",
                             "sleep", "2"], capture_output=True, text=True, timeout=60)
        rf.wait(60)
        if pr.returncode:
            return {"error": pr.stderr.strip()[-200:]}
        return {"symbols": perf_top(data, "symbol", 20), "dso": perf_top(data, "dso", 6)}
    finally:
        if tr:
            tr.stop()
        tgt.stop(signal.SIGKILL)


def consumer_once(a, pol, extra, tgt):
    tr = None
    try:
        tr = tt_start([tgt.pid], cpu=a.reader_cpu, name="tokentrace-consumer")
        rf = Proc([RINGFEED, "--tt-pid", str(tr.pid), "--target-pid", str(tgt.pid),
                   "--cpu", str(a.sender_cpu), "--step-s", str(a.consumer_step_s),
                   "--rates", ",".join(a.consumer_rates)] + extra, "ringfeed")
        rf.wait(600)
        if rf.status:
            raise RuntimeError(f"ringfeed failed ({rf.status}): {rf.stderr_tail()}")
        lines = [json.loads(l) for l in rf.all_lines() if l.startswith("{")]
        tot = [l for l in lines if l["type"] == "total"]
        if not tot:
            raise RuntimeError(f"ringfeed printed no total: {rf.stderr_tail()}")
        time.sleep(0.1)
        tr.stop()
        s = tt_final_summary(tr) or {}
        return {"steps": [l for l in lines if l["type"] == "step"], "total": tot[0],
                "tt_lost_events": s.get("lost_events"),
                "tt_lost": s.get("lost") or {},
                "tt_lost_flagged_requests": s.get("aborted"),
                "tt_requests": s.get("requests"), "tt_rss_mib": tr.maxrss_mib()}
    finally:
        if tr:
            tr.stop()


CONSUMER_POLICIES = {
    # tokentrace's own (bpf/rbwake.bpf.h, compiled into ringfeed): the backlog looked at once
    # per 1/16 ring produced, a forced wakeup once a quarter of the ring waits, at most one
    # per quarter ring produced
    "as tokentrace": ["--wake-once"],
    # the earlier policy, for comparison: every record past the mark forces a wakeup
    "wake per record past ¼": [],
}


def sec_consumer(a, feat):
    policies = CONSUMER_POLICIES
    out = {"rates": a.consumer_rates, "policies": {}}
    for pol, extra in policies.items():
        reps = []
        for rep in range(a.reps_consumer):
            tgt = sleeper()
            try:
                reps.append(consumer_once(a, pol, extra, tgt))
            except Exception as e:   # one bad repetition must not lose the others
                log(f"  consumer {pol} rep {rep + 1}: FAILED: {e}")
                continue
            finally:
                tgt.stop(signal.SIGKILL)
            r = reps[-1]
            log(f"  consumer {pol} rep {rep + 1}/{a.reps_consumer}: " + " ".join(
                f"{st['rate'] or 'max'}:{st['delivered_per_s'] / 1e3:.0f}k/s,drop{st['dropped']}"
                for st in r["steps"]) + f"; dropped {r['total']['dropped']}, tokentrace reported "
                f"lost {r['tt_lost_events']}")
        if not reps:
            raise RuntimeError(f"every repetition failed ({pol})")
        steps = {}
        for i, rate in enumerate(a.consumer_rates):
            ss = [r["steps"][i] for r in reps if len(r["steps"]) > i]
            steps[rate] = {
                "offered_per_s": summ([x["offered_per_s"] for x in ss]),
                "delivered_per_s": summ([x["delivered_per_s"] for x in ss]),
                "drop_pct": summ([100.0 * x["dropped"] / max(1, x["dropped"] + x["produced"])
                                  for x in ss]),
                "consumer_ns_per_record": summ([x["consumer_ns_per_record"] for x in ss]),
                "forced_wakeups": summ([x["forced_wakeups"] for x in ss]),
            }
        out["policies"][pol] = {
            "steps": steps,
            # the ring-buffer drops against ringfeed's own count; tokentrace's other losses
            # (its own hooks' probe misses, stacks...) are its own, said apart
            "drops_reported_exactly": all(
                r["tt_lost"].get("ringbuf", r["tt_lost_events"]) == r["total"]["dropped"] for r in reps),
            "other_losses": {k: sum(r["tt_lost"].get(k, 0) for r in reps)
                             for k in sorted({k for r in reps for k in r["tt_lost"]})
                             if k != "ringbuf" and any(r["tt_lost"].get(k) for r in reps)},
            "requests_complete_when_no_drops": all(
                r["tt_requests"] == r["total"]["requests"] for r in reps if r["total"]["dropped"] == 0),
            "reps": reps,
        }
    try:
        out["profile"] = consumer_profile(a)
    except Exception as e:   # a profile is a bonus, never a failure
        out["profile"] = {"error": str(e)}
    return out


# ------------------------------------------------------------------ report

TARGETS = {
    "tp_rate": 0.99, "tp_sat": 0.90, "send_ratio": 1.5, "untraced_ratio": 1.2,
    "startup_ms": 100, "startup_vs_bt": 0.5, "rss_mib": 24, "consumer_rate": 1e6,
    "cpu_ratio": 1.05,
}


def f(v, nd=0, unit=""):
    if v is None:
        return "n/a"
    return f"{v:,.{nd}f}{unit}"


def fs(s, nd=0, unit=""):
    """median [q1–q3]"""
    if not s or s.get("median") is None:
        return "n/a"
    if s["n"] < 2 or s["q1"] is None:
        return f(s["median"], nd, unit)
    return f"{f(s['median'], nd, unit)} [{f(s['q1'], nd)}–{f(s['q3'], nd)}]"


def verdict(ok):
    return "n/a" if ok is None else ("met" if ok else "**missed**")


def render(res):
    L = []
    env = res["env"]
    L.append(f"Run {env['date']} on {env['cpu']} ×{env['nproc']} ({env['virt']}), Linux "
             f"{env['kernel']}, tokentrace {env['tokentrace']} ({env['git']}), "
             f"bpftrace {env['bpftrace']}; reps: {env['reps']} (throughput {env['reps_tp']}, "
             f"consumer {env['reps_consumer']}); {env['elapsed_s']:.0f} s in all; load average "
             f"at the end (1/5/15 min) {env.get('loadavg_end', '?')}.")
    for ft in env.get("foreign_tracers", []):
        L.append("")
        L.append(f"**Warning: another tracer was running during this run and taxed the hooks "
                 f"measured:** `{ft}`")
    L.append("")
    L.append("Values: median [interquartile range] over repetitions.")
    L.append("")
    head = []   # (metric, result, target, verdict)
    s = res.get("send")
    if s and not s.get("error"):
        for size, r in s["sizes"].items():
            L.append(f"### Cost per send ({size}-byte send(), loopback TCP, sender pinned to CPU "
                     f"{env['sender_cpu']}, reader to CPU {env['reader_cpu']})")
            L.append("")
            L.append("| configuration | ns per send (mean) | ns per send (median block) | added ns | tracer CPU s |")
            L.append("|---|---|---|---|---|")
            for c, v in r["ns_per_send"].items():
                L.append(f"| {c} | {fs(v)} | {fs(r['ns_per_send_med'][c])} | "
                         f"{fs(r['added_ns'].get(c)) if c != 'base' else '—'} | "
                         f"{fs(r['extra'][c].get('tracer_cpu_s'), 3)} |")
            L.append("")
            for k, v in r["ratio"].items():
                L.append(f"- added-cost ratio {k}: {f(v.get('of_medians'), 2)} (ratio of median added "
                         f"costs; per-rep ratios {fs(v, 2)})")
            L.append("")
        r0 = s["sizes"][list(s["sizes"])[0]]
        rt = r0["ratio"].get("tokentrace/rb", {}).get("of_medians")
        ru = r0["ratio"].get("tokentrace-untraced/filter", {}).get("of_medians")
        br = s.get("bpf_ratio", {})
        if br:
            head.append(("in-BPF ns per traced send, all hooks, vs floor program (bpf_stats)",
                         f"{f(br.get('tokentrace/rb'), 2)}×", "≤ 1.5×",
                         verdict(br.get("tokentrace/rb", 9) <= TARGETS["send_ratio"])))
            head.append(("in-BPF ns per untraced send, all hooks, vs bare filter (bpf_stats)",
                         f"{f(br.get('tokentrace-untraced/filter'), 2)}×", "≤ 1.2×",
                         verdict(br.get("tokentrace-untraced/filter", 9) <= TARGETS["untraced_ratio"])))
        head.append(("added ns per traced send vs reserve+submit floor",
                     f"{f(r0['added_ns']['tokentrace']['median'])} vs {f(r0['added_ns']['rb']['median'])} ns "
                     f"= {f(rt, 2)}×", "≤ 1.5×", verdict(None if rt is None else rt <= TARGETS["send_ratio"])))
        head.append(("added ns per untraced send vs bare filter",
                     f"{f(r0['added_ns']['tokentrace-untraced']['median'])} vs "
                     f"{f(r0['added_ns']['filter']['median'])} ns = {f(ru, 2)}×", "≤ 1.2×",
                     verdict(None if ru is None else ru <= TARGETS["untraced_ratio"])))
        if s.get("bpf_stats"):
            L.append(f"### In-BPF time per program run ({list(s['sizes'])[0]}-byte sends, kernel.bpf_stats_enabled, "
                     f"{env['reps_stats']} runs each)")
            L.append("")
            L.append("bpf_stats adds two clock reads to every run, the same for every program.")
            L.append("")
            L.append("| configuration | program | runs | runs per timed send | ns per run | ns per timed send |")
            L.append("|---|---|---|---|---|---|")
            for c, v in s["bpf_stats"].items():
                for n, p in sorted(v["progs"].items()):
                    if p["runs"]:
                        L.append(f"| {c} | {n} | {p['runs']:,.0f} | {p['runs'] / v['sends']:.2f} | "
                                 f"{fs(p['ns_per_run'])} | "
                                 f"{f(p['runs'] / v['sends'] * (p['ns_per_run']['median'] or 0))} |")
                L.append(f"| {c} | **all programs** | | | | **{f(v['ns_per_send'])}** |")
            L.append("")
            for k, v in s.get("bpf_ratio", {}).items():
                L.append(f"- in-BPF ns per timed send, ratio {k}: {f(v, 2)}")
            L.append("")
    elif s:
        L.append(f"send: failed: {s['error']}\n")
    cx = res.get("ctx")
    if cx and not cx.get("error"):
        L.append(f"### Context switches of untraced processes (pipe ping-pong, both on CPU "
                 f"{env['sender_cpu']}: 2 switches + 2 wakeups per round trip)")
        L.append("")
        L.append("| configuration | ns per round trip | added ns |")
        L.append("|---|---|---|")
        for c, v in cx["ns_per_round"].items():
            L.append(f"| {c} | {fs(v)} | {fs(cx['added_ns'].get(c)) if c != 'base' else '—'} |")
        L.append("")
        for c, r in cx["ratio"].items():
            L.append(f"- added-cost ratio {c} / sched filter (floor): {f(r, 2)}")
            head.append((f"untraced context switch: {c} vs bare sched filter", f"{f(r, 2)}×", "≤ 1.2×",
                         verdict(None if r is None else r <= TARGETS["untraced_ratio"])))
        L.append("")
    elif cx:
        L.append(f"ctx: failed: {cx['error']}\n")
    sy = res.get("syscalls")
    if sy and not sy.get("error"):
        L.append(f"### Syscalls of untraced processes (getppid(2) in a loop on CPU "
                 f"{env['sender_cpu']}; median of blocks of 1000 calls)")
        L.append("")
        L.append("| configuration | hooks (ready line) | ns per call | added ns |")
        L.append("|---|---|---|---|")
        for c, v in sy["ns_per_call"].items():
            L.append(f"| {c} | {sy['hooks'].get(c, '—')} | {fs(v, 1)} | "
                     f"{fs(sy['added_ns'].get(c), 1) if c != 'base' else '—'} |")
        L.append("")
    elif sy:
        L.append(f"syscalls: failed: {sy['error']}\n")
    m = res.get("markers")
    if m and not m.get("error"):
        L.append("### Marker hits (markerbench loop, pinned)")
        L.append("")
        L.append("| configuration | ns per iteration | added ns per hit |")
        L.append("|---|---|---|")
        for c, v in m["ns_per_iter"].items():
            L.append(f"| {c} | {fs(v)} | {fs(m['added_ns'].get(c)) if c != 'none' else '—'} |")
        L.append("")
        if not m["tokentrace_options"]["uprobe"]:
            L.append("tokentrace has no --uprobe/--usdt yet: the rows are the raw mechanism with "
                     "minimal programs (floor.bpf.c); they appear for tokentrace once its --help "
                     "lists the options.")
            L.append("")
    elif m:
        L.append(f"markers: failed: {m['error']}\n")
    st = res.get("startup")
    if st and not st.get("error"):
        L.append("### Startup (exec → all probes attached) and peak RSS")
        L.append("")
        L.append("| tool | startup ms | peak RSS MiB (VmHWM) | RSS MiB after start | CPU s, whole life |")
        L.append("|---|---|---|---|---|")
        for c, v in st.items():
            if c.startswith("ratio") or c.startswith("tokentrace_"):
                continue
            L.append(f"| {c} | {fs(v['startup_ms'])} | {fs(v['rss_mib'], 1)} | "
                     f"{fs(v.get('vmrss_mib'), 1)} | {fs(v['cpu_s'], 3)} |")
        L.append("")
        L.append(f"tokentrace attached to an idle process uses {f(st.get('tokentrace_idle_cpu_pct'), 2)}% "
                 f"of a CPU (its 20 ms poll loop).")
        L.append("")
        tt = st["tokentrace"]
        head.append(("startup (exec → ready)", f"{f(tt['startup_ms']['median'])} ms", "≤ 100 ms",
                     verdict(tt["startup_ms"]["median"] <= TARGETS["startup_ms"])))
        if "ratio_tt_bpftrace" in st:
            r = st["ratio_tt_bpftrace"]["median"]
            head.append(("startup vs bpftrace", f"{f(r, 2)}× ({f(st['bpftrace']['startup_ms']['median'])} ms)",
                         "≤ 0.5×", verdict(r <= TARGETS["startup_vs_bt"])))
        head.append(("peak RSS, idle (default 4 MiB ring)", f"{f(tt['rss_mib']['median'], 1)} MiB",
                     "≤ 24 MiB", verdict(tt["rss_mib"]["median"] <= TARGETS["rss_mib"])))
    elif st:
        L.append(f"startup: failed: {st['error']}\n")
    tp = res.get("throughput")
    if tp and not tp.get("error"):
        L.append("### Server throughput (tokensim + tokenload on the same 2 vCPUs, nothing pinned)")
        L.append("")
        L.append("| scenario | configuration | tokens/s | throughput ratio | tokensim CPU µs/token | CPU/token ratio | tokentrace CPU s per M tokens | tokentrace RSS MiB, peak / at end | lost records |")
        L.append("|---|---|---|---|---|---|---|---|---|")
        for scn, o in tp.items():
            for c, v in o["configs"].items():
                L.append(f"| {scn} | {c} | {fs(v['tokens_per_s'])} | {fs(v.get('throughput_ratio'), 3)} | "
                         f"{fs(v['sim_cpu_us_per_token'], 2)} | {fs(v.get('cpu_per_token_ratio'), 3)} | "
                         f"{fs(v.get('tt_cpu_s_per_mtok'), 2)} | {f(v.get('tt_rss_mib', {}).get('median'), 1)} / "
                         f"{f(v.get('tt_vmrss_mib', {}).get('median'), 1)} | "
                         f"{fs(v.get('lost'))} |")
        L.append("")
        bs = tp.get("10k tokens/s", {}).get("bpf_stats")
        if bs:
            L.append(f"In-BPF time per token delivered at 10k tokens/s (kernel.bpf_stats_enabled, "
                     f"{env['reps_stats']} runs each; every program of the tracer, in whatever "
                     f"context it ran: the server's, the client's, interrupts):")
            L.append("")
            L.append("| configuration | program | runs per token | ns per run | ns per token |")
            L.append("|---|---|---|---|---|")
            for c, v in bs.items():
                for n, p_ in sorted(v["progs"].items(), key=lambda kv: -(kv[1]["ns_per_token"] or 0)):
                    if p_["runs_per_token"]:
                        L.append(f"| {c} | {n} | {p_['runs_per_token']:.2f} | {fs(p_['ns_per_run'])} | "
                                 f"{f(p_['ns_per_token'])} |")
                L.append(f"| {c} | **all programs** | | | **{fs(v['ns_per_token'])}** |")
            L.append("")
        accs = [(c, v["accuracy"]) for c, v in tp.get("saturation", {}).get("configs", {}).items()
                if v.get("accuracy")]
        if accs:
            L.append("Fidelity at saturation (tokentrace vs tokensim's truth, tests/e2e/check_truth.py; "
                     "errors over the requests reported with the right chunk count):")
            L.append("")
            L.append("| configuration | error | p50 µs | p99 µs | max µs | requests not reported exactly |")
            L.append("|---|---|---|---|---|---|")
            for c, acc in accs:
                for m_ in ("ttft", "itl"):
                    L.append(f"| {c} | {m_.upper()} | {fs(acc[f'{m_}_p50_us'], 1)} | "
                             f"{fs(acc[f'{m_}_p99_us'], 1)} | {fs(acc[f'{m_}_max_us'], 1)} | "
                             f"{fs(acc['mismatched_requests']) + ' of ' + fs(acc['truth_requests']) if m_ == 'ttft' else ''} |")
            L.append("")
        for scn, key, tgt in (("10k tokens/s", "tp_rate", "≥ 0.99"), ("saturation", "tp_sat", "≥ 0.90")):
            for c, cv in tp.get(scn, {}).get("configs", {}).items():
                v = cv.get("throughput_ratio", {})
                if c != "base" and v.get("median") is not None:
                    head.append((f"throughput ratio, {scn}: {c}", f(v["median"], 3), tgt,
                                 verdict(v["median"] >= TARGETS[key])))
        v = tp.get("10k tokens/s", {}).get("configs", {}).get("tokentrace", {}).get("cpu_per_token_ratio", {})
        if v.get("median") is not None:
            head.append(("server CPU per token ratio, 10k tokens/s, whole life", f(v["median"], 3), "—", "—"))
        v = tp.get("saturation", {}).get("configs", {}).get("tokentrace", {}).get("lost", {})
        if v.get("median") is not None:
            head.append(("records lost at saturation (default options)", f(v["median"]), "0",
                         verdict(v["median"] == 0)))
        v = tp.get("saturation", {}).get("configs", {}).get("tokentrace", {}).get("tt_rss_mib", {})
        if v.get("median") is not None:
            head.append(("peak RSS at saturation (default options)", f"{f(v['median'], 1)} MiB",
                         "≤ 24 MiB", verdict(v["median"] <= TARGETS["rss_mib"])))
    elif tp:
        L.append(f"throughput: failed: {tp['error']}\n")
    for key, title, server, rate in (
            ("cpu", "Server CPU per token at ~10k tokens/s, paired windows (one tokensim, one "
             "steady load", "tokensim", "10k tokens/s"),
            ("pycpu", "Server CPU per token on the vLLM-shaped Python stack, paired windows "
             "(uvicorn + httptools + uvloop API server and its engine process, one steady load",
             "API server + engine", "the Python stack")):
        cp = res.get(key)
        if cp and not cp.get("error"):
            L.append(f"### {title}; {cp['pairs']} windows of {f(cp['window_s'], 1)} s per "
                     f"configuration, each against the window without a tracer next to it)")
            L.append("")
            L.append(f"| configuration | {server} CPU µs/token | ratio to the paired window without "
                     "tracer | tokens a window | in-BPF ns/token (bpf_stats) | in-BPF ns/token ÷ "
                     "CPU/token without tracer | tokentrace's own CPU µs/token |")
            L.append("|---|---|---|---|---|---|---|")
            for c, v in cp["configs"].items():
                L.append(f"| {c} | {fs(v['us_per_token'], 2)} | "
                         f"{fs(v.get('ratio'), 3) if c != 'off' else 'n/a'} | "
                         f"{fs(v['tokens_per_window'])} | "
                         f"{fs(v['bpf_ns_per_token']) if v.get('bpf_ns_per_token') else 'n/a'} | "
                         f"{f(v['bpf_share'] * 100, 1) + '%' if v.get('bpf_share') else 'n/a'} | "
                         f"{fs(v.get('tracer_us_per_token'), 2) if v.get('tracer_us_per_token') else 'n/a'} |")
            L.append("")
            for c, v in cp["configs"].items():
                if v.get("progs"):
                    L.append(f"- {c}, in BPF by program (runs a token, ns a token): " + ", ".join(
                        f"{n} {f(p['runs_per_token'], 2)}/{f(p['ns_per_token'])}"
                        for n, p in sorted(v["progs"].items(),
                                           key=lambda kv: -(kv[1]["ns_per_token"] or 0))
                        if (p["ns_per_token"] or 0) >= 1))
            L.append("")
            for c, v in cp["configs"].items():
                r = (v.get("ratio") or {}).get("median")
                if c != "off" and r is not None:
                    head.append((f"server CPU per token, {rate}, paired windows: {c}", f(r, 3),
                                 "≤ 1.05" if c == "tokentrace" else "—",
                                 verdict(r <= TARGETS["cpu_ratio"]) if c == "tokentrace" else "—"))
                if c != "off" and v.get("bpf_share") is not None:
                    head.append((f"in-BPF time per token ÷ server CPU per token, {rate}: {c}",
                                 f"{f(v['bpf_share'] * 100, 1)}%",
                                 "≤ 5%" if c == "tokentrace" else "—",
                                 verdict(v["bpf_share"] <= TARGETS["cpu_ratio"] - 1)
                                 if c == "tokentrace" else "—"))
        elif cp:
            L.append(f"{key}: failed: {cp['error']}\n")
    sp = res.get("satcpu")
    if sp and not sp.get("error"):
        L.append(f"### Throughput at saturation, paired windows (one tokensim, one steady saturating "
                 f"load; {sp['pairs']} windows of {f(sp['window_s'], 1)} s per configuration, each "
                 "against the window without a tracer next to it)")
        L.append("")
        L.append("| configuration | tokens/s | throughput ratio to the paired window | tokensim CPU "
                 "µs/token | its ratio | records lost a window | tokentrace's own CPU µs/token |")
        L.append("|---|---|---|---|---|---|---|")
        for c, v in sp["configs"].items():
            L.append(f"| {c} | {fs(v['tokens_per_s'])} | "
                     f"{fs(v.get('throughput_ratio'), 3) if c != 'off' else 'n/a'} | "
                     f"{fs(v['us_per_token'], 2)} | {fs(v.get('ratio'), 3) if c != 'off' else 'n/a'} | "
                     f"{fs(v.get('lost')) if c != 'off' else 'n/a'} | "
                     f"{fs(v.get('tracer_us_per_token'), 2) if v.get('tracer_us_per_token') else 'n/a'} |")
            r = (v.get("throughput_ratio") or {}).get("median")
            if c != "off" and r is not None:
                head.append((f"throughput ratio, saturation, paired windows: {c}", f(r, 3),
                             "≥ 0.90" if c == "tokentrace" else "—",
                             verdict(r >= TARGETS["tp_sat"]) if c == "tokentrace" else "—"))
        L.append("")
    elif sp:
        L.append(f"satcpu: failed: {sp['error']}\n")
    rc = res.get("records")
    if rc and not rc.get("error"):
        L.append("### Ring-buffer records per token (tokentrace -w over one load; records the "
                 "kernel side sent, by type, over the chunks the client received)")
        L.append("")
        kinds = sorted({k for r in rc["runs"] for k in r["counts"]})
        L.append("| server and load | tokens | all | " + " | ".join(kinds) +
                 " | stalls reported | records lost |")
        L.append("|---|---|---|" + "---|" * len(kinds) + "---|---|")
        for r in rc["runs"]:
            L.append(f"| {r['label']} | {f(r['tokens'])} | {f(r['all_per_token'], 3)} | " +
                     " | ".join(f(r["per_token"].get(k, 0), 3) for k in kinds) +
                     f" | {f(r['stalls'])} | {f(r['lost'])} |")
        L.append("")
    elif rc:
        L.append(f"records: failed: {rc['error']}\n")
    co = res.get("consumer")
    if co and not co.get("error"):
        L.append("### Consumer capacity (synthetic records into tokentrace's ring buffer; tokentrace "
                 f"pinned to CPU {env['reader_cpu']}, producer to CPU {env['sender_cpu']})")
        L.append("")
        L.append("| wakeup policy | offered/s | delivered/s | dropped | consumer ns/record | forced wakeups |")
        L.append("|---|---|---|---|---|---|")
        for pol, o in co["policies"].items():
            for rate, v in o["steps"].items():
                L.append(f"| {pol} | {fs(v['offered_per_s'])} | {fs(v['delivered_per_s'])} | "
                         f"{fs(v['drop_pct'], 1, '%')} | "
                         f"{fs(v['consumer_ns_per_record'])} | {fs(v['forced_wakeups'])} |")
        L.append("")
        for pol, o in co["policies"].items():
            dropped = sum(r["total"]["dropped"] for r in o["reps"])
            flagged = sum(r.get("tt_lost_flagged_requests") or 0 for r in o["reps"])
            other = ", ".join(f"{v:,} {k}" for k, v in o.get("other_losses", {}).items())
            L.append(f"- {pol}: {dropped:,} records dropped in all, tokentrace's summaries reported "
                     f"{'exactly as many' if o['drops_reported_exactly'] else '**a different number**'}"
                     f" and flagged {flagged:,} requests as aborted; every scripted request was "
                     f"reported in runs without drops: "
                     f"{'yes' if o['requests_complete_when_no_drops'] else '**no**'}"
                     f"{'; other losses of its own: ' + other if other else ''}.")
        L.append("")
        prof = co.get("profile")
        if prof and prof.get("symbols"):
            L.append("Where the consumer's time goes (perf record of tokentrace at 500k records/s, "
                     "flat profile):")
            L.append("")
            L.append("| % | symbol |")
            L.append("|---|---|")
            for pct, sym in prof["symbols"]:
                L.append(f"| {pct:.1f} | `{sym}` |")
            L.append("")
            L.append("By object: " + ", ".join(f"{d} {p:.0f}%" for p, d in prof.get("dso", [])))
            L.append("")
        o = co["policies"]["as tokentrace"]
        ok_rates = [float(r) for r, v in o["steps"].items() if r != "max"
                    and v["drop_pct"]["median"] == 0 and v["offered_per_s"]["median"] >= 0.97 * float(r)]
        one_m = o["steps"].get("1000000")
        if one_m:
            ok = (one_m["drop_pct"]["median"] == 0 and
                  one_m["offered_per_s"]["median"] >= 0.97e6)
            head.append(("zero drops at 1M records/s produced",
                         f"offered {f(one_m['offered_per_s']['median'])}/s, dropped "
                         f"{f(one_m['drop_pct']['median'], 2)}%", "0 drops at 1M/s",
                         verdict(ok)))
        head.append(("highest offered rate fully delivered", f(max(ok_rates) if ok_rates else None),
                     "≥ 1M/s", verdict(bool(ok_rates) and max(ok_rates) >= 1e6)))
    elif co:
        L.append(f"consumer: failed: {co['error']}\n")
    H = ["| target | result | goal | |", "|---|---|---|---|"]
    H += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in head]
    return "\n".join(["### Headline", ""] + H + [""] + L)


def foreign_tracers():
    """BPF tracers already running (not ours): they tax every hook we measure."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/comm") as fh:
                comm = fh.read().strip()
            if comm in ("tokentrace", "bpftrace", "floorload", "ringfeed"):
                with open(f"/proc/{pid}/cmdline") as fh:
                    out.append(f"{pid} " + fh.read().replace("\0", " ").strip())
        except OSError:
            pass
    return out


def env_info(a, feat):
    def cmd(*c):
        try:
            return subprocess.run(c, capture_output=True, text=True, timeout=10, cwd=ROOT).stdout.strip()
        except OSError:
            return "?"
    cpu = "?"
    with open("/proc/cpuinfo") as fh:
        for l in fh:
            if l.startswith("model name"):
                cpu = l.split(":", 1)[1].strip()
                break
    git = cmd("git", "describe", "--always", "--dirty")
    with open("/proc/loadavg") as fh:
        load = " ".join(fh.read().split()[:3])
    return {"date": time.strftime("%Y-%m-%d %H:%M"), "kernel": platform.release(), "cpu": cpu,
            "loadavg_end": load,
            "nproc": os.cpu_count(), "virt": cmd("systemd-detect-virt") or "?",
            "tokentrace": cmd(TT, "--version").replace("tokentrace ", ""), "git": git,
            "bpftrace": cmd("bpftrace", "--version").replace("bpftrace ", "") if shutil.which("bpftrace") else "none",
            "reps": a.reps, "reps_tp": a.reps_tp, "reps_consumer": a.reps_consumer,
            "reps_stats": a.reps_stats,
            "sender_cpu": a.sender_cpu, "reader_cpu": a.reader_cpu, "sends": a.sends,
            "tokentrace_options": {k: v for k, v in feat.items() if k != "help"},
            "foreign_tracers": foreign_tracers()}


def set_build_dir(d):
    """Where make put the test rig and the bench programs (make's OUTPUT)."""
    global OUT, SIM, LOAD, SENDBENCH, FLOORLOAD, RINGFEED, MARKERBENCH, CTXBENCH
    d = os.path.abspath(d)
    OUT = os.path.join(d, "bench")
    SIM, LOAD = os.path.join(d, "tokensim"), os.path.join(d, "tokenload")
    SENDBENCH, FLOORLOAD, RINGFEED, MARKERBENCH, CTXBENCH = (
        os.path.join(OUT, n) for n in ("sendbench", "floorload", "ringfeed", "markerbench",
                                       "ctxbench"))


def main():
    global WORK, LOG, TT
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="send,ctx,syscalls,markers,startup,throughput,cpu,pycpu,satcpu,records,consumer",
                    help="comma-separated sections (default: all)")
    ap.add_argument("--reps", type=int, default=7, help="repetitions: send, ctx, markers, startup")
    ap.add_argument("--reps-tp", type=int, default=5, help="repetitions: throughput")
    ap.add_argument("--reps-consumer", type=int, default=2, help="repetitions: consumer")
    ap.add_argument("--reps-stats", type=int, default=3, help="repetitions: bpf_stats pass")
    ap.add_argument("--no-levers", dest="levers", action="store_false",
                    help="skip the what-if rows (tokentrace under nice -10)")
    ap.add_argument("--quick", action="store_true", help="3 reps, shorter runs: a smoke test")
    ap.add_argument("--sends", type=int, default=100000, help="timed sends per send run")
    ap.add_argument("--send-sizes", default="64,1024", help="send sizes (bytes)")
    ap.add_argument("--marker-hits", type=int, default=30000)
    ap.add_argument("--ctx-rounds", type=int, default=50000, help="round trips per ctx run")
    ap.add_argument("--syscall-calls", type=int, default=2000000,
                    help="getppid calls per syscalls run")
    ap.add_argument("--load-scale", type=int, default=100, help="throughput requests, percent")
    ap.add_argument("--cpu-pairs", type=int, default=10,
                    help="cpu: windows per configuration (each paired with one without)")
    ap.add_argument("--cpu-window-s", type=float, default=3.0, help="cpu: seconds a window")
    ap.add_argument("--consumer-rates", default="250000,500000,1000000,1500000,max")
    ap.add_argument("--consumer-step-s", type=float, default=1.5)
    ap.add_argument("--sender-cpu", type=int, default=1)
    ap.add_argument("--reader-cpu", type=int, default=0)
    ap.add_argument("--tokentrace", default=TT, help="binary to measure")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=ARGS",
                    help="also measure tokentrace with these extra options (send and throughput), "
                         "e.g. --variant 'cap256=-s 256'; BENCH_TT_VARIANTS='a=..;b=..' too")
    ap.add_argument("--no-bpftrace", action="store_true")
    ap.add_argument("--no-variants", action="store_true",
                    help="tokentrace's default mode only: no --aggregate, --no-stalls or "
                         "--stall-hooks always rows (e.g. many --cpu-pairs of the default)")
    ap.add_argument("--update-md", action="store_true", help="rewrite BENCHMARKS.md's results block")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--out", default=None, help="where results.json/.md and bench.log go "
                    "(default BUILD_DIR/bench; use another for experiments)")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, ".output"),
                    help="make's OUTPUT: tokensim, tokenload and bench/ (default .output)")
    a = ap.parse_args()
    set_build_dir(a.build_dir)
    a.out = a.out or OUT
    if a.quick:
        a.reps, a.reps_tp, a.reps_consumer, a.reps_stats = 3, 3, 1, 1
        a.sends, a.marker_hits, a.load_scale, a.consumer_step_s = 50000, 10000, 50, 1.0
        a.ctx_rounds = 20000
        a.syscall_calls = 500000
        a.cpu_pairs, a.cpu_window_s = 4, 2.0
    a.send_sizes = [int(x) for x in a.send_sizes.split(",") if x]
    a.consumer_rates = [x for x in a.consumer_rates.split(",") if x]
    TT = os.path.abspath(a.tokentrace)
    if os.geteuid() != 0:
        sys.exit("bench: loading BPF programs needs root; run: sudo make bench")
    for b in (TT, SIM, LOAD, SENDBENCH, FLOORLOAD, RINGFEED, MARKERBENCH, CTXBENCH):
        if not os.access(b, os.X_OK):
            sys.exit(f"bench: {b} is missing; run make bench (it builds everything)")
    os.makedirs(a.out, exist_ok=True)
    WORK = tempfile.mkdtemp(prefix="tt-bench.")
    LOG = open(os.path.join(a.out, "bench.log"), "w")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    feat = tt_features()
    variants = {}
    for spec in a.variant + [v for v in os.environ.get("BENCH_TT_VARIANTS", "").split(";") if v]:
        name, _, args = spec.partition("=")
        variants[f"tokentrace-{name}"] = args.split()
    # tokentrace's own cost modes, measured as soon as its --help lists them
    if a.no_variants:
        feat = {k: v for k, v in feat.items()
                if k not in ("aggregate", "no_stalls", "stall_hooks")}
    if feat.get("aggregate") and "tokentrace-aggregate" not in variants:
        variants["tokentrace-aggregate"] = ["--aggregate"]
    if feat.get("no_stalls") and "tokentrace-no-stalls" not in variants:
        variants["tokentrace-no-stalls"] = ["--no-stalls"]
    # lazy scheduler hooks by default: what keeping them attached throughout costs
    if feat.get("stall_hooks") and "tokentrace-always" not in variants:
        variants["tokentrace-always"] = ["--stall-hooks", "always"]
    t0 = time.monotonic()
    res = {}
    sections = a.only.split(",")
    for ft in foreign_tracers():
        log(f"bench: WARNING: another tracer is running and taxes the hooks measured: {ft}")
    log(f"bench: tokentrace {TT}, options seen in --help: "
        f"{', '.join(k for k, v in feat.items() if k != 'help' and v) or 'none beyond the basics'}; "
        f"variants: {', '.join(variants) or 'none'}; work dir {WORK}")
    try:
        for sec, fn in (("send", lambda: sec_send(a, feat, variants)),
                        ("ctx", lambda: sec_ctx(a, feat, variants)),
                        ("syscalls", lambda: sec_syscalls(a, feat, variants)),
                        ("markers", lambda: sec_markers(a, feat)),
                        ("startup", lambda: sec_startup(a, feat, variants)),
                        ("throughput", lambda: sec_throughput(a, feat, variants)),
                        ("cpu", lambda: sec_cpu(a, feat, variants)),
                        ("pycpu", lambda: sec_pycpu(a, feat, variants)),
                        ("satcpu", lambda: sec_satcpu(a, feat, variants)),
                        ("records", lambda: sec_records(a, feat)),
                        ("consumer", lambda: sec_consumer(a, feat))):
            if sec not in sections:
                continue
            ts = time.monotonic()
            log(f"bench: {sec}...")
            try:
                res[sec] = fn()
            except Exception as e:   # one section failing must not lose the others
                import traceback
                traceback.print_exc(file=LOG)
                log(f"bench: {sec} FAILED: {e}")
                res[sec] = {"error": str(e)}
            finally:
                kill_all()
            log(f"bench: {sec} done in {time.monotonic() - ts:.0f} s")
    finally:
        kill_all()
    res["env"] = env_info(a, feat)
    res["env"]["elapsed_s"] = time.monotonic() - t0
    md = render(res)
    with open(os.path.join(a.out, "results.json"), "w") as fh:
        json.dump(res, fh, indent=1, default=str)
    with open(os.path.join(a.out, "results.md"), "w") as fh:
        fh.write(md + "\n")
    print()
    print(md)
    if a.update_md:
        path = os.path.join(ROOT, "BENCHMARKS.md")
        text = open(path).read()
        if MD_BEGIN in text and MD_END in text:
            pre, rest = text.split(MD_BEGIN, 1)
            post = rest.split(MD_END, 1)[1]
            with open(path, "w") as fh:
                fh.write(pre + MD_BEGIN + "\n" + md + "\n" + MD_END + post)
            log(f"bench: {path} updated")
        else:
            log(f"bench: {path} has no {MD_BEGIN} block; results are in {a.out}/results.md")
    if not a.keep:
        shutil.rmtree(WORK, ignore_errors=True)
    else:
        log(f"bench: work dir kept: {WORK}")
    log(f"bench: {time.monotonic() - t0:.0f} s; raw runs in {a.out}/results.json")
    failed = [s for s in sections if isinstance(res.get(s), dict) and res[s].get("error")]
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        kill_all()
