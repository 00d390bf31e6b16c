/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * When bytes could first be read: a read's arrival (the socket's data-ready), a send's delivery
 * to its Unix peer or departure on TCP.
 */

#ifndef TT_READY_BPF_H
#define TT_READY_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "events.h"
#include "record.bpf.h"
#include "conn_map.bpf.h"
#include "sock.bpf.h"

/*
 * A target thread handed bytes to a reader of a Unix socket: the peer's data-ready ran in the
 * thread's context (a Unix send always delivers inside the send), and the send it is in
 * takes the moment at its end. Kept per CPU, with the thread's id: a send looks at its CPU's
 * slot only, and a thread's own state (task storage) costs a send ~0.3 us more, its cache
 * lines cold by the next token. The woken reader may preempt the sender there and the sender
 * finish its send elsewhere: that send does not find the slot and keeps its after-copy time.
 * The slot it left behind is never taken for a later send's: it counts only if the thread has
 * left the CPU at most once since (csw). Once is the reader's preemption, the sender then
 * back on the same CPU: the slot is this send's (until 12-06 night such a send kept its
 * after-copy time, after the reader it woke had run). A slot left by an earlier send is
 * never found after fewer than two: its thread left that CPU (one), ran elsewhere, and left
 * again to come back (two).
 * TCP needs no slot: its departure stamp dates a send
 * (ready_time()), and a loopback TCP delivery costs each token ~0.1-0.3 us less without one.
 */
struct ready_slot {
	__u64 ts;
	__u32 tid;
	__u32 pad;
	__u64 csw;		/* the thread's context switches then (nvcsw + nivcsw) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ready_slot);
} ready_pc SEC(".maps");

static __always_inline __u64 task_csw(struct task_struct *t)
{
	return t->nvcsw + t->nivcsw;
}

/*
 * When the bytes of this send could first be read (events.h, t_ready), or 0 if not known.
 * Unix: a delivery to the peer made by the sending thread during the send. TCP: the
 * departure stamp of the last segment transmitted (tcp_wstamp_ns, CLOCK_MONOTONIC), when
 * something left since the last look and what left ends this send's bytes or is of them:
 * everything written has left by now (the last segment out carried this send's end), or
 * everything written before this send had left (what left since is this send's). On
 * loopback the bytes are readable a few microseconds after they leave; over the network,
 * later. The stamp is never before the copy it follows. A pacing stamp in the future is
 * userspace's to refuse (data_time(): not after h.ts). The after-copy stamp stays in the
 * header either way.
 */
static __always_inline __u64 ready_time(struct sock *sk, struct tt_conn *c, __u8 dir, int ret,
					bool typed)
{
	struct tcp_sock *tp;
	__u32 nxt, wseq, zero = 0;
	__u64 t = 0;

	if (dir != TT_DIR_SEND)
		return 0;
	if (c->unix_sk) {
		struct ready_slot *pc = bpf_map_lookup_elem(&ready_pc, &zero);

		/* this send's delivery, if it finished on the CPU it delivered on; taken either way */
		if (!pc || !pc->ts || pc->tid != (__u32)bpf_get_current_pid_tgid())
			return 0;
		t = task_csw(bpf_get_current_task_btf()) - pc->csw <= 1 ? pc->ts : 0;
		pc->ts = 0;
		return t;
	}
	tp = tcp_of(sk, typed);
	if (!tp)
		return 0;
	nxt = SK_READ(typed, tp, snd_nxt);
	wseq = SK_READ(typed, tp, write_seq);
	if (ret > 0 && nxt != c->snd_nxt &&
	    (nxt == wseq || (c->write_seq && c->snd_nxt == c->write_seq)))
		t = SK_READ(typed, tp, tcp_wstamp_ns);
	c->snd_nxt = nxt;
	c->write_seq = wseq;
	return t;
}

/*
 * Data queued on a socket (softirq or the sender's context): remember when the first unread
 * byte arrived, for the read that will return it. Connections not yet accepted are found in
 * the early map, filled at the handshake. And when a target thread is the one delivering
 * (the Unix peer of its send), the moment its bytes became readable (ready_slot).
 */
static __always_inline int data_ready(struct sock *sk, bool typed)
{
	__u64 key = (__u64)sk, pid_tgid;
	__u16 lport = SK_READ(typed, sk, __sk_common.skc_num);
	struct tt_conn *c;
	struct tt_early *e;

	c = conn_port_maybe(lport) ? bpf_map_lookup_elem(&conns, &key) : NULL;
	if (c) {
		if (!c->t_data)
			c->t_data = bpf_ktime_get_ns();
		return 0;
	}
	if (SK_READ(typed, sk, __sk_common.skc_family) == AF_UNIX) {
		__u32 zero = 0;
		struct ready_slot *rs;

		pid_tgid = bpf_get_current_pid_tgid();
		if (aggregate || !is_target(pid_tgid >> 32) || !in_send_syscall())
			return 0;
		rs = bpf_map_lookup_elem(&ready_pc, &zero);
		if (rs) {
			rs->ts = bpf_ktime_get_ns();
			rs->tid = (__u32)pid_tgid;
			rs->csw = task_csw(bpf_get_current_task_btf());
		}
		return 0;	/* a Unix socket is in no early map */
	}
	if (!nlports || !is_lport(lport))
		return 0;
	e = bpf_map_lookup_elem(&early, &key);
	if (e && !e->t_data)
		e->t_data = bpf_ktime_get_ns();
	return 0;
}

#endif /* TT_READY_BPF_H */
