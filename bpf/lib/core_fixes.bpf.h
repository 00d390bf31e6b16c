/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Kernel-version differences, in one place, each with the version that changed it. Fields
 * are read through CO-RE: a field a kernel lacks is never touched.
 */

#ifndef TT_CORE_FIXES_BPF_H
#define TT_CORE_FIXES_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

/*
 * task_struct::state was renamed __state in Linux 5.14 (commit 2f064a59a11f, "sched: Change
 * task_struct::state"); sched_switch's raw tracepoint gained prev_state as a 4th argument in
 * 5.18 (commit fa2c3254d7cf). Older kernels: read it from the task.
 */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline unsigned int task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

/*
 * struct sock::sk_type and sk_protocol became plain u16 fields in Linux 5.6 (commit
 * bf9765145b85, "sock: Make sk_protocol a 16-bit value"); tokentrace needs 5.15 or newer
 * (bpf_task_pt_regs), so the plain reads are enough.
 */

/*
 * Steal time: struct rq::prev_steal_time_rq is the CPU's paravirt steal clock as of the run
 * queue's last clock update (every schedule() and every tick), which the kernel takes out of
 * the task's own CPU time. It exists with CONFIG_PARAVIRT_TIME_ACCOUNTING only and advances
 * only in a guest whose hypervisor reports steal (KVM, Xen, Hyper-V, Firecracker). The run
 * queue is reached from a task on it, as cfs_rq::rq (the current task's is always this
 * CPU's, the idle task's too: its sched_entity's cfs_rq is set for its CPU), which exists with
 * CONFIG_FAIR_GROUP_SCHED (every distribution kernel: cgroups' cpu controller): the per-CPU
 * variable runqueues would need CONFIG_KALLSYMS_ALL, which many kernels (this one) lack.
 * Anywhere else: 0, and on-CPU time is the wall time between switches.
 */
static __always_inline __u64 task_steal_ns(struct task_struct *t)
{
	if (!bpf_core_field_exists(struct rq, prev_steal_time_rq) ||
	    !bpf_core_field_exists(struct cfs_rq, rq) ||
	    !bpf_core_field_exists(struct sched_entity, cfs_rq))
		return 0;
	/* typed loads (a NULL link reads 0), not a probe_read call per link: this is per switch */
	return t->se.cfs_rq->rq->prev_steal_time_rq;
}

/* t's time waiting on a run queue, all told (CONFIG_SCHED_INFO; without it 0) */
static __always_inline __u64 task_run_delay(struct task_struct *t)
{
	if (!bpf_core_field_exists(struct task_struct, sched_info))
		return 0;
	return t->sched_info.run_delay;
}

/*
 * Is t running, seen from another CPU (the iterator)? on_cpu stays set through a switch-out
 * until the switch is done, after sched_switch has fired: a thread seen "on CPU" then is
 * gone from it, and its switch-out was told before (with the hooks still off: not seen).
 * The run queue's curr is set to the next task before sched_switch fires: for a task of the
 * fair class, whose sched_entity's cfs_rq is of the CPU it runs on, it says. A real-time
 * task's cfs_rq may be of a CPU it ran on before: on_cpu alone, for it.
 */
static __always_inline bool task_running(struct task_struct *t)
{
	struct cfs_rq *cq;

	if (!t->on_cpu)
		return false;
	if (!bpf_core_field_exists(struct cfs_rq, rq) ||
	    !bpf_core_field_exists(struct sched_entity, cfs_rq) ||
	    (t->policy != 0 && t->policy != 3 && t->policy != 5))	/* NORMAL, BATCH, IDLE */
		return true;
	cq = t->se.cfs_rq;
	if (!cq || !cq->rq)
		return true;
	return cq->rq->curr == t;
}

/* the current CPU's (a running task does not move) */
static __always_inline __u64 cpu_steal_ns(void)
{
	return task_steal_ns(bpf_get_current_task_btf());
}

/*
 * Is t on a run queue because it can run? Since Linux 6.12 ("sched/fair: Implement delayed
 * dequeue", EEVDF's DELAY_DEQUEUE) a task that blocks with negative lag stays on its run
 * queue, on_rq set, until the scheduler picks it; sched_entity::sched_delayed says so, and it
 * is blocked all the same. A tenth of a Python sleep loop's blocks were so on 6.18. Taken as
 * runnable, an event loop's thread idle in epoll_wait through a stall was blamed as waiting
 * for a CPU.
 */
static __always_inline bool task_queued(struct task_struct *t)
{
	if (!t->on_rq)
		return false;
	return !bpf_core_field_exists(struct sched_entity, sched_delayed) || !t->se.sched_delayed;
}

#endif /* TT_CORE_FIXES_BPF_H */
