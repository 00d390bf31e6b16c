/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A connection's life in the table and the records that tell it: its first sight (TT_EV_CONN),
 * its state changes, TCP trouble, and its end.
 */

#ifndef TT_CONN_BPF_H
#define TT_CONN_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "events.h"
#include "record.bpf.h"
#include "conn_map.bpf.h"
#include "budget.bpf.h"
#include "sock.bpf.h"

const volatile __u16 targ_lport = 0;	/* 0: every connection of the targets */

__u64 conn_gen = 0;

static __always_inline void emit_conn(struct sock *sk, __u64 id, __u16 flags, __u32 fd,
				      __u64 t_established)
{
	struct tt_conn_ev e = {};

	fill_hdr(&e.h, TT_EV_CONN, sizeof(e));
	e.conn_id = id;
	e.sk = (__u64)sk;
	e.flags = flags;
	e.fd = fd;
	e.t_established = t_established;
	e.family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (e.family == AF_UNIX) {
		struct unix_address *ua = BPF_CORE_READ((struct unix_sock *)sk, addr);

		e.flags |= TT_CF_UNIX;
		e.peer_pid = BPF_CORE_READ(sk, sk_peer_pid, numbers[0].nr);
		if (ua && BPF_CORE_READ(ua, len) > 2)
			bpf_probe_read_kernel(e.path, sizeof(e.path), &ua->name[0].sun_path);
		/* an abstract name starts with a NUL: shown as '@' */
		if (ua && !e.path[0] && BPF_CORE_READ(ua, len) > 3)
			e.path[0] = '@';
	} else {
		e.lport = BPF_CORE_READ(sk, __sk_common.skc_num);
		e.rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
		if (e.family == AF_INET6) {
			BPF_CORE_READ_INTO(&e.laddr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
			BPF_CORE_READ_INTO(&e.raddr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
		} else {
			BPF_CORE_READ_INTO((__u32 *)e.laddr, sk, __sk_common.skc_rcv_saddr);
			BPF_CORE_READ_INTO((__u32 *)e.raddr, sk, __sk_common.skc_daddr);
		}
	}
	bpf_get_current_comm(e.comm, sizeof(e.comm));
	rb_output(&e, sizeof(e));
}

/*
 * Start tracking sk under a fresh id. Socket addresses are reused as soon as a connection is
 * freed, so the id (a generation counter) and not the address names a connection.
 */
static __always_inline struct tt_conn *conn_new(struct sock *sk, __u16 flags, __u32 fd)
{
	__u64 key = (__u64)sk, t_est = 0;
	struct tt_conn c = {};
	struct tt_early *e;

	c.id = __sync_fetch_and_add(&conn_gen, 1) + 1;
	c.unix_sk = BPF_CORE_READ(sk, __sk_common.skc_family) == AF_UNIX;
	/* before the entry exists: a data-ready that finds the entry found the bit first */
	conn_port_add(BPF_CORE_READ(sk, __sk_common.skc_num));
	e = bpf_map_lookup_elem(&early, &key);
	if (e) {
		/* handshake and request bytes that waited in the backlog before accept() */
		t_est = e->t_established;
		c.t_data = e->t_data;
		bpf_map_delete_elem(&early, &key);
	}
	if (targ_lport && (c.unix_sk || BPF_CORE_READ(sk, __sk_common.skc_num) != targ_lport)) {
		c.mode = TT_MODE_IGNORE;
		flags |= TT_CF_IGNORED;
	}
	/* open before we came, on a port the target listens on: its server side (HTTP/2 joined) */
	if (!(flags & TT_CF_ACCEPTED) && !c.unix_sk && is_lport(BPF_CORE_READ(sk, __sk_common.skc_num)))
		flags |= TT_CF_LISTENER;
	if (bpf_map_update_elem(&conns, &key, &c, BPF_ANY)) {
		stat_inc(TT_STAT_CONN_FULL);
		return NULL;
	}
	if (!(flags & TT_CF_IGNORED) && !aggregate)
		emit_conn(sk, c.id, flags, fd, t_est);
	return bpf_map_lookup_elem(&conns, &key);
}

static __always_inline void emit_state(struct tt_conn *c, int oldstate, int newstate)
{
	struct tt_state_ev e = {};

	fill_hdr(&e.h, TT_EV_STATE, sizeof(e));
	e.conn_id = c->id;
	e.oldstate = oldstate;
	e.newstate = newstate;
	e.lost = c->lost;
	if (rb_output(&e, sizeof(e)))
		conn_lose(c, 3);
	else
		conn_told(c);
}

/* A connection is gone: its entries go with it, and it pays for what it sent (--budget). */
static __always_inline void conn_end(__u64 key, struct tt_conn *c)
{
	__u64 id = c->id;

	if (budget_cost_ns)
		budget_charge(c);
	if (ignored_gen)
		bpf_map_delete_elem(&ignored, &id);
	bpf_map_delete_elem(&conns, &key);
}

/* Closed with no state change of its own to say it (a Unix socket, a reset accept missed). */
static __always_inline void conn_closed(__u64 key, struct tt_conn *c)
{
	if (c->mode != TT_MODE_IGNORE && !aggregate)
		emit_state(c, TCP_ESTABLISHED, TCP_CLOSE);
	conn_end(key, c);
}

static __always_inline void emit_tcp(struct tt_conn *c, __u32 kind, __u32 cwnd)
{
	struct tt_tcp_ev e = {};

	fill_hdr(&e.h, TT_EV_TCP, sizeof(e));
	e.conn_id = c->id;
	e.kind = kind;
	e.snd_cwnd = cwnd;
	rb_output(&e, sizeof(e));
}

/* TCP resent a segment of a traced connection */
static __always_inline int conn_retransmit(struct sock *sk)
{
	__u64 key = (__u64)sk;
	struct tt_conn *c = bpf_map_lookup_elem(&conns, &key);

	if (c && c->mode != TT_MODE_IGNORE)
		emit_tcp(c, TT_TCP_RETRANSMIT, BPF_CORE_READ((struct tcp_sock *)sk, snd_cwnd));
	return 0;
}

#endif /* TT_CONN_BPF_H */
