/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Records that cross the ring buffer, and the maps userspace fills or reads (targets, the
 * --aggregate histograms, the stats counters), shared by bpf/ and user/. What only the kernel
 * side keeps (connection state, per-thread state) lives in bpf/lib/.
 *
 * Every record starts with struct tt_hdr; userspace dispatches on hdr.type with one switch.
 * Only fixed-width types, explicit padding: the same bytes are written to recordings (-w)
 * and read back on another machine.
 */
#ifndef TT_EVENTS_H
#define TT_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>	/* userspace; BPF code has the types from vmlinux.h */
#endif

#define TT_COMM_LEN	16
/*
 * Payload capture. A send or receive is captured in full up to the capture bound (-s): a
 * backlog flushed in one write after a stall, or Node's coalesced writev of hundreds of
 * events, must still be counted event by event. The bytes travel in records of at most
 * TT_SEG_MAX payload bytes each (segments of one send, in order, TT_DF_MORE on all but the
 * last), so a large send does not need one large reservation.
 */
#define TT_CAP_DEFAULT	(256 << 10)	/* bytes captured per send/recv unless -s says otherwise */
#define TT_CAP_MAX	(4 << 20)	/* upper bound of -s */
#define TT_SEG_MAX	16384		/* payload bytes per record; a power of two */
#define TT_UNIX_PATH	108		/* sizeof(sun_path) */
#define TT_MAX_TARGETS	1024
#define TT_KEY_MAX	64	/* bytes of a string marker key */
#define TT_MARKERS_MAX	32
#define TT_KSTACK_MAX	16	/* kernel return addresses kept of a stack */
#define TT_USTACK_MAX	32	/* user return addresses */

enum tt_ev_type {
	TT_EV_CONN = 1,	/* first sight of a connection of a target (or its accept) */
	TT_EV_DATA,	/* bytes sent or received on a traced connection */
	TT_EV_STATE,	/* TCP state change on a traced connection (peer FIN, close) */
	TT_EV_MARKER,	/* a uprobe / USDT marker fired */
	TT_EV_SCHED,	/* a target thread switched out, in, or was woken */
	TT_EV_TCP,	/* TCP trouble on a traced connection: retransmit, zero window */
	TT_EV_STACK,	/* a symbolized stack, written by userspace into recordings */
	TT_EV_PYSTACK,	/* Python frames of a thread: a sample on CPU, or where it blocked */
	TT_EV_PROC,	/* a process joined or left the traced set (fork, exec, exit, found) */
	TT_EV_PYNAME,	/* a Python frame's name, written by userspace into recordings */
	TT_EV_NR,
};

struct tt_hdr {
	__u64 ts;	/* CLOCK_MONOTONIC ns, bpf_ktime_get_ns() */
	__u32 tgid;
	__u32 tid;
	__u16 type;	/* enum tt_ev_type */
	__u16 size;	/* whole record, header and payload included */
	__u32 cpu;
	/*
	 * Records the kernel side dropped (ring buffer full) on any CPU before this one was made,
	 * wrapping: a change between two records says drops happened in between, for records
	 * that carry no per-connection loss count (state, scheduler) as well.
	 */
	__u32 drops;
	__u32 pad;
};

/* tt_conn_ev.flags */
#define TT_CF_ACCEPTED	0x1	/* seen at accept() return: hdr.ts is the accept time */
#define TT_CF_IGNORED	0x2	/* filtered out by --port; no data will follow */
#define TT_CF_UNIX	0x4	/* a Unix-domain stream socket: path and peer_pid, no addresses */
/* found open (not at accept()) on one of the targets' listening ports: accepted before */
#define TT_CF_LISTENER	0x8

struct tt_conn_ev {
	struct tt_hdr h;
	__u64 conn_id;	/* never reused during a run; 0 is never a valid id */
	__u64 sk;	/* kernel socket address: key of the conns map, reused after close */
	__u16 family;	/* AF_INET or AF_INET6 */
	__u16 lport;	/* host order */
	__u16 rport;	/* host order */
	__u16 flags;
	__u32 fd;	/* at accept, else (__u32)-1 */
	__u64 t_established;	/* handshake done (before accept: the backlog wait), or 0 */
	__u8 laddr[16];	/* IPv4 in the first 4 bytes */
	__u8 raddr[16];
	char comm[TT_COMM_LEN];
	__u32 peer_pid;	/* Unix sockets: the peer's process (SO_PEERCRED), or 0 */
	__u32 pad;
	char path[TT_UNIX_PATH];	/* Unix sockets: the bound path ("@name" abstract), or "" */
};

enum tt_dir {
	TT_DIR_RECV = 0,
	TT_DIR_SEND = 1,
};

/*
 * Where a traced thread's time goes, summed in the kernel per thread by cause (the order of
 * userspace's enum stall_cause): on CPU, runnable, blocked by what it blocked in.
 */
enum tt_time {
	TT_T_ONCPU,
	TT_T_RUNQ,
	TT_T_LOCK,	/* futex */
	TT_T_IO,	/* a read, or uninterruptible sleep */
	TT_T_SLEEP,	/* nanosleep, clock_nanosleep */
	TT_T_POLL,	/* epoll, poll, select */
	TT_T_BLOCKED,	/* another reason */
	TT_T_SEND,	/* inside a TCP send: the socket buffer full */
	/*
	 * on CPU as far as the guest kernel knows, but its virtual CPU was not running: the
	 * hypervisor gave the host CPU to something else (steal time). Not a block cause.
	 */
	TT_T_STEAL,
	TT_T_NR,
};

/*
 * A thread's time as the kernel itself counts it (not the scheduler hooks': these are kept
 * whether or not the hooks are attached), read where a record is made: its CPU time
 * (se.sum_exec_runtime: up to a tick behind for a thread that is running, steal time left
 * out), its time waiting for a CPU (sched_info.run_delay, a wait counted once it ends) and
 * its voluntary context switches (nvcsw: it blocked). exec 0: not read (stalls off, or
 * unknown). With these at both ends of a time the lazy hooks missed (they came late, or not
 * at all, as when the stalled thread holds a CPU the tracer's own threads wait for), that
 * time is split exactly into on CPU, waiting for a CPU and off CPU.
 */
struct tt_kcnt {
	__u64 exec, rd, nvcsw;
};

/* tt_data_ev.flags */
#define TT_DF_TRUNC	0x01	/* last segment: fewer bytes captured than moved (bound, fault) */
#define TT_DF_NOBUF	0x02	/* syscall without a user buffer we know (sendfile, io_uring...) */
#define TT_DF_FAULT	0x04	/* bpf_probe_read_user failed: payload missing from there on */
#define TT_DF_LOST	0x08	/* records of this connection were dropped before this one */
#define TT_DF_MORE	0x10	/* more segments of the same send follow */
#define TT_DF_CUM	0x20	/* cum[] holds the calling thread's time counters */
#define TT_DF_TLS	0x40	/* TLS plaintext, from OpenSSL's SSL_write/SSL_read (bpf/lib/tls.bpf.h) */
/*
 * With TT_DF_LOST: the records lost went both ways (or held a state change), so whole
 * requests may be among them; else they were all of one direction, inside one message or
 * one run of them.
 */
#define TT_DF_LOST_XDIR	0x80

/*
 * TLS plaintext whose socket was not seen inside the SSL call (a memory BIO, as Node's TLS
 * uses): its connection id is this bit and a hash of the SSL object, not a socket's.
 */
#define TT_CONN_SSL	(1ull << 63)

/*
 * One send or receive on a traced connection, or one segment of it (off > 0 or TT_DF_MORE).
 * Every segment of a send carries the same header time and fields; only off, cap and the
 * MORE flag differ.
 */
struct tt_data_ev {
	struct tt_hdr h;	/* ts: the socket layer was done with the bytes */
	__u64 conn_id;
	__s32 ret;	/* syscall result: bytes moved, or -errno */
	__u32 cap;	/* payload bytes that follow */
	__u32 off;	/* offset of these bytes in the send */
	__u8 dir;	/* enum tt_dir */
	__u8 flags;
	/*
	 * --budget: whole exchanges of this connection the budget left out since its last
	 * record that got through (saturating); this record starts an exchange when set
	 */
	__u16 skipped;
	__u32 sysnr;	/* syscall number the send/recv came from */
	__u32 lost;	/* with TT_DF_LOST: how many records were dropped */
	__u64 arrival;	/* receives: when the first unread byte reached the socket, or 0 */
	/*
	 * Sends: when the bytes could first be read, before h.ts: a Unix send's delivery to its
	 * peer, a TCP send's departure (tcp_wstamp_ns of its last segment out); 0 when not
	 * known (the bytes stayed queued). A token's time is t_ready when set: never later than
	 * the first moment it could be read, never before the copy.
	 */
	__u64 t_ready;
	/*
	 * With stall attribution, the thread's time counters at this send: the gaps between
	 * tokens are between sends, so their accounting is exact at both ends.
	 */
	__u64 cum[TT_T_NR];
	/*
	 * With cum[]: when the sending thread was last woken and by which thread (0: by an
	 * interrupt, or not known; then waker_tgid says which: TT_WAKER_*), however short its
	 * wait: what ended an event loop's last wait before this send.
	 */
	__u64 t_woken;
	__u32 waker_tid, waker_tgid;
	struct tt_kcnt k;	/* with stall attribution: the kernel's own counters of the thread */
	__u8 data[];
};

/* waker_tgid of a wake from interrupt context (waker_tid 0) */
enum {
	TT_WAKER_UNKNOWN = 0,
	TT_WAKER_TIMER = 1,	/* a timer's expiry (hrtimer): a sleep's or a poll's timeout */
	TT_WAKER_IRQ = 2,	/* a softirq or a device's interrupt (the network, the timer wheel) */
};

/*
 * A uprobe / uretprobe / USDT marker hit. The attach cookie says which marker (its index on
 * the command line) and where its request key is.
 */
#define TT_COOKIE_MARKER(c)	((c) & 0xffff)
#define TT_COOKIE_KEYARG(c)	(((c) >> 16) & 0xff)	/* 0 none, 1..6 argN, 7 return value */
#define TT_COOKIE_KEYSTR(c)	(((c) >> 24) & 1)	/* the key is a pointer to a string */
#define TT_COOKIE(marker, keyarg, keystr) \
	((__u64)(marker) | (__u64)(keyarg) << 16 | (__u64)(keystr) << 24)
#define TT_KEYARG_RET	7

enum tt_key_kind {
	TT_KEY_NONE = 0,
	TT_KEY_INT = 1,
	TT_KEY_STR = 2,
};

struct tt_marker_ev {
	struct tt_hdr h;
	__u16 marker;	/* index of the marker on the command line */
	__u8 key_kind;	/* enum tt_key_kind */
	__u8 pad[5];
	__u64 key;	/* TT_KEY_INT */
	char key_str[TT_KEY_MAX];	/* TT_KEY_STR, NUL-terminated */
};

enum tt_sched_kind {
	TT_SCHED_SPAN = 1,	/* off CPU [t_out, t_in): blocked until t_wake then runnable,
				 * or preempted (runnable throughout); only spans over a floor */
	TT_SCHED_SNAP = 2,	/* the thread's counters at h.ts (now and then at a switch-out) */
	TT_SCHED_RESUME = 3,	/* the counters at h.ts, where they start again: the scheduler
				 * hooks were off (--stall-hooks lazy) since the thread's sample
				 * before, so what it did in between is not known */
	TT_SCHED_BIRTH = 4,	/* the thread was made at h.ts by waker_tid (clone): before that
				 * it did not exist, and what it did first its maker led up to */
};

/*
 * hdr.tid / hdr.tgid: the thread the record is about. The kernel sends no record per
 * context switch: it sums them (cum[]) and sends the spans long enough to matter for a
 * stall, with where the thread blocked and who woke it, and the counters now and then.
 */
struct tt_sched_ev {
	struct tt_hdr h;
	__u8 kind;		/* enum tt_sched_kind */
	__u8 runnable;		/* SPAN: preempted, runnable throughout */
	__u8 in_send;		/* SPAN: blocked inside a TCP send (socket buffer full) */
	__u8 waker_traced;	/* waker_cum is valid: the waker is a traced thread */
	__u32 state;		/* SPAN: prev_state (TASK_INTERRUPTIBLE 1, TASK_UNINTERRUPTIBLE 2) */
	__u32 sysnr;		/* SPAN: the syscall it blocked in, or -1 */
	__u16 nk, nu;		/* SPAN: addresses in kips[] / uips[]: where it blocked */
	__u16 nwk;		/* SPAN: addresses in wkips[]: the waker's kernel stack */
	__u16 pad0;
	__u64 t_out, t_wake, t_in;	/* SPAN; t_wake 0 when preempted */
	__u64 futex;		/* SPAN: the futex word it waited on, or 0 */
	__u64 cum[TT_T_NR];	/* SPAN: the thread's counters at t_out; SNAP: at h.ts */
	/* SPAN of a block: who woke it, at t_wake */
	__u32 waker_tid, waker_tgid;
	char waker_comm[TT_COMM_LEN];
	__u64 waker_cum[TT_T_NR];	/* the waker's counters at t_wake, when waker_traced */
	/*
	 * The stacks themselves, not ids in a stack map: a map's hash buckets collide and lose
	 * stacks; a span is sent rarely enough to carry them.
	 */
	__u64 kips[TT_KSTACK_MAX];
	__u64 uips[TT_USTACK_MAX];
	__u64 wkips[TT_KSTACK_MAX];	/* how the waker woke it: a timer, a futex, a write */
	struct tt_kcnt k;	/* SNAP, RESUME: the kernel's own counters of the thread at h.ts */
};

enum tt_tcp_kind {
	TT_TCP_RETRANSMIT = 1,
	TT_TCP_ZERO_WINDOW = 2,	/* the peer advertised a zero receive window */
	TT_TCP_WINDOW_OPEN = 3,	/* ... and opened it again */
};

struct tt_tcp_ev {
	struct tt_hdr h;
	__u64 conn_id;
	__u32 kind;		/* enum tt_tcp_kind */
	__u32 snd_cwnd;
};

enum tt_proc_kind {
	TT_PROC_FORK = 1,	/* a traced process forked: the child is traced too */
	TT_PROC_EXEC = 2,	/* a traced process exec'ed: still traced, new comm */
	TT_PROC_EXIT = 3,	/* a traced process exited */
	TT_PROC_FOUND = 4,	/* a process started to be traced: --comm, --cgroup, --port */
	TT_PROC_THREAD_EXIT = 5,	/* a thread of a traced process whose time was kept exited
				 * (h.tid): its bookkeeping can go (thread-per-connection churn) */
};

/* hdr.tgid: the process the record is about */
struct tt_proc_ev {
	struct tt_hdr h;
	__u32 kind;		/* enum tt_proc_kind */
	__u32 ppid;		/* FORK: the parent */
	__u32 flags;		/* TT_TGT_* it is traced with */
	__u32 why;		/* FOUND: 1 --comm, 2 --cgroup, 3 --port, 4 a Unix peer (userspace) */
	char comm[TT_COMM_LEN];
};

/* userspace only: a stack the live run symbolized, so a replay prints the same */
#define TT_STACK_STR_MAX	512
struct tt_stack_ev {
	struct tt_hdr h;	/* tgid: the process */
	__u64 key;		/* the stack's addresses, hashed (core/stack.h) */
	char str[TT_STACK_STR_MAX];
};

/* userspace only: the name of a Python frame the live run read, so a replay names it too */
#define TT_PYNAME_STR_MAX	192
struct tt_pyname_ev {
	struct tt_hdr h;	/* tgid: the process */
	__u64 code;		/* the code object */
	__s32 lasti;		/* the instruction */
	__u32 pad;
	char str[TT_PYNAME_STR_MAX];	/* "function (file.py:line)" */
};

/*
 * The traced processes: TT_TGT_* bits per tgid, two bits each, 32 tgids a word of the
 * target_bits array in the kernel side's global data (bpf/lib/targets.bpf.h), for every tgid
 * up to PID_MAX_LIMIT.
 */
#define TT_TGT_DATA	0x1	/* its sockets are traced */
#define TT_TGT_SCHED	0x2	/* its threads' time is accounted (stalls) */
#define TT_TGT_PID_LIMIT	(1u << 22)	/* PID_MAX_LIMIT on 64-bit kernels */
#define TT_TGT_WORDS	(TT_TGT_PID_LIMIT / 32)
#define TT_TGT_WORD(tgid)	(((tgid) >> 5) & (TT_TGT_WORDS - 1))
#define TT_TGT_SHIFT(tgid)	(((tgid) & 31) * 2)

struct tt_state_ev {
	struct tt_hdr h;
	__u64 conn_id;
	__s32 oldstate;
	__s32 newstate;	/* TCP_CLOSE_WAIT: peer closed; TCP_CLOSE: connection gone */
	__u32 lost;	/* records of this connection dropped since the last one that got through */
	__u32 pad;
};

/*
 * --aggregate: send gaps and time-to-first-send histograms kept in the kernel, no records.
 * Per connection only the last times (bpf/lib/conn_map.bpf.h); the histograms are global, one
 * per CPU (tt_agg), as biolatency keeps them: summing them never races a closing connection.
 * Buckets are log2 with 4 linear steps per octave: bucket(v) = v for v < 4, else
 * 4 * log2(v) + the two bits after the leading one. 2^40 ns (18 minutes) and up share the last.
 */
#define TT_AGG_BUCKETS	160

struct tt_agg {
	__u64 sends;		/* token-like sends */
	__u64 firsts;		/* first token-like sends after a read: responses */
	__u32 itl[TT_AGG_BUCKETS];
	__u32 ttft[TT_AGG_BUCKETS];
};

/* floor(log2(v)) for v > 0: BPF has no clz, and clang 14's BPF backend chokes on its builtin */
static inline __u32 tt_ilog2(__u64 v)
{
	__u32 e = 0;

	if (v >> 32) { v >>= 32; e += 32; }
	if (v >> 16) { v >>= 16; e += 16; }
	if (v >> 8) { v >>= 8; e += 8; }
	if (v >> 4) { v >>= 4; e += 4; }
	if (v >> 2) { v >>= 2; e += 2; }
	if (v >> 1)
		e += 1;
	return e;
}

static inline __u32 tt_agg_bucket(__u64 v)
{
	__u32 e;

	if (v < 4)
		return v;
	e = tt_ilog2(v);
	if (e >= TT_AGG_BUCKETS / 4)
		return TT_AGG_BUCKETS - 1;
	return e * 4 + ((v >> (e - 2)) & 3);
}

/* per-CPU counters in the stats map, summed by userspace */
enum tt_stat {
	TT_STAT_SCHED_MENDED,	/* a switch-in of a traced thread the kernel sent no event for,
				 * mended where the thread next showed on CPU (mend_switch_in());
				 * not a loss (slot 0: unused before, 0 in older recordings) */
	TT_STAT_RB_DROP,	/* ring buffer full: record dropped */
	TT_STAT_CONN_FULL,	/* conns map full: connection not traced */
	TT_STAT_FAULT,		/* payload copy failed */
	TT_STAT_TRUNC,		/* payload longer than the capture size */
	TT_STAT_EARLY_FULL,	/* early map full: a connection's backlog wait not known */
	TT_STAT_TIMER_SKIP,	/* userspace fills it: runs of the timer hooks the kernel skipped (a
				 * hard timer's expiry inside a soft one's): no record lost */
	TT_STAT_STACK_LOST,	/* a stack could not be walked (bpf_get_stack failed, not a fault) */
	TT_STAT_IOV_CUT,	/* a send's iovec walk or segment loop hit its bound */
	TT_STAT_SCHED_MISS,	/* a thread's scheduling state could not be kept (task storage busy
				 * in an interrupt, or no memory), or a switch-out of it was not
				 * seen: its time there is unknown */
	TT_STAT_PROG_MISS,	/* userspace fills it: runs the kernel skipped (recursion misses) */
	TT_STAT_BUDGET_SKIP,	/* --budget: exchanges (a request and its answer) left out whole */
	TT_STAT_BUDGET_RECS,	/* --budget: their sends and reads, not sent */
	TT_STAT_NR,
};

#endif /* TT_EVENTS_H */
