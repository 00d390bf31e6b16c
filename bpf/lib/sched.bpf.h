/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stall attribution at each context switch of a traced thread: its time summed by cause, the
 * spans off CPU long enough to matter sent with their stacks (some at their syscall's exit),
 * and the counters a send or read of the thread carries.
 */

#ifndef TT_SCHED_BPF_H
#define TT_SCHED_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "events.h"
#include "record.bpf.h"
#include "thread.bpf.h"
#include "block.bpf.h"
#include "python.bpf.h"
#include "core_fixes.bpf.h"

/* a thread on and off CPU all the time sends its counters this often at most */
#define TT_SNAP_NS	100000000ull

/*
 * Walking a user stack is the dearest thing done at a switch (a microsecond and more on a
 * VM), and only the rare block that becomes a span over the floor needs it. Another task's
 * user stack cannot be walked (the kernel refuses cross-task user callchains), but a thread
 * blocked in a syscall returns to user space through that syscall's exit with the very stack
 * it blocked with: for the syscalls servers block in, the span is sent from there, with the
 * stack, and only when it is long. Bit per syscall; late_mask (set by the loader once the
 * exit hooks are attached) says which are on. Others take the stack at every switch-out.
 * Only the waits are deferred (locks, sleeps): every process on the machine pays an exit
 * hook at each call of the syscall, and a server's reads and writes are many and rarely
 * block (event loops poll), so a blocking read or write takes its stack at the switch-out.
 */
__u32 late_mask;
/*
 * Spans waiting for their syscall's exit, and threads woken from a long wait in one whose
 * switch-in is not seen yet (exit_armed), on all threads: while none, an exit hook (a
 * futex's: several a token in a server whose threads hand off with condition variables)
 * returns before looking for the thread's state. A count left high by a task freed with
 * its span still pending only costs that lookup.
 */
__s64 late_pending = 0;

/* its switch-in seen (or mended), or it exits: its syscall's exit need not look for it */
static __always_inline void disarm_exit(struct thr_sched *ts)
{
	if (ts->exit_armed) {
		ts->exit_armed = 0;
		__sync_fetch_and_add(&late_pending, -1);
	}
}

static __always_inline __u32 late_bit(unsigned long nr)
{
	switch (nr) {
	case TT_NR_futex:		return 1u << 0;
	case TT_NR_nanosleep:		return 1u << 1;
	case TT_NR_clock_nanosleep:	return 1u << 2;
	default:			return 0;
	}
}

/*
 * A span off CPU [t_out, t_in) of thread t, cum its counters at t_out; the rest is in ts
 * until its next switch-out. ustack: take the user stack now (t is current, still in the
 * syscall it blocked in), else the one kept at the switch-out.
 */
static __always_inline void emit_span(void *ctx, struct task_struct *t, struct thr_sched *ts,
				      __u64 t_out, __u64 t_in, const __u64 *cum, bool ustack)
{
	struct tt_sched_ev *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		rb_drop();
		return;
	}
	fill_hdr(&e->h, TT_EV_SCHED, sizeof(*e));
	e->h.tgid = t->tgid;
	e->h.tid = t->pid;
	e->kind = TT_SCHED_SPAN;
	e->runnable = ts->runnable;
	e->in_send = ts->in_send;
	e->state = ts->state;
	e->sysnr = ts->sysnr;
	e->nk = ts->nk;
	e->nwk = ts->nwk;
	e->pad0 = 0;
	e->t_out = t_out;
	e->t_wake = ts->runnable ? 0 : ts->t_wake;
	e->t_in = t_in;
	e->futex = ts->futex;
	__builtin_memcpy(e->cum, cum, sizeof(e->cum));
	e->waker_tid = ts->waker_tid;
	e->waker_tgid = ts->waker_tgid;
	__builtin_memcpy(e->waker_comm, ts->waker_comm, sizeof(e->waker_comm));
	e->waker_traced = ts->waker_traced;
	__builtin_memcpy(e->waker_cum, ts->waker_cum, sizeof(e->waker_cum));
	__builtin_memcpy(e->kips, ts->kips, sizeof(e->kips));
	__builtin_memcpy(e->wkips, ts->wkips, sizeof(e->wkips));
	if (ustack) {
		e->nu = get_stack(ctx, e->uips, sizeof(e->uips), BPF_F_USER_STACK);
	} else {
		e->nu = ts->nu;
		__builtin_memcpy(e->uips, ts->uips, sizeof(e->uips));
	}
	bpf_ringbuf_submit(e, rb_flags());
}

/*
 * Send the span kept for its user stack. in_call: the thread is current and still in the
 * syscall it blocked in (at its exit, or blocking again inside it), so its user stack is
 * the one it blocked with; else (it is exiting) the span goes without one.
 */
static __always_inline void flush_late(void *ctx, struct task_struct *t, struct thr_sched *ts,
				       bool in_call)
{
	ts->span_pending = 0;
	__sync_fetch_and_add(&late_pending, -1);
	emit_span(ctx, t, ts, ts->span_t_out, ts->span_t_in, ts->span_cum, in_call);
}

/* next gets the CPU: what its time off CPU was, and the span itself if long enough */
static __always_inline void switch_in(void *ctx, struct task_struct *next,
				      struct thr_sched *ts, __u64 now, __u64 steal)
{
	__u64 cum[TT_T_NR], tw;
	bool span, late;

	/* on CPU by its state: its switch-out was not seen, its time since is lost */
	if (ts->on)
		stat_inc(TT_STAT_SCHED_MISS);
	disarm_exit(ts);
	if (ts->t_out && now > ts->t_out) {
		span = now - ts->t_out >= span_floor_ns;
		/* a block in a syscall of late_bit() (sysnr is -1 for a preemption): sent at the
		 * syscall's exit, with the stack */
		late = span && (late_mask & late_bit(ts->sysnr));
		/* a span's record has the counters as they were at t_out */
		if (late)
			__builtin_memcpy(ts->span_cum, ts->cum, sizeof(ts->span_cum));
		else if (span)
			__builtin_memcpy(cum, ts->cum, sizeof(cum));
		if (ts->runnable) {
			ts->cum[TT_T_RUNQ] += now - ts->t_out;
		} else {
			tw = ts->t_wake && ts->t_wake <= now ? ts->t_wake : now;
			ts->cum[block_cause(ts->sysnr, ts->state, ts->in_send) & TT_T_BLOCK_MASK] +=
				tw - ts->t_out;
			ts->cum[TT_T_RUNQ] += now - tw;
		}
		if (late) {
			ts->span_t_out = ts->t_out;
			ts->span_unseen = ts->out_unseen;
			ts->span_t_in = now;
			ts->span_pending = 1;
			__sync_fetch_and_add(&late_pending, 1);
		} else if (span) {
			emit_span(ctx, next, ts, ts->t_out, now, cum, false);
		}
	}
	ts->t_out = 0;
	ts->t_in = now;
	ts->steal_in = steal;
	ts->on = 1;
}

/*
 * t is on CPU now (it sends, wakes a thread or leaves the CPU), but its state says it is
 * off since t_out: its switch-in was not seen. The kernel does switch a task in with no sched_switch event
 * at all (seen on this project's 6.18 VMs: whenever the CPU's previous task was one of two
 * of the VM's own agents, whose switch-outs never show, to ftrace either), and the thread's
 * wait would then run on unaccounted to its next switch-in: a stall it ends has no counters
 * and is unknown. It came in by now: its time off CPU is accounted up to here, as that
 * switch-in would have (the part after its wake as waiting for a CPU, longer by what it ran
 * before this), and counted (switches_mended). A thread not seen off CPU yet (t_out 0:
 * its state made while it ran) has nothing to mend.
 */
static __always_inline void mend_switch_in(void *ctx, struct task_struct *t,
					   struct thr_sched *ts, __u64 now, __u64 steal)
{
	if (ts->on || !ts->t_out)
		return;
	stat_inc(TT_STAT_SCHED_MENDED);
	switch_in(ctx, t, ts, now, steal);
}

/* prev (current) leaves the CPU: blocked in a syscall, or preempted */
static __always_inline void switch_out(void *ctx, struct task_struct *prev,
				       struct thr_sched *ts, bool runnable,
				       unsigned int prev_state, __u64 now, __u64 steal)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	unsigned long nr = regs->orig_ax;
	/* a run over the floor ends: a sample, as a span over it would (a GIL holder's call) */
	bool long_run = ts->on && ts->t_in && now - ts->t_in >= span_floor_ns;

	/* leaving the CPU, it was on it: since when, if its switch-in was not seen */
	mend_switch_in(ctx, prev, ts, now, steal);
	/* a span waiting for its syscall's exit, and the thread leaves again before it */
	if (ts->span_pending)
		flush_late(ctx, prev, ts, nr == ts->sysnr);
	if (ts->on && ts->t_in)
		add_oncpu_at(ts->cum, ts, now, steal);
	ts->on = 0;
	ts->t_out = now;
	ts->out_unseen = 0;
	ts->t_wake = 0;
	ts->runnable = runnable;
	ts->in_send = 0;
	ts->futex = 0;
	ts->waker_tid = 0;
	ts->waker_traced = 0;
	ts->nk = ts->nu = ts->nwk = 0;
	ts->sysnr = -1;
	ts->state = prev_state;
	if (!runnable) {
		/* the thread going off CPU is current: its syscall is at hand */
		blocked_in(prev, ts, nr, regs->di);
		/* an event loop's wait is not where a stall is: its waker says (userspace) */
		if (!is_poll(nr)) {
			if (!(late_mask & late_bit(nr)))
				ts->nu = get_stack(ctx, ts->uips, sizeof(ts->uips),
						   BPF_F_USER_STACK);
			/* and in Python terms, for a traced CPython (python.bpf.h); the record
			 * joins this span by (tid, t_out) */
			py_emit_blocked(now);
		}
	}
	if (long_run || now - ts->t_snap >= TT_SNAP_NS)
		emit_snap(prev, ts, now, false);
}

/*
 * Every context switch on the machine passes here: a look at each side's bit in the
 * targets' bitmap is all that untraced processes pay. Nothing is sent per switch.
 */
static __always_inline int on_switch(void *ctx, bool preempt, struct task_struct *prev,
				     struct task_struct *next, unsigned int prev_state)
{
	struct thr_sched *ts;
	__u64 now = 0, steal = 0;

	/* one reading of each clock for both sides: the same CPU, the same moment */
	ts = thr_of(prev);
	if (ts) {
		now = bpf_ktime_get_ns();
		steal = cpu_steal_ns();
		switch_out(ctx, prev, ts, preempt || !prev_state, prev_state, now, steal);
	}
	ts = thr_of(next);
	if (ts) {
		if (!now) {
			now = bpf_ktime_get_ns();
			steal = cpu_steal_ns();
		}
		switch_in(ctx, next, ts, now, steal);
	}
	return 0;
}

/* The exit of a syscall a span may wait in (late_bit()): send it, with the user stack. */
static __always_inline int late_exit(void *ctx, long id)
{
	struct task_struct *t;
	struct thr_sched *ts;

	if (!late_pending)
		return 0;
	t = bpf_get_current_task_btf();
	if (!sched_target(t->tgid))
		return 0;
	ts = bpf_task_storage_get(&thr, t, 0, 0);
	if (!ts || thr_stale(ts))
		return 0;
	/* back from a long wait with its switch-in not seen: mended here, in the syscall, so the
	 * span gets the stack it blocked with (at its next send it would have none) */
	if (ts->exit_armed)
		mend_switch_in(ctx, t, ts, bpf_ktime_get_ns(), cpu_steal_ns());
	if (!ts->span_pending)
		return 0;
	/* blocked before the (lazy) hooks came: the Python frame it blocked in, read now, in
	 * the same call (the switch-out that reads it was not seen) */
	if (ts->span_unseen && id == ts->sysnr)
		py_emit_blocked(ts->span_t_out);
	flush_late(ctx, t, ts, id == ts->sysnr);
	return 0;
}

/* is the current thread still in the syscall it last blocked in */
static __always_inline bool in_blocked_call(struct task_struct *t, const struct thr_sched *ts)
{
	return ((struct pt_regs *)bpf_task_pt_regs(t))->orig_ax == ts->sysnr;
}

/* The calling thread's time counters, on CPU up to now (a send: one end of a gap between
 * tokens), and its last wake. */
static __always_inline void thread_counters(void *ctx, struct thr_sched *ts,
					    struct tt_data_ev *ev)
{
	struct task_struct *t = bpf_get_current_task_btf();
	__u64 now = ev->h.ts;

	if (!ts)
		return;
	if (!thr_current(t, ts, now)) {
		/* the hooks are off: what the kernel counts of it, for their attach */
		ts->d_epoch = sched_epoch;
		ts->d_t = now;
		ts->d_exec = t->se.sum_exec_runtime;
		ts->d_rd = task_run_delay(t);
		ts->d_nvcsw = t->nvcsw;
		return;
	}
	/*
	 * A span waiting for its syscall's exit goes first: this send or read ends a gap inside
	 * that syscall, and userspace explains the gap when its record comes.
	 */
	if (ts->span_pending)
		flush_late(ctx, t, ts, in_blocked_call(t, ts));
	/* a thread sending is on CPU, whatever its state says */
	mend_switch_in(ctx, t, ts, now, cpu_steal_ns());
	if (!ts->on)
		return;	/* not seen on CPU since the attach: no counters yet */
	__builtin_memcpy(ev->cum, ts->cum, sizeof(ev->cum));
	add_oncpu(ev->cum, ts, now);
	ev->flags |= TT_DF_CUM;
	ts->t_snap = now;	/* the record is a sample of the counters */
	ev->t_woken = ts->t_woken;
	ev->waker_tid = ts->woken_by_tid;
	ev->waker_tgid = ts->woken_by_tgid;
}

#endif /* TT_SCHED_BPF_H */
