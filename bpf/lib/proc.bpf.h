/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The traced set of processes: the ones found later (by name, cgroup or port), children of
 * traced ones, and their exits (TT_EV_PROC records).
 */

#ifndef TT_PROC_BPF_H
#define TT_PROC_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "events.h"
#include "record.bpf.h"
#include "targets.bpf.h"
#include "thread.bpf.h"
#include "sched.bpf.h"

/*
 * Finding the processes: children of traced ones are traced (-p follows forks), and new
 * processes are found by name (--comm), cgroup (--cgroup) or the port they accept on
 * (--port without -p).
 */
#define TT_FIND_COMMS	8
const volatile bool follow_forks = true;
const volatile char find_comm[TT_FIND_COMMS][TT_COMM_LEN] = {};
const volatile __u32 nfind_comm = 0;
const volatile __u64 find_cgroup = 0;	/* cgroup v2 id (the directory's inode) */
const volatile __u16 find_port = 0;

static __always_inline void proc_emit(__u32 kind, __u32 tgid, __u32 ppid, __u8 flags, __u32 why,
				      struct task_struct *t)
{
	struct tt_proc_ev e = {};

	fill_hdr(&e.h, TT_EV_PROC, sizeof(e));
	e.h.tgid = tgid;
	e.h.tid = tgid;
	e.kind = kind;
	e.ppid = ppid;
	e.flags = flags;
	e.why = why;
	BPF_CORE_READ_STR_INTO(&e.comm, t, comm);
	rb_output(&e, sizeof(e));
}

/* t's process joins the traced set: its sockets and its threads' time */
static __always_inline void proc_add(struct task_struct *t, __u32 ppid, __u32 kind, __u32 why)
{
	__u32 tgid = BPF_CORE_READ(t, tgid);
	__u8 flags = TT_TGT_DATA | (stalls ? TT_TGT_SCHED : 0);

	if (target_add(tgid, flags))
		return;	/* already in */
	proc_emit(kind, tgid, ppid, flags, why, t);
}

static __always_inline bool comm_wanted(struct task_struct *t)
{
	char comm[TT_COMM_LEN];

	if (!nfind_comm)
		return false;
	BPF_CORE_READ_STR_INTO(&comm, t, comm);
	for (int i = 0; i < TT_FIND_COMMS; i++) {
		bool same = i < nfind_comm;

		for (int j = 0; j < TT_COMM_LEN && same; j++) {
			if (comm[j] != find_comm[i][j])
				same = false;
			if (!comm[j])
				break;
		}
		if (same)
			return true;
	}
	return false;
}

/*
 * A new thread of a process whose time is kept: when, and made by which thread (the fork
 * tracepoint runs in the maker's context). A gap's chain that reaches a thread made inside
 * the gap follows its maker before then: a Go M back from a long blocking syscall starts a
 * new M to hand its P to, and that one wakes the poller that sends the token; the time was
 * the first one's syscall. Sent whether or not the scheduler hooks are attached now.
 */
static __always_inline void thread_born(struct task_struct *parent, struct task_struct *child)
{
	struct tt_sched_ev *e;

	if (!stalls || !sched_target(parent->tgid))
		return;
	e = sched_rec(child, TT_SCHED_BIRTH, bpf_ktime_get_ns());
	if (!e)
		return;
	e->waker_tid = parent->pid;
	e->waker_tgid = parent->tgid;
	BPF_CORE_READ_STR_INTO(&e->waker_comm, parent, comm);
	bpf_ringbuf_submit(e, rb_flags());
}

/* A new process: the child of a traced one is traced too. A new thread: its birth. */
static __always_inline int proc_forked(struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);

	if (BPF_CORE_READ(child, tgid) == ptgid) {
		thread_born(parent, child);
		return 0;
	}
	if (target_flags(ptgid) && follow_forks)
		proc_add(child, ptgid, TT_PROC_FORK, 0);
	else if (find_cgroup && bpf_get_current_cgroup_id() == find_cgroup)
		proc_add(child, ptgid, TT_PROC_FOUND, 2);
	return 0;
}

/* exec: a traced process stays traced under its new name; a new one may be found by it */

static __always_inline int proc_execed(struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid), f = target_flags(tgid);

	if (f)
		proc_emit(TT_PROC_EXEC, tgid, 0, f, 0, p);
	else if (comm_wanted(p))
		proc_add(p, 0, TT_PROC_FOUND, 1);
	else if (find_cgroup && bpf_get_current_cgroup_id() == find_cgroup)
		proc_add(p, 0, TT_PROC_FOUND, 2);
	return 0;
}

/* a traced process's thread exits, or the process itself */
static __always_inline int proc_exited(void *ctx, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid), f;
	struct thr_sched *ts = stalls ? bpf_task_storage_get(&thr, p, 0, 0) : NULL;

	if (ts && thr_stale(ts))
		ts = NULL;	/* what it kept is from hooks since detached */

	/* a span kept for its syscall's exit, which this thread will not reach */
	if (ts && ts->span_pending)
		flush_late(ctx, p, ts, false);
	if (ts)
		disarm_exit(ts);
	/* the group leader's exit: the process is gone (or a zombie until its threads go) */
	if (BPF_CORE_READ(p, pid) != tgid) {
		/* a thread whose time was kept: userspace may forget it */
		if (ts) {
			struct tt_proc_ev e = {};

			fill_hdr(&e.h, TT_EV_PROC, sizeof(e));
			e.h.tid = BPF_CORE_READ(p, pid);
			e.kind = TT_PROC_THREAD_EXIT;
			rb_output(&e, sizeof(e));
		}
		return 0;
	}
	f = target_flags(tgid);
	if (!f)
		return 0;
	proc_emit(TT_PROC_EXIT, tgid, 0, f, 0, p);
	target_del(tgid);
	return 0;
}

#endif /* TT_PROC_BPF_H */
