// SPDX-License-Identifier: GPL-2.0
/*
 * tokentrace kernel side: socket sends and receives of the traced processes, their TCP state
 * changes, the scheduler's view of their threads, and markers inside them.
 *
 * Data hooks come in families, one loaded per run, chosen by what the kernel has
 * (user/sys/loader.c; docs/design.md):
 *   tp       tracepoints sock:sock_send_length / sock_recv_length (Linux 6.5+). They fire
 *            inside sock_sendmsg()/sock_recvmsg() for every path into a socket, only for
 *            sockets, after the bytes moved: pipes and eventfds never reach them.
 *   fexit    the same place on kernels with BPF trampolines: inet_sendmsg, inet6_sendmsg and
 *            unix_stream_sendmsg, and their recvmsg (called through the socket's ops, so
 *            never inlined into their callers).
 *   kprobe   the same functions with kprobes and kretprobes, where fentry is refused.
 *   syscall  the exit tracepoints of write, writev, sendto, sendmsg and the reads: a
 *            descriptor-to-socket check for the targets' calls, on any kernel.
 * All end in data_of_sock(): the same records to userspace whichever fired. The user buffer
 * is found from the syscall's own arguments in the task's saved user registers.
 *
 * Where a program has the socket typed (tp and fexit: BTF pointers) its fields are plain
 * loads, which the kernel guards against faults; kprobes and the syscall family have an
 * address only, and read through bpf_probe_read_kernel(), a helper call per field.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include <bpf/usdt.bpf.h>
#include "events.h"
#include "sysnr.h"
#include "core_fixes.bpf.h"
#include "targets.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * A field of a socket: typed is a constant in each program (the branch not taken is
 * compiled away), true where the socket is a BTF pointer (see above).
 */
#define SK_READ(typed, p, field) ((typed) ? (p)->field : BPF_CORE_READ(p, field))

/* sk as a tcp_sock: a typed struct sock * does not reach its fields, the kernel's cast does */
static __always_inline struct tcp_sock *tcp_of(struct sock *sk, bool typed)
{
	return typed ? bpf_skc_to_tcp_sock(sk) : (struct tcp_sock *)sk;
}

#define AF_UNIX		1
#define AF_INET		2
#define AF_INET6	10
#define SOCK_STREAM	1
#define MSG_PEEK	2
#define EAGAIN		11

/* set by the loader before load; constants to the verifier */
const volatile __u32 cap_bytes = TT_CAP_DEFAULT;
const volatile __u64 wake_bytes = 0;	/* 0: wake the consumer per record */
const volatile __u16 targ_lport = 0;	/* 0: every connection of the targets */
const volatile bool aggregate = false;	/* --aggregate: histograms in maps, no records */
const volatile bool have_loop = true;	/* bpf_loop() (Linux 5.17+) */
const volatile bool unix_socks = true;	/* trace Unix-domain stream sockets too */
const volatile bool stalls = false;	/* stall attribution: the scheduler is accounted */
const volatile bool tls_uprobes = false;	/* OpenSSL's calls are probed (tls.bpf.h) */
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

/* not preallocated: 64k entries made at startup cost more than an allocation per connection */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);	/* struct sock * */
	__type(value, struct tt_conn);
} conns SEC(".maps");

/*
 * Connections userspace has no use for (not HTTP, a client's): it writes them here, by id,
 * and the kernel stops sending their records. The kernel owns struct tt_conn alone.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);	/* conn id */
	__type(value, __u8);
} ignored SEC(".maps");
/*
 * Bumped by userspace after each entry it writes (0: none yet, a send does not look there).
 * A connection is ignored for good once it is (ids never repeat, entries go at its close):
 * a send looks its connection up here only when the count moved since the last look, and
 * keeps the answer in struct tt_conn (ign_gen, user_ignored). A server whose Unix sockets to
 * its engine are ignored would otherwise pay a second hash lookup at every send.
 */
__u32 ignored_gen = 0;

/* is connection c one userspace has no use for (the ignored map), asked once per change */
static __always_inline bool user_ignored(struct tt_conn *c)
{
	__u32 gen = ignored_gen;	/* read before the lookup: an entry precedes its bump */
	__u64 id;

	if (gen != c->ign_gen) {
		id = c->id;
		c->user_ignored = bpf_map_lookup_elem(&ignored, &id) != NULL;
		c->ign_gen = gen;
	}
	return c->user_ignored;
}

/*
 * Connections of a listening port not accepted yet. A plain hash, not an LRU: a full map is
 * counted (TT_STAT_EARLY_FULL) instead of evicting silently; entries go at accept or close.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
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
 * One slot per CPU, indexed by CPU number (a per-CPU array value may not exceed 32 KiB):
 * the state of a capture walk and the segment it gathers (capture.bpf.h, struct scratch).
 */
#define TT_CAP_STATE	256
#define TT_SCRATCH_SIZE	(TT_CAP_STATE + sizeof(struct tt_data_ev) + 2 * TT_SEG_MAX)
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);	/* the loader sets the number of possible CPUs */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, TT_SCRATCH_SIZE);
} scratch SEC(".maps");

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
	__u64 t, exec, rd;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TT_DLAST_SLOTS);
	__type(key, __u32);
	__type(value, struct d_last);
} dlast SEC(".maps");

const volatile bool d_percpu = false;	/* the loader found bpf_map_lookup_percpu_elem() */
const volatile __u32 nr_cpus = 1;	/* possible CPUs */

/* --aggregate: histograms per CPU (the per-connection times are in struct tt_conn) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tt_agg);
} agg_hist SEC(".maps");

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

__u64 conn_gen = 0;
__u32 drops_total = 0;	/* records dropped, all CPUs: stamped into every record header */

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += 1;	/* per-CPU: no atomics needed */
}

static __always_inline void rb_drop(void)
{
	stat_inc(TT_STAT_RB_DROP);
	__sync_fetch_and_add(&drops_total, 1);
}

static __always_inline bool is_lport(__u16 port)
{
	for (int i = 0; i < TT_LPORTS_MAX; i++)
		if (i < nlports && lport_list[i] == port)
			return true;
	return false;
}

/* a process whose sockets are traced */
static __always_inline bool is_target(__u32 tgid)
{
	return target_flags(tgid) & TT_TGT_DATA;
}

#include "rbwake.bpf.h"

static __always_inline void fill_hdr(struct tt_hdr *h, __u16 type, __u16 size)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	h->ts = bpf_ktime_get_ns();
	h->tgid = pid_tgid >> 32;
	h->tid = (__u32)pid_tgid;
	h->type = type;
	h->size = size;
	h->cpu = bpf_get_smp_processor_id();
	h->drops = drops_total;
	h->pad = 0;
}

static __always_inline int rb_output(void *rec, __u64 size)
{
	if (bpf_ringbuf_output(&events, rec, size, rb_flags())) {
		rb_drop();
		return -1;
	}
	return 0;
}

/*
 * A traced thread's state with stall attribution, kept with the task (freed when it exits):
 * when it went on and off CPU, why, who woke it, and its time summed by cause.
 */
struct thr_sched {
	/*
	 * What every switch, wake and send touches comes first, in as few cache lines as it
	 * fits: a thread's state is cold by its next event (~3 per token in a server)
	 */
	__u64 epoch;		/* sched_epoch when this state was made (lazy hooks): thr_claim() */
	__u64 t_in;		/* on CPU since (0: not seen on CPU yet) */
	__u64 steal_in;		/* its CPU's steal clock at t_in (core_fixes.bpf.h) */
	__u64 t_out;		/* off CPU since, 0 while on */
	__u64 t_wake;		/* woken (runnable) since, 0 */
	__u64 t_snap;		/* the last SNAP record */
	__u64 futex;
	__u32 state, sysnr;
	__u16 nk, nu, nwk;
	__u8 runnable, in_send, on, waker_traced;
	__u8 span_pending;	/* below: a span waiting for its syscall's exit */
	__u8 exit_armed;	/* woken from a long wait in a late_bit() syscall: its exit looks */
	__u8 out_unseen;	/* blocked before the (lazy) hooks came: its switch-out not seen */
	__u8 span_unseen;	/* the same of the span waiting for its exit */
	/* the last wake of any length (a short wait's too): when, and by which thread (0 an
	 * interrupt, or not known); a send carries it (sender_counters) */
	__u64 t_woken;
	__u32 woken_by_tid, woken_by_tgid;
	__u64 cum[TT_T_NR];
	/* the waker of a wait over the floor */
	__u32 waker_tid, waker_tgid;
	char waker_comm[TT_COMM_LEN];
	__u64 waker_cum[TT_T_NR];
	/*
	 * A span over the floor whose user stack is taken when its syscall returns (late_bit()):
	 * its end and the counters at its start, kept from the switch-in until then
	 */
	__u64 span_t_out, span_t_in;
	__u64 span_cum[TT_T_NR];
	__u64 kips[TT_KSTACK_MAX];
	__u64 uips[TT_USTACK_MAX];
	__u64 wkips[TT_KSTACK_MAX];
	/* the waker whose wake path wkips holds (wake_path()): thread, syscall, first argument */
	__u64 wk_a1;
	__u32 wk_tid, wk_nr;
	__u16 wk_n;
	/*
	 * --stall-hooks lazy, while the hooks are off: the thread's last send, and the kernel's
	 * own counters then (time on CPU, time waiting for one), so the attach can say what it
	 * did since (sched_seed()). Kept across epochs; d_epoch says which one they are of.
	 * Only on kernels without bpf_map_lookup_percpu_elem(): elsewhere they are in dlast.
	 */
	__u32 d_epoch;
	__u64 d_t, d_exec, d_rd;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thr_sched);
} thr SEC(".maps");

/* --stall-hooks lazy: see thr_resume() */
const volatile bool lazy_sched = false;
__u32 sched_epoch = 0;
/* when the loader (last) attached the scheduler hooks (CLOCK_MONOTONIC ns) */
__u64 t_attach = 0;
static __always_inline bool thr_stale(const struct thr_sched *ts);
static __always_inline bool hooks_live(void);
static __always_inline bool thr_current(struct task_struct *t, struct thr_sched *ts, __u64 now);

/* the block causes (block_cause()) are below 8: a mask the verifier sees bounds the index */
#define TT_T_BLOCK_MASK	7
_Static_assert(TT_T_SEND <= TT_T_BLOCK_MASK && TT_T_NR > TT_T_BLOCK_MASK, "block causes");

/*
 * A thread on CPU from ts->t_in to now (on the CPU it is on: a running task does not move):
 * that time into cum[], split into what it ran and what the hypervisor stole from its CPU.
 */
static __always_inline void add_oncpu_at(__u64 *cum, const struct thr_sched *ts, __u64 now,
					 __u64 steal)
{
	__u64 run = now > ts->t_in ? now - ts->t_in : 0, st = steal - ts->steal_in;

	if ((__s64)st < 0)	/* not the CPU it came on on: cannot be, but never negative */
		st = 0;
	if (st > run)	/* the steal clock is as of the run queue's last clock update */
		st = run;
	cum[TT_T_ONCPU] += run - st;
	cum[TT_T_STEAL] += st;
}

/* the same with the steal clock read now (the thread is current) */
static __always_inline void add_oncpu(__u64 *cum, const struct thr_sched *ts, __u64 now)
{
	add_oncpu_at(cum, ts, now, cpu_steal_ns());
}

#include "capture.bpf.h"
#include "python.bpf.h"

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

/* A stream socket tokentrace can parse: TCP over IPv4/IPv6, or a Unix stream socket. */
static __always_inline bool sk_is_stream(struct sock *sk)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);

	if (family == AF_UNIX)
		return unix_socks && BPF_CORE_READ(sk, sk_type) == SOCK_STREAM;
	if (family != AF_INET && family != AF_INET6)
		return false;
	return BPF_CORE_READ(sk, sk_protocol) == IPPROTO_TCP;
}

/*
 * The local ports that have had a connection in conns (a Unix socket's is 0), a bit each: 8
 * KiB that stay in cache. Data-ready runs for every socket of the machine, and for the
 * sockets of untraced processes (a loopback client's, every one of another program's) the
 * answer is no: one bit says so where a miss in conns' 64k buckets was a cache miss. A bit
 * is never cleared (a port may have another traced connection, or have one again), so a
 * traced client's many ephemeral ports only bring back the lookup for theirs.
 */
__u64 conn_ports[65536 / 64];

static __always_inline void conn_port_add(__u16 port)
{
	__u64 bit = 1ull << (port & 63);

	if (!(conn_ports[port >> 6] & bit))
		__sync_fetch_and_or(&conn_ports[port >> 6], bit);
}

static __always_inline bool conn_port_maybe(__u16 port)
{
	return conn_ports[port >> 6] & (1ull << (port & 63));
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
	if (bpf_map_update_elem(&conns, &key, &c, BPF_ANY)) {
		stat_inc(TT_STAT_CONN_FULL);
		return NULL;
	}
	if (!(flags & TT_CF_IGNORED) && !aggregate)
		emit_conn(sk, c.id, flags, fd, t_est);
	return bpf_map_lookup_elem(&conns, &key);
}

static __always_inline void agg_add(__u32 *hist, __u64 v)
{
	__u32 b = tt_agg_bucket(v);

	if (b < TT_AGG_BUCKETS)
		hist[b]++;	/* per-CPU */
}

/*
 * The first bytes (up to 8) a send or read moved, enough to tell a response head, the chunked
 * end or a request line; how many were read.
 */
static __always_inline __u32 peek8(const struct usrc *u, __u8 *h, __u32 want)
{
	__u64 p = u->ptr;

	if (u->kind == USRC_IOV) {
		struct iovec v;

		if (!u->len || bpf_probe_read_user(&v, sizeof(v), (void *)u->ptr))
			return 0;
		p = (__u64)v.iov_base;
		if (v.iov_len < want)
			want = v.iov_len;
	} else if (u->kind != USRC_CONTIG) {
		return 0;
	}
	/*
	 * A constant size, or a masked one the verifier sees: clang drops a mask or a clamp it
	 * can prove idle from the caller's bound, which the verifier may not have kept
	 */
	if (want >= 8)
		return bpf_probe_read_user(h, 8, (void *)p) ? 0 : 8;
	barrier_var(want);
	want &= 7;
	if (bpf_probe_read_user(h, want, (void *)p))
		return 0;
	return want;
}

/*
 * --aggregate: no records, no payload but the first bytes of a send, to leave out what is
 * not a token: the response head ("HTTP/1.") and the last-chunk marker ("0\r\n\r\n"). A read
 * starts a request: the next token-like send is its first, the ones after it its gaps.
 */
static __always_inline int aggregate_data(struct tt_conn *a, int ret, __u8 dir)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 zero = 0;
	struct tt_agg *t;
	struct usrc u;
	__u8 h[8] = {};

	if (ret <= 0)
		return 0;
	if (dir == TT_DIR_RECV) {
		a->agg_last_recv = now;
		a->agg_last_send = 0;
		return 0;
	}
	usrc_of_syscall(&u);
	if (peek8(&u, h, ret < 7 ? ret : 7) >= 5 &&
	    ((h[0] == 'H' && h[1] == 'T' && h[2] == 'T' && h[3] == 'P' && h[4] == '/') ||
	     (h[0] == '0' && h[1] == '\r' && h[2] == '\n' && h[3] == '\r' && h[4] == '\n')))
		return 0;
	t = bpf_map_lookup_elem(&agg_hist, &zero);
	if (!t)
		return 0;
	if (a->agg_last_send) {
		agg_add(t->itl, now - a->agg_last_send);
	} else if (a->agg_last_recv) {
		agg_add(t->ttft, now - a->agg_last_recv);
		t->firsts++;
	}
	a->agg_last_send = now;
	t->sends++;
	return 0;
}

/* A record of c was lost; dirbit 1 << its direction, or 3 for a state change. */
static __always_inline void conn_lose(struct tt_conn *c, __u8 dirbit)
{
	c->lost++;
	c->lost_dirs |= dirbit;
}

/* A record of c got through: it told the losses before it. */
static __always_inline void conn_told(struct tt_conn *c)
{
	c->lost = 0;
	c->lost_dirs = 0;
}

/* The loss flags of c's next record, with c->lost set */
static __always_inline __u8 conn_lost_flags(const struct tt_conn *c)
{
	return c->lost_dirs == 3 ? TT_DF_LOST | TT_DF_LOST_XDIR : TT_DF_LOST;
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

/*
 * --budget's clock (budget_admits() below says how it is kept), alone in its map: a global
 * beside the ones every send reads would share their cache line.
 */
const volatile __u64 budget_cost_ns = 0;	/* 1e9 / records a second; 0: no budget */

struct budget_clock {
	__u64 tat;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct budget_clock);
} budget SEC(".maps");

/* c pays for the records it sent since it last did; the clock, or NULL */
static __always_inline struct budget_clock *budget_charge(struct tt_conn *c)
{
	__u32 zero = 0;
	struct budget_clock *b = bpf_map_lookup_elem(&budget, &zero);

	if (b && c->recs) {
		__sync_fetch_and_add(&b->tat, (__u64)c->recs * budget_cost_ns);
		c->recs = 0;
	}
	return b;
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

/*
 * --budget: at most so many data records a second, on average, with whole exchanges (a
 * request and its answer) left out beyond it, never parts of one. Under a load the server
 * cannot serve any faster, the cost of tracing then stays what that rate of records costs,
 * and every exchange traced is complete; those left out are counted.
 *
 * The rate is kept as the generic cell rate algorithm keeps it: one clock (the budget map's
 * tat), the time at which the records delivered so far are paid for at budget_cost_ns each.
 * A connection counts the records it sent (tt_conn.recs) and pays for them at its next
 * decision, or at its end: one atomic add an exchange, not one a record (a clock every CPU
 * wrote at every send cost 285 ns a token at 10k tokens/s, its line bouncing between the
 * CPUs). An exchange is let in while the clock is less than budget_burst_ns ahead of now;
 * a clock that fell behind (an idle server) is brought to now first, so idle time is not
 * saved up beyond the burst. Paying an exchange late lets in at most one more exchange per
 * connection than paying as it goes. Decided at an exchange's start: a
 * connection's first send or read, and each run of them the way requests go (a server's
 * reads, a client's sends) after a run the other way. That way is learnt from the first run
 * that opens with an HTTP request line; until then such a run is the only other start.
 * Every other record follows the last decision. An exchange in flight is never cut: a rate
 * over the budget only defers the next one. (Not by the bytes alone: Go's server reads a
 * request's first byte on its own, in the read that watches for the client's close.)
 *
 * An exchange is left out too while the ring is over half full: a consumer starved of CPU
 * (one thread among a saturated server's) then costs whole requests, counted, instead of
 * the middles of many, and the half left is for the exchanges already let in.
 */
const volatile __u64 budget_burst_ns = 0;
const volatile __u64 budget_ring_max = ~0ull;	/* bytes waiting in the ring: no new exchange */

/* the first bytes moved begin an HTTP request line (a method of capitals, a space) */
static __always_inline bool request_line(const struct usrc *u, int ret)
{
	__u8 h[8] = {};
	__u32 n = peek8(u, h, ret < 8 ? ret : 8);

	for (int i = 0; i < 8 && i < n; i++) {
		if (h[i] == ' ')
			return i >= 3;
		if (h[i] < 'A' || h[i] > 'Z')
			return false;
	}
	return false;
}

/*
 * Is this send or read of c (ret bytes, in direction dir, its bytes where u says) to be sent
 * under the budget? u NULL: those of the current syscall.
 */
static __always_inline bool budget_admits(struct tt_conn *c, __u8 dir, int ret,
					  const struct usrc *u)
{
	__u8 run = dir + 1;
	bool first = !c->run;
	struct budget_clock *b;
	__u64 now, tat;
	struct usrc us;

	if (c->run == run || ret <= 0)
		goto follow;
	c->run = run;
	if (!c->req_run) {
		if (!u) {
			usrc_of_syscall(&us);
			u = &us;
		}
		if (request_line(u, ret))
			c->req_run = run;
		else if (!first)
			goto follow;
	} else if (c->req_run != run) {
		goto follow;	/* an answer */
	}
	now = bpf_ktime_get_ns();
	b = budget_charge(c);
	if (!b)
		goto follow;
	tat = b->tat;
	if (tat < now) {
		/* another CPU's add in between wins: its charge is then the one lost */
		__sync_val_compare_and_swap(&b->tat, tat, now);
		tat = b->tat;
	}
	c->skip = (__s64)(tat - now) > (__s64)budget_burst_ns ||
		  bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > budget_ring_max;
	if (c->skip) {
		if (c->skipped < 0xffff)
			c->skipped++;
		stat_inc(TT_STAT_BUDGET_SKIP);
	}
follow:
	if (c->skip)
		stat_inc(TT_STAT_BUDGET_RECS);
	return !c->skip;
}

/* A record of c went out under the budget: to be paid for, and it told the exchanges left out. */
static __always_inline void budget_pay(struct tt_conn *c)
{
	c->recs++;
	c->skipped = 0;
}

/*
 * A send or receive of a target thread on socket sk moved ret bytes (or failed with ret < 0).
 */
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

/* The calling thread's time counters, on CPU up to now (a send: one end of a gap between
 * tokens), and its last wake. */
static __always_inline void flush_late(void *ctx, struct task_struct *t, struct thr_sched *ts,
				       bool in_call);
static __always_inline void mend_switch_in(void *ctx, struct task_struct *t,
					   struct thr_sched *ts, __u64 now, __u64 steal);
static __always_inline void disarm_exit(struct thr_sched *ts);

/* is the current thread still in the syscall it last blocked in */
static __always_inline bool in_blocked_call(struct task_struct *t, const struct thr_sched *ts)
{
	return ((struct pt_regs *)bpf_task_pt_regs(t))->orig_ax == ts->sysnr;
}

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
}

static __always_inline void thread_counters(void *ctx, struct thr_sched *ts,
					    struct tt_data_ev *ev)
{
	struct task_struct *t = bpf_get_current_task_btf();
	__u64 now = ev->h.ts;

	if (!ts)
		return;
	if (!thr_current(t, ts, now)) {
		/* the hooks are off: what the kernel counts of it, for their attach */
		ts->d_epoch = sched_epoch;
		ts->d_t = now;
		ts->d_exec = t->se.sum_exec_runtime;
		ts->d_rd = task_run_delay(t);
		return;
	}
	/*
	 * A span waiting for its syscall's exit goes first: this send or read ends a gap inside
	 * that syscall, and userspace explains the gap when its record comes.
	 */
	if (ts->span_pending)
		flush_late(ctx, t, ts, in_blocked_call(t, ts));
	/* a thread sending is on CPU, whatever its state says */
	mend_switch_in(ctx, t, ts, now, cpu_steal_ns());
	if (!ts->on)
		return;	/* not seen on CPU since the attach: no counters yet */
	__builtin_memcpy(ev->cum, ts->cum, sizeof(ev->cum));
	add_oncpu(ev->cum, ts, now);
	ev->flags |= TT_DF_CUM;
	ts->t_snap = now;	/* the record is a sample of the counters */
	ev->t_woken = ts->t_woken;
	ev->waker_tid = ts->woken_by_tid;
	ev->waker_tgid = ts->woken_by_tgid;
}

#include "tls.bpf.h"

static __always_inline int data_of_sock(void *ctx, struct sock *sk, int ret, __u8 dir,
					__u64 pid_tgid, bool typed)
{
	__u64 key = (__u64)sk, t_ready;
	struct tt_conn *c;
	struct scratch *s;
	struct cap *cx;
	struct usrc u;
	__u32 want;

	c = bpf_map_lookup_elem(&conns, &key);
	/*
	 * The rest of a run the budget left out (budget_admits() would say so after the work
	 * below): a third of a send's cost at saturation, where most sends are these. Not with
	 * an SSL call open anywhere: a TLS socket's ciphertext ties it to its plaintext first.
	 * TCP: what was sent and written since is not looked at, so the next look must not
	 * take what left as this connection's (ready_time(): write_seq 0 is "not known").
	 * Unix: the delivery this send made is taken, as any send takes it.
	 */
	if (c && c->skip && c->run == dir + 1 && ret > 0 && c->mode == TT_MODE_CAPTURE &&
	    !(tls_uprobes && ssl_open)) {
		if (c->unix_sk)
			ready_time(sk, c, dir, ret, typed);
		else
			c->write_seq = 0;
		stat_inc(TT_STAT_BUDGET_RECS);
		return 0;
	}
	if (!c) {
		/* errors and EOF on a socket we never saw carry nothing to correlate */
		if (ret <= 0 || !sk_is_stream(sk))
			return 0;
		c = conn_new(sk, 0, (__u32)-1);
		if (!c)
			return 0;
	}
	t_ready = c->mode == TT_MODE_IGNORE ? 0 : ready_time(sk, c, dir, ret, typed);
	/*
	 * inside an SSL call of the thread: ciphertext, its plaintext comes at the call's end
	 * (tied to this connection even when it is left out, so the plaintext is left out too)
	 */
	if (tls_uprobes && ret > 0 && tls_socket_io(c, key, pid_tgid, t_ready ?: bpf_ktime_get_ns()))
		return 0;
	if (c->mode == TT_MODE_IGNORE)
		return 0;
	if (c->mode == TT_MODE_TLS)
		return 0;	/* TLS bytes outside an SSL call (read-ahead, a handshake) */
	if (ret == 0 && dir == TT_DIR_RECV && c->unix_sk) {
		/* a Unix socket has no FIN to see: EOF on a read is the peer's close */
		emit_state(c, TCP_ESTABLISHED, TCP_CLOSE_WAIT);
		return 0;
	}
	/* EAGAIN is an event loop polling; EOF shows as a state change. Keep real errors. */
	if (ret == 0 || ret == -EAGAIN)
		return 0;
	if (aggregate)
		return aggregate_data(c, ret, dir);
	if (user_ignored(c))
		return 0;
	if (budget_cost_ns && !budget_admits(c, dir, ret, NULL))
		return 0;
	/*
	 * The rest of a run that lost a record: userspace aborted its response at the loss and
	 * would only throw these away, after the ring took them and the consumer parsed them.
	 * Counted as lost, one record each, before anything else is done: at saturation most
	 * sends that are not sent are these. The thread's counters are not sampled either
	 * (nothing is sent that a drop window would have to cover: the connection's own count
	 * rides on its next record). Errors still go: a reset or a dead peer says how the
	 * connection ended.
	 */
	if (c->shed) {
		if (c->shed_dir == dir && ret > 0) {
			if (dir == TT_DIR_RECV)
				c->t_data = 0;
			conn_lose(c, 1 << dir);
			stat_inc(TT_STAT_RB_DROP);
			return 0;
		}
		c->shed = 0;
	}

	s = scratch_slot();
	if (!s)
		return 0;
	cx = &s->cx;
	__builtin_memset(&cx->tmpl, 0, sizeof(cx->tmpl));
	fill_hdr(&cx->tmpl.h, TT_EV_DATA, sizeof(cx->tmpl));
	cx->tmpl.conn_id = c->id;
	cx->tmpl.ret = ret;
	if (stalls && d_percpu && !hooks_live())	/* lazy hooks off just now */
		d_last_note((__u32)pid_tgid, cx->tmpl.h.ts);
	else if (stalls)
		thread_counters(ctx, bpf_task_storage_get(&thr, bpf_get_current_task_btf(), 0,
							  BPF_LOCAL_STORAGE_GET_F_CREATE), &cx->tmpl);
	cx->tmpl.dir = dir;
	cx->tmpl.t_ready = t_ready;
	if (dir == TT_DIR_RECV) {
		/* how long the bytes this read returns had been waiting in the socket */
		cx->tmpl.arrival = c->t_data;
		c->t_data = 0;
	}
	if (c->lost) {
		cx->tmpl.flags |= conn_lost_flags(c);
		cx->tmpl.lost = c->lost;
	}
	cx->tmpl.skipped = c->skipped;
	want = ret > 0 ? ret : 0;
	if (want > cap_bytes) {
		want = cap_bytes;
		stat_inc(TT_STAT_TRUNC);
	}
	usrc_of_syscall(&u);
	cx->tmpl.sysnr = u.sysnr;
	if (want && u.kind == USRC_NONE)
		cx->tmpl.flags |= TT_DF_NOBUF;
	if (capture(s, &u, want)) {
		conn_lose(c, 1 << dir);
		c->shed = 1;
		c->shed_dir = dir;
	} else {
		conn_told(c);
		if (budget_cost_ns)
			budget_pay(c);
	}
	return 0;
}

/* the tp and fexit families: sk is typed */
static __always_inline int handle_data(void *ctx, struct sock *sk, int ret, __u8 dir)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	if (!sk || !is_target(pid_tgid >> 32))
		return 0;
	return data_of_sock(ctx, sk, ret, dir, pid_tgid, true);
}

/* ------------------------------------------------------------------ data: tp family */

SEC("tp_btf/sock_send_length")
int BPF_PROG(sock_send_length, struct sock *sk, int ret, int flags)
{
	return handle_data(ctx, sk, ret, TT_DIR_SEND);
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(sock_recv_length, struct sock *sk, int ret, int flags)
{
	if (flags & MSG_PEEK)	/* the same bytes will be read again */
		return 0;
	return handle_data(ctx, sk, ret, TT_DIR_RECV);
}

/* ------------------------------------------------------------------ data: fexit family */

SEC("fexit/inet_sendmsg")
int BPF_PROG(fexit_inet_sendmsg, struct socket *sock, struct msghdr *msg, size_t size, int ret)
{
	return handle_data(ctx, sock->sk, ret, TT_DIR_SEND);
}

SEC("fexit/inet6_sendmsg")
int BPF_PROG(fexit_inet6_sendmsg, struct socket *sock, struct msghdr *msg, size_t size, int ret)
{
	return handle_data(ctx, sock->sk, ret, TT_DIR_SEND);
}

SEC("fexit/unix_stream_sendmsg")
int BPF_PROG(fexit_unix_sendmsg, struct socket *sock, struct msghdr *msg, size_t size, int ret)
{
	return handle_data(ctx, sock->sk, ret, TT_DIR_SEND);
}

SEC("fexit/inet_recvmsg")
int BPF_PROG(fexit_inet_recvmsg, struct socket *sock, struct msghdr *msg, size_t size,
	     int flags, int ret)
{
	if (flags & MSG_PEEK)
		return 0;
	return handle_data(ctx, sock->sk, ret, TT_DIR_RECV);
}

SEC("fexit/inet6_recvmsg")
int BPF_PROG(fexit_inet6_recvmsg, struct socket *sock, struct msghdr *msg, size_t size,
	     int flags, int ret)
{
	if (flags & MSG_PEEK)
		return 0;
	return handle_data(ctx, sock->sk, ret, TT_DIR_RECV);
}

SEC("fexit/unix_stream_recvmsg")
int BPF_PROG(fexit_unix_recvmsg, struct socket *sock, struct msghdr *msg, size_t size,
	     int flags, int ret)
{
	if (flags & MSG_PEEK)
		return 0;
	return handle_data(ctx, sock->sk, ret, TT_DIR_RECV);
}

/* ------------------------------------------------------------------ data: kprobe family */

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
	struct sock *sk;
	__u32 flags;

	if (!st)
		return 0;
	sk = (struct sock *)st->sk;
	flags = st->flags;
	bpf_map_delete_elem(&kstash, &pid_tgid);
	if (dir == TT_DIR_RECV && (flags & MSG_PEEK))
		return 0;
	return data_of_sock(ctx, sk, ret, dir, pid_tgid, false);
}

SEC("kprobe/inet_sendmsg")
int BPF_KPROBE(kp_inet_sendmsg, struct socket *sock)
{
	return kprobe_enter(sock, 0);
}

SEC("kretprobe/inet_sendmsg")
int BPF_KRETPROBE(krp_inet_sendmsg, int ret)
{
	return kprobe_exit(ctx, ret, TT_DIR_SEND);
}

SEC("kprobe/inet6_sendmsg")
int BPF_KPROBE(kp_inet6_sendmsg, struct socket *sock)
{
	return kprobe_enter(sock, 0);
}

SEC("kretprobe/inet6_sendmsg")
int BPF_KRETPROBE(krp_inet6_sendmsg, int ret)
{
	return kprobe_exit(ctx, ret, TT_DIR_SEND);
}

SEC("kprobe/unix_stream_sendmsg")
int BPF_KPROBE(kp_unix_sendmsg, struct socket *sock)
{
	return kprobe_enter(sock, 0);
}

SEC("kretprobe/unix_stream_sendmsg")
int BPF_KRETPROBE(krp_unix_sendmsg, int ret)
{
	return kprobe_exit(ctx, ret, TT_DIR_SEND);
}

SEC("kprobe/inet_recvmsg")
int BPF_KPROBE(kp_inet_recvmsg, struct socket *sock, struct msghdr *msg, size_t size, int flags)
{
	return kprobe_enter(sock, flags);
}

SEC("kretprobe/inet_recvmsg")
int BPF_KRETPROBE(krp_inet_recvmsg, int ret)
{
	return kprobe_exit(ctx, ret, TT_DIR_RECV);
}

SEC("kprobe/inet6_recvmsg")
int BPF_KPROBE(kp_inet6_recvmsg, struct socket *sock, struct msghdr *msg, size_t size, int flags)
{
	return kprobe_enter(sock, flags);
}

SEC("kretprobe/inet6_recvmsg")
int BPF_KRETPROBE(krp_inet6_recvmsg, int ret)
{
	return kprobe_exit(ctx, ret, TT_DIR_RECV);
}

SEC("kprobe/unix_stream_recvmsg")
int BPF_KPROBE(kp_unix_recvmsg, struct socket *sock, struct msghdr *msg, size_t size, int flags)
{
	return kprobe_enter(sock, flags);
}

SEC("kretprobe/unix_stream_recvmsg")
int BPF_KRETPROBE(krp_unix_recvmsg, int ret)
{
	return kprobe_exit(ctx, ret, TT_DIR_RECV);
}

/* ------------------------------------------------------------------ data: syscall family */

#define S_IFMT		0170000
#define S_IFSOCK	0140000

/* The socket behind a descriptor of the current task, or NULL. */
static __always_inline struct sock *sock_of_fd(long fd)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct fdtable *fdt;
	struct file **fds, *f;
	struct socket *sock;

	if (fd < 0)
		return NULL;
	fdt = BPF_CORE_READ(task, files, fdt);
	/* the descriptor is a user register: never index past the table */
	if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) || !f)
		return NULL;
	if ((BPF_CORE_READ(f, f_inode, i_mode) & S_IFMT) != S_IFSOCK)
		return NULL;
	sock = BPF_CORE_READ(f, private_data);
	return BPF_CORE_READ(sock, sk);
}

static __always_inline int sys_data(void *ctx, long ret, __u8 dir)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
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
	return data_of_sock(ctx, sk, ret, dir, pid_tgid, false);
}

SEC("tracepoint/syscalls/sys_exit_write")
int sys_exit_write(struct trace_event_raw_sys_exit *ctx)
{
	return sys_data(ctx, ctx->ret, TT_DIR_SEND);
}

SEC("tracepoint/syscalls/sys_exit_writev")
int sys_exit_writev(struct trace_event_raw_sys_exit *ctx)
{
	return sys_data(ctx, ctx->ret, TT_DIR_SEND);
}

SEC("tracepoint/syscalls/sys_exit_sendto")
int sys_exit_sendto(struct trace_event_raw_sys_exit *ctx)
{
	return sys_data(ctx, ctx->ret, TT_DIR_SEND);
}

SEC("tracepoint/syscalls/sys_exit_sendmsg")
int sys_exit_sendmsg(struct trace_event_raw_sys_exit *ctx)
{
	return sys_data(ctx, ctx->ret, TT_DIR_SEND);
}

SEC("tracepoint/syscalls/sys_exit_read")
int sys_exit_read(struct trace_event_raw_sys_exit *ctx)
{
	return sys_data(ctx, ctx->ret, TT_DIR_RECV);
}

SEC("tracepoint/syscalls/sys_exit_readv")
int sys_exit_readv(struct trace_event_raw_sys_exit *ctx)
{
	return sys_data(ctx, ctx->ret, TT_DIR_RECV);
}

SEC("tracepoint/syscalls/sys_exit_recvfrom")
int sys_exit_recvfrom(struct trace_event_raw_sys_exit *ctx)
{
	return sys_data(ctx, ctx->ret, TT_DIR_RECV);
}

SEC("tracepoint/syscalls/sys_exit_recvmsg")
int sys_exit_recvmsg(struct trace_event_raw_sys_exit *ctx)
{
	return sys_data(ctx, ctx->ret, TT_DIR_RECV);
}

/* ------------------------------------------------------------------ connections */

/* ------------------------------------------------------------------ processes */

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

/* A new process (not a thread): the child of a traced one is traced too. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(proc_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);

	if (BPF_CORE_READ(child, tgid) == ptgid)
		return 0;
	if (target_flags(ptgid) && follow_forks)
		proc_add(child, ptgid, TT_PROC_FORK, 0);
	else if (find_cgroup && bpf_get_current_cgroup_id() == find_cgroup)
		proc_add(child, ptgid, TT_PROC_FOUND, 2);
	return 0;
}

/* exec: a traced process stays traced under its new name; a new one may be found by it */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(proc_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
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

SEC("tp_btf/sched_process_exit")
int BPF_PROG(proc_exit, struct task_struct *p)
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
 * The syscalls tokentrace hooks outside the socket layer (accept, close, and with stalls the
 * exits of futex and the sleeps) come in two forms. A syscall tracepoint, any one, sends
 * every syscall of every process on the machine down the kernel's tracing slow path while it
 * is attached (the per-task flag is set machine-wide): ~55 ns more a syscall on this
 * project's VMs (BENCHMARKS.md), paid by processes tokentrace does not trace. Where the
 * kernel has BPF trampolines (the loader probes: Linux 5.5+ with ftrace direct calls), the
 * syscalls' own functions are hooked instead, and only their calls pay. x86-64's wrappers,
 * which take the user registers: 64-bit processes' calls only (a 32-bit server's accept
 * would not be seen; its connections are still found at their first read or write).
 */
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

SEC("fexit/__x64_sys_accept4")
int BPF_PROG(fx_exit_accept4, const struct pt_regs *regs, long ret)
{
	return handle_accept(ret);
}

SEC("fexit/__x64_sys_accept")
int BPF_PROG(fx_exit_accept, const struct pt_regs *regs, long ret)
{
	return handle_accept(ret);
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

SEC("tracepoint/syscalls/sys_enter_close")
int sys_enter_close(struct trace_event_raw_sys_enter *ctx)
{
	return close_fd(ctx->args[0]);
}

SEC("fentry/__x64_sys_close")
int BPF_PROG(fx_enter_close, const struct pt_regs *regs)
{
	return close_fd(regs->di);
}

/*
 * TCP state changes run in softirq as often as in the process: the socket address, not the
 * current task, says whether the connection is ours.
 */
SEC("raw_tp/inet_sock_set_state")
int BPF_PROG(inet_sock_set_state, struct sock *sk, int oldstate, int newstate)
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

/*
 * The current thread is inside a send syscall. Its queued bytes also leave when an ACK is
 * processed in its context while it waits in epoll or runs in userspace (an interrupt's
 * softirq): such a delivery is of older bytes, and must not date the thread's next send.
 */
static __always_inline bool in_send_syscall(void)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	long nr = regs->orig_ax;

	return nr == TT_NR_write || nr == TT_NR_writev || nr == TT_NR_sendto ||
	       nr == TT_NR_sendmsg;
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

SEC("tp_btf/sk_data_ready")
int BPF_PROG(sk_data_ready, struct sock *sk)
{
	return data_ready(sk, true);
}

/* kernels without the sk_data_ready tracepoint (before 6.4): the default callback itself */
SEC("fentry/sock_def_readable")
int BPF_PROG(fentry_sock_def_readable, struct sock *sk)
{
	return data_ready(sk, true);
}

SEC("kprobe/sock_def_readable")
int BPF_KPROBE(kp_sock_def_readable, struct sock *sk)
{
	return data_ready(sk, false);
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
	if (!c->unix_sk && !BPF_CORE_READ((struct tcp_sock *)sk, snd_wnd))
		emit_tcp(c, TT_TCP_ZERO_WINDOW, BPF_CORE_READ((struct tcp_sock *)sk, snd_cwnd));
	return true;
}

static __always_inline bool is_poll(unsigned long nr)
{
	return nr == TT_NR_epoll_wait || nr == TT_NR_epoll_pwait || nr == TT_NR_epoll_pwait2 ||
	       nr == TT_NR_poll || nr == TT_NR_ppoll || nr == TT_NR_select || nr == TT_NR_pselect6;
}

/* Blocks whose syscall says it all (a lock, a sleep, a poll) skip the kernel stack walk. */
static __always_inline bool kstack_tells(unsigned long nr)
{
	return nr != TT_NR_futex && nr != TT_NR_futex_waitv && nr != TT_NR_nanosleep &&
	       nr != TT_NR_clock_nanosleep && !is_poll(nr);
}

/* What a block is, from the syscall it blocked in and the task's state (enum tt_time). */
static __always_inline __u32 block_cause(unsigned long nr, __u32 state, bool in_send)
{
	if (in_send)
		return TT_T_SEND;
	if (nr == TT_NR_futex || nr == TT_NR_futex_waitv)
		return TT_T_LOCK;
	if (nr == TT_NR_nanosleep || nr == TT_NR_clock_nanosleep)
		return TT_T_SLEEP;
	if (is_poll(nr))
		return TT_T_POLL;
	if (nr == TT_NR_read || nr == TT_NR_readv || nr == TT_NR_recvfrom || nr == TT_NR_recvmsg)
		return TT_T_IO;
	/* uninterruptible: the kernel waits on a device (disk, a page fault) */
	if (state & 2)
		return TT_T_IO;
	return TT_T_BLOCKED;
}

/*
 * Is this CPU running an interrupt's work: a timer's expiry (an hrtimer: sleeps' and polls'
 * timeouts), a softirq (the network's receive, the timer wheel) or a device's interrupt
 * handler? Then "current" is whatever task was interrupted, or the idle task, not a waker.
 *
 * On x86-64 every hardirq and softirq runs on the CPU's own interrupt stack, never on the
 * interrupted task's: the entry code switches to it, softirqs go there too (irq_exit() runs
 * them while still on it, local_bh_enable() through do_softirq_own_stack()). A BPF program
 * runs on the stack of whatever it was called from, so the address of one of its own
 * variables says which: just below its pt_regs it is the task. This costs a subtraction at
 * a wake (a pointer minus a pointer is a number to a program that may read kernel memory; a
 * probe read of both addresses did it before, 25-30 ns more a wake), where a pair of hooks
 * around every softirq and interrupt of the machine cost ~0.5 us a loopback send
 * (BENCHMARKS.md; the kernel's preempt count, which says the same, is a per-CPU variable
 * libbpf can only resolve with CONFIG_KALLSYMS_ALL).
 * ksoftirqd runs softirqs on its own task stack: told by its name. Timers' expiries are
 * told apart from the rest by the hooks around them, per CPU: inside one while the last
 * begin is later than the last end (times, not depths: a begin or an end missed is mended
 * by the next one).
 */
struct irq_ctx {
	__u64 in;
	__u64 out;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct irq_ctx);
} hrtimer_ctx SEC(".maps");

static __always_inline int hrtimer_step(bool in)
{
	__u32 zero = 0;
	struct irq_ctx *v = bpf_map_lookup_elem(&hrtimer_ctx, &zero);

	if (!v)
		return 0;
	if (in)
		v->in = bpf_ktime_get_ns();
	else
		v->out = bpf_ktime_get_ns();
	return 0;
}

#define PF_KTHREAD	0x00200000

/*
 * Does this run on the current task's own kernel stack (not an interrupt's)? x86-64's task
 * stack is 16 KiB (32 with KASAN) with the task's pt_regs at its top: a frame
 * of the task's own is less than 16 KiB below them (on a KASAN kernel one deeper than that
 * would read as an interrupt's), an interrupt stack's is not between them at all. The
 * stack's base itself is a number the verifiers before 6.18 will not subtract from a pointer.
 */
#define TT_TASK_STACK_MIN	16384

static __always_inline bool on_task_stack(struct task_struct *t)
{
	__u64 here = 0;
	/* pointer minus pointer is a number for a program that may read kernel memory; the
	 * barrier keeps the compiler from folding the tests below into the subtraction (into
	 * arithmetic on a pointer, which no verifier takes) */
	long below = (char *)bpf_task_pt_regs(t) - (char *)&here;

	barrier_var(below);
	return below > 0 && below < TT_TASK_STACK_MIN;
}

/*
 * Who does a wake on this CPU now: a timer's expiry (TT_WAKER_TIMER), an interrupt
 * (TT_WAKER_IRQ: a device, a softirq run for whatever task it interrupted, the idle task),
 * or the current task itself (0). A softirq inside a send syscall is the sender's own
 * delivery (loopback TCP runs the receive there): the sender woke the reader.
 */
static __always_inline __u32 in_irq_work(void)
{
	struct task_struct *t = bpf_get_current_task_btf();
	__u32 zero = 0;
	struct irq_ctx *v = bpf_map_lookup_elem(&hrtimer_ctx, &zero);
	static const char ksoftirqd[] = "ksoftirqd/";

	/* (an expiry begun before the hooks' last attach is one whose end was not seen) */
	if (v && v->in > v->out && v->in >= t_attach)
		return TT_WAKER_TIMER;
	if (!t->pid)
		return TT_WAKER_IRQ;
	if (!on_task_stack(t))
		return in_send_syscall() ? 0 : TT_WAKER_IRQ;
	if (!(t->flags & PF_KTHREAD))
		return 0;
	for (int i = 0; i < sizeof(ksoftirqd) - 1; i++)
		if (t->comm[i] != ksoftirqd[i])
			return 0;
	return TT_WAKER_IRQ;
}

SEC("raw_tp/hrtimer_expire_entry")
int BPF_PROG(irq_hrtimer_in) { return hrtimer_step(true); }
SEC("raw_tp/hrtimer_expire_exit")
int BPF_PROG(irq_hrtimer_out) { return hrtimer_step(false); }

/* a span off CPU at least this long is sent with its details; shorter ones are only summed */
const volatile __u64 span_floor_ns = 10000000;
/* a thread on and off CPU all the time sends its counters this often at most */
#define TT_SNAP_NS	100000000ull

static __always_inline bool sched_target(__u32 tgid)
{
	return target_flags(tgid) & TT_TGT_SCHED;
}

/* ts blocks in syscall nr, a1 its first argument: what its span's cause is read from */
static __always_inline void blocked_in(struct thr_sched *ts, unsigned long nr, unsigned long a1)
{
	ts->sysnr = nr;
	ts->in_send = blocked_in_send(nr, a1);
	ts->futex = nr == TT_NR_futex ? a1 : 0;
}

/*
 * t, blocked in a syscall and not seen since the attach (its first event is its wake): its
 * state as if it had blocked at the attach, in the syscall it is in.
 */
static __always_inline void blocked_since_attach(struct task_struct *t, struct thr_sched *ts)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);

	ts->t_out = t_attach ?: bpf_ktime_get_ns();
	/* a state made anew after the (lazy) attach knows nothing before its RESUME sample */
	if (ts->t_snap > ts->t_out)
		ts->t_out = ts->t_snap;
	ts->t_snap = ts->t_out;
	ts->runnable = 0;
	ts->out_unseen = 1;
	ts->state = task_state(t);
	blocked_in(ts, regs->orig_ax, regs->di);
}

/* A stack into buf; how many addresses. One that cannot be walked is counted. */
static __always_inline __u16 stack_len(long n)
{
	if (n < 0) {
		if (n != -EFAULT)
			stat_inc(TT_STAT_STACK_LOST);
		return 0;
	}
	return n / sizeof(__u64);
}

static __always_inline __u16 get_stack(void *ctx, __u64 *buf, __u32 size, __u64 flags)
{
	return stack_len(bpf_get_stack(ctx, buf, size, flags));
}

/*
 * Walking a user stack is the dearest thing done at a switch (a microsecond and more on a
 * VM), and only the rare block that becomes a span over the floor needs it. Another task's
 * user stack cannot be walked (the kernel refuses cross-task user callchains), but a thread
 * blocked in a syscall returns to user space through that syscall's exit with the very stack
 * it blocked with: for the syscalls servers block in, the span is sent from there, with the
 * stack, and only when it is long. Bit per syscall; late_mask (set by the loader once the
 * exit hooks are attached) says which are on. Others take the stack at every switch-out.
 * Only the waits are deferred (locks, sleeps): every process on the machine pays an exit
 * hook at each call of the syscall, and a server's reads and writes are many and rarely
 * block (event loops poll), so a blocking read or write takes its stack at the switch-out.
 */
__u32 late_mask;
/*
 * Spans waiting for their syscall's exit, and threads woken from a long wait in one whose
 * switch-in is not seen yet (exit_armed), on all threads: while none, an exit hook (a
 * futex's: several a token in a server whose threads hand off with condition variables)
 * returns before looking for the thread's state. A count left high by a task freed with
 * its span still pending only costs that lookup.
 */
__s64 late_pending = 0;

/* its switch-in seen (or mended), or it exits: its syscall's exit need not look for it */
static __always_inline void disarm_exit(struct thr_sched *ts)
{
	if (ts->exit_armed) {
		ts->exit_armed = 0;
		__sync_fetch_and_add(&late_pending, -1);
	}
}

static __always_inline __u32 late_bit(unsigned long nr)
{
	switch (nr) {
	case TT_NR_futex:		return 1u << 0;
	case TT_NR_nanosleep:		return 1u << 1;
	case TT_NR_clock_nanosleep:	return 1u << 2;
	default:			return 0;
	}
}

/*
 * A sample of t's counters at now (userspace interpolates between samples; past a thread's
 * last one it knows nothing). oncpu: t is current and running, its run so far counts.
 */
static __always_inline void emit_sample(struct task_struct *t, struct thr_sched *ts, __u64 now,
					bool oncpu, __u8 kind)
{
	struct tt_sched_ev *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		rb_drop();
		return;
	}
	__builtin_memset(e, 0, sizeof(*e));
	fill_hdr(&e->h, TT_EV_SCHED, sizeof(*e));
	e->h.tgid = t->tgid;
	e->h.tid = t->pid;
	e->h.ts = now;
	e->kind = kind;
	e->sysnr = -1;
	__builtin_memcpy(e->cum, ts->cum, sizeof(e->cum));
	if (oncpu && ts->on && ts->t_in)
		add_oncpu(e->cum, ts, now);
	bpf_ringbuf_submit(e, rb_flags());
	ts->t_snap = now;
}

static __always_inline void emit_snap(struct task_struct *t, struct thr_sched *ts, __u64 now,
				      bool oncpu)
{
	emit_sample(t, ts, now, oncpu, TT_SCHED_SNAP);
}

/*
 * --stall-hooks lazy: the scheduler hooks (sched_switch, sched_waking, the late exits, the
 * hrtimer pair) are attached only while a traced stream has been quiet for a while (the
 * loader's loader__stall_hooks(), asked by the consumer), so a server streaming smoothly
 * pays none of them. sched_epoch is odd while they are attached; the loader bumps it at
 * each attach and each detach. A thread's state made in another epoch knows nothing of the
 * time since (its switches went unseen): at the attach the task iterator below gives every
 * traced thread its state as it is then (on CPU, runnable, or blocked in a syscall), and a
 * hook meeting a state it did not reach makes it anew, from that moment. Its counters go
 * on from where they were, and a RESUME sample says where: what the thread did between its
 * sample before and that one is not known (userspace counts that time as unknown).
 */
static __always_inline bool thr_stale(const struct thr_sched *ts)
{
	return lazy_sched && (ts->epoch != sched_epoch || !(sched_epoch & 1));
}

/*
 * Take a stale state to make it anew: a hook and the iterator (or hooks on two CPUs) may
 * meet the same thread at once, and only one of them may make it (the other goes on with
 * what that one made). The loser of the race sees the winner's state, not a mix of both.
 */
static __always_inline bool thr_claim(struct thr_sched *ts)
{
	__u64 e = ts->epoch, cur = sched_epoch;

	return lazy_sched && (cur & 1) && e != cur &&
	       __sync_val_compare_and_swap(&ts->epoch, e, cur) == e;
}

/* the hooks are attached and what they see is kept (odd epoch); for a while as they come
 * and go they run with the epoch even, and keep nothing */
static __always_inline bool hooks_live(void)
{
	return !lazy_sched || (sched_epoch & 1);
}

/* forget what ts knew of the scheduler (keep its counters) from now */
static __always_inline void thr_resume(struct task_struct *t, struct thr_sched *ts, __u64 now)
{
	__builtin_memset(&ts->t_in, 0,
			 offsetof(struct thr_sched, cum) - offsetof(struct thr_sched, t_in));
	__builtin_memset(&ts->waker_tid, 0,
			 offsetof(struct thr_sched, kips) - offsetof(struct thr_sched, waker_tid));
	ts->wk_tid = 0;
	ts->wk_n = 0;
	ts->sysnr = -1;
	emit_sample(t, ts, now, false, TT_SCHED_RESUME);
}

/*
 * t is current (it sends, or wakes a thread): a state from another epoch is made anew, on
 * CPU from now. False while the hooks are off: its state says nothing then.
 */
static __always_inline bool thr_current(struct task_struct *t, struct thr_sched *ts, __u64 now)
{
	if (!hooks_live())
		return false;
	if (!thr_claim(ts))
		return true;
	thr_resume(t, ts, now);
	ts->on = 1;
	ts->t_in = now;
	ts->steal_in = cpu_steal_ns();
	return true;
}

/*
 * The scheduling state of t if it is a traced thread, made on its first switch or wake. The
 * targets' bitmap answers for the others (the idle task's tgid 0 is never in it) before any
 * helper call.
 */
static __always_inline struct thr_sched *thr_of(struct task_struct *t)
{
	struct thr_sched *ts;

	if (!sched_target(t->tgid) || !hooks_live())
		return NULL;
	ts = bpf_task_storage_get(&thr, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ts)
		stat_inc(TT_STAT_SCHED_MISS);
	else if (thr_claim(ts))
		thr_resume(t, ts, bpf_ktime_get_ns());
	return ts;
}

/*
 * A span off CPU [t_out, t_in) of thread t, cum its counters at t_out; the rest is in ts
 * until its next switch-out. ustack: take the user stack now (t is current, still in the
 * syscall it blocked in), else the one kept at the switch-out.
 */
static __always_inline void emit_span(void *ctx, struct task_struct *t, struct thr_sched *ts,
				      __u64 t_out, __u64 t_in, const __u64 *cum, bool ustack)
{
	struct tt_sched_ev *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		rb_drop();
		return;
	}
	fill_hdr(&e->h, TT_EV_SCHED, sizeof(*e));
	e->h.tgid = t->tgid;
	e->h.tid = t->pid;
	e->kind = TT_SCHED_SPAN;
	e->runnable = ts->runnable;
	e->in_send = ts->in_send;
	e->state = ts->state;
	e->sysnr = ts->sysnr;
	e->nk = ts->nk;
	e->nwk = ts->nwk;
	e->pad0 = 0;
	e->t_out = t_out;
	e->t_wake = ts->runnable ? 0 : ts->t_wake;
	e->t_in = t_in;
	e->futex = ts->futex;
	__builtin_memcpy(e->cum, cum, sizeof(e->cum));
	e->waker_tid = ts->waker_tid;
	e->waker_tgid = ts->waker_tgid;
	__builtin_memcpy(e->waker_comm, ts->waker_comm, sizeof(e->waker_comm));
	e->waker_traced = ts->waker_traced;
	__builtin_memcpy(e->waker_cum, ts->waker_cum, sizeof(e->waker_cum));
	__builtin_memcpy(e->kips, ts->kips, sizeof(e->kips));
	__builtin_memcpy(e->wkips, ts->wkips, sizeof(e->wkips));
	if (ustack) {
		e->nu = get_stack(ctx, e->uips, sizeof(e->uips), BPF_F_USER_STACK);
	} else {
		e->nu = ts->nu;
		__builtin_memcpy(e->uips, ts->uips, sizeof(e->uips));
	}
	bpf_ringbuf_submit(e, rb_flags());
}

/*
 * Send the span kept for its user stack. in_call: the thread is current and still in the
 * syscall it blocked in (at its exit, or blocking again inside it), so its user stack is
 * the one it blocked with; else (it is exiting) the span goes without one.
 */
static __always_inline void flush_late(void *ctx, struct task_struct *t, struct thr_sched *ts,
				       bool in_call)
{
	ts->span_pending = 0;
	__sync_fetch_and_add(&late_pending, -1);
	emit_span(ctx, t, ts, ts->span_t_out, ts->span_t_in, ts->span_cum, in_call);
}

/* prev (current) leaves the CPU: blocked in a syscall, or preempted */
static __always_inline void switch_out(void *ctx, struct task_struct *prev,
				       struct thr_sched *ts, bool runnable,
				       unsigned int prev_state, __u64 now, __u64 steal)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	unsigned long nr = regs->orig_ax;
	/* a run over the floor ends: a sample, as a span over it would (a GIL holder's call) */
	bool long_run = ts->on && ts->t_in && now - ts->t_in >= span_floor_ns;

	/* leaving the CPU, it was on it: since when, if its switch-in was not seen */
	mend_switch_in(ctx, prev, ts, now, steal);
	/* a span waiting for its syscall's exit, and the thread leaves again before it */
	if (ts->span_pending)
		flush_late(ctx, prev, ts, nr == ts->sysnr);
	if (ts->on && ts->t_in)
		add_oncpu_at(ts->cum, ts, now, steal);
	ts->on = 0;
	ts->t_out = now;
	ts->out_unseen = 0;
	ts->t_wake = 0;
	ts->runnable = runnable;
	ts->in_send = 0;
	ts->futex = 0;
	ts->waker_tid = 0;
	ts->waker_traced = 0;
	ts->nk = ts->nu = ts->nwk = 0;
	ts->sysnr = -1;
	ts->state = prev_state;
	if (!runnable) {
		/* the thread going off CPU is current: its syscall is at hand */
		blocked_in(ts, nr, regs->di);
		/* an event loop's wait is not where a stall is: its waker says (userspace) */
		if (!is_poll(nr)) {
			if (!(late_mask & late_bit(nr)))
				ts->nu = get_stack(ctx, ts->uips, sizeof(ts->uips),
						   BPF_F_USER_STACK);
			/* and in Python terms, for a traced CPython (python.bpf.h); the record
			 * joins this span by (tid, t_out) */
			py_emit_blocked(now);
		}
	}
	if (long_run || now - ts->t_snap >= TT_SNAP_NS)
		emit_snap(prev, ts, now, false);
}

/* next gets the CPU: what its time off CPU was, and the span itself if long enough */
static __always_inline void switch_in(void *ctx, struct task_struct *next,
				      struct thr_sched *ts, __u64 now, __u64 steal)
{
	__u64 cum[TT_T_NR], tw;
	bool span, late;

	/* on CPU by its state: its switch-out was not seen, its time since is lost */
	if (ts->on)
		stat_inc(TT_STAT_SCHED_MISS);
	disarm_exit(ts);
	if (ts->t_out && now > ts->t_out) {
		span = now - ts->t_out >= span_floor_ns;
		/* a block in a syscall of late_bit() (sysnr is -1 for a preemption): sent at the
		 * syscall's exit, with the stack */
		late = span && (late_mask & late_bit(ts->sysnr));
		/* a span's record has the counters as they were at t_out */
		if (late)
			__builtin_memcpy(ts->span_cum, ts->cum, sizeof(ts->span_cum));
		else if (span)
			__builtin_memcpy(cum, ts->cum, sizeof(cum));
		if (ts->runnable) {
			ts->cum[TT_T_RUNQ] += now - ts->t_out;
		} else {
			tw = ts->t_wake && ts->t_wake <= now ? ts->t_wake : now;
			ts->cum[block_cause(ts->sysnr, ts->state, ts->in_send) & TT_T_BLOCK_MASK] +=
				tw - ts->t_out;
			ts->cum[TT_T_RUNQ] += now - tw;
		}
		if (late) {
			ts->span_t_out = ts->t_out;
			ts->span_unseen = ts->out_unseen;
			ts->span_t_in = now;
			ts->span_pending = 1;
			__sync_fetch_and_add(&late_pending, 1);
		} else if (span) {
			emit_span(ctx, next, ts, ts->t_out, now, cum, false);
		}
	}
	ts->t_out = 0;
	ts->t_in = now;
	ts->steal_in = steal;
	ts->on = 1;
}

/*
 * t is on CPU now (it sends, wakes a thread or leaves the CPU), but its state says it is
 * off since t_out: its switch-in was not seen. The kernel does switch a task in with no sched_switch event
 * at all (seen on this project's 6.18 VMs: whenever the CPU's previous task was one of two
 * of the VM's own agents, whose switch-outs never show, to ftrace either), and the thread's
 * wait would then run on unaccounted to its next switch-in: a stall it ends has no counters
 * and is unknown. It came in by now: its time off CPU is accounted up to here, as that
 * switch-in would have (the part after its wake as waiting for a CPU, longer by what it ran
 * before this), and counted (switches_mended). A thread not seen off CPU yet (t_out 0:
 * its state made while it ran) has nothing to mend.
 */
static __always_inline void mend_switch_in(void *ctx, struct task_struct *t,
					   struct thr_sched *ts, __u64 now, __u64 steal)
{
	if (ts->on || !ts->t_out)
		return;
	stat_inc(TT_STAT_SCHED_MENDED);
	switch_in(ctx, t, ts, now, steal);
}

/*
 * Every context switch on the machine passes here: a look at each side's bit in the
 * targets' bitmap is all that untraced processes pay. Nothing is sent per switch.
 */
static __always_inline int on_switch(void *ctx, bool preempt, struct task_struct *prev,
				     struct task_struct *next, unsigned int prev_state)
{
	struct thr_sched *ts;
	__u64 now = 0, steal = 0;

	/* one reading of each clock for both sides: the same CPU, the same moment */
	ts = thr_of(prev);
	if (ts) {
		now = bpf_ktime_get_ns();
		steal = cpu_steal_ns();
		switch_out(ctx, prev, ts, preempt || !prev_state, prev_state, now, steal);
	}
	ts = thr_of(next);
	if (ts) {
		if (!now) {
			now = bpf_ktime_get_ns();
			steal = cpu_steal_ns();
		}
		switch_in(ctx, next, ts, now, steal);
	}
	return 0;
}

/* tp_btf: the task pointers are typed, as task storage wants them */
SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return on_switch(ctx, preempt, prev, next, prev_state);
}

/* before Linux 5.18 the tracepoint has no prev_state: read it from the task (core_fixes) */
SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_nostate, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	return on_switch(ctx, preempt, prev, next, task_state(prev));
}

/* The exit of a syscall a span may wait in (late_bit()): send it, with the user stack. */
static __always_inline int late_exit(void *ctx, long id)
{
	struct task_struct *t;
	struct thr_sched *ts;

	if (!late_pending)
		return 0;
	t = bpf_get_current_task_btf();
	if (!sched_target(t->tgid))
		return 0;
	ts = bpf_task_storage_get(&thr, t, 0, 0);
	if (!ts || thr_stale(ts))
		return 0;
	/* back from a long wait with its switch-in not seen: mended here, in the syscall, so the
	 * span gets the stack it blocked with (at its next send it would have none) */
	if (ts->exit_armed)
		mend_switch_in(ctx, t, ts, bpf_ktime_get_ns(), cpu_steal_ns());
	if (!ts->span_pending)
		return 0;
	/* blocked before the (lazy) hooks came: the Python frame it blocked in, read now, in
	 * the same call (the switch-out that reads it was not seen) */
	if (ts->span_unseen && id == ts->sysnr)
		py_emit_blocked(ts->span_t_out);
	flush_late(ctx, t, ts, id == ts->sysnr);
	return 0;
}

/*
 * The syscall tracepoints: one program, attached by userspace to each late exit's tracepoint
 * (the id says which), so the kernel verifies it once instead of once per syscall.
 */
SEC("tracepoint/syscalls/sys_exit_futex")
int late_exit_tp(struct trace_event_raw_sys_exit *ctx)
{
	return late_exit(ctx, ctx->id);
}

/* the trampoline on each syscall's function (see fx_exit_accept4): a program each */
#define LATE_EXIT(name)								\
SEC("fexit/__x64_sys_" #name)							\
int BPF_PROG(fx_late_exit_##name, const struct pt_regs *regs, long ret)		\
{										\
	return late_exit(ctx, TT_NR_##name);					\
}
LATE_EXIT(futex)
LATE_EXIT(nanosleep)
LATE_EXIT(clock_nanosleep)

/* a syscall whose wakes take one path in the kernel for one first argument (a fd, a futex) */
static __always_inline bool wake_path_keyed(unsigned long nr)
{
	return nr == TT_NR_futex || nr == TT_NR_write || nr == TT_NR_writev ||
	       nr == TT_NR_sendto || nr == TT_NR_sendmsg;
}

/*
 * How the waker woke ts (its kernel stack into ts->wkips): how many addresses. The walk is
 * the dearest part of a wake (~3-4 us on a VM, a server's long waits end in one each), and
 * most of them repeat: the same thread writes to the same eventfd or socket, or wakes the
 * same futex, to wake the same thread every engine step. A wake by the thread whose path
 * wkips holds, in the same syscall on the same first argument, takes that path again: kept.
 * A timer's expiry needs none (the kernel side said it was a timer: TT_WAKER_TIMER).
 */
static __always_inline __u16 wake_path(void *ctx, struct thr_sched *ts, __u32 irq, __u32 tid)
{
	struct pt_regs *regs;
	unsigned long nr;
	__u64 a1;

	if (irq == TT_WAKER_TIMER)
		return 0;
	if (irq) {
		ts->wk_tid = 0;
		return get_stack(ctx, ts->wkips, sizeof(ts->wkips), 0);
	}
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	nr = regs->orig_ax;
	a1 = regs->di;
	if (ts->wk_tid == tid && ts->wk_nr == nr && ts->wk_a1 == a1 && ts->wk_n)
		return ts->wk_n;
	ts->wk_n = get_stack(ctx, ts->wkips, sizeof(ts->wkips), 0);
	ts->wk_tid = wake_path_keyed(nr) ? tid : 0;
	ts->wk_nr = nr;
	ts->wk_a1 = a1;
	return ts->wk_n;
}

/*
 * A blocked traced thread is being woken, in the waker's context. For a block already long
 * enough to be sent: where it blocked in the kernel (its stack, still as it was), who woke it
 * and how (the waker's kernel stack: a timer interrupt, a futex wake, a write to a socket or
 * pipe), and the waker's own counters if it is traced, so userspace can say what the waker
 * did meanwhile.
 */
SEC("tp_btf/sched_waking")
int BPF_PROG(sched_waking, struct task_struct *p)
{
	struct thr_sched *ts, *w;
	__u64 now, pid_tgid;
	__u32 irq;

	ts = thr_of(p);
	if (!ts)
		return 0;
	/*
	 * State made just now: a traced thread not seen since tracing began, blocked since
	 * before then (a Go runtime's idle M parked in a futex, a worker waiting for its first
	 * job); what ends that wait, and who, is what a gap's chain follows
	 */
	if (!ts->t_in && !ts->t_out && !ts->on) {
		/*
		 * Only off the run queue is it blocked: a wake also reaches a thread that set its
		 * sleeping state and was preempted, or is still on CPU about to sleep; that one
		 * gets its state at its next switch, as any thread first seen there
		 */
		if (task_queued(p))
			return 0;
		blocked_since_attach(p, ts);
	}
	if (!ts->t_out || ts->runnable || ts->t_wake)
		return 0;
	now = bpf_ktime_get_ns();
	ts->t_wake = now;
	pid_tgid = bpf_get_current_pid_tgid();
	/*
	 * Every wake, short ones too: an event loop's last wait before a send is often short,
	 * and who ended it is what a stall's chain follows. From an interrupt no one did.
	 */
	ts->t_woken = now;
	irq = in_irq_work();
	ts->woken_by_tid = irq ? 0 : (__u32)pid_tgid;
	ts->woken_by_tgid = irq ?: pid_tgid >> 32;	/* an interrupt's: which kind */
	/* a traced waker has state, unless it never switched nor woke yet */
	w = irq || !sched_target(pid_tgid >> 32) ? NULL :
		bpf_task_storage_get(&thr, bpf_get_current_task_btf(), 0, 0);
	if (w && !thr_current(bpf_get_current_task_btf(), w, now))
		w = NULL;
	/* a waker in its own context is on CPU, whatever its state says */
	if (w)
		mend_switch_in(ctx, bpf_get_current_task_btf(), w, now, cpu_steal_ns());
	/*
	 * What the waker did up to the wake is asked of its counters (the woken thread's wait
	 * ends here): a sample now if it sent none for a floor's time. A GIL holder in one long
	 * call wakes the waiter as it drops the GIL, on CPU all along, and sends nothing else.
	 */
	if (w && now - w->t_snap >= span_floor_ns)
		emit_snap(bpf_get_current_task_btf(), w, now, true);
	if (now - ts->t_out < span_floor_ns)
		return 0;
	/*
	 * A long wait in a syscall whose span waits for its exit (late_bit()): that exit looks at
	 * the thread's state until its switch-in is seen, in case it is not (mend_switch_in()).
	 */
	if ((late_mask & late_bit(ts->sysnr)) && !ts->exit_armed) {
		ts->exit_armed = 1;
		__sync_fetch_and_add(&late_pending, 1);
	}
	/* blocks whose syscall says it all (a lock, a sleep, a poll) need no kernel stack */
	if (kstack_tells(ts->sysnr))
		ts->nk = stack_len(bpf_get_task_stack(p, ts->kips, sizeof(ts->kips), 0));
	/* from an interrupt: no task woke it, the kind of interrupt did (TT_WAKER_*) */
	ts->waker_tid = ts->woken_by_tid;
	ts->waker_tgid = ts->woken_by_tgid;
	if (irq)
		__builtin_memset(ts->waker_comm, 0, sizeof(ts->waker_comm));
	else
		bpf_get_current_comm(ts->waker_comm, sizeof(ts->waker_comm));
	ts->nwk = wake_path(ctx, ts, irq, (__u32)pid_tgid);
	ts->waker_traced = 0;
	if (w) {
		__builtin_memcpy(ts->waker_cum, w->cum, sizeof(ts->waker_cum));
		if (w->on && w->t_in)
			add_oncpu(ts->waker_cum, w, now);
		ts->waker_traced = 1;
	}
	return 0;
}

/*
 * What the iterator saw of a thread, all read before it claims the thread's state (a hook
 * that meets the thread in between claims it first, from a later moment, and wins).
 */
struct seed_view {
	__u64 now, t_resume, t_block, run, rq, queued, steal;
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
	thr_resume(t, ts, v->t_resume);
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
	blocked_in(ts, v->nr, v->a1);
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
SEC("iter/task")
int sched_seed(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct seed_view v = {};
	struct d_last dl = {};
	struct thr_sched *ts;
	struct pt_regs *regs;

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
	v.oncpu = t->on_cpu;
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
	if (thr_claim(ts))
		seed_state(t, ts, &v);
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

