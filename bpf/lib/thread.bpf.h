/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stall attribution: a traced thread's scheduling state (struct thr_sched, in task storage), its
 * time counters, and the epochs of --stall-hooks lazy.
 */

#ifndef TT_THREAD_BPF_H
#define TT_THREAD_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "events.h"
#include "record.bpf.h"
#include "targets.bpf.h"
#include "core_fixes.bpf.h"

const volatile bool stalls = false;	/* stall attribution: the scheduler is accounted */

/*
 * A traced thread's state with stall attribution, kept with the task (freed when it exits):
 * when it went on and off CPU, why, who woke it, and its time summed by cause.
 */
struct thr_sched {
	/*
	 * What every switch, wake and send touches comes first, in as few cache lines as it
	 * fits: a thread's state is cold by its next event (~3 per token in a server)
	 */
	__u64 epoch;		/* sched_epoch when this state was made (lazy hooks): thr_take() */
	__u64 t_in;		/* on CPU since (0: not seen on CPU yet) */
	__u64 steal_in;		/* its CPU's steal clock at t_in (core_fixes.bpf.h) */
	__u64 t_out;		/* off CPU since, 0 while on */
	__u64 t_wake;		/* woken (runnable) since, 0 */
	__u64 t_snap;		/* the last SNAP record */
	__u64 futex;
	__u64 nsw_out;		/* the kernel's count of its switches once blocked (blocked_in()) */
	__u32 state, sysnr;
	__u16 nk, nu, nwk;
	__u8 runnable, in_send, on, waker_traced;
	__u8 span_pending;	/* below: a span waiting for its syscall's exit */
	__u8 exit_armed;	/* woken from a long wait in a late_bit() syscall: its exit looks */
	__u8 out_unseen;	/* blocked before the (lazy) hooks came: its switch-out not seen */
	__u8 span_unseen;	/* the same of the span waiting for its exit */
	/* the last wake of any length (a short wait's too): when, and by which thread (0 an
	 * interrupt, or not known); a send carries it (sender_counters) */
	__u64 t_woken;
	__u32 woken_by_tid, woken_by_tgid;
	__u64 cum[TT_T_NR];
	/* the waker of a wait over the floor */
	__u32 waker_tid, waker_tgid;
	char waker_comm[TT_COMM_LEN];
	__u64 waker_cum[TT_T_NR];
	/*
	 * A span over the floor whose user stack is taken when its syscall returns (late_bit()):
	 * its end and the counters at its start, kept from the switch-in until then
	 */
	__u64 span_t_out, span_t_in;
	__u64 span_cum[TT_T_NR];
	__u64 kips[TT_KSTACK_MAX];
	__u64 uips[TT_USTACK_MAX];
	__u64 wkips[TT_KSTACK_MAX];
	/* the waker whose wake path wkips holds (wake_path()): thread, syscall, first argument */
	__u64 wk_a1;
	__u32 wk_tid, wk_nr;
	__u16 wk_n;
	/*
	 * --stall-hooks lazy, while the hooks are off: the thread's last send, and the kernel's
	 * own counters then (time on CPU, time waiting for one), so the attach can say what it
	 * did since (sched_seed()). Kept across epochs; d_epoch says which one they are of.
	 * Only on kernels without bpf_map_lookup_percpu_elem(): elsewhere they are in dlast.
	 */
	__u32 d_epoch;
	__u64 d_t, d_exec, d_rd, d_nvcsw;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thr_sched);
} thr SEC(".maps");

/* --stall-hooks lazy: see thr_resume() */
const volatile bool lazy_sched = false;
__u32 sched_epoch = 0;
/* when the loader (last) attached the scheduler hooks (CLOCK_MONOTONIC ns) */
__u64 t_attach = 0;

/* a span off CPU at least this long is sent with its details; shorter ones are only summed */
const volatile __u64 span_floor_ns = 10000000;

static __always_inline bool sched_target(__u32 tgid)
{
	return target_flags(tgid) & TT_TGT_SCHED;
}

/*
 * A thread on CPU from ts->t_in to now (on the CPU it is on: a running task does not move):
 * that time into cum[], split into what it ran and what the hypervisor stole from its CPU.
 */
static __always_inline void add_oncpu_at(__u64 *cum, const struct thr_sched *ts, __u64 now,
					 __u64 steal)
{
	__u64 run = now > ts->t_in ? now - ts->t_in : 0, st = steal - ts->steal_in;

	if ((__s64)st < 0)	/* not the CPU it came on on: cannot be, but never negative */
		st = 0;
	if (st > run)	/* the steal clock is as of the run queue's last clock update */
		st = run;
	cum[TT_T_ONCPU] += run - st;
	cum[TT_T_STEAL] += st;
}

/* the same with the steal clock read now (the thread is current) */
static __always_inline void add_oncpu(__u64 *cum, const struct thr_sched *ts, __u64 now)
{
	add_oncpu_at(cum, ts, now, cpu_steal_ns());
}

/*
 * t's time as the kernel counts it (events.h, struct tt_kcnt). Its wait for a CPU counts
 * from sched_info.last_queued on, against its run queue's clock, which the scheduler has
 * just brought up to date where this matters: at a switch-in, sched_switch fires before the
 * kernel adds the wait that ends to run_delay. A task not queued has last_queued 0.
 */
static __always_inline void kcnt_read(struct task_struct *t, struct tt_kcnt *k)
{
	__u64 q, now_rq;

	k->exec = t->se.sum_exec_runtime;
	k->rd = task_run_delay(t);
	k->nvcsw = t->nvcsw;
	if (!bpf_core_field_exists(struct task_struct, sched_info) ||
	    !bpf_core_field_exists(struct sched_info, last_queued) ||
	    !bpf_core_field_exists(struct cfs_rq, rq) ||
	    !bpf_core_field_exists(struct sched_entity, cfs_rq))
		return;
	q = t->sched_info.last_queued;
	now_rq = q ? t->se.cfs_rq->rq->clock : 0;
	if (now_rq > q)
		k->rd += now_rq - q;
}

/*
 * A sample of t's counters at now (userspace interpolates between samples; past a thread's
 * last one it knows nothing). oncpu: t is current and running, its run so far counts.
 */
/* A scheduler record of t at now, zeroed past its header and kind; NULL (counted) if the ring
 * is full. */
static __always_inline struct tt_sched_ev *sched_rec(struct task_struct *t, __u8 kind, __u64 now)
{
	struct tt_sched_ev *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		rb_drop();
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	fill_hdr(&e->h, TT_EV_SCHED, sizeof(*e));
	e->h.tgid = t->tgid;
	e->h.tid = t->pid;
	e->h.ts = now;
	e->kind = kind;
	e->sysnr = -1;
	return e;
}

static __always_inline void emit_sample(struct task_struct *t, struct thr_sched *ts, __u64 now,
					bool oncpu, __u8 kind, const struct tt_kcnt *k)
{
	struct tt_sched_ev *e = sched_rec(t, kind, now);

	if (!e)
		return;
	__builtin_memcpy(e->cum, ts->cum, sizeof(e->cum));
	if (oncpu && ts->on && ts->t_in)
		add_oncpu(e->cum, ts, now);
	if (k)
		e->k = *k;
	else
		kcnt_read(t, &e->k);
	bpf_ringbuf_submit(e, rb_flags());
	ts->t_snap = now;
}

static __always_inline void emit_snap(struct task_struct *t, struct thr_sched *ts, __u64 now,
				      bool oncpu)
{
	emit_sample(t, ts, now, oncpu, TT_SCHED_SNAP, NULL);
}

/*
 * --stall-hooks lazy: the scheduler hooks (sched_switch, sched_waking, the late exits, the
 * hrtimer pair) are attached only while a traced stream has been quiet for a while (the
 * loader's loader__stall_hooks(), asked by the consumer), so a server streaming smoothly
 * pays none of them. sched_epoch is odd while they are attached; the loader bumps it at
 * each attach and each detach. A thread's state made in another epoch knows nothing of the
 * time since (its switches went unseen): at the attach the task iterator (seed.bpf.h) gives every
 * traced thread its state as it is then (on CPU, runnable, or blocked in a syscall), and a
 * hook meeting a state it did not reach makes it anew, from that moment. Its counters go
 * on from where they were, and a RESUME sample says where: what the thread did between its
 * sample before and that one is not known (userspace counts that time as unknown).
 */
static __always_inline bool thr_stale(const struct thr_sched *ts)
{
	return lazy_sched && (ts->epoch != sched_epoch || !(sched_epoch & 1));
}

/*
 * Take a stale state to make it anew: a hook and the iterator (or hooks on two CPUs) may
 * meet the same thread at once, and only one of them may make it. The one that takes it
 * marks it THR_MAKING until it is made (thr_made()); one that meets it meanwhile keeps off
 * it (THR_SKIP) and marks it THR_DIRTY, for what it saw happen is not in the state being
 * made: the maker then leaves it stale, and the thread's next event makes it anew, from
 * that moment (a RESUME: its time between is not known). So no one goes on from a state
 * half made, nor is the event that came in between written over (the iterator that saw a
 * thread on CPU would else make it "on CPU" after its switch-out: its next switch-in would
 * find it still on, sched_state_missed).
 */
#define THR_MAKING	(1ULL << 63)
#define THR_DIRTY	(1ULL << 62)

enum { THR_USE, THR_MAKE, THR_SKIP };

static __always_inline int thr_take(struct thr_sched *ts, __u64 *mark)
{
	__u64 e = ts->epoch, cur = sched_epoch, old;

	if (!lazy_sched || e == cur)
		return THR_USE;
	if (!(cur & 1))
		return THR_SKIP;
	if (!(e & THR_MAKING)) {
		old = __sync_val_compare_and_swap(&ts->epoch, e, cur | THR_MAKING);
		if (old == e) {
			*mark = cur;
			return THR_MAKE;
		}
		if (old == cur)
			return THR_USE;
		e = old;
	}
	if ((e & THR_MAKING) && !(e & THR_DIRTY))
		__sync_val_compare_and_swap(&ts->epoch, e, e | THR_DIRTY);
	return THR_SKIP;
}

/* ts, taken in epoch cur, is made: the others may use it, unless one met it meanwhile */
static __always_inline void thr_made(struct thr_sched *ts, __u64 cur)
{
	if (__sync_val_compare_and_swap(&ts->epoch, cur | THR_MAKING, cur) != (cur | THR_MAKING))
		ts->epoch = 0;	/* dirty: stale in every epoch (a live one is odd) */
}

/* the hooks are attached and what they see is kept (odd epoch); for a while as they come
 * and go they run with the epoch even, and keep nothing */
static __always_inline bool hooks_live(void)
{
	return !lazy_sched || (sched_epoch & 1);
}

/*
 * forget what ts knew of the scheduler (keep its counters) from now; k: the kernel's own
 * counters of t then (NULL: now)
 */
static __always_inline void thr_resume(struct task_struct *t, struct thr_sched *ts, __u64 now,
				       const struct tt_kcnt *k)
{
	__builtin_memset(&ts->t_in, 0,
			 offsetof(struct thr_sched, cum) - offsetof(struct thr_sched, t_in));
	__builtin_memset(&ts->waker_tid, 0,
			 offsetof(struct thr_sched, kips) - offsetof(struct thr_sched, waker_tid));
	ts->wk_tid = 0;
	ts->wk_n = 0;
	ts->sysnr = -1;
	emit_sample(t, ts, now, false, TT_SCHED_RESUME, k);
}

/*
 * A state from an epoch gone that still holds: its thread blocked while the hooks were on,
 * or was found blocked by an attach, and has not run since, by the kernel's own count of its
 * switches; it is neither on CPU nor waiting for one now. Its block goes on as it was, its
 * cause and all: a send blocked on a slow reader across a detach of the hooks is known from
 * its start, not from the attach after.
 */
static __always_inline bool thr_still_out(struct task_struct *t, const struct thr_sched *ts)
{
	return ts->t_out && !ts->on && !ts->runnable && !ts->t_wake && !ts->span_pending &&
	       ts->nsw_out == t->nvcsw + t->nivcsw && !t->on_cpu && !task_queued(t);
}

/*
 * t is current (it sends, or wakes a thread): a state from another epoch is made anew, on
 * CPU from now. False while the hooks are off: its state says nothing then.
 */
static __always_inline bool thr_current(struct task_struct *t, struct thr_sched *ts, __u64 now)
{
	__u64 cur;

	if (!hooks_live())
		return false;
	switch (thr_take(ts, &cur)) {
	case THR_USE:
		return true;
	case THR_SKIP:
		return false;
	}
	thr_resume(t, ts, now, NULL);
	ts->on = 1;
	ts->t_in = now;
	ts->steal_in = cpu_steal_ns();
	thr_made(ts, cur);
	return true;
}

/*
 * The scheduling state of t if it is a traced thread, made on its first switch or wake. The
 * targets' bitmap answers for the others (the idle task's tgid 0 is never in it) before any
 * helper call.
 */
static __always_inline struct thr_sched *thr_of(struct task_struct *t)
{
	struct thr_sched *ts;

	if (!sched_target(t->tgid) || !hooks_live())
		return NULL;
	__u64 cur;

	ts = bpf_task_storage_get(&thr, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ts) {
		stat_inc(TT_STAT_SCHED_MISS);
		return NULL;
	}
	switch (thr_take(ts, &cur)) {
	case THR_SKIP:
		return NULL;
	case THR_MAKE:
		if (!thr_still_out(t, ts))
			thr_resume(t, ts, bpf_ktime_get_ns(), NULL);
		thr_made(ts, cur);
	}
	return ts;
}

#endif /* TT_THREAD_BPF_H */
