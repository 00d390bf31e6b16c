/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Socket data of the traced processes: every data hook (tokentrace.bpf.c), whichever family
 * fired, ends in data_of_sock(): data_admit() decides what the send or read becomes,
 * data_emit() builds and submits its record (data_rec.bpf.h), the same whatever the family.
 * The user buffer is found from the syscall's own arguments in the task's saved user registers.
 */

#ifndef TT_DATA_BPF_H
#define TT_DATA_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <linux/errno.h>
#include "events.h"
#include "record.bpf.h"
#include "conn_map.bpf.h"
#include "conn.bpf.h"
#include "budget.bpf.h"
#include "capture.bpf.h"
#include "data_rec.bpf.h"
#include "aggregate.bpf.h"
#include "ready.bpf.h"
#include "sock.bpf.h"
#include "thread.bpf.h"
#include "sched.bpf.h"
#include "seed.bpf.h"
#include "tls.bpf.h"

/* kprobe family: the socket of a send/recv, from its entry to its return */
struct kstash {
	__u64 sk;
	__u32 flags;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);	/* pid_tgid */
	__type(value, struct kstash);
} kstash SEC(".maps");
/* A send or receive of a target thread on socket sk moved ret bytes (or failed with ret < 0). */
struct data_io {
	struct sock *sk;
	__u64 pid_tgid;
	int ret;
	__u8 dir;	/* enum tt_dir */
	bool typed;	/* sk is a BTF pointer (tp, fexit): plain loads, a constant in each program */
};

/* What a send or read becomes (data_admit()) */
enum data_verdict {
	DATA_NONE,	/* nothing: not traced, not of interest, left out (counted where it is) */
	DATA_RECORD,	/* a data record (data_emit()) */
	DATA_EOF,	/* a Unix read's EOF: the peer closed */
	DATA_AGGREGATE,	/* --aggregate: a sample for the histograms */
};

/* The connection of a send or read admitted, and when its bytes could first be read */
struct data_admit {
	struct tt_conn *c;
	__u64 t_ready;
};

/*
 * The rest of a run the budget left out (budget_admits() would say so after the work of
 * data_admit()): a third of a send's cost at saturation, where most sends are these. Not with
 * an SSL call open anywhere: a TLS socket's ciphertext ties it to its plaintext first.
 * TCP: what was sent and written since is not looked at, so the next look must not take what
 * left as this connection's (ready_time(): write_seq 0 is "not known"). Unix: the delivery
 * this send made is taken, as any send takes it.
 */
static __always_inline bool data_run_skipped(const struct data_io *io, struct tt_conn *c)
{
	if (!(c->skip && c->run == io->dir + 1 && io->ret > 0 && c->mode == TT_MODE_CAPTURE &&
	      !(tls_uprobes && ssl_open)))
		return false;
	if (c->unix_sk)
		ready_time(io->sk, c, io->dir, io->ret, io->typed);
	else
		c->write_seq = 0;
	stat_inc(TT_STAT_BUDGET_RECS);
	return true;
}

/*
 * The rest of a run that lost a record: userspace aborted its response at the loss and would
 * only throw these away, after the ring took them and the consumer parsed them. Counted as
 * lost, one record each, before anything else is done: at saturation most sends that are not
 * sent are these. The thread's counters are not sampled either (nothing is sent that a drop
 * window would have to cover: the connection's own count rides on its next record). Errors
 * still go: a reset or a dead peer says how the connection ended.
 */
static __always_inline bool data_shed(const struct data_io *io, struct tt_conn *c)
{
	if (!c->shed)
		return false;
	if (c->shed_dir == io->dir && io->ret > 0) {
		if (io->dir == TT_DIR_RECV)
			c->t_data = 0;
		conn_lose(c, 1 << io->dir);
		stat_inc(TT_STAT_RB_DROP);
		return true;
	}
	c->shed = 0;
	return false;
}

/*
 * What is to become of this send or read: its connection (made at its first sight) and the
 * readable time into *a, and the verdict. What the budget or a lost record leaves out ends
 * here, counted.
 */
static __always_inline enum data_verdict data_admit(const struct data_io *io,
						    struct data_admit *a)
{
	__u64 key = (__u64)io->sk;
	struct tt_conn *c;

	c = bpf_map_lookup_elem(&conns, &key);
	if (c && data_run_skipped(io, c))
		return DATA_NONE;
	if (!c) {
		/* errors and EOF on a socket we never saw carry nothing to correlate */
		if (io->ret <= 0 || !sk_is_stream(io->sk))
			return DATA_NONE;
		c = conn_new(io->sk, 0, (__u32)-1);
		if (!c)
			return DATA_NONE;
	}
	a->c = c;
	a->t_ready = c->mode == TT_MODE_IGNORE ? 0 :
		     ready_time(io->sk, c, io->dir, io->ret, io->typed);
	/*
	 * inside an SSL call of the thread: ciphertext, its plaintext comes at the call's end
	 * (tied to this connection even when it is left out, so the plaintext is left out too)
	 */
	if (tls_uprobes && io->ret > 0 &&
	    tls_socket_io(c, key, io->pid_tgid, a->t_ready ?: bpf_ktime_get_ns()))
		return DATA_NONE;
	if (c->mode == TT_MODE_IGNORE)
		return DATA_NONE;
	if (c->mode == TT_MODE_TLS)
		return DATA_NONE;	/* TLS bytes outside an SSL call (read-ahead, a handshake) */
	/* a Unix socket has no FIN to see: EOF on a read is the peer's close */
	if (io->ret == 0 && io->dir == TT_DIR_RECV && c->unix_sk)
		return DATA_EOF;
	/* EAGAIN is an event loop polling; EOF shows as a state change. Keep real errors. */
	if (io->ret == 0 || io->ret == -EAGAIN)
		return DATA_NONE;
	if (aggregate)
		return DATA_AGGREGATE;
	if (user_ignored(c))
		return DATA_NONE;
	if (budget_cost_ns && !budget_admits(c, io->dir, io->ret, NULL))
		return DATA_NONE;
	return data_shed(io, c) ? DATA_NONE : DATA_RECORD;
}

/*
 * The data record of a send or read admitted: its header, the calling thread's counters
 * (stall attribution), the payload; a record that does not fit in the ring sheds the rest of
 * its run (data_admit()).
 */
static __always_inline int data_emit(void *ctx, const struct data_io *io,
				     const struct data_admit *a)
{
	struct tt_conn *c = a->c;
	struct tt_data_ev *t;
	struct scratch *s;
	struct usrc u;
	__u32 want;
	bool lost;

	s = data_rec_start(c->id, io->ret);
	if (!s)
		return 0;
	t = &s->cx.tmpl;
	/* whether the hooks are on or not: a gap they missed is split by these */
	if (stalls)
		kcnt_read(bpf_get_current_task_btf(), &t->k);
	if (stalls && d_percpu && !hooks_live())	/* lazy hooks off just now */
		d_last_note((__u32)io->pid_tgid, t->h.ts);
	else if (stalls)
		thread_counters(ctx, bpf_task_storage_get(&thr, bpf_get_current_task_btf(), 0,
							  BPF_LOCAL_STORAGE_GET_F_CREATE), t);
	t->dir = io->dir;
	t->t_ready = a->t_ready;
	if (io->dir == TT_DIR_RECV) {
		/* how long the bytes this read returns had been waiting in the socket */
		t->arrival = c->t_data;
		c->t_data = 0;
	}
	data_rec_books(t, c);
	want = data_rec_want(io->ret > 0 ? io->ret : 0);
	usrc_of_syscall(&u);
	t->sysnr = u.sysnr;
	if (want && u.kind == USRC_NONE)
		t->flags |= TT_DF_NOBUF;
	lost = capture(s, &u, want);
	data_rec_done(c, io->dir, lost);
	if (lost) {
		c->shed = 1;
		c->shed_dir = io->dir;
	}
	return 0;
}

/* A send or read of a target thread: admitted, then told (or not) as data_admit() says. */
static __always_inline int data_of_sock(void *ctx, const struct data_io *io)
{
	struct data_admit a;

	switch (data_admit(io, &a)) {
	case DATA_RECORD:
		return data_emit(ctx, io, &a);
	case DATA_EOF:
		emit_state(a.c, TCP_ESTABLISHED, TCP_CLOSE_WAIT);
		return 0;
	case DATA_AGGREGATE:
		return aggregate_data(a.c, io->ret, io->dir);
	default:
		return 0;
	}
}

/* the tp and fexit families: sk is typed */
static __always_inline int handle_data(void *ctx, struct sock *sk, int ret, __u8 dir)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct data_io io = { .sk = sk, .pid_tgid = pid_tgid, .ret = ret, .dir = dir, .typed = true };

	if (!sk || !is_target(pid_tgid >> 32))
		return 0;
	return data_of_sock(ctx, &io);
}

static __always_inline int kprobe_enter(struct socket *sock, int flags)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct kstash st = { .flags = flags };

	if (!is_target(pid_tgid >> 32))
		return 0;
	st.sk = (__u64)BPF_CORE_READ(sock, sk);
	bpf_map_update_elem(&kstash, &pid_tgid, &st, BPF_ANY);
	return 0;
}

static __always_inline int kprobe_exit(void *ctx, int ret, __u8 dir)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct kstash *st = bpf_map_lookup_elem(&kstash, &pid_tgid);
	struct data_io io;
	__u32 flags;

	if (!st)
		return 0;
	io = (struct data_io){ .sk = (struct sock *)st->sk, .pid_tgid = pid_tgid, .ret = ret,
			       .dir = dir, .typed = false };
	flags = st->flags;
	bpf_map_delete_elem(&kstash, &pid_tgid);
	if (dir == TT_DIR_RECV && (flags & MSG_PEEK))
		return 0;
	return data_of_sock(ctx, &io);
}

static __always_inline int sys_data(void *ctx, long ret, __u8 dir)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct data_io io = { .pid_tgid = pid_tgid, .ret = ret, .dir = dir, .typed = false };
	struct pt_regs *regs;
	unsigned long nr;
	struct sock *sk;

	if (!is_target(pid_tgid >> 32))
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	sk = sock_of_fd(regs->di);
	if (!sk)
		return 0;
	nr = regs->orig_ax;
	/* recvfrom's flags are the 4th argument (r10 in a syscall), recvmsg's the 3rd */
	if ((nr == TT_NR_recvfrom && (regs->r10 & MSG_PEEK)) ||
	    (nr == TT_NR_recvmsg && (regs->dx & MSG_PEEK)))
		return 0;
	io.sk = sk;
	return data_of_sock(ctx, &io);
}

#endif /* TT_DATA_BPF_H */
