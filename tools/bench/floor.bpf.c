// SPDX-License-Identifier: GPL-2.0
/*
 * The floor tokentrace is measured against: the least a program on the same hook can do.
 * floorload picks one program per run (autoload), so each run pays for exactly one.
 *
 *   filter   raw_tp/sock_send_length: the target-set lookup, nothing else. For a process
 *            that is not a target this is all tokentrace can ever cost.
 *   rb       filter, then reserve and submit a record of the size tokentrace would send for
 *            this send (header + min(len, capture)), untouched, with tokentrace's wakeup
 *            policy. The floor of "one record per traced send".
 *   copy     rb plus what makes the record useful: header fields and the payload copied from
 *            the syscall's user buffer straight into the reservation (no scratch, one copy).
 *            Not a floor: an achievable design point for the lead to compare with.
 *   sched    raw_tp/sched_switch (both tasks' tgids looked up) and raw_tp/sched_wakeup (one):
 *            what every context switch on the machine pays for a tracer that follows its
 *            targets' scheduling, when neither task is a target.
 *   uprobe_* / usdt_*  marker hits: empty (the trap alone) or a marker-sized record.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "events.h"

char LICENSE[] SEC("license") = "GPL";

/* set by floorload before load: constants to the verifier */
const volatile __u32 rec_size = 112;	/* whole record; reserve needs a constant */
const volatile __u32 copy_bytes = 64;	/* payload bytes copied by "copy" */

/*
 * tokentrace's ring (events, resized by floorload) and wakeup policy (wake_bytes: 0 wakes per
 * record), and its filter: the same code
 */
#include "lib/ring.bpf.h"
#include "lib/targets.bpf.h"

__u64 drops = 0;
__u64 hits = 0;

static __always_inline bool is_target(void)
{
	return target_flags(bpf_get_current_pid_tgid() >> 32);
}

static __always_inline void *reserve(void)
{
	void *rec = bpf_ringbuf_reserve(&events, rec_size, 0);

	if (!rec)
		__sync_fetch_and_add(&drops, 1);
	return rec;
}

SEC("raw_tp/sock_send_length")
int BPF_PROG(floor_filter, struct sock *sk, int ret, int flags)
{
	if (is_target())
		__sync_fetch_and_add(&hits, 1);
	return 0;
}

SEC("raw_tp/sock_send_length")
int BPF_PROG(floor_rb, struct sock *sk, int ret, int flags)
{
	void *rec;

	if (!is_target() || ret <= 0)
		return 0;
	rec = reserve();
	if (rec)
		bpf_ringbuf_submit(rec, rb_flags());
	return 0;
}

SEC("raw_tp/sock_send_length")
int BPF_PROG(floor_copy, struct sock *sk, int ret, int flags)
{
	struct pt_regs *regs;
	struct tt_data_ev *ev;
	__u64 pid_tgid;

	if (!is_target() || ret <= 0)
		return 0;
	ev = reserve();
	if (!ev)
		return 0;
	pid_tgid = bpf_get_current_pid_tgid();
	ev->h.ts = bpf_ktime_get_ns();
	ev->h.tgid = pid_tgid >> 32;
	ev->h.tid = (__u32)pid_tgid;
	ev->h.type = TT_EV_DATA;
	ev->h.size = rec_size;
	ev->h.cpu = bpf_get_smp_processor_id();
	ev->conn_id = (__u64)sk;
	ev->ret = ret;
	ev->cap = copy_bytes;
	ev->dir = TT_DIR_SEND;
	ev->flags = 0;
	ev->lost = 0;
	/* send()/write(): the buffer is the 2nd argument, in the registers saved at entry */
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	ev->sysnr = BPF_CORE_READ(regs, orig_ax);
	if (copy_bytes > 0 && copy_bytes <= TT_CAP_MAX &&
	    bpf_probe_read_user(ev->data, copy_bytes, (void *)BPF_CORE_READ(regs, si)))
		ev->flags |= TT_DF_FAULT;
	bpf_ringbuf_submit(ev, rb_flags());
	return 0;
}

/* ------------------------------------------------------------------ scheduler */

static __always_inline bool tgid_is_target(__u32 tgid)
{
	return target_flags(tgid);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(floor_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	if (tgid_is_target(BPF_CORE_READ(prev, tgid)))
		__sync_fetch_and_add(&hits, 1);
	if (tgid_is_target(BPF_CORE_READ(next, tgid)))
		__sync_fetch_and_add(&hits, 1);
	return 0;
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(floor_wakeup, struct task_struct *p)
{
	if (tgid_is_target(BPF_CORE_READ(p, tgid)))
		__sync_fetch_and_add(&hits, 1);
	return 0;
}

/* ------------------------------------------------------------------ markers */

SEC("uprobe")
int uprobe_empty(struct pt_regs *ctx)
{
	return 0;
}

static __always_inline int marker_rec(__u64 key)
{
	struct tt_hdr *h = reserve();
	__u64 pid_tgid;

	if (!h)
		return 0;
	pid_tgid = bpf_get_current_pid_tgid();
	h->ts = bpf_ktime_get_ns();
	h->tgid = pid_tgid >> 32;
	h->tid = (__u32)pid_tgid;
	h->type = TT_EV_NR;	/* not a record tokentrace knows */
	h->size = rec_size;
	h->cpu = bpf_get_smp_processor_id();
	*(__u64 *)(h + 1) = key;
	bpf_ringbuf_submit(h, rb_flags());
	return 0;
}

SEC("uprobe")
int uprobe_rb(struct pt_regs *ctx)
{
	return marker_rec(PT_REGS_PARM1(ctx));
}

SEC("usdt")
int usdt_empty(struct pt_regs *ctx)
{
	return 0;
}

SEC("usdt")
int usdt_rb(struct pt_regs *ctx)
{
	long key = 0;

	bpf_usdt_arg(ctx, 0, &key);
	return marker_rec(key);
}
