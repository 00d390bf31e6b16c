// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include <string.h>
#include "sched_book.h"
#include "sysnr.h"
#include "util.h"

#define TAB_SIZE	1024
#define TRANS_MAX	65536	/* transitions kept per thread, whatever keep_ns says */
#define TASK_UNINTERRUPTIBLE	2

struct trans {
	uint64_t ts;
	uint8_t state;		/* enum thr_state entered at ts */
	uint8_t cause;		/* TS_BLOCKED: enum stall_cause */
	int32_t kstack, ustack;
};

struct thr {
	struct thr *next;
	uint32_t tid;
	/* the state before the first kept transition, and since when it is known */
	uint8_t prior_state, prior_cause;
	bool seen;		/* prior_state was set: by a record, or a send seen */
	uint64_t known_since;
	struct trans *v;
	size_t start, len, cap;
};

struct sched_book {
	struct thr *tab[TAB_SIZE];
	uint64_t keep_ns;
};

enum stall_cause sched_block_cause(uint32_t sysnr, uint32_t state, int in_send)
{
	if (in_send)
		return STALL_SEND;
	switch (sysnr) {
	case TT_NR_futex:
	case TT_NR_futex_waitv:
		return STALL_LOCK;
	case TT_NR_nanosleep:
	case TT_NR_clock_nanosleep:
		return STALL_SLEEP;
	case TT_NR_poll:
	case TT_NR_select:
	case TT_NR_epoll_wait:
	case TT_NR_pselect6:
	case TT_NR_ppoll:
	case TT_NR_epoll_pwait:
	case TT_NR_epoll_pwait2:
		return STALL_POLL;
	case TT_NR_read:
	case TT_NR_readv:
	case TT_NR_recvfrom:
	case TT_NR_recvmsg:
		return STALL_IO;
	}
	/* uninterruptible sleep is the kernel waiting on a device: disk, page faults */
	if (state & TASK_UNINTERRUPTIBLE)
		return STALL_IO;
	return STALL_BLOCKED;
}

struct sched_book *sched_book__new(uint64_t keep_ns)
{
	struct sched_book *b = calloc(1, sizeof(*b));

	if (b)
		b->keep_ns = keep_ns;
	return b;
}

void sched_book__free(struct sched_book *b)
{
	if (!b)
		return;
	for (int i = 0; i < TAB_SIZE; i++) {
		struct thr *t = b->tab[i], *next;

		for (; t; t = next) {
			next = t->next;
			free(t->v);
			free(t);
		}
	}
	free(b);
}

static struct thr *thr_get(struct sched_book *b, uint32_t tid, bool create)
{
	struct thr **pp = &b->tab[tid % TAB_SIZE], *t;

	for (t = *pp; t; t = t->next)
		if (t->tid == tid)
			return t;
	if (!create || !(t = calloc(1, sizeof(*t))))
		return NULL;
	t->tid = tid;
	t->next = *pp;
	*pp = t;
	return t;
}

static struct trans *at(const struct thr *t, size_t i)
{
	return &t->v[t->start + i];
}

/* Forget what is older than keep_ns before the newest, keeping the state it left. */
static void prune(struct sched_book *b, struct thr *t)
{
	uint64_t newest = at(t, t->len - 1)->ts;

	while (t->len > 1 && (t->len > TRANS_MAX || newest - at(t, 1)->ts > b->keep_ns)) {
		struct trans *old = at(t, 0);

		t->prior_state = old->state;
		t->prior_cause = old->cause;
		t->known_since = old->ts;
		t->start++;
		t->len--;
	}
}

static int insert(struct sched_book *b, struct thr *t, const struct trans *tr)
{
	size_t pos;

	if (t->start + t->len == t->cap) {
		if (t->start && t->start >= t->cap / 2) {
			memmove(t->v, t->v + t->start, t->len * sizeof(*t->v));
			t->start = 0;
		} else {
			size_t cap = t->cap ? t->cap * 2 : 64;
			struct trans *n = realloc(t->v, cap * sizeof(*n));

			if (!n)
				return -1;
			t->v = n;
			t->cap = cap;
		}
	}
	/* records of one thread from two CPUs can cross: keep the timeline sorted */
	pos = t->len;
	while (pos > 0 && at(t, pos - 1)->ts > tr->ts)
		pos--;
	memmove(at(t, pos + 1), at(t, pos), (t->len - pos) * sizeof(*t->v));
	*at(t, pos) = *tr;
	t->len++;
	prune(b, t);
	return 0;
}

/* first transition of t after ts */
static size_t after(const struct thr *t, uint64_t ts)
{
	size_t lo = 0, hi = t->len;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (at(t, mid)->ts <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* the state of t at time ts, and the transition that set it (NULL: the prior state) */
static enum thr_state state_at(const struct thr *t, uint64_t ts, const struct trans **by,
			       uint8_t *cause)
{
	size_t lo = after(t, ts);

	if (lo > 0) {
		*by = at(t, lo - 1);
		*cause = (*by)->cause;
		return (*by)->state;
	}
	*by = NULL;
	*cause = t->prior_cause;
	if (t->known_since && ts < t->known_since)
		return TS_UNKNOWN;
	return t->prior_state;
}

void sched_book__record(struct sched_book *b, const struct tt_sched_ev *e)
{
	struct thr *t = thr_get(b, e->h.tid, true);
	struct trans tr = { .ts = e->h.ts, .kstack = -1, .ustack = -1 };
	const struct trans *by;
	uint8_t cause;

	if (!t)
		return;
	switch (e->kind) {
	case TT_SCHED_OUT:
		if (e->runnable) {
			tr.state = TS_RUNQ;
		} else {
			tr.state = TS_BLOCKED;
			tr.cause = sched_block_cause(e->sysnr, e->state, e->in_send);
			tr.kstack = e->kstack;
			tr.ustack = e->ustack;
		}
		if (!t->seen)
			t->prior_state = TS_ONCPU;
		break;
	case TT_SCHED_IN:
		tr.state = TS_ONCPU;
		if (!t->seen)
			t->prior_state = TS_RUNQ;
		break;
	case TT_SCHED_WAKE:
		/* a wakeup racing with the thread's own way to sleep changes nothing */
		if (t->seen && state_at(t, tr.ts, &by, &cause) != TS_BLOCKED)
			return;
		tr.state = TS_RUNQ;
		if (!t->seen) {
			t->prior_state = TS_BLOCKED;
			t->prior_cause = STALL_BLOCKED;
		}
		break;
	default:
		return;
	}
	t->seen = true;
	insert(b, t, &tr);
}

void sched_book__oncpu(struct sched_book *b, uint32_t tid, uint64_t ts)
{
	struct thr *t = thr_get(b, tid, true);
	struct trans tr = { .ts = ts, .state = TS_ONCPU, .kstack = -1, .ustack = -1 };
	const struct trans *by;
	uint8_t cause;

	if (!t)
		return;
	if (!t->seen) {
		t->prior_state = TS_ONCPU;
		t->seen = true;
		return;
	}
	if (state_at(t, ts, &by, &cause) != TS_ONCPU)
		insert(b, t, &tr);
}

#define THREADS_MAX	8

/* The longest stretch t spent blocked inside [t0, t1]. */
static uint64_t longest_block(const struct thr *t, uint64_t t0, uint64_t t1,
			      const struct trans **best_by, uint8_t *best_cause)
{
	const struct trans *by;
	uint8_t cause;
	enum thr_state s = state_at(t, t0, &by, &cause);
	uint64_t from = t0, best = 0;
	size_t j = after(t, t0);

	for (;;) {
		uint64_t to = j < t->len && at(t, j)->ts < t1 ? at(t, j)->ts : t1;

		if (s == TS_BLOCKED && to - from > best) {
			best = to - from;
			*best_by = by;
			*best_cause = cause;
		}
		if (to == t1)
			break;
		by = at(t, j++);
		s = by->state;
		cause = by->cause;
		from = to;
	}
	return best;
}

void sched_book__account(struct sched_book *b, const uint32_t *tids, int n, uint64_t t0,
			 uint64_t t1, struct sched_account *out)
{
	struct thr *th[THREADS_MAX];
	uint64_t stackbuf[256], *bounds = stackbuf;
	size_t nb = 0, need = 1;
	int nt = 0;

	memset(out, 0, sizeof(*out));
	out->kstack = out->ustack = -1;
	out->longest_cause = STALL_UNKNOWN;
	if (t1 <= t0)
		return;
	for (int i = 0; i < n && nt < THREADS_MAX; i++) {
		struct thr *t = thr_get(b, tids[i], false);
		bool dup = false;

		for (int j = 0; j < nt; j++)
			dup |= th[j] == t;
		if (t && !dup)
			th[nt++] = t;
	}
	if (!nt) {
		out->part_ns[STALL_UNKNOWN] = t1 - t0;
		return;
	}
	/* every instant where one of the threads changed state cuts the interval */
	for (int i = 0; i < nt; i++)
		for (size_t j = after(th[i], t0); j < th[i]->len && at(th[i], j)->ts < t1; j++)
			need++;
	if (need > ARRAY_SIZE(stackbuf) && !(bounds = malloc(need * sizeof(*bounds)))) {
		out->part_ns[STALL_UNKNOWN] = t1 - t0;
		return;
	}
	bounds[nb++] = t0;
	for (int i = 0; i < nt; i++)
		for (size_t j = after(th[i], t0); j < th[i]->len && at(th[i], j)->ts < t1; j++)
			bounds[nb++] = at(th[i], j)->ts;
	qsort(bounds, nb, sizeof(*bounds), cmp_u64);
	for (size_t k = 0; k < nb; k++) {
		uint64_t a = bounds[k], z = k + 1 < nb ? bounds[k + 1] : t1;
		enum stall_cause c = STALL_UNKNOWN, blocked = STALL_NR;
		bool oncpu = false, runq = false;

		if (z <= a)
			continue;
		for (int i = 0; i < nt; i++) {
			const struct trans *by;
			uint8_t cause;
			enum thr_state s = state_at(th[i], a, &by, &cause);

			if (s == TS_ONCPU)
				oncpu = true;
			else if (s == TS_RUNQ)
				runq = true;
			else if (s == TS_BLOCKED && blocked == STALL_NR)
				blocked = cause;	/* the first thread's cause wins */
		}
		if (oncpu)
			c = STALL_ONCPU;
		else if (runq)
			c = STALL_RUNQ;
		else if (blocked != STALL_NR)
			c = blocked;
		out->part_ns[c] += z - a;
	}
	if (bounds != stackbuf)
		free(bounds);

	/* the longest block: the first thread's if it blocked at all, else any thread's */
	for (int i = 0; i < nt; i++) {
		const struct trans *by = NULL;
		uint8_t cause = STALL_UNKNOWN;
		uint64_t len = longest_block(th[i], t0, t1, &by, &cause);

		if (len > out->longest_ns) {
			out->longest_ns = len;
			out->longest_tid = th[i]->tid;
			out->longest_cause = cause;
			out->kstack = by ? by->kstack : -1;
			out->ustack = by ? by->ustack : -1;
		}
		if (i == 0 && len)
			break;
	}
}
