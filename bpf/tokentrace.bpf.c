// SPDX-License-Identifier: GPL-2.0
/*
 * tokentrace kernel side: socket sends and receives of the traced processes.
 *
 * Hooks are raw tracepoints sock:sock_send_length / sock:sock_recv_length. They fire inside
 * sock_sendmsg()/sock_recvmsg() for every path into a socket (write, writev, send*, read*,
 * recv*), only for sockets, after the bytes moved, with the struct sock. Pipes and eventfds,
 * which event loops read far more often than sockets, never reach them. The user buffer is
 * found from the syscall's own arguments in the task's saved user registers.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include <bpf/usdt.bpf.h>
#include "events.h"
#include "sysnr.h"

char LICENSE[] SEC("license") = "GPL";

#define AF_INET		2
#define AF_INET6	10
#define MSG_PEEK	2
#define EAGAIN		11

/* set by the loader before load; constants to the verifier */
const volatile __u32 cap_bytes = TT_CAP_DEFAULT;
const volatile __u64 wake_bytes = 0;	/* 0: wake the consumer per record */
const volatile __u16 targ_lport = 0;	/* 0: every TCP connection of the targets */
const volatile bool stalls = false;	/* stall attribution: sched and TCP hooks loaded */
const volatile bool aggregate = false;	/* --aggregate: histograms in maps, no records */
/*
 * The targets' listening ports, found before load: their new connections are followed from
 * the handshake. Constants compared inline: every segment received on the machine passes the
 * test, a map lookup there would cost every process.
 */
#define TT_LPORTS_MAX	8
const volatile __u16 lport_list[TT_LPORTS_MAX] = {};
const volatile __u32 nlports = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);	/* resized by the loader */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TT_MAX_TARGETS);
	__uint(map_flags, BPF_F_NO_PREALLOC);	/* written once, at start */
	__type(key, __u32);	/* tgid */
	__type(value, __u8);
} targets SEC(".maps");

/* not preallocated: 64k entries made at startup cost more than an allocation per connection */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);	/* struct sock * */
	__type(value, struct tt_conn);
} conns SEC(".maps");



/* connections of a listening port not accepted yet; LRU: the backlog is bounded anyway */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);	/* struct sock * */
	__type(value, struct tt_early);
} early SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TT_STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/*
 * Scratch record: payload can be up to TT_CAP_MAX; iovec pieces are appended at an offset
 * below TT_CAP_MAX with a length of at most TT_CAP_MAX, so twice the room keeps every write
 * provably in bounds for the verifier. Sent with bpf_ringbuf_output() at its real length.
 */
struct scratch {
	__u8 raw[sizeof(struct tt_data_ev) + 2 * TT_CAP_MAX];
};

/*
 * One slot per CPU, indexed by CPU number: a per-CPU array value may not exceed 32 KiB. The
 * loader sets max_entries to the number of possible CPUs. Tracepoint programs do not migrate.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");


struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 4096);	/* ids are per distinct stack: blocking sites are few */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, TT_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

/* --aggregate: live connections (sized by the loader), and what closed ones left */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);	/* struct sock * */
	__type(value, struct tt_agg);
} aggs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tt_agg);
} agg_closed SEC(".maps");

/* an all-zero value to create aggs entries from: too big for the BPF stack */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tt_agg);
} agg_zero SEC(".maps");

__u64 conn_gen = 0;

/*
 * Restate for the verifier a bound the code already guarantees (v <= mask, mask = 2^n - 1):
 * clang tends to test a zero-extended copy of a value and pass on the original, whose range
 * the verifier then does not know. The barrier hides the value so the no-op mask survives.
 */
static __always_inline __u32 rebound(__u32 v, __u32 mask)
{
	barrier_var(v);
	return v & mask;
}

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += 1;	/* per-CPU: no atomics needed */
}

static __always_inline bool is_lport(__u16 port)
{
	for (int i = 0; i < TT_LPORTS_MAX; i++)
		if (i < nlports && lport_list[i] == port)
			return true;
	return false;
}

static __always_inline bool is_target(__u32 tgid)
{
	return bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

/*
 * Wake the consumer only when enough is waiting; it polls on a short timer otherwise. A
 * wakeup per record costs ~6 us on these VMs, more than the rest of the send path.
 */
__u64 last_wake_pos = 0;

static __always_inline __u64 rb_flags(void)
{
	__u64 prod;

	if (!wake_bytes)
		return 0;
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) < wake_bytes)
		return BPF_RB_NO_WAKEUP;
	/*
	 * Once per wake_bytes produced, not once per record past the mark: a consumer that is
	 * behind is already awake, and each forced wakeup is an interrupt on these VMs.
	 */
	prod = bpf_ringbuf_query(&events, BPF_RB_PROD_POS);
	if (prod - last_wake_pos < wake_bytes)
		return BPF_RB_NO_WAKEUP;
	last_wake_pos = prod;
	return BPF_RB_FORCE_WAKEUP;
}

static __always_inline void fill_hdr(struct tt_hdr *h, __u16 type, __u16 size)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	h->ts = bpf_ktime_get_ns();
	h->tgid = pid_tgid >> 32;
	h->tid = (__u32)pid_tgid;
	h->type = type;
	h->size = size;
	h->cpu = bpf_get_smp_processor_id();
}

static __always_inline int rb_output(void *rec, __u64 size)
{
	if (bpf_ringbuf_output(&events, rec, size, rb_flags())) {
		stat_inc(TT_STAT_RB_DROP);
		return -1;
	}
	return 0;
}

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
	e.lport = BPF_CORE_READ(sk, __sk_common.skc_num);
	e.rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (e.family == AF_INET6) {
		BPF_CORE_READ_INTO(&e.laddr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
		BPF_CORE_READ_INTO(&e.raddr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
	} else {
		BPF_CORE_READ_INTO((__u32 *)e.laddr, sk, __sk_common.skc_rcv_saddr);
		BPF_CORE_READ_INTO((__u32 *)e.raddr, sk, __sk_common.skc_daddr);
	}
	bpf_get_current_comm(e.comm, sizeof(e.comm));
	rb_output(&e, sizeof(e));
}

static __always_inline bool sk_is_tcp(struct sock *sk)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);

	if (family != AF_INET && family != AF_INET6)
		return false;
	return BPF_CORE_READ(sk, sk_protocol) == IPPROTO_TCP;
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
	e = bpf_map_lookup_elem(&early, &key);
	if (e) {
		/* handshake and request bytes that waited in the backlog before accept() */
		t_est = e->t_established;
		c.t_data = e->t_data;
		bpf_map_delete_elem(&early, &key);
	}
	if (targ_lport && BPF_CORE_READ(sk, __sk_common.skc_num) != targ_lport) {
		c.mode = TT_MODE_IGNORE;
		flags |= TT_CF_IGNORED;
	}
	if (bpf_map_update_elem(&conns, &key, &c, BPF_ANY)) {
		stat_inc(TT_STAT_CONN_FULL);
		return NULL;
	}
	if (!(flags & TT_CF_IGNORED) && !aggregate)
		emit_conn(sk, c.id, flags, fd, t_est);
	return bpf_map_lookup_elem(&conns, &key);
}

/* Copy up to want bytes described by an iovec array into buf. */
static __always_inline __u32 copy_iov(__u8 *buf, const struct iovec *iovp, __u64 cnt, __u32 want,
				      __u8 *flags)
{
	__u32 off = 0;

	for (int i = 0; i < TT_MAX_IOV; i++) {
		struct iovec iov;
		__u64 n;

		if (i >= cnt || off >= want)
			break;
		if (bpf_probe_read_user(&iov, sizeof(iov), &iovp[i])) {
			*flags |= TT_DF_FAULT;
			break;
		}
		n = want - off;
		if (iov.iov_len < n)
			n = iov.iov_len;
		/* off < TT_CAP_MAX and n <= TT_CAP_MAX keep buf + off + n inside the scratch */
		barrier_var(n);
		if (off >= TT_CAP_MAX)
			break;
		if (n > TT_CAP_MAX)
			n = TT_CAP_MAX;
		if (bpf_probe_read_user(buf + rebound(off, TT_CAP_MAX - 1), n, iov.iov_base)) {
			*flags |= TT_DF_FAULT;
			break;
		}
		off += n;
	}
	return off;
}

/*
 * Copy the first want bytes the syscall moved. The arguments come from the registers saved at
 * syscall entry: they are the caller's, unchanged while the syscall runs.
 */
static __always_inline __u32 copy_payload(__u8 *buf, __u32 want, __u32 *sysnr, __u8 *flags)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	unsigned long nr = BPF_CORE_READ(regs, orig_ax);
	unsigned long a1 = BPF_CORE_READ(regs, si);	/* 2nd argument */
	unsigned long a2 = BPF_CORE_READ(regs, dx);	/* 3rd argument */
	struct user_msghdr msg;
	__u32 n;

	*sysnr = nr;
	switch (nr) {
	case TT_NR_read:
	case TT_NR_write:
	case TT_NR_recvfrom:
	case TT_NR_sendto:
		n = want;
		if (n > TT_CAP_MAX)
			n = TT_CAP_MAX;
		if (bpf_probe_read_user(buf, rebound(n, 2 * TT_CAP_MAX - 1), (void *)a1)) {
			*flags |= TT_DF_FAULT;
			return 0;
		}
		return n;
	case TT_NR_readv:
	case TT_NR_writev:
		return copy_iov(buf, (const struct iovec *)a1, a2, want, flags);
	case TT_NR_recvmsg:
	case TT_NR_sendmsg:
		if (bpf_probe_read_user(&msg, sizeof(msg), (void *)a1)) {
			*flags |= TT_DF_FAULT;
			return 0;
		}
		return copy_iov(buf, msg.msg_iov, msg.msg_iovlen, want, flags);
	default:
		/* sendfile, splice, sendmmsg, io_uring: the length is known, the bytes are not */
		*flags |= TT_DF_NOBUF;
		return 0;
	}
}

static __always_inline void agg_add(__u32 *hist, __u64 v)
{
	__u32 b = tt_agg_bucket(v);

	if (b < TT_AGG_BUCKETS)
		__sync_fetch_and_add(&hist[b], 1);
}

/*
 * --aggregate: no records, no payload but the first 8 bytes of a send, to leave out what is
 * not a token: the response head ("HTTP/1.") and the last-chunk marker ("0\r\n\r\n"). A read
 * starts a request: the next token-like send is its first, the ones after it its gaps.
 */
static __always_inline int aggregate_data(__u64 key, __u32 tgid, int ret, __u8 dir,
					  struct scratch *s)
{
	struct tt_agg *a = bpf_map_lookup_elem(&aggs, &key);
	__u64 now = bpf_ktime_get_ns();
	__u32 zero = 0, sysnr;
	__u8 flags = 0, *h = s->raw;

	if (ret <= 0)
		return 0;
	if (!a) {
		struct tt_agg *z = bpf_map_lookup_elem(&agg_zero, &zero);

		if (!z || bpf_map_update_elem(&aggs, &key, z, BPF_NOEXIST))
			return 0;
		a = bpf_map_lookup_elem(&aggs, &key);
		if (!a)
			return 0;
		a->tgid = tgid;
	}
	if (dir == TT_DIR_RECV) {
		a->last_recv = now;
		a->last_send = 0;
		return 0;
	}
	if (copy_payload(h, ret < 8 ? ret : 8, &sysnr, &flags) >= 5 &&
	    ((h[0] == 'H' && h[1] == 'T' && h[2] == 'T' && h[3] == 'P' && h[4] == '/') ||
	     (h[0] == '0' && h[1] == '\r' && h[2] == '\n' && h[3] == '\r' && h[4] == '\n')))
		return 0;
	if (a->last_send) {
		agg_add(a->itl, now - a->last_send);
	} else if (a->last_recv) {
		agg_add(a->ttft, now - a->last_recv);
		a->firsts++;
	}
	a->last_send = now;
	a->sends++;
	return 0;
}

/* A closed connection's histograms join the per-CPU total before its entry goes. */
static __always_inline void agg_fold(__u64 key)
{
	struct tt_agg *a = bpf_map_lookup_elem(&aggs, &key), *t;
	__u32 zero = 0;

	if (!a)
		return;
	t = bpf_map_lookup_elem(&agg_closed, &zero);
	if (t) {
		for (int i = 0; i < TT_AGG_BUCKETS; i++) {
			t->itl[i] += a->itl[i];
			t->ttft[i] += a->ttft[i];
		}
		t->sends += a->sends;
		t->firsts += a->firsts;
	}
	bpf_map_delete_elem(&aggs, &key);
}

static __always_inline int handle_data(struct sock *sk, int ret, __u8 dir)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	__u64 key = (__u64)sk;
	struct tt_conn *c;
	struct scratch *s;
	struct tt_data_ev *ev;
	__u32 cpu = bpf_get_smp_processor_id(), want, cap;
	__u8 flags = 0;

	if (!is_target(tgid))
		return 0;
	c = bpf_map_lookup_elem(&conns, &key);
	if (!c) {
		/* errors and EOF on a socket we never saw carry nothing to correlate */
		if (ret <= 0 || !sk_is_tcp(sk))
			return 0;
		c = conn_new(sk, 0, (__u32)-1);
		if (!c)
			return 0;
	}
	if (c->mode == TT_MODE_IGNORE)
		return 0;
	/* EAGAIN is an event loop polling; EOF shows as a state change. Keep real errors. */
	if (ret == 0 || ret == -EAGAIN)
		return 0;

	s = bpf_map_lookup_elem(&scratch, &cpu);
	if (!s)
		return 0;
	if (aggregate)
		return aggregate_data(key, tgid, ret, dir, s);
	ev = (struct tt_data_ev *)s->raw;
	want = ret > 0 ? ret : 0;
	if (want > cap_bytes) {
		want = cap_bytes;
		flags |= TT_DF_TRUNC;
		stat_inc(TT_STAT_TRUNC);
	}
	ev->sysnr = 0;
	cap = want ? copy_payload(ev->data, want, &ev->sysnr, &flags) : 0;
	if (flags & TT_DF_FAULT)
		stat_inc(TT_STAT_FAULT);
	if (cap > TT_CAP_MAX)
		cap = TT_CAP_MAX;

	if (c->lost) {
		flags |= TT_DF_LOST;
		ev->lost = c->lost;
	} else {
		ev->lost = 0;
	}
	/* how long the bytes this read returns had been waiting in the socket */
	ev->arrival = 0;
	if (dir == TT_DIR_RECV) {
		ev->arrival = c->t_data;
		c->t_data = 0;
	}
	fill_hdr(&ev->h, TT_EV_DATA, sizeof(*ev) + cap);
	ev->conn_id = c->id;
	ev->ret = ret;
	ev->cap = cap;
	ev->dir = dir;
	ev->flags = flags;
	if (rb_output(ev, rebound(sizeof(*ev) + cap, 2 * TT_CAP_MAX - 1)))
		c->lost++;
	else
		c->lost = 0;
	return 0;
}

SEC("raw_tp/sock_send_length")
int BPF_PROG(sock_send_length, struct sock *sk, int ret, int flags)
{
	return handle_data(sk, ret, TT_DIR_SEND);
}

SEC("raw_tp/sock_recv_length")
int BPF_PROG(sock_recv_length, struct sock *sk, int ret, int flags)
{
	if (flags & MSG_PEEK)	/* the same bytes will be read again */
		return 0;
	return handle_data(sk, ret, TT_DIR_RECV);
}

#define S_IFMT		0170000
#define S_IFSOCK	0140000

/* The socket behind a descriptor of the current task, or NULL. */
static __always_inline struct sock *sock_of_fd(long fd)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct file **fds, *f;
	struct socket *sock;

	if (fd < 0)
		return NULL;
	fds = BPF_CORE_READ(task, files, fdt, fd);
	if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) || !f)
		return NULL;
	if ((BPF_CORE_READ(f, f_inode, i_mode) & S_IFMT) != S_IFSOCK)
		return NULL;
	sock = BPF_CORE_READ(f, private_data);
	return BPF_CORE_READ(sock, sk);
}

/*
 * accept() return: a new connection of a target. Tracking it here, not at its first read,
 * gives the accept time and drops any stale entry left under a reused socket address.
 */
static __always_inline int handle_accept(long fd)
{
	struct sock *sk;

	if (fd < 0 || !is_target(bpf_get_current_pid_tgid() >> 32))
		return 0;
	sk = sock_of_fd(fd);
	if (!sk || !sk_is_tcp(sk))
		return 0;
	conn_new(sk, TT_CF_ACCEPTED, fd);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_accept4")
int sys_exit_accept4(struct trace_event_raw_sys_exit *ctx)
{
	return handle_accept(ctx->ret);
}

SEC("tracepoint/syscalls/sys_exit_accept")
int sys_exit_accept(struct trace_event_raw_sys_exit *ctx)
{
	return handle_accept(ctx->ret);
}

/*
 * TCP state changes run in softirq as often as in the process: the socket address, not the
 * current task, says whether the connection is ours.
 */
SEC("raw_tp/inet_sock_set_state")
int BPF_PROG(inet_sock_set_state, struct sock *sk, int oldstate, int newstate)
{
	__u64 key = (__u64)sk;
	struct tt_state_ev e = {};
	struct tt_conn *c;

	if (newstate == TCP_ESTABLISHED && oldstate == TCP_SYN_RECV) {
		__u16 lport = BPF_CORE_READ(sk, __sk_common.skc_num);
		struct tt_early e = { .t_established = bpf_ktime_get_ns() };

		/* a new connection of a target's listening port: accept() will pick it up */
		if (is_lport(lport))
			bpf_map_update_elem(&early, &key, &e, BPF_ANY);
		return 0;
	}
	if (newstate != TCP_CLOSE && newstate != TCP_CLOSE_WAIT && newstate != TCP_FIN_WAIT1)
		return 0;
	c = bpf_map_lookup_elem(&conns, &key);
	if (!c)
		return 0;
	if (c->mode != TT_MODE_IGNORE && !aggregate) {
		fill_hdr(&e.h, TT_EV_STATE, sizeof(e));
		e.conn_id = c->id;
		e.oldstate = oldstate;
		e.newstate = newstate;
		rb_output(&e, sizeof(e));
	}
	if (newstate == TCP_CLOSE) {
		if (aggregate)
			agg_fold(key);
		bpf_map_delete_elem(&conns, &key);
	}
	return 0;
}

/*
 * Data queued on a socket (softirq or the sender's context): remember when the first unread
 * byte arrived, for the read that will return it. Connections not yet accepted are found in
 * the early map, filled at the handshake.
 */
SEC("raw_tp/sk_data_ready")
int BPF_PROG(sk_data_ready, struct sock *sk)
{
	__u64 key = (__u64)sk;
	struct tt_conn *c;
	struct tt_early *e;

	c = bpf_map_lookup_elem(&conns, &key);
	if (c) {
		if (!c->t_data)
			c->t_data = bpf_ktime_get_ns();
		return 0;
	}
	if (!nlports || !is_lport(BPF_CORE_READ(sk, __sk_common.skc_num)))
		return 0;
	e = bpf_map_lookup_elem(&early, &key);
	if (e && !e->t_data)
		e->t_data = bpf_ktime_get_ns();
	return 0;
}

/* ------------------------------------------------------------------ markers */

static __always_inline int emit_marker(struct pt_regs *ctx, __u64 cookie, long key, bool have_key)
{
	struct tt_marker_ev e;

	__builtin_memset(&e, 0, sizeof(e));
	fill_hdr(&e.h, TT_EV_MARKER, sizeof(e));
	e.marker = TT_COOKIE_MARKER(cookie);
	if (have_key) {
		if (TT_COOKIE_KEYSTR(cookie)) {
			if (bpf_probe_read_user_str(e.key_str, sizeof(e.key_str), (void *)key) > 0)
				e.key_kind = TT_KEY_STR;
		} else {
			e.key = key;
			e.key_kind = TT_KEY_INT;
		}
	}
	rb_output(&e, sizeof(e));
	return 0;
}

static __always_inline long reg_arg(struct pt_regs *ctx, unsigned int n)
{
	switch (n) {
	case 1: return PT_REGS_PARM1(ctx);
	case 2: return PT_REGS_PARM2(ctx);
	case 3: return PT_REGS_PARM3(ctx);
	case 4: return PT_REGS_PARM4(ctx);
	case 5: return PT_REGS_PARM5(ctx);
#ifdef PT_REGS_PARM6
	case 6: return PT_REGS_PARM6(ctx);
#else	/* libbpf before 1.2 stops at 5; x86-64 passes the 6th in r9 */
	case 6: return BPF_CORE_READ(ctx, r9);
#endif
	default: return 0;
	}
}

/* Function entry: the key is an argument register (the C calling convention). */
SEC("uprobe")
int marker_uprobe(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	unsigned int n = TT_COOKIE_KEYARG(cookie);

	return emit_marker(ctx, cookie, reg_arg(ctx, n), n >= 1 && n <= 6);
}

/* Function return: only the return value is left. */
SEC("uretprobe")
int marker_uretprobe(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);

	return emit_marker(ctx, cookie, PT_REGS_RC(ctx),
			   TT_COOKIE_KEYARG(cookie) == TT_KEYARG_RET);
}

/* USDT: arguments as the probe's note describes them (register, stack or constant). */
SEC("usdt")
int marker_usdt(struct pt_regs *ctx)
{
	__u64 cookie = bpf_usdt_cookie(ctx);
	unsigned int n = TT_COOKIE_KEYARG(cookie);
	long key = 0;
	bool have = n >= 1 && n <= 6 && !bpf_usdt_arg(ctx, n - 1, &key);

	return emit_marker(ctx, cookie, key, have);
}

/* ------------------------------------------------------------------ stalls */

static __always_inline void emit_tcp(struct tt_conn *c, __u32 kind, __u32 cwnd)
{
	struct tt_tcp_ev e = {};

	fill_hdr(&e.h, TT_EV_TCP, sizeof(e));
	e.conn_id = c->id;
	e.kind = kind;
	e.snd_cwnd = cwnd;
	rb_output(&e, sizeof(e));
}

/*
 * A traced thread blocked inside a send to a traced socket: its buffer is full, the client
 * reads slowly. Said here, on the rare blocking path, rather than by a hook on every send;
 * and a zero window is noted where it matters, rather than on every segment of the machine.
 */
static __always_inline bool blocked_in_send(unsigned long nr, unsigned long fd)
{
	struct tt_conn *c;
	struct sock *sk;
	__u64 key;

	if (nr != TT_NR_write && nr != TT_NR_writev && nr != TT_NR_sendto && nr != TT_NR_sendmsg)
		return false;
	sk = sock_of_fd(fd);
	if (!sk)
		return false;
	key = (__u64)sk;
	c = bpf_map_lookup_elem(&conns, &key);
	if (!c || c->mode == TT_MODE_IGNORE)
		return false;
	if (!BPF_CORE_READ((struct tcp_sock *)sk, snd_wnd))
		emit_tcp(c, TT_TCP_ZERO_WINDOW, BPF_CORE_READ((struct tcp_sock *)sk, snd_cwnd));
	return true;
}

/* Blocks whose syscall says it all (a lock, a sleep, a poll) skip the kernel stack walk. */
static __always_inline bool kstack_tells(unsigned long nr)
{
	return nr != TT_NR_futex && nr != TT_NR_futex_waitv && nr != TT_NR_nanosleep &&
	       nr != TT_NR_clock_nanosleep && nr != TT_NR_epoll_wait &&
	       nr != TT_NR_epoll_pwait && nr != TT_NR_epoll_pwait2 && nr != TT_NR_poll &&
	       nr != TT_NR_ppoll && nr != TT_NR_select && nr != TT_NR_pselect6;
}

static __always_inline void emit_sched(struct task_struct *t, __u8 kind, bool runnable,
				       __u32 state, void *ctx)
{
	struct tt_sched_ev e;

	__builtin_memset(&e, 0, sizeof(e));
	fill_hdr(&e.h, TT_EV_SCHED, sizeof(e));
	e.h.tgid = BPF_CORE_READ(t, tgid);
	e.h.tid = BPF_CORE_READ(t, pid);
	e.kind = kind;
	e.runnable = runnable;
	e.state = state;
	e.sysnr = -1;
	e.kstack = e.ustack = -1;
	if (kind == TT_SCHED_OUT && !runnable) {
		/* the thread going off CPU is current: its stacks and its syscall are at hand */
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

		unsigned long nr = BPF_CORE_READ(regs, orig_ax);

		e.sysnr = nr;
		e.in_send = blocked_in_send(nr, BPF_CORE_READ(regs, di));
		if (kstack_tells(nr))
			e.kstack = bpf_get_stackid(ctx, &stacks, 0);
		e.ustack = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	}
	rb_output(&e, sizeof(e));
}

/*
 * Every context switch on the machine passes here: one targets lookup for each side is all
 * that untraced processes pay.
 */
SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	if (is_target(BPF_CORE_READ(prev, tgid)))
		emit_sched(prev, TT_SCHED_OUT, preempt || !prev_state, prev_state, ctx);
	if (is_target(BPF_CORE_READ(next, tgid)))
		emit_sched(next, TT_SCHED_IN, false, 0, ctx);
	return 0;
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(sched_wakeup, struct task_struct *p)
{
	if (is_target(BPF_CORE_READ(p, tgid)))
		emit_sched(p, TT_SCHED_WAKE, false, 0, ctx);
	return 0;
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new, struct task_struct *p)
{
	if (is_target(BPF_CORE_READ(p, tgid)))
		emit_sched(p, TT_SCHED_WAKE, false, 0, ctx);
	return 0;
}

SEC("raw_tp/tcp_retransmit_skb")
int BPF_PROG(tcp_retransmit_skb, struct sock *sk)
{
	__u64 key = (__u64)sk;
	struct tt_conn *c = bpf_map_lookup_elem(&conns, &key);

	if (c && c->mode != TT_MODE_IGNORE)
		emit_tcp(c, TT_TCP_RETRANSMIT, BPF_CORE_READ((struct tcp_sock *)sk, snd_cwnd));
	return 0;
}

