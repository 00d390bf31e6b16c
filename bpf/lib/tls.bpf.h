/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * TLS plaintext from OpenSSL 3: uprobes on SSL_write, SSL_write_ex, SSL_read and SSL_read_ex
 * (in libssl.so.3, or an executable that carries OpenSSL with its symbols, as Node does),
 * attached per traced process at the functions' ELF symbols, never at a guessed address.
 * SSL_do_handshake too (SSL_accept and SSL_connect call it): the handshake's socket I/O ties
 * the SSL object to its connection before any plaintext moves. Without it a request that
 * arrived with the client's Finished (TLS 1.3 clients send both at once: Node's undici does)
 * is read ahead by the handshake, and the SSL_read that returns it does no socket I/O: it
 * would go up keyed by the SSL object, apart from the response written on the socket.
 *
 * Entry: the call's arguments are kept for the thread. The socket send or receive OpenSSL
 * makes inside the call (data_of_sock sees it on the same thread) ties the SSL object to its
 * connection, marks the connection TLS (its ciphertext is no longer sent up) and gives the
 * time the ciphertext left or arrived. Return: the plaintext the call moved goes up as the
 * connection's data, flagged TT_DF_TLS, stamped with that socket time, so TTFT and ITL stay
 * as exact as for plaintext; when no socket was seen inside the call (a memory BIO: Node's
 * TLS writes the ciphertext later), with the call's return and the SSL object's own id.
 */

#ifndef TT_TLS_BPF_H
#define TT_TLS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "events.h"
#include "record.bpf.h"
#include "conn_map.bpf.h"
#include "budget.bpf.h"
#include "capture.bpf.h"
#include "data_rec.bpf.h"
#include "sock.bpf.h"
#include "thread.bpf.h"
#include "sched.bpf.h"

const volatile bool tls_uprobes = false;	/* OpenSSL's calls are probed */

enum tls_fn {
	TLS_WRITE = 1,
	TLS_WRITE_EX = 2,
	TLS_READ = 3,
	TLS_READ_EX = 4,
	TLS_HANDSHAKE = 5,
};

struct ssl_call {
	__u64 ssl, buf, num, ex_len;	/* ex_len: SSL_*_ex's size_t * of the bytes moved */
	__u64 t_io;			/* the socket I/O inside the call, 0 none yet */
	__u64 conn_id;
	__u64 sk;			/* its socket (the conns key), 0 not known */
	__u32 fn;
	__u32 pad;
};

/* what an SSL object is tied to */
struct ssl_tie {
	__u64 conn_id;
	__u64 sk;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);	/* pid_tgid */
	__type(value, struct ssl_call);
} ssl_calls SEC(".maps");
/*
 * Entries in ssl_calls: while none, a socket call is in no SSL call and skips the lookup
 * (every send of a server that does not do TLS itself). One left behind by a thread that
 * died in a call only costs that lookup.
 */
__s64 ssl_open = 0;

/* SSL object -> the connection its bytes went on, once seen */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);	/* SSL * */
	__type(value, struct ssl_tie);
} ssl_conns SEC(".maps");

/*
 * data_of_sock on a thread inside an SSL call: this I/O is the call's ciphertext. True when
 * it is (the caller then sends nothing up for it).
 */
static __always_inline bool tls_socket_io(struct tt_conn *c, __u64 sk, __u64 pid_tgid,
					  __u64 now)
{
	struct ssl_tie tie = { .conn_id = c->id, .sk = sk };
	struct ssl_call *call;

	if (!ssl_open)
		return false;
	call = bpf_map_lookup_elem(&ssl_calls, &pid_tgid);
	if (!call)
		return false;
	if (!call->conn_id) {
		call->conn_id = c->id;
		call->sk = sk;
		bpf_map_update_elem(&ssl_conns, &call->ssl, &tie, BPF_ANY);
	}
	/*
	 * A handshake's records still go up as ciphertext: a connection whose handshake never
	 * completes (a scanner, garbage) is then seen, and counted as left unparsed
	 */
	if (call->fn == TLS_HANDSHAKE)
		return false;
	/* the last I/O of the call: for a write, when the ciphertext's end left */
	call->t_io = now;
	if (c->mode != TT_MODE_IGNORE)	/* --port's filter holds for the plaintext too */
		c->mode = TT_MODE_TLS;
	return true;
}

static __always_inline int tls_enter(struct pt_regs *ctx, __u32 fn)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct ssl_call call = {
		.ssl = PT_REGS_PARM1(ctx),
		.buf = PT_REGS_PARM2(ctx),
		.num = PT_REGS_PARM3(ctx),
		.ex_len = fn == TLS_WRITE_EX || fn == TLS_READ_EX ? PT_REGS_PARM4(ctx) : 0,
		.fn = fn,
	};

	if (!is_target(pid_tgid >> 32))
		return 0;
	if (!bpf_map_update_elem(&ssl_calls, &pid_tgid, &call, BPF_NOEXIST))
		__sync_fetch_and_add(&ssl_open, 1);
	else	/* an enter without its exit (a call made inside one): the newest counts */
		bpf_map_update_elem(&ssl_calls, &pid_tgid, &call, BPF_ANY);
	return 0;
}

/* The connection of a call: its socket's, else (a memory BIO) the SSL object's own id. */
static __always_inline void ssl_conn_of(const struct ssl_call *call, __u64 *id, __u64 *sk)
{
	struct ssl_tie *tie;

	*id = call->conn_id;
	*sk = call->sk;
	if (*id)
		return;
	tie = bpf_map_lookup_elem(&ssl_conns, &call->ssl);
	if (tie) {
		*id = tie->conn_id;
		*sk = tie->sk;
		return;
	}
	/* a memory BIO's SSL object stands for its connection, by a hash of its address */
	*id = TT_CONN_SSL | ((call->ssl * 0x9e3779b97f4a7c15ull) >> 1);
}

/* The plaintext an SSL call moved, as tls_admit() found it */
struct tls_plain {
	struct tt_conn *c;	/* its connection, NULL when not in the table (a memory BIO's) */
	__u64 id;		/* the connection id it goes up under */
	struct usrc u;		/* the caller's buffer */
	__u32 moved;
	__u8 dir;
};

/*
 * Is the plaintext of this SSL call (ret its return value) to be sent up? Where it is, and
 * under which connection, into *p.
 */
static __always_inline bool tls_admit(const struct ssl_call *call, long ret,
				      struct tls_plain *p)
{
	__u64 moved = 0, len = 0, sk;

	if (call->fn == TLS_HANDSHAKE)
		return false;	/* no plaintext: it only tied the SSL object to its socket */
	if (call->fn == TLS_WRITE_EX || call->fn == TLS_READ_EX) {
		/* 1 on success, the bytes in *ex_len */
		if (ret == 1 && call->ex_len &&
		    !bpf_probe_read_user(&len, sizeof(len), (void *)call->ex_len))
			moved = len;
	} else if (ret > 0) {
		moved = ret;
	}
	p->dir = call->fn == TLS_READ || call->fn == TLS_READ_EX ? TT_DIR_RECV : TT_DIR_SEND;
	if (!moved || moved > 0x7fffffff)
		return false;
	ssl_conn_of(call, &p->id, &sk);
	p->c = sk ? bpf_map_lookup_elem(&conns, &sk) : NULL;
	/*
	 * a connection --port leaves out. (Not the ignored map: userspace puts a TLS connection
	 * there on its first ciphertext, before it knows the plaintext is seen.)
	 */
	if (p->c && p->c->mode == TT_MODE_IGNORE)
		return false;
	p->moved = moved;
	p->u.kind = USRC_CONTIG;
	p->u.sysnr = (__u32)-1;
	p->u.ptr = call->buf;
	p->u.len = moved;
	/* a memory BIO's plaintext has no connection state to keep a decision in: not budgeted */
	return !(budget_cost_ns && p->c && !budget_admits(p->c, p->dir, moved, &p->u));
}

/* The plaintext's data record: flagged TT_DF_TLS, stamped with its ciphertext's socket time */
static __always_inline void tls_emit(void *ctx, const struct ssl_call *call,
				     const struct tls_plain *p)
{
	struct tt_conn *c = p->c;
	struct tt_data_ev *t;
	struct scratch *s;
	bool lost;

	s = data_rec_start(p->id, p->moved);
	if (!s)
		return;
	t = &s->cx.tmpl;
	t->dir = p->dir;
	t->flags = TT_DF_TLS;
	/* the ciphertext's socket time: when it left, or when it was read */
	t->t_ready = call->t_io;
	if (stalls)
		thread_counters(ctx, bpf_task_storage_get(&thr, bpf_get_current_task_btf(), 0, 0), t);
	/* records of this connection dropped before: this one says so (a memory BIO: none
	 * known, the drop counted in the kernel's stats only) */
	if (c)
		data_rec_books(t, c);
	lost = capture(s, &p->u, data_rec_want(p->moved));
	if (c)
		data_rec_done(c, p->dir, lost);
}

static __always_inline int tls_exit(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct ssl_call *call = bpf_map_lookup_elem(&ssl_calls, &pid_tgid);
	struct tls_plain p;

	if (!call)
		return 0;
	if (tls_admit(call, PT_REGS_RC(ctx), &p))
		tls_emit(ctx, call, &p);
	if (!bpf_map_delete_elem(&ssl_calls, &pid_tgid))
		__sync_fetch_and_add(&ssl_open, -1);
	return 0;
}

#endif /* TT_TLS_BPF_H */
