/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A connection's start and end outside its data: accept(), close() of a Unix socket, and TCP's
 * state changes.
 */

#ifndef TT_LIFECYCLE_BPF_H
#define TT_LIFECYCLE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "events.h"
#include "record.bpf.h"
#include "conn_map.bpf.h"
#include "conn.bpf.h"
#include "proc.bpf.h"
#include "sock.bpf.h"

/*
 * accept() return: a new connection of a target. Tracking it here, not at its first read,
 * gives the accept time and drops any stale entry left under a reused socket address.
 */
static __always_inline int handle_accept(long fd)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct tt_conn *c;
	struct sock *sk;
	__u64 key;

	if (fd < 0)
		return 0;
	if (!is_target(tgid)) {
		/* --port alone: whoever accepts on it is traced from this connection on */
		if (!find_port)
			return 0;
		sk = sock_of_fd(fd);
		if (!sk || !sk_is_stream(sk) ||
		    BPF_CORE_READ(sk, __sk_common.skc_num) != find_port)
			return 0;
		proc_add(bpf_get_current_task_btf(), 0, TT_PROC_FOUND, 3);
	} else {
		sk = sock_of_fd(fd);
	}
	if (!sk || !sk_is_stream(sk))
		return 0;
	key = (__u64)sk;
	/*
	 * Reset while it waited in the backlog: accept() still hands it out, but its close
	 * already fired. Tracking it would leave an entry no close will ever remove.
	 */
	if (BPF_CORE_READ(sk, __sk_common.skc_family) != AF_UNIX &&
	    BPF_CORE_READ(sk, __sk_common.skc_state) == TCP_CLOSE) {
		bpf_map_delete_elem(&early, &key);
		return 0;
	}
	c = conn_new(sk, TT_CF_ACCEPTED, fd);
	/*
	 * Reset while accept() took it, on another CPU: the state probe runs before the state
	 * changes, so it may have looked for the entry before it existed while the check above
	 * still read the old state. Looked at again now the entry is in: its end, as the probe
	 * would have said it (a duplicate close, if both saw it, is one userspace ignores).
	 */
	if (c && !c->unix_sk && BPF_CORE_READ(sk, __sk_common.skc_state) == TCP_CLOSE)
		conn_closed(key, c);
	return 0;
}

/*
 * close() of a Unix socket of a target: the end of the connection (TCP's ends come from its
 * state changes). A descriptor shared with another process closes only the copy; the peer's
 * EOF or this side's next close ends it then.
 */
static __always_inline int close_fd(long fd)
{
	struct tt_conn *c;
	struct sock *sk;
	__u64 key;

	if (!unix_socks || !is_target(bpf_get_current_pid_tgid() >> 32))
		return 0;
	sk = sock_of_fd(fd);
	if (!sk)
		return 0;
	key = (__u64)sk;
	c = bpf_map_lookup_elem(&conns, &key);
	if (!c || !c->unix_sk)
		return 0;
	conn_closed(key, c);
	return 0;
}

/*
 * TCP state changes run in softirq as often as in the process: the socket address, not the
 * current task, says whether the connection is ours.
 */

static __always_inline int conn_state_change(struct sock *sk, int oldstate, int newstate)
{
	__u64 key = (__u64)sk;
	struct tt_conn *c;

	if (newstate == TCP_ESTABLISHED && oldstate == TCP_SYN_RECV) {
		__u16 lport = BPF_CORE_READ(sk, __sk_common.skc_num);
		struct tt_early e = { .t_established = bpf_ktime_get_ns() };

		/* a new connection of a target's listening port: accept() will pick it up */
		if (is_lport(lport) && bpf_map_update_elem(&early, &key, &e, BPF_ANY))
			stat_inc(TT_STAT_EARLY_FULL);
		return 0;
	}
	if (newstate != TCP_CLOSE && newstate != TCP_CLOSE_WAIT && newstate != TCP_FIN_WAIT1)
		return 0;
	c = bpf_map_lookup_elem(&conns, &key);
	if (!c) {
		/* reset or closed in the backlog, never accepted */
		if (newstate == TCP_CLOSE && nlports)
			bpf_map_delete_elem(&early, &key);
		return 0;
	}
	if (c->mode != TT_MODE_IGNORE && !aggregate)
		emit_state(c, oldstate, newstate);
	if (newstate == TCP_CLOSE)
		conn_end(key, c);
	return 0;
}

#endif /* TT_LIFECYCLE_BPF_H */
