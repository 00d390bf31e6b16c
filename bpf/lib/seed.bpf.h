/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --stall-hooks lazy: the state of every traced thread as it is when the scheduler hooks come,
 * made by the task iterator (sched_seed) from the kernel's own counters, and the last send of
 * each thread while the hooks were off, which those counters start from.
 */

#ifndef TT_SEED_BPF_H
#define TT_SEED_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "events.h"
#include "record.bpf.h"
#include "thread.bpf.h"
#include "block.bpf.h"
#include "core_fixes.bpf.h"

/*
 * --stall-hooks lazy, while the hooks are off: a sending thread's kernel counters at its
 * send (time on CPU, time waiting for one), for the next attach to split the time since
 * (sched_seed()). Kept per CPU in a slot chosen by the thread's id, not in the thread's
 * state: that lookup (cold by each token) cost a send ~0.35 us. The iterator looks for a
 * thread's slot on every CPU (bpf_map_lookup_percpu_elem(), Linux 5.19+; before it, or
 * when another thread took the slot since, the thread's state is seeded without its last
 * send, as one that never sent).
 */
#define TT_DLAST_SLOTS	64
#define TT_DLAST_CPUS	1024
struct d_last {
	__u32 tid;
	__u32 epoch;		/* sched_epoch then (even: the hooks were off) */
	__u64 t, exec, rd, nvcsw;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TT_DLAST_SLOTS);
	__type(key, __u32);
	__type(value, struct d_last);
} dlast SEC(".maps");

const volatile bool d_percpu = false;	/* the loader found bpf_map_lookup_percpu_elem() */
const volatile __u32 nr_cpus = 1;	/* possible CPUs */

/* the hooks are off: the sending thread's kernel counters now, for their attach */
static __always_inline void d_last_note(__u32 tid, __u64 now)
{
	struct task_struct *t = bpf_get_current_task_btf();
	__u32 idx = tid % TT_DLAST_SLOTS;
	struct d_last *d = bpf_map_lookup_elem(&dlast, &idx);

	if (!d)
		return;
	d->tid = tid;
	d->epoch = sched_epoch;
	d->t = now;
	d->exec = t->se.sum_exec_runtime;
	d->rd = task_run_delay(t);
	d->nvcsw = t->nvcsw;
}

/*
 * What the iterator saw of a thread, all read before it claims the thread's state (a hook
 * that meets the thread in between claims it first, from a later moment, and wins).
 */
struct seed_view {
	__u64 now, t_resume, t_block, run, rq, queued, steal;
	struct tt_kcnt k;	/* the kernel's counters at t_resume, exec 0 if not known */
	unsigned long nr, a1;
	__u32 state;
	__u8 oncpu, onrq;
};

/*
 * t's state as the iterator saw it at v->now: on CPU, waiting for one (for v->queued so
 * far), or blocked in the syscall it is in since t_block (when it last ran, as far as is
 * known); the time between t_block and now of one not blocked now, its wait for a CPU
 * aside, was off CPU somehow, and counted so.
 */
static __always_inline void seed_state(struct task_struct *t, struct thr_sched *ts,
				       const struct seed_view *v)
{
	/* the kernel's counters then: those of its last send, else not known (exec 0) */
	thr_resume(t, ts, v->t_resume, &v->k);
	ts->cum[TT_T_ONCPU] += v->run;
	ts->cum[TT_T_RUNQ] += v->rq;
	if (v->oncpu || v->onrq) {
		if (v->oncpu) {
			ts->cum[TT_T_BLOCKED] += v->now - v->t_block;
			ts->on = 1;
			ts->t_in = v->now;
			ts->steal_in = v->steal;
		} else {
			/* its switch-in counts the wait from its queueing on */
			ts->t_out = v->now - v->queued;
			ts->cum[TT_T_BLOCKED] += ts->t_out - v->t_block;
			ts->runnable = 1;
		}
		return;
	}
	ts->t_out = v->t_block;
	ts->out_unseen = 1;
	ts->state = v->state;
	blocked_in(t, ts, v->nr, v->a1);
}

/* when the lazy hooks were last detached (CLOCK_MONOTONIC ns): the loader sets it */
__u64 t_detach = 0;
/* when the programs were loaded: before the first attach, the hooks were off since then */
__u64 t_loaded = 0;

/*
 * How long before now the run queues' clock read at (sched_clock, in step across CPUs where
 * the TSC is stable), against this CPU's run-queue clock, which the loader has just brought
 * up to date (it lags by up to a tick otherwise: the time is that much late at worst, never
 * early). Not further back than the hooks were last off (the state before that is of an
 * epoch gone; before the first attach, since the programs were loaded). 0 when not known.
 */
static __always_inline __u64 rq_ago(__u64 at, __u64 now)
{
	struct task_struct *me = bpf_get_current_task_btf();
	__u64 now_rq, since = t_detach ?: t_loaded;

	if (!bpf_core_field_exists(struct cfs_rq, rq) ||
	    !bpf_core_field_exists(struct sched_entity, cfs_rq) || !since || since >= now)
		return 0;
	now_rq = me->se.cfs_rq->rq->clock;
	if (!at || !now_rq || at >= now_rq)
		return 0;
	return now_rq - at < now - since ? now_rq - at : now - since;
}

/*
 * When t, not on CPU, last left it, as far as the kernel's own bookkeeping says: its last
 * run began at sched_info.last_arrival and lasted what its sum_exec_runtime grew by since
 * (prev_sum_exec_runtime). Not after now.
 */
static __always_inline __u64 blocked_since(struct task_struct *t, __u64 now)
{
	if (!bpf_core_field_exists(struct task_struct, sched_info) ||
	    !bpf_core_field_exists(struct sched_info, last_arrival) || !t->sched_info.last_arrival)
		return now;
	return now - rq_ago(t->sched_info.last_arrival +
			    (t->se.sum_exec_runtime - t->se.prev_sum_exec_runtime), now);
}

/*
 * When t, on CPU now, got it: at sched_info.last_arrival, the start of the run it is in.
 * Now when not known.
 */
static __always_inline __u64 running_since(struct task_struct *t, __u64 now)
{
	if (!bpf_core_field_exists(struct task_struct, sched_info) ||
	    !bpf_core_field_exists(struct sched_info, last_arrival))
		return now;
	return now - rq_ago(t->sched_info.last_arrival, now);
}

/*
 * How long t, on a run queue and not on CPU, has waited there so far: since
 * sched_info.last_queued (its run_delay takes a wait in only once it ends). A server thread
 * held off the CPU (a busy machine, a real-time task on its CPU) since before the hooks came
 * was waiting for a CPU all along.
 */
static __always_inline __u64 queued_for(struct task_struct *t, __u64 now)
{
	if (!bpf_core_field_exists(struct task_struct, sched_info) ||
	    !bpf_core_field_exists(struct sched_info, last_queued))
		return 0;
	return rq_ago(t->sched_info.last_queued, now);
}

#ifndef PF_EXITING
#define PF_EXITING	0x00000004	/* include/linux/sched.h */
#endif

/* a thread's last send while the hooks were off, from its slot on whichever CPU it sent */
static __always_inline void d_last_find(__u32 tid, struct d_last *out)
{
	__u32 idx = tid % TT_DLAST_SLOTS;

	for (__u32 cpu = 0; cpu < TT_DLAST_CPUS && cpu < nr_cpus; cpu++) {
		struct d_last *d = bpf_map_lookup_percpu_elem(&dlast, &idx, cpu);

		if (d && d->tid == tid && d->epoch + 1 == sched_epoch && d->t > out->t)
			*out = *d;
	}
}

/*
 * --stall-hooks lazy: run by the loader right after it attaches the scheduler hooks, once
 * over every task. Each traced thread whose state no hook has made since gets it as it is
 * now: on CPU, waiting for one, or blocked in the syscall it is in (as blocked_since_attach()
 * would at its wake). From here its switches are seen.
 */

static __always_inline int seed_thread(struct task_struct *t)
{
	struct seed_view v = {};
	struct d_last dl = {};
	struct thr_sched *ts;
	struct pt_regs *regs;
	__u64 cur;

	if (!t || !lazy_sched || !sched_target(t->tgid))
		return 0;
	ts = bpf_task_storage_get(&thr, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ts) {
		stat_inc(TT_STAT_SCHED_MISS);
		return 0;
	}
	if (!thr_stale(ts) || t->flags & PF_EXITING)
		return 0;
	v.now = bpf_ktime_get_ns();
	v.oncpu = task_running(t);
	v.onrq = task_queued(t);
	v.steal = task_steal_ns(t);
	v.state = task_state(t);
	regs = (struct pt_regs *)bpf_task_pt_regs(t);
	v.nr = regs->orig_ax;
	v.a1 = regs->di;
	/*
	 * It sent while the hooks were off (the epoch just before): from that send on, the
	 * kernel's own counters say how long it ran and waited for a CPU; a thread that blocked
	 * since is taken to have blocked after that (a server's thread sends, then waits), and
	 * what else it was off CPU for, not known how, is "blocked". Its counters resume there.
	 */
	if (d_percpu) {
		d_last_find(t->pid, &dl);
	} else {
		dl.epoch = ts->d_epoch;
		dl.t = ts->d_t;
		dl.exec = ts->d_exec;
		dl.rd = ts->d_rd;
		dl.nvcsw = ts->d_nvcsw;
	}
	/* waiting for a CPU: since it was queued */
	if (v.onrq && !v.oncpu)
		v.queued = queued_for(t, v.now);
	if (dl.epoch + 1 == sched_epoch && dl.t && dl.t < v.now) {
		__u64 span = v.now - dl.t;
		/* counters only grow, and not past the time since (a running task's lag) */
		__s64 run = t->se.sum_exec_runtime - dl.exec, rq = task_run_delay(t) - dl.rd;

		if (run < 0)
			run = 0;
		else if ((__u64)run > span)
			run = span;
		if (rq < 0)
			rq = 0;
		else if ((__u64)rq > span - run)
			rq = span - run;
		v.run = run;
		v.rq = rq;
		v.t_resume = dl.t;
		v.k.exec = dl.exec;
		v.k.rd = dl.rd;
		v.k.nvcsw = dl.nvcsw;
		v.t_block = dl.t + run + rq;
		/* its wait now is what its counters do not tell yet */
		if (v.queued > v.now - v.t_block)
			v.queued = v.now - v.t_block;
	} else if (v.oncpu) {
		/* on CPU since its run began (a worker thread that never sends, mid-stall) */
		v.t_block = v.now;
		v.t_resume = running_since(t, v.now);
		v.run = v.now - v.t_resume;
	} else {
		v.t_block = v.onrq ? v.now - v.queued : blocked_since(t, v.now);
		v.t_resume = v.t_block;
	}
	if (thr_take(ts, &cur) == THR_MAKE) {
		if (!thr_still_out(t, ts))
			seed_state(t, ts, &v);
		thr_made(ts, cur);
	}
	return 0;
}

#endif /* TT_SEED_BPF_H */
