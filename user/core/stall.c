// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Stall detection and explanation. See stall.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sched_book.h"
#include "vec.h"
#include "stall.h"
#include "util.h"

#define WAIT_MASK	((1u << STALL_POLL) | (1u << STALL_LOCK))

uint64_t stall__threshold(const struct tt_request *r, uint64_t stall_ns)
{
	uint64_t gaps[STALL_WINDOW], med = 0;
	uint32_t n = 0;

	if (stall_ns)
		return stall_ns;
	for (uint32_t i = r->chunks ? r->chunks - 1 : 0; i > 0 && n < STALL_WINDOW; i--)
		gaps[n++] = r->tok_ns[i] - r->tok_ns[i - 1];
	if (n) {
		qsort(gaps, n, sizeof(*gaps), cmp_u64);
		med = gaps[n / 2];
	}
	return MAX(STALL_FACTOR * med, STALL_FLOOR_NS);
}

enum wake_kind stall__wake_kind(const char *t, bool *from_irq)
{
	/* an interrupt's wakeup runs in whatever task it interrupted: not the waker */
	*from_irq = strstr(t, "asm_sysvec") || strstr(t, "asm_common_interrupt") ||
		    strstr(t, "hrtimer_interrupt") || strstr(t, "run_timer_softirq") ||
		    strstr(t, "irq_exit");
	if (strstr(t, "hrtimer_wakeup") || strstr(t, "process_timeout") || strstr(t, "it_real_fn"))
		return WAKE_TIMER;
	if (strstr(t, "futex_wake") || strstr(t, "futex_requeue"))
		return WAKE_FUTEX;
	if (strstr(t, "unix_stream_sendmsg") || strstr(t, "unix_dgram_sendmsg") ||
	    strstr(t, "unix_seqpacket_sendmsg"))
		return WAKE_UNIX;
	if (strstr(t, "pipe_write"))
		return WAKE_PIPE;
	if (strstr(t, "eventfd_write") || strstr(t, "eventfd_signal"))
		return WAKE_EVENTFD;
	if (strstr(t, "tcp_v4_rcv") || strstr(t, "tcp_v6_rcv") || strstr(t, "tcp_rcv_") ||
	    strstr(t, "tcp_data_queue") || strstr(t, "udp_rcv") || strstr(t, "net_rx_action"))
		return WAKE_NET;
	if (strstr(t, "signal_wake_up") || strstr(t, "complete_signal"))
		return WAKE_SIGNAL;
	if (*from_irq)
		return WAKE_TIMER;
	return WAKE_OTHER;
}

static enum stall_cause dominant(const uint64_t part[STALL_NR])
{
	enum stall_cause best = STALL_UNKNOWN;

	for (int i = 0; i < STALL_NR; i++)
		if (part[i] > part[best])
			best = i;
	return best;
}

/* Move up to n ns of part from one cause to another (the sum stays). */
static void move(uint64_t part[STALL_NR], enum stall_cause from, enum stall_cause to,
		 uint64_t n)
{
	n = MIN(n, part[from]);
	part[from] -= n;
	part[to] += n;
}

/* Take n ns of cause `from` out and put the parts of sub (which sum to about n) in. */
static void replace(uint64_t part[STALL_NR], enum stall_cause from, const uint64_t sub[STALL_NR],
		    uint64_t n)
{
	uint64_t got = 0, put = 0, take = MIN(n, part[from]);

	part[from] -= take;
	for (int i = 0; i < STALL_NR; i++)
		got += sub[i];
	if (!got) {
		part[from] += take;
		return;
	}
	/* sub covers the window the wait took; scale it to the time taken out */
	for (int i = 0; i < STALL_NR; i++) {
		uint64_t n = (uint64_t)((unsigned __int128)sub[i] * take / got);

		part[i] += n;
		put += n;
	}
	/* what the rounding left goes to sub's largest part: the parts still add up */
	part[dominant(sub)] += take - put;
}

struct explain {
	const struct stall_env *env;
	struct tt_stall *st;
};

/* Is there a hop after h for a waker that can be followed? If not, the chain is cut: said. */
static bool chain_room(struct explain *x, uint32_t h)
{
	if (h + 1 < STALL_HOPS_MAX)
		return true;
	x->st->hops_cut = true;
	return false;
}

/* The Python frame thread tid blocked in at the switch-out t_out, if it was walked. */
static bool py_blocked(const struct stall_env *e, uint32_t tid, uint64_t t_out,
		       struct py_blocked *b)
{
	return e->ps && t_out && !pysamples__blocked_at(e->ps, tid, t_out, t_out, b);
}

/*
 * Did the thread block in Python's wait for work (a queue's get, a condition's or an event's
 * wait), not at a lock? Then whoever woke it did the work it waited for, and what that one
 * did (slept, read a disk) is the wait's cause; at a lock, the wait is the lock's.
 */
static bool py_waits_for_work(const struct stall_env *e, uint32_t tid,
			      const struct sched_span *sp)
{
	static const char *const waits[] = {
		"Condition.wait (threading.py:", "Condition.wait_for (threading.py:",
		"Event.wait (threading.py:", "Queue.get (queue.py:", "Barrier.wait (threading.py:",
		"Semaphore.acquire (threading.py:",
	};
	char name[PYSAMPLES_NAME_MAX];
	struct py_blocked b;

	if (sp->cause != STALL_LOCK || !e->py_name || !py_blocked(e, tid, sp->t_out, &b) ||
	    !b.nframes || b.gil != TT_PY_GIL_NONE)
		return false;
	e->py_name(e->py_ud, b.pid, b.code[0], b.lasti[0], name, sizeof(name));
	for (size_t i = 0; i < ARRAY_SIZE(waits); i++)
		if (!strncmp(name, waits[i], strlen(waits[i])))
			return true;
	return false;
}

/*
 * The Python function of a hop: the one its samples show most for on-CPU time, else the
 * frame of its last block of the hop's cause (the sleep, the lock, the read it waited in).
 * An event loop's wait is not walked (its waker tells): nothing then.
 */
static void py_hop_func(const struct stall_env *e, struct stall_hop *hp, uint64_t t0,
			uint64_t t1)
{
	const struct sched_span *sp;
	struct py_blocked b;
	struct py_top top;
	uint32_t total = 0;
	enum stall_cause c = hp->cause == STALL_GIL ? STALL_LOCK : hp->cause;

	hp->func[0] = '\0';
	if (!e->ps || !e->py_name)
		return;
	/* runnable: what it ran when it did run */
	if (c == STALL_ONCPU || c == STALL_RUNQ || c == STALL_STEAL) {
		if (pysamples__top(e->ps, &hp->tid, 1, t0, t1, &top, 1, &total, e->py_name,
				   e->py_ud) > 0 && top.code)
			strlcpy_cut(hp->func, sizeof(hp->func), top.name);
		return;
	}
	if (c == STALL_POLL || c >= STALL_GIL)
		return;
	sp = sched_book__last_span(e->sb, hp->tid, t0, t1, 1u << c);
	if (sp && py_blocked(e, hp->tid, sp->t_out, &b) && b.nframes)
		pysamples__format(b.pid, b.code, b.lasti, 1, e->py_name, e->py_ud, hp->func,
				  sizeof(hp->func));
}

static void hop_set(struct explain *x, uint32_t h, uint32_t pid, uint32_t tid, const char *wcomm,
		    const uint64_t part[STALL_NR], uint64_t t0, uint64_t t1)
{
	const struct stall_env *e = x->env;
	struct stall_hop *hp = &x->st->hop[h];
	const char *comm;

	memset(hp, 0, sizeof(*hp));
	hp->pid = pid;
	hp->tid = tid;
	hp->w0 = t0;
	hp->w1 = t1;
	hp->cause = dominant(part);
	hp->ns = part[hp->cause];
	/* the process's name for the threads of a target, else the waker's own comm */
	comm = e->comm_of ? e->comm_of(e->comm_ud, pid) : NULL;
	snprintf(hp->comm, sizeof(hp->comm), "%s", comm && comm[0] ? comm : wcomm ? wcomm : "");
	py_hop_func(e, hp, t0, t1);
	if (h + 1 > x->st->nhops)
		x->st->nhops = h + 1;
}

/* How the wait of a span ended, and whether its waker really is the one that woke it. */
static enum wake_kind wake_of(struct explain *x, const struct sched_span *sp, uint32_t pid,
			      bool *valid, char *text_out, size_t out_sz)
{
	char text[STALL_STACK_MAX] = "";
	bool irq = false;
	enum wake_kind k = WAKE_OTHER;

	*valid = sp->waker_tid != 0;
	if (!stack_ips__empty(&sp->how) && x->env->stack_str &&
	    x->env->stack_str(x->env->stack_ud, &sp->how, text, sizeof(text)) && text[0]) {
		k = stall__wake_kind(text, &irq);
		if (irq)
			*valid = false;
	}
	/* an interrupt's (no task woke it): a timer when the kernel said so, else its stack's */
	if (!sp->waker_tid && sp->waker_pid == TT_WAKER_TIMER)
		k = WAKE_TIMER;
	else if (!sp->waker_tid && (k == WAKE_OTHER || k == WAKE_FUTEX))
		k = WAKE_NONE;
	/*
	 * TCP's receive path run by a task, not an interrupt: loopback delivers inside the
	 * sender's send (an engine, a runner behind its server on 127.0.0.1), and that sender
	 * is the waker
	 */
	if (k == WAKE_NET && *valid)
		k = WAKE_TCP_LOCAL;
	/* the hop keeps the stack's first frames, the ones that tell how it woke */
	strlcpy_cut(text_out, out_sz, text);
	return k;
}

/*
 * A GIL waiter wakes every switch interval (5 ms) to ask again, so none of its waits is long
 * enough to be a span, and its last switch-out in the gap may be a short wait on something
 * else once it has the GIL. Which of its switch-outs the thread's lock time went to tells:
 * the lock time from each one to the next is that one's. True if the GIL's waits took more
 * of it than the rest, with the last of them in *out.
 */
static bool gil_waits_won(const struct stall_env *e, uint32_t tid, uint64_t t0, uint64_t t1,
			  struct py_blocked *out)
{
	const struct py_blocked *bs[256];
	size_t n = pysamples__blocked_in(e->ps, tid, t0, t1, bs, ARRAY_SIZE(bs));
	uint64_t gil = 0, other = 0, part[STALL_NR];

	for (size_t i = 0; i < n; i++) {
		uint64_t a = MAX(bs[i]->ts, t0), z = i + 1 < n ? bs[i + 1]->ts : t1;

		if (z <= a || !sched_book__account(e->sb, tid, a, z, part))
			continue;
		if (bs[i]->gil == TT_PY_GIL_NONE) {
			other += part[STALL_LOCK];
			continue;
		}
		gil += part[STALL_LOCK];
		*out = *bs[i];
	}
	return gil > other;
}

/*
 * CPython's GIL: the thread's last blocking switch-out in the gap was on the GIL (the kernel
 * side told which futex it was, python.bpf.h). Its lock time is the GIL's, and the thread
 * that held it then is the next hop, with what it did. A GIL waiter wakes every switch
 * interval (5 ms) to ask for the GIL, so its waits are too short to carry their wakers: the
 * holder comes from the walk. True if it was the GIL.
 */
static bool explain_gil(struct explain *x, uint32_t h, uint32_t tid, uint32_t pid, uint64_t t0,
			uint64_t t1, uint64_t part[STALL_NR])
{
	const struct stall_env *e = x->env;
	struct stall_hop *hp = &x->st->hop[h];
	const struct sched_span *sp = sched_book__last_span(e->sb, tid, t0, t1, 1u << STALL_LOCK);
	uint64_t sub[STALL_NR];
	struct py_blocked b;

	if (!e->ps)
		return false;
	/*
	 * A long wait is told by its own walk (a condition's wait ends in a short one for the
	 * GIL: that is not what took the time); short ones, the GIL waiter's, by gil_waits_won()
	 */
	if (sp && py_blocked(e, tid, sp->t_out, &b)) {
		if (b.gil == TT_PY_GIL_NONE)
			return false;
	} else if (!gil_waits_won(e, tid, t0, t1, &b)) {
		return false;
	}
	move(part, STALL_LOCK, STALL_GIL, part[STALL_LOCK]);
	hp->cause = STALL_GIL;
	hp->ns = part[STALL_GIL];
	hp->func[0] = '\0';
	if (b.nframes && e->py_name)
		pysamples__format(b.pid, b.code, b.lasti, 1, e->py_name, e->py_ud, hp->func,
				  sizeof(hp->func));
	if (b.gil_holder && b.gil_holder != tid &&
	    sched_book__account(e->sb, b.gil_holder, t0, t1, sub) && chain_room(x, h)) {
		hop_set(x, h + 1, pid, b.gil_holder, NULL, sub, t0, t1);
		x->st->hop[h + 1].woken_by = WAKE_NONE;
	}
	return true;
}

static void explain_thread(struct explain *x, uint32_t h, uint32_t tid, const char *comm,
			   uint64_t t0, uint64_t t1, uint64_t part[STALL_NR]);

/*
 * The thread's last wait in the gap was shorter than the spans the kernel sends in full
 * (an event loop back in epoll for a few ms after a timer, until the token came): its
 * sends and receives told when that wait ended and by which thread. True if that is the
 * last wake, and it was followed or said to be an interrupt's.
 */
static bool explain_short_wake(struct explain *x, uint32_t h, uint32_t tid, uint64_t t0,
			       uint64_t t1, const struct sched_span *sp, uint64_t part[STALL_NR])
{
	const struct stall_env *e = x->env;
	struct stall_hop *hp = &x->st->hop[h];
	enum stall_cause dom = dominant(part);
	uint64_t sub[STALL_NR];
	struct sched_wake w;

	if (!sched_book__last_wake(e->sb, tid, t0, t1, &w) ||
	    (sp && w.t_woken <= (sp->t_wake ? sp->t_wake : sp->t_in)))
		return false;
	if (!w.waker_tid) {
		/*
		 * An interrupt ended it: a timer (the kernel says when it was one) or the network.
		 * After a long wait in the gap that is only a blip: the long wait, and what ended
		 * it, explain the gap (a Go thread parked 200 ms, then a timed park of 1 ms).
		 */
		if (sp)
			return false;
		hp->woken_by = w.waker_pid == TT_WAKER_TIMER ? WAKE_TIMER : WAKE_NONE;
		/* waiting for a timer, in a poll or a timed futex: idle, as for a long wait */
		if (dom == STALL_POLL || (hp->woken_by == WAKE_TIMER && dom == STALL_LOCK))
			move(part, dom, STALL_IDLE, w.t_woken - t0);
		hp->cause = dominant(part);
		hp->ns = part[hp->cause];
		return true;
	}
	if (w.waker_tid == tid ||
	    !sched_book__account(e->sb, w.waker_tid, t0, w.t_woken, sub) || !chain_room(x, h))
		return false;
	hp->woken_by = WAKE_OTHER;
	explain_thread(x, h + 1, w.waker_tid, NULL, t0, w.t_woken, sub);
	if (dom == STALL_POLL || dominant(sub) == STALL_ONCPU || dominant(sub) == STALL_IDLE)
		replace(part, dom, sub, w.t_woken - t0);
	return true;
}

/*
 * tid was made inside [t0, t1] (a thread of a traced process: TT_SCHED_BIRTH): until then
 * the time is its maker's (a Go M back from a long blocking syscall starts another M to hand
 * its work to, and that one wakes the poller that sends). Its own account from its making
 * on, and its maker as the next hop before that, when the time before its making is more
 * than anything it did itself; a new thread that then slept most of the gap is the one that
 * answers. True if the maker was followed.
 */
static bool explain_born(struct explain *x, uint32_t h, uint32_t tid, const char *comm,
			 uint64_t t0, uint64_t t1, uint64_t part[STALL_NR])
{
	const struct stall_env *e = x->env;
	uint64_t own[STALL_NR], sub[STALL_NR], tb;
	uint32_t by;

	tb = sched_book__born(e->sb, tid, &by);
	if (tb <= t0 || tb >= t1 || !by || by == tid ||
	    !sched_book__account(e->sb, tid, tb, t1, own) || own[dominant(own)] >= tb - t0 ||
	    !sched_book__account(e->sb, by, t0, tb, sub) || !chain_room(x, h))
		return false;
	hop_set(x, h, sched_book__pid_of(e->sb, tid), tid, comm, own, tb, t1);
	x->st->hop[h].woken_by = WAKE_CREATED;
	explain_thread(x, h + 1, by, NULL, t0, tb, sub);
	for (int i = 0; i < STALL_NR; i++)
		part[i] = own[i] + sub[i];
	return true;
}

/*
 * Thread tid's account of [t0, t1] into part, and the chain behind it from hop h on: the
 * idle or locked wait of tid, and what its waker did meanwhile.
 */
static void explain_thread(struct explain *x, uint32_t h, uint32_t tid, const char *comm,
			   uint64_t t0, uint64_t t1, uint64_t part[STALL_NR])
{
	const struct stall_env *e = x->env;
	struct tt_stall *st = x->st;
	uint64_t sub[STALL_NR], w0, w1;
	uint32_t pid = sched_book__pid_of(e->sb, tid);
	const struct sched_span *sp;
	enum stall_cause dom;
	enum wake_kind kind;
	bool valid;

	if (explain_born(x, h, tid, comm, t0, t1, part))
		return;
	if (!sched_book__account(e->sb, tid, t0, t1, part)) {
		memset(part, 0, STALL_NR * sizeof(*part));
		part[STALL_UNKNOWN] = t1 - t0;
	}
	hop_set(x, h, pid, tid, comm, part, t0, t1);
	dom = dominant(part);
	if (dom != STALL_POLL && dom != STALL_LOCK)
		return;
	if (dom == STALL_LOCK && explain_gil(x, h, tid, pid, t0, t1, part))
		return;
	/*
	 * The wait that mattered is the last one: what ended it let the thread go on. An event
	 * loop also wakes in between (its own timers) and goes back to waiting; the time it
	 * waited in the gap is all charged to what ended the last wait.
	 */
	sp = sched_book__last_span(e->sb, tid, t0, t1, WAIT_MASK);
	if (explain_short_wake(x, h, tid, t0, t1, sp, part))
		return;
	if (!sp)
		return;
	w0 = t0;
	w1 = MIN(t1, sp->t_wake ? sp->t_wake : sp->t_in);
	kind = wake_of(x, sp, pid, &valid, st->hop[h].wake_stack, sizeof(st->hop[h].wake_stack));
	st->hop[h].woken_by = kind;
	if (!valid || sp->waker_tid == tid ||
	    !sched_book__account(e->sb, sp->waker_tid, w0, w1, sub) || !chain_room(x, h)) {
		/* a timer, the network, a process not traced: waiting for that */
		if (sp->cause == STALL_POLL || kind == WAKE_TIMER || kind == WAKE_NET ||
		    kind == WAKE_TCP_LOCAL)
			move(part, sp->cause, STALL_IDLE, w1 - w0);
		st->hop[h].cause = dominant(part);
		st->hop[h].ns = part[st->hop[h].cause];
		return;
	}
	explain_thread(x, h + 1, sp->waker_tid, sp->waker_comm, w0, w1, sub);
	if (sp->cause == STALL_POLL || dominant(sub) == STALL_ONCPU ||
	    dominant(sub) == STALL_IDLE || py_waits_for_work(e, tid, sp)) {
		/*
		 * Waiting in an event loop, or on a futex while its waker worked on CPU (a queue,
		 * a condition: the waiter waited for that work), or was itself only idle (a
		 * runtime parking threads), or in Python's own wait for work whatever its waker
		 * did: the waker's time is the time's cause.
		 */
		replace(part, sp->cause, sub, w1 - w0);
	}
	/* else a lock its waker held while off CPU itself: a lock, the holder told */
}

/*
 * The stall in Python terms: what ran on the chain's threads, and the block the chain ends
 * in, with its Python frame: the last hop's that was blocked, in that hop's own window. An
 * event loop's waits have none, and a wait for work (a queue's get) is its waker's: both
 * are passed over, as are hops that ran.
 */
static void py_explain(const struct stall_env *e, struct tt_stall *st, uint64_t t0, uint64_t t1)
{
	uint32_t tids[STALL_HOPS_MAX], btid = 0;
	const struct sched_span *sp;
	uint64_t t_out = 0;
	struct py_blocked b;

	for (uint32_t h = 0; h < st->nhops; h++)
		tids[h] = st->hop[h].tid;
	/* the block of the last hop that was blocked: what the chain ends in */
	for (int h = st->nhops - 1; h >= 0 && !btid; h--) {
		enum stall_cause c = st->hop[h].cause;

		if (c == STALL_GIL) {
			if (!pysamples__blocked_at(e->ps, tids[h], st->hop[h].w0, st->hop[h].w1,
						   &b)) {
				btid = tids[h];
				t_out = b.ts;
			}
			continue;
		}
		if (c == STALL_ONCPU || c == STALL_RUNQ || c == STALL_STEAL || c == STALL_POLL ||
		    c >= STALL_GIL)
			continue;
		/* in the hop's own window: a block after it woke the hop before is not the cause */
		sp = sched_book__last_span(e->sb, tids[h], st->hop[h].w0, st->hop[h].w1, 1u << c);
		/* a wait for work (a queue's get) is told by its waker, not by where it waited */
		if (sp && py_waits_for_work(e, tids[h], sp))
			continue;
		if (sp && py_blocked(e, tids[h], sp->t_out, &b)) {
			btid = tids[h];
			t_out = sp->t_out;
		}
	}
	pysamples__explain(e->ps, &(struct py_ask){ .tids = tids, .n = st->nhops, .t0 = t0,
			   .t1 = t1, .btid = btid, .t_out = t_out, .name = e->py_name,
			   .ud = e->py_ud }, st->python, sizeof(st->python));
}

/*
 * The chain from tid instead, kept if it leaves less of the gap unknown. An M:N runtime
 * moves a stream's goroutine between threads: the one that sent the token ending the gap can
 * be one the runtime started during it (Go starts an M when another is held in a syscall),
 * with no account of the gap, while the thread that sent the token before spent it in the
 * stall itself.
 */
static void explain_instead(struct explain *x, uint32_t tid, uint64_t t0, uint64_t t1)
{
	struct tt_stall *st = x->st, *keep = malloc(sizeof(*keep));

	if (!keep)
		return;
	*keep = *st;
	memset(st->hop, 0, sizeof(st->hop));
	st->nhops = 0;
	st->hops_cut = false;
	explain_thread(x, 0, tid, NULL, t0, t1, st->part_ns);
	if (st->part_ns[STALL_UNKNOWN] >= keep->part_ns[STALL_UNKNOWN])
		*st = *keep;
	free(keep);
}

void stall_flow__blocked(struct stall_flow *f, uint64_t ts)
{
	if (f->open)
		return;
	f->from[f->n % STALL_FLOW_SPANS] = ts;
	f->to[f->n % STALL_FLOW_SPANS] = 0;
	f->n++;
	f->open = true;
}

void stall_flow__opened(struct stall_flow *f, uint64_t ts)
{
	if (!f->open)
		return;
	f->to[(f->n - 1) % STALL_FLOW_SPANS] = ts;
	f->open = false;
}

static int cmp_span(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* How much of [t0, t1] the windows' spells cover together; alone[w]: each by itself. */
static uint64_t flow_covered(const struct stall_flow *const flow[3], uint64_t t0, uint64_t t1,
			     uint64_t alone[3])
{
	uint64_t v[2 * STALL_FLOW_SPANS][2], got = 0, end = t0;
	unsigned n = 0;

	for (int w = FLOW_WINDOW_STREAM; w <= FLOW_WINDOW_CONN; w++) {
		const struct stall_flow *f = flow[w];

		alone[w] = 0;
		for (uint32_t i = 0; f && i < MIN(f->n, STALL_FLOW_SPANS); i++) {
			uint64_t a = MAX(f->from[i], t0), b = MIN(f->to[i] ? f->to[i] : t1, t1);

			if (b <= a)
				continue;
			alone[w] += b - a;
			v[n][0] = a;
			v[n++][1] = b;
		}
	}
	qsort(v, n, sizeof(v[0]), cmp_span);
	for (unsigned i = 0; i < n; i++) {
		if (v[i][1] <= end)
			continue;
		got += v[i][1] - MAX(v[i][0], end);
		end = v[i][1];
	}
	return got;
}

/*
 * The time of the gap the server could not send for want of the client's flow-control
 * window is that, whatever its threads did meanwhile (waited, most likely: the tokens were
 * queued in its HTTP/2 stack): taken from the waits first, then from the rest.
 */
static void explain_flow(struct tt_stall *st, const struct stall_net *net, uint64_t t0,
			 uint64_t t1)
{
	static const enum stall_cause order[] = {
		STALL_IDLE, STALL_POLL, STALL_UNKNOWN, STALL_BLOCKED, STALL_LOCK, STALL_SLEEP,
		STALL_IO, STALL_SEND, STALL_RUNQ, STALL_STEAL, STALL_GIL, STALL_ONCPU,
	};
	uint64_t alone[3], left = flow_covered(net->flow, t0, t1, alone);

	if (!left)
		return;
	st->flow_window = alone[FLOW_WINDOW_CONN] > alone[FLOW_WINDOW_STREAM] ? FLOW_WINDOW_CONN
									       : FLOW_WINDOW_STREAM;
	for (size_t i = 0; i < ARRAY_SIZE(order) && left; i++) {
		uint64_t n = MIN(left, st->part_ns[order[i]]);

		move(st->part_ns, order[i], STALL_FLOW, n);
		left -= n;
	}
}

int stall__explain(struct tt_request *r, const struct stall_env *env, uint32_t ender_tid,
		   uint64_t t0, uint64_t t1, const struct stall_net *net)
{
	struct explain x = { .env = env };
	const struct sched_span *sp;
	struct tt_stall *st;
	uint32_t first;

	if (VEC_RESERVE(r->stalls, &r->stalls_cap, (size_t)r->nstalls + 1, UINT32_MAX))
		return -ENOMEM;
	st = &r->stalls[r->nstalls++];
	memset(st, 0, sizeof(*st));
	x.st = st;
	st->after_chunk = r->chunks - 1;
	st->t_begin_ns = t0;
	st->t_end_ns = t1;

	/*
	 * With token markers: was the token made late (the engine), or made in time and sent
	 * late (the front end)? The chunk being added is token r->chunks.
	 */
	st->engine_late = -1;
	if (r->nmade > r->chunks) {
		uint64_t made = r->made_ns[r->chunks];

		st->engine_late = made > t0 && made - t0 > (t1 - t0) / 2;
	}
	/* the thread the stream waited for: the engine when it made the token late */
	first = st->engine_late == 1 && r->made_tid ? r->made_tid : ender_tid;
	if (env->sb) {
		explain_thread(&x, 0, first, NULL, t0, t1, st->part_ns);
		/* r->tid: the thread that sent the token before the gap */
		if (dominant(st->part_ns) == STALL_UNKNOWN && r->tid && r->tid != first)
			explain_instead(&x, r->tid, t0, t1);
	} else {
		st->part_ns[STALL_UNKNOWN] = t1 - t0;
		st->nhops = 0;
	}
	if (net)
		explain_flow(st, net, t0, t1);
	st->cause = dominant(st->part_ns);

	/*
	 * The stack of the longest block of the last thread the chain reached. A thread that
	 * ran, or waited in an event loop (no stack: its waker tells), passes the question to
	 * the hop before it; one blocked (a lock, a sleep, I/O) answers it, with no stack if its
	 * block's span is not in (its switch-in unseen, the span sent later): the stack of a
	 * hop before would read as where that block was.
	 */
	for (int h = st->nhops - 1; h >= 0 && stack_ips__empty(&st->stack_ips); h--) {
		enum stall_cause c = st->hop[h].cause;

		sp = env->sb ? sched_book__longest_span(env->sb, st->hop[h].tid, st->hop[h].w0,
							 st->hop[h].w1, ~0u & ~(1u << STALL_RUNQ))
			     : NULL;
		if (sp)
			st->stack_ips = sp->where;
		if (c == STALL_LOCK || c == STALL_IO || c == STALL_SLEEP || c == STALL_BLOCKED ||
		    c == STALL_SEND || c == STALL_GIL)
			break;
	}
	if (env->stack_str && !stack_ips__empty(&st->stack_ips))
		st->stack_pending = !env->stack_str(env->stack_ud, &st->stack_ips, st->stack,
						    sizeof(st->stack));
	if (env->sb && env->ps && env->py_name)
		py_explain(env, st, t0, t1);

	if (net) {
		for (uint32_t i = 0; i < net->nretrans; i++)
			if (net->retrans[i] >= t0 && net->retrans[i] <= t1)
				st->retransmits++;
		st->zero_window = net->zw_from && net->zw_from < t1 &&
				  (!net->zw_to || net->zw_to > t0);
	}
	return 0;
}
