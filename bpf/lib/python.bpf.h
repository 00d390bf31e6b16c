/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Python frames of the threads of traced CPython 3.11 processes (bpf/pystack.h says how the
 * interpreter is walked). Two uses:
 *   py_sample         a cpu-clock perf event program: which Python code a thread ran on CPU,
 *                     sampled at a low rate (user/sys/pysampler.c opens the events);
 *   py_emit_blocked() for the scheduler hook, at a blocking switch-out: the frame the thread
 *                     blocked in, its futex, and whether that futex is the GIL's (then, the
 *                     thread that held the GIL).
 * Both emit TT_EV_PYSTACK records. Every read of the process is a bpf_probe_read_user() of
 * a bounded size, every walk bounded: a garbage pointer ends a walk (TT_PYF_FAULT), it
 * never faults the process. Processes not in py_procs pay one hash lookup.
 */

#ifndef TT_PYTHON_BPF_H
#define TT_PYTHON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "pystack.h"
#include "sysnr.h"
#include "record.bpf.h"

/* traced Python processes: tgid -> where their runtime is and how it is laid out */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TT_MAX_TARGETS);
	__uint(map_flags, BPF_F_NO_PREALLOC);	/* written at start, or when a target appears */
	__type(key, __u32);
	__type(value, struct tt_py_proc);
} py_procs SEC(".maps");
/* set by userspace once py_procs has an entry: until then a blocking switch does not look */
__u32 py_any = 0;

/*
 * tid -> its PyThreadState, so a sample reads one field to confirm it instead of walking
 * the thread list. An LRU: a cache, an evicted thread is walked again; a stale entry (the
 * tid reused, the state freed) fails the confirmation and is walked again too. A thread
 * without a state (native threads: a BLAS or tokenizer pool) is remembered as such for
 * PY_NEG_NS, so it is not walked at every tick; it becomes a Python thread at most that late.
 */
#define PY_NEG_NS	1000000000ull

struct py_tcache {
	__u64 tstate;	/* 0: none found at t_miss */
	__u64 t_miss;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct py_tcache);
} py_tstates SEC(".maps");

/*
 * The record being built, and the bytes of one read of a frame, a thread state or the GIL;
 * slot 0 for samples, 1 for switch-outs. Reads are few and wide: each one costs far more
 * than its size here (a TLB miss in a VM), so fields close together are read at once.
 */
struct py_scratch {
	struct tt_pystack_ev ev;
	__u8 chunk[64];			/* TT_PY_FRAME_CHUNK of a frame, from f_code */
	__u8 tchunk[TT_PY_TS_CHUNK + 8];	/* of a thread state, from cframe */
	__u8 gchunk[32];		/* of the GIL, from last_holder */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct py_scratch);
} py_scratch SEC(".maps");

/* what the walks met, per CPU, enum tt_py_stat (pystack.h) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TT_PY_STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} py_stats SEC(".maps");

static __always_inline void py_stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&py_stats, &idx);

	if (v)
		*v += 1;
}

static __always_inline __u64 py_rd_ptr(__u64 addr)
{
	__u64 v = 0;

	if (!addr || bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

/* tstate's native_thread_id is tid (a 64-bit unsigned long; the kernel's tid fits 32) */
static __always_inline bool py_tstate_is(const struct tt_py_proc *p, __u64 tstate, __u32 tid)
{
	__u64 ntid = 0;

	if (!tstate || bpf_probe_read_user(&ntid, sizeof(ntid),
					   (const void *)(tstate + p->off.ts_native_tid)))
		return false;
	return ntid == tid;
}

/*
 * The PyThreadState of thread tid, or 0 (not a Python thread, or not yet), and its cframe.
 * The cached one, confirmed by the same read that gives its cframe; else the GIL holder's (a
 * thread running Python holds the GIL: the usual sample); else a walk of every interpreter's
 * thread list, bounded.
 */
static __always_inline __u64 py_find_tstate(const struct tt_py_proc *p, __u32 tid,
					    struct py_scratch *s, __u64 *cframe)
{
	struct py_tcache *c = bpf_map_lookup_elem(&py_tstates, &tid), nc = {};
	__u32 r_tid = (p->off.ts_native_tid - p->off.ts_cframe) & (TT_PY_TS_CHUNK - 1);
	__u64 t, interp, now;

	if (c && c->tstate &&
	    !bpf_probe_read_user(s->tchunk, TT_PY_TS_CHUNK,
				 (const void *)(c->tstate + p->off.ts_cframe)) &&
	    *(__u64 *)&s->tchunk[r_tid] == tid) {
		*cframe = *(__u64 *)&s->tchunk[0];
		return c->tstate;
	}
	now = bpf_ktime_get_ns();
	if (c && !c->tstate && now - c->t_miss < PY_NEG_NS)
		return 0;
	t = py_rd_ptr(p->runtime + p->off.rt_tstate_current);
	if (py_tstate_is(p, t, tid))
		goto found;
	interp = py_rd_ptr(p->runtime + p->off.rt_interp_head);
	for (int i = 0; i < TT_PY_INTERPS && interp; i++) {
		t = py_rd_ptr(interp + p->off.interp_threads_head);
		for (int j = 0; j < TT_PY_THREADS && t; j++) {
			if (py_tstate_is(p, t, tid))
				goto found;
			t = py_rd_ptr(t + p->off.ts_next);
		}
		interp = py_rd_ptr(interp + p->off.interp_next);
	}
	py_stat_inc(TT_PY_STAT_NO_TSTATE);
	nc.t_miss = now;
	bpf_map_update_elem(&py_tstates, &tid, &nc, BPF_ANY);
	return 0;
found:
	nc.tstate = t;
	bpf_map_update_elem(&py_tstates, &tid, &nc, BPF_ANY);
	*cframe = py_rd_ptr(t + p->off.ts_cframe);
	return t;
}

/*
 * Copy the frames of thread tid into s->ev, innermost first: per frame its code object and
 * instruction offset, read in one chunk. Returns the thread state (0 if none) and sets
 * ev.nframes and the walk's flags.
 */
static __always_inline __u64 py_walk(const struct tt_py_proc *p, __u32 tid, struct py_scratch *s)
{
	/* where previous, prev_instr, is_entry and owner sit in the chunk read from f_code */
	__u32 r_prev = (p->off.fr_previous - p->off.fr_code) & 31;
	__u32 r_instr = (p->off.fr_prev_instr - p->off.fr_code) & 31;
	__u32 r_entry = (p->off.fr_is_entry - p->off.fr_code) & 63;
	__u32 r_owner = (p->off.fr_owner - p->off.fr_code) & 63;
	__u64 tstate, frame, cframe = 0;
	__u32 n = 0;

	s->ev.nframes = 0;
	tstate = py_find_tstate(p, tid, s, &cframe);
	if (!tstate) {
		s->ev.flags |= TT_PYF_NO_TSTATE;
		return 0;
	}
	frame = py_rd_ptr(cframe + p->off.cframe_current);
	for (int i = 0; i < TT_PY_DEPTH; i++) {
		struct tt_py_frame *f = &s->ev.frames[i];
		__u64 code, instr;
		__s64 d;

		if (!frame)
			break;
		if (bpf_probe_read_user(s->chunk, TT_PY_FRAME_CHUNK,
					(const void *)(frame + p->off.fr_code))) {
			s->ev.flags |= TT_PYF_FAULT;
			break;
		}
		code = *(__u64 *)&s->chunk[0];
		instr = *(__u64 *)&s->chunk[r_instr];
		f->code = code;
		/* prev_instr is one unit before the next instruction: -1 on a fresh frame */
		d = (__s64)(instr - (code + p->off.co_code_adaptive));
		/* 2-byte code units; an arithmetic shift: BPF has no signed division */
		f->lasti = d >> 1;
		f->flags = (s->chunk[r_entry] ? TT_PYFR_ENTRY : 0) |
			   ((s->chunk[r_owner] << 1) & TT_PYFR_OWNER_MASK);
		frame = *(__u64 *)&s->chunk[r_prev];
		n = i + 1;
	}
	if (n == TT_PY_DEPTH && frame)
		s->ev.flags |= TT_PYF_TRUNC;
	if (s->ev.flags & (TT_PYF_TRUNC | TT_PYF_FAULT))
		py_stat_inc(s->ev.flags & TT_PYF_FAULT ? TT_PY_STAT_FAULT : TT_PY_STAT_TRUNC);
	s->ev.nframes = n;
	return tstate;
}

/* Is the futex at uaddr one of the GIL's, and which (enum tt_py_gil)? */
static __always_inline __u8 py_gil_wait(const struct tt_py_proc *p, __u64 uaddr)
{
	__u64 gil = p->runtime + p->off.rt_gil;

	if (!uaddr)
		return TT_PY_GIL_NONE;
	if (uaddr >= gil + p->off.gil_cond && uaddr < gil + p->off.gil_cond + p->off.cond_size)
		return TT_PY_GIL_WAIT;
	if (uaddr >= gil + p->off.gil_mutex && uaddr < gil + p->off.gil_mutex + p->off.mutex_size)
		return TT_PY_GIL_MUTEX;
	if ((uaddr >= gil + p->off.gil_switch_cond &&
	     uaddr < gil + p->off.gil_switch_cond + p->off.cond_size) ||
	    (uaddr >= gil + p->off.gil_switch_mutex &&
	     uaddr < gil + p->off.gil_switch_mutex + p->off.mutex_size))
		return TT_PY_GIL_SWITCH;
	return TT_PY_GIL_NONE;
}

/*
 * The GIL's last holder, by native tid (0 if unknown), and whether it is taken now and by
 * tstate, thread tid (the one the record is about).
 */
static __always_inline __u32 py_gil_holder(const struct tt_py_proc *p, struct py_scratch *s,
					   __u64 tstate, __u32 tid)
{
	__u32 r_locked = (p->off.gil_locked - p->off.gil_last_holder) & 15;
	__u64 gil = p->runtime + p->off.rt_gil, holder, ntid = 0;
	int locked;

	if (bpf_probe_read_user(s->gchunk, TT_PY_GIL_CHUNK,
				(const void *)(gil + p->off.gil_last_holder)))
		return 0;
	holder = *(__u64 *)&s->gchunk[0];
	locked = *(int *)&s->gchunk[r_locked];
	/* -1 until the GIL is first made */
	if (locked > 0) {
		s->ev.flags |= TT_PYF_GIL_LOCKED;
		if (holder && holder == tstate)
			s->ev.flags |= TT_PYF_HOLDS_GIL;
	}
	if (holder && holder == tstate)
		return tid;
	if (!holder || bpf_probe_read_user(&ntid, sizeof(ntid),
					   (const void *)(holder + p->off.ts_native_tid)))
		return 0;
	return ntid;
}

static __always_inline struct py_scratch *py_start(__u32 slot)
{
	struct py_scratch *s = bpf_map_lookup_elem(&py_scratch, &slot);

	if (!s)
		return NULL;
	s->ev.kind = 0;
	s->ev.nframes = 0;
	s->ev.flags = 0;
	s->ev.gil = TT_PY_GIL_NONE;
	s->ev.sysnr = (__u32)-1;
	s->ev.futex = 0;
	s->ev.gil_holder = 0;
	s->ev.pad = 0;
	return s;
}

/* Only the frames walked go out. */
static __always_inline void py_submit(struct py_scratch *s, __u64 ts)
{
	__u32 n = s->ev.nframes;
	__u64 size;

	if (n > TT_PY_DEPTH)
		n = TT_PY_DEPTH;
	size = TT_PYSTACK_HDR_SIZE + n * sizeof(struct tt_py_frame);
	fill_hdr(&s->ev.h, TT_EV_PYSTACK, size);
	if (ts)
		s->ev.h.ts = ts;
	rb_output(&s->ev, size);
}

/*
 * For the sched_switch hook, when the current thread goes off CPU blocked (not preempted):
 * where it blocked, in Python terms. ts: the switch-out record's time (0: now), so both
 * records join by (tid, ts). Threads of untraced or non-Python processes cost one lookup.
 */
static __always_inline void py_emit_blocked(__u64 ts)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), tstate;
	__u32 tgid = pid_tgid >> 32;
	struct tt_py_proc *p;
	struct py_scratch *s;
	struct pt_regs *regs;
	__u32 nr;

	if (!py_any)
		return;
	p = bpf_map_lookup_elem(&py_procs, &tgid);
	if (!p)
		return;
	s = py_start(1);
	if (!s)
		return;
	s->ev.kind = TT_PY_BLOCKED;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	nr = BPF_CORE_READ(regs, orig_ax);
	s->ev.sysnr = nr;
	if (nr == TT_NR_futex)
		s->ev.futex = BPF_CORE_READ(regs, di);
	tstate = py_walk(p, (__u32)pid_tgid, s);
	s->ev.gil = py_gil_wait(p, s->ev.futex);
	/* who holds the GIL matters when it is what the thread waits for */
	if (s->ev.gil != TT_PY_GIL_NONE)
		s->ev.gil_holder = py_gil_holder(p, s, tstate, (__u32)pid_tgid);
	/*
	 * A waiter in take_gil() saw it taken by another thread (under the mutex), and no one
	 * else can make it the holder while it sleeps: on the cond's futex as the last holder,
	 * it is the dropper, signalling the cond and held up on glibc's internal lock of it.
	 */
	if (s->ev.gil == TT_PY_GIL_WAIT && s->ev.gil_holder == (__u32)pid_tgid)
		s->ev.gil = TT_PY_GIL_MUTEX;
	py_stat_inc(TT_PY_STAT_BLOCKED);
	py_submit(s, ts);
}

/*
 * A cpu-clock tick on some CPU (pysampler.c opens one per CPU): if the thread it interrupted
 * belongs to a traced Python process, the Python frames it was running.
 */
/*
 * x86-64's registers as the user ABI lays them out (asm/ptrace.h): a perf event's context
 * starts with them. Read through this, not the kernel's struct pt_regs: that one is CO-RE
 * relocated, and its cs changed size (6.1: a u16 and padding; with FRED, 6.9+: a u64), which
 * libbpf refuses to patch an 8-byte load for. The layout here is ABI, the same on every kernel.
 */
struct tt_uregs {
	__u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di, orig_ax, ip, cs;
};

static __always_inline int py_on_tick(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), tstate;
	__u32 tgid = pid_tgid >> 32;
	struct tt_py_proc *p = bpf_map_lookup_elem(&py_procs, &tgid);
	struct py_scratch *s;

	if (!p)
		return 0;
	s = py_start(0);
	if (!s)
		return 0;
	s->ev.kind = TT_PY_SAMPLE;
	/*
	 * The tick came in kernel mode: the thread was in a syscall or a fault under Python.
	 * A whole-word load: the verifier refuses narrower reads of the context's registers.
	 */
	if (!(((const volatile struct tt_uregs *)ctx)->cs & 3))
		s->ev.flags |= TT_PYF_KERNEL;
	tstate = py_walk(p, (__u32)pid_tgid, s);
	s->ev.gil_holder = py_gil_holder(p, s, tstate, (__u32)pid_tgid);
	py_stat_inc(TT_PY_STAT_SAMPLES);
	py_submit(s, 0);
	return 0;
}

#endif /* TT_PYTHON_BPF_H */
