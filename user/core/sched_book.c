// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Threads' time from the kernel's counters and long spans. See sched_book.h. */
#include <stdlib.h>
#include <string.h>
#include "hmap.h"
#include "vec.h"
#include "sched_book.h"
#include "sysnr.h"
#include "util.h"

#define SAMPLES_MAX	8192	/* kept per thread, whatever keep_ns says */
#define SPANS_MAX	512
#define TASK_UNINTERRUPTIBLE	2

struct sample {
	uint64_t ts;
	uint64_t cum[TT_T_NR];
	bool resume;	/* TT_SCHED_RESUME: since the sample before, not known */
};

#define WAKES_KEPT	32

/* the kernel's own counters of a thread at ts (events.h, struct tt_kcnt) */
struct ksample {
	uint64_t ts;
	struct tt_kcnt k;
};

struct thr {
	uint32_t tid, pid;
	uint64_t last_seen;		/* the newest time heard of it */
	struct sample *smp;		/* sorted by ts */
	size_t nsmp, smp_cap;
	struct ksample *ks;		/* sorted by ts: at its sends, reads and resumes */
	size_t nks, ks_cap;
	struct sched_span *spans;	/* sorted by t_out */
	size_t nspans, spans_cap;
	struct sched_wake wakes[WAKES_KEPT];	/* ring: its last wakes its sends told of */
	uint32_t nwakes;
	uint64_t t_exited;		/* when it exited, 0 while alive */
	uint64_t t_born;		/* when it was made (TT_SCHED_BIRTH), 0 if not seen */
	uint32_t born_by;		/* ... by which thread */
};

struct sched_book {
	struct hmap *thr;		/* tid -> struct thr */
	uint64_t keep_ns;
};

_Static_assert((int)STALL_ONCPU == TT_T_ONCPU && (int)STALL_RUNQ == TT_T_RUNQ &&
	       (int)STALL_LOCK == TT_T_LOCK && (int)STALL_IO == TT_T_IO &&
	       (int)STALL_SLEEP == TT_T_SLEEP && (int)STALL_POLL == TT_T_POLL &&
	       (int)STALL_BLOCKED == TT_T_BLOCKED && (int)STALL_SEND == TT_T_SEND &&
	       (int)STALL_STEAL == TT_T_STEAL,
	       "the kernel's time causes are stall causes");

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

	if (!b)
		return NULL;
	b->keep_ns = keep_ns;
	if (!(b->thr = hmap__new(0))) {
		free(b);
		return NULL;
	}
	return b;
}

static void thr_free(struct thr *t)
{
	free(t->smp);
	free(t->ks);
	free(t->spans);
	free(t);
}

void sched_book__free(struct sched_book *b)
{
	size_t it = 0;
	void *t;

	if (!b)
		return;
	while (hmap__next(b->thr, &it, NULL, &t))
		thr_free(t);
	hmap__free(b->thr);
	free(b);
}

static struct thr *thr_get(struct sched_book *b, uint32_t tid, uint32_t pid, bool create)
{
	struct thr *t = hmap__get(b->thr, tid);

	if (t) {
		if (pid)
			t->pid = pid;
		return t;
	}
	if (!create || !(t = calloc(1, sizeof(*t))))
		return NULL;
	t->tid = tid;
	t->pid = pid;
	if (hmap__put(b->thr, tid, t)) {
		free(t);
		return NULL;
	}
	return t;
}

/* the first index of a sorted array of n elements, elem bytes each with a leading u64 ts, at
 * or after cut (a binary search) */
static size_t first_at(const void *v, size_t n, size_t elem, uint64_t cut)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (*(const uint64_t *)((const char *)v + mid * elem) < cut)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Drop what is older than keep_ns before the newest, or over the count bounds. The arrays
 * are moved only once an eighth of them can go: moving one at every sample past a bound
 * (a busy thread at SAMPLES_MAX) cost a copy of the whole array a sample, 80% of the
 * consumer's time at saturation. So a bound holds to within an eighth (SAMPLES_MAX * 8/7).
 */
static void prune(struct sched_book *b, struct thr *t)
{
	size_t k;
	uint64_t cut = t->last_seen > b->keep_ns ? t->last_seen - b->keep_ns : 0;

	/* the samples before the first within keep_ns of the newest go but the last of them,
	 * which the interpolation at the window's start needs */
	k = first_at(t->smp, t->nsmp, sizeof(*t->smp), cut);
	k = k ? k - 1 : 0;
	if (t->nsmp - k > SAMPLES_MAX)
		k = t->nsmp - SAMPLES_MAX;
	if (k && k >= t->nsmp / 8) {
		memmove(t->smp, t->smp + k, (t->nsmp - k) * sizeof(*t->smp));
		t->nsmp -= k;
	}
	k = first_at(t->ks, t->nks, sizeof(*t->ks), cut);
	k = k ? k - 1 : 0;
	if (t->nks - k > SAMPLES_MAX)
		k = t->nks - SAMPLES_MAX;
	if (k && k >= t->nks / 8) {
		memmove(t->ks, t->ks + k, (t->nks - k) * sizeof(*t->ks));
		t->nks -= k;
	}
	k = 0;
	while (k < t->nspans && (t->nspans - k > SPANS_MAX ||
				 t->last_seen - t->spans[k].t_in > b->keep_ns))
		k++;
	if (k && k >= t->nspans / 8) {
		memmove(t->spans, t->spans + k, (t->nspans - k) * sizeof(*t->spans));
		t->nspans -= k;
	}
}

/*
 * A record of tid after its exit: the tid was given to a new thread (pid_max is often only
 * 32768), which must not be forgotten with the old one.
 */
static void heard(struct thr *t, uint64_t ts)
{
	if (t->t_exited && ts > t->t_exited)
		t->t_exited = 0;
}

/* records of one thread from two CPUs can cross: keep the samples sorted */
static void add_sample_as(struct thr *t, uint64_t ts, const __u64 *cum, bool resume)
{
	struct sample *v;
	size_t pos;

	heard(t, ts);
	pos = t->nsmp;
	while (pos > 0 && t->smp[pos - 1].ts > ts)
		pos--;
	if (pos > 0 && t->smp[pos - 1].ts == ts) {
		memcpy(t->smp[pos - 1].cum, cum, sizeof(t->smp[0].cum));
		t->smp[pos - 1].resume |= resume;
		return;
	}
	if (VEC_RESERVE(t->smp, &t->smp_cap, t->nsmp + 1, SIZE_MAX))
		return;
	v = t->smp;
	memmove(&v[pos + 1], &v[pos], (t->nsmp - pos) * sizeof(*v));
	v[pos].ts = ts;
	memcpy(v[pos].cum, cum, sizeof(v[0].cum));
	v[pos].resume = resume;
	t->nsmp++;
	if (ts > t->last_seen)
		t->last_seen = ts;
}

/* the kernel's own counters at ts (exec 0: not read), kept sorted as the samples are */
static void add_ksample(struct thr *t, uint64_t ts, const struct tt_kcnt *k)
{
	struct ksample *v;
	size_t pos;

	if (!k->exec)
		return;
	heard(t, ts);
	pos = t->nks;
	while (pos > 0 && t->ks[pos - 1].ts > ts)
		pos--;
	if (pos > 0 && t->ks[pos - 1].ts == ts)
		return;
	if (VEC_RESERVE(t->ks, &t->ks_cap, t->nks + 1, SIZE_MAX))
		return;
	v = t->ks;
	memmove(&v[pos + 1], &v[pos], (t->nks - pos) * sizeof(*v));
	v[pos].ts = ts;
	v[pos].k = *k;
	t->nks++;
	if (ts > t->last_seen)
		t->last_seen = ts;
}

static void add_sample(struct thr *t, uint64_t ts, const __u64 *cum)
{
	add_sample_as(t, ts, cum, false);
}

static void add_span(struct thr *t, const struct sched_span *sp)
{
	struct sched_span *v;
	size_t pos;

	heard(t, sp->t_in);
	if (VEC_RESERVE(t->spans, &t->spans_cap, t->nspans + 1, SIZE_MAX))
		return;
	v = t->spans;
	pos = t->nspans;
	while (pos > 0 && v[pos - 1].t_out > sp->t_out)
		pos--;
	memmove(&v[pos + 1], &v[pos], (t->nspans - pos) * sizeof(*v));
	v[pos] = *sp;
	t->nspans++;
}

/*
 * tid is made anew at ts: what the book held of it is of an older thread that had the same
 * tid (pid_max is often only 32768). Anything of the new one at ts or later stays (the
 * scheduler hooks' seed can meet a thread between its making and the fork's record).
 */
static void born(struct thr *t, uint64_t ts, uint32_t by)
{
	size_t k = first_at(t->smp, t->nsmp, sizeof(*t->smp), ts), n = 0;

	if (k) {
		memmove(t->smp, t->smp + k, (t->nsmp - k) * sizeof(*t->smp));
		t->nsmp -= k;
	}
	k = first_at(t->ks, t->nks, sizeof(*t->ks), ts);
	if (k) {
		memmove(t->ks, t->ks + k, (t->nks - k) * sizeof(*t->ks));
		t->nks -= k;
	}
	for (size_t i = 0; i < t->nspans; i++)
		if (t->spans[i].t_out >= ts)
			t->spans[n++] = t->spans[i];
	t->nspans = n;
	t->nwakes = 0;
	t->t_exited = 0;
	t->t_born = ts;
	t->born_by = by;
	if (ts > t->last_seen)
		t->last_seen = ts;
}

void sched_book__record(struct sched_book *b, const struct tt_sched_ev *e)
{
	struct thr *t = thr_get(b, e->h.tid, e->h.tgid, true);
	__u64 cum[TT_T_NR];
	struct sched_span sp = {};
	enum stall_cause c;

	if (!t)
		return;
	if (e->kind == TT_SCHED_SNAP || e->kind == TT_SCHED_RESUME) {
		add_sample_as(t, e->h.ts, e->cum, e->kind == TT_SCHED_RESUME);
		add_ksample(t, e->h.ts, &e->k);
		prune(b, t);
		return;
	}
	if (e->kind == TT_SCHED_BIRTH) {
		born(t, e->h.ts, e->waker_tid);
		return;
	}
	if (e->kind != TT_SCHED_SPAN || e->t_in < e->t_out)
		return;
	sp.t_out = e->t_out;
	sp.t_wake = e->runnable ? 0 : e->t_wake;
	sp.t_in = e->t_in;
	sp.sysnr = e->sysnr;
	sp.futex = e->futex;
	stack_ips__set(&sp.where, e->h.tgid, e->kips, e->nk, e->uips, e->nu);
	sp.cause = e->runnable ? STALL_RUNQ : sched_block_cause(e->sysnr, e->state, e->in_send);
	sp.waker_tid = e->waker_tid;
	sp.waker_pid = e->waker_tgid;
	memcpy(sp.waker_comm, e->waker_comm, sizeof(sp.waker_comm));
	sp.waker_comm[sizeof(sp.waker_comm) - 1] = '\0';
	/* an interrupt's too (waker_tgid its kind, no process): the network's receive path */
	stack_ips__set(&sp.how, e->waker_tid ? e->waker_tgid : 0, e->wkips, e->nwk, NULL, 0);
	add_span(t, &sp);
	/* three samples: off CPU, woken, on CPU again; between them one counter grows */
	memcpy(cum, e->cum, sizeof(cum));
	add_sample(t, e->t_out, cum);
	if (!e->runnable) {
		uint64_t tw = e->t_wake && e->t_wake >= e->t_out && e->t_wake <= e->t_in ?
			      e->t_wake : e->t_in;

		c = sched_block_cause(e->sysnr, e->state, e->in_send);
		cum[c] += tw - e->t_out;
		add_sample(t, tw, cum);
		cum[TT_T_RUNQ] += e->t_in - tw;
	} else {
		cum[TT_T_RUNQ] += e->t_in - e->t_out;
	}
	add_sample(t, e->t_in, cum);
	if (e->waker_traced && e->waker_tid && e->waker_tid != e->h.tid && e->t_wake) {
		struct thr *w = thr_get(b, e->waker_tid, e->waker_tgid, true);

		if (w) {
			add_sample(w, e->t_wake, e->waker_cum);
			prune(b, w);
		}
	}
	prune(b, t);
}

void sched_book__oncpu(struct sched_book *b, uint32_t tid, uint64_t ts)
{
	struct thr *t = thr_get(b, tid, 0, false);

	if (t && ts > t->last_seen)
		t->last_seen = ts;
}

void sched_book__counters(struct sched_book *b, uint32_t tid, uint32_t pid, uint64_t ts,
			  const __u64 cum[TT_T_NR])
{
	struct thr *t = thr_get(b, tid, pid, true);

	if (!t)
		return;
	add_sample(t, ts, cum);
	prune(b, t);
}

void sched_book__kcounters(struct sched_book *b, uint32_t tid, uint32_t pid, uint64_t ts,
			   const struct tt_kcnt *k)
{
	struct thr *t;

	if (!k->exec || !(t = thr_get(b, tid, pid, true)))
		return;
	add_ksample(t, ts, k);
	prune(b, t);
}

void sched_book__woken(struct sched_book *b, uint32_t tid, uint32_t pid, uint64_t t_woken,
		       uint32_t waker_tid, uint32_t waker_pid)
{
	struct thr *t = thr_get(b, tid, pid, true);
	struct sched_wake *last;

	if (!t || !t_woken)
		return;
	heard(t, t_woken);
	last = t->nwakes ? &t->wakes[(t->nwakes - 1) % WAKES_KEPT] : NULL;
	if (last && last->t_woken >= t_woken)
		return;	/* the same wake, told by the next send too */
	t->wakes[t->nwakes++ % WAKES_KEPT] = (struct sched_wake){
		.t_woken = t_woken, .waker_tid = waker_tid, .waker_pid = waker_pid,
	};
}

bool sched_book__last_wake(struct sched_book *b, uint32_t tid, uint64_t t0, uint64_t t1,
			   struct sched_wake *out)
{
	struct thr *t = thr_get(b, tid, 0, false);

	for (uint32_t i = 0; t && i < MIN(t->nwakes, (uint32_t)WAKES_KEPT); i++) {
		const struct sched_wake *w = &t->wakes[(t->nwakes - 1 - i) % WAKES_KEPT];

		if (w->t_woken <= t0)
			break;
		if (w->t_woken <= t1) {
			*out = *w;
			return true;
		}
	}
	return false;
}

/*
 * The counters at ts, from the samples around it; false before the first sample. Between
 * two samples each counter grows in proportion; after the last one, and before a RESUME
 * sample (the hooks were off), nothing is known: the counters stay as they were.
 */
static bool cum_at(const struct thr *t, uint64_t ts, uint64_t out[TT_T_NR])
{
	size_t lo = 0, hi = t->nsmp;
	const struct sample *a, *z;

	while (lo < hi) {	/* the first sample after ts */
		size_t mid = (lo + hi) / 2;

		if (t->smp[mid].ts <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	a = &t->smp[lo - 1];
	memcpy(out, a->cum, sizeof(a->cum));
	if (lo == t->nsmp || t->smp[lo].resume)
		return true;
	z = &t->smp[lo];
	for (int i = 0; i < TT_T_NR; i++) {
		uint64_t d = z->cum[i] > a->cum[i] ? z->cum[i] - a->cum[i] : 0;

		out[i] += (uint64_t)((unsigned __int128)d * (ts - a->ts) / (z->ts - a->ts));
	}
	return true;
}

/*
 * [u0, u1], a time no pair of the thread's samples covers (the hooks were off, or came only
 * later), split by the kernel's own counters where they were read inside it: from the first
 * reading at or after u0 to the last at or before u1, the CPU time they grew by is on CPU,
 * the wait for a CPU waiting, and the rest off CPU: blocked when the thread switched out of
 * its own accord meanwhile, else still on CPU in the guest's eyes (the kernel leaves steal
 * time out of its CPU time, and the CPU time of a running thread lags by up to a tick).
 * Blocked in what, they do not say. The rest of [u0, u1] stays unknown.
 */
static void piece_split(const struct thr *t, uint64_t u0, uint64_t u1, uint64_t part[STALL_NR])
{
	size_t a = first_at(t->ks, t->nks, sizeof(*t->ks), u0), z;
	const struct ksample *ka, *kz;
	uint64_t len, run, rq;

	part[STALL_UNKNOWN] += u1 - u0;
	z = first_at(t->ks, t->nks, sizeof(*t->ks), u1 + 1);
	if (a >= t->nks || z == 0 || z - 1 <= a)
		return;
	ka = &t->ks[a];
	kz = &t->ks[z - 1];
	len = kz->ts - ka->ts;
	run = MIN(kz->k.exec > ka->k.exec ? kz->k.exec - ka->k.exec : 0, len);
	rq = MIN(kz->k.rd > ka->k.rd ? kz->k.rd - ka->k.rd : 0, len - run);
	part[STALL_UNKNOWN] -= len;
	part[STALL_ONCPU] += run;
	part[STALL_RUNQ] += rq;
	part[kz->k.nvcsw != ka->k.nvcsw ? STALL_BLOCKED : STALL_ONCPU] += len - run - rq;
}

/*
 * Into part, the times in [t0, t1] no pair of samples covers (before the first, before a
 * RESUME sample, after the last), each split by the kernel's counters as far as they can.
 */
static void unknown_within(const struct thr *t, uint64_t t0, uint64_t t1,
			   uint64_t part[STALL_NR])
{
	if (!t->nsmp || t->smp[0].ts >= t1) {
		piece_split(t, t0, t1, part);
		return;
	}
	if (t0 < t->smp[0].ts)
		piece_split(t, t0, t->smp[0].ts, part);
	for (size_t i = 1; i < t->nsmp; i++) {
		if (!t->smp[i].resume || t->smp[i].ts <= t0 || t->smp[i - 1].ts >= t1)
			continue;
		piece_split(t, MAX(t0, t->smp[i - 1].ts), MIN(t1, t->smp[i].ts), part);
	}
	if (t->smp[t->nsmp - 1].ts < t1)
		piece_split(t, MAX(t0, t->smp[t->nsmp - 1].ts), t1, part);
}

bool sched_book__account(struct sched_book *b, uint32_t tid, uint64_t t0, uint64_t t1,
			 uint64_t part_ns[STALL_NR])
{
	struct thr *t = thr_get(b, tid, 0, false);
	uint64_t c0[TT_T_NR], c1[TT_T_NR], from, sum = 0, want;
	int big = STALL_UNKNOWN;

	memset(part_ns, 0, STALL_NR * sizeof(*part_ns));
	if (!t)
		return false;
	if (t1 <= t0)
		return true;
	want = t1 - t0;
	/*
	 * Past the thread's last sample the counters are not known: its next span may not be
	 * over yet, or a switch was not accounted (sched_state_missed). Nor while the hooks were
	 * off. Those times the kernel's own counters split, where they were read.
	 */
	if (t->nsmp && t->smp[0].ts < t1) {
		from = MAX(t0, t->smp[0].ts);
		if (!cum_at(t, from, c0) || !cum_at(t, t1, c1))
			return true;
		for (int i = 0; i < TT_T_NR; i++)
			part_ns[i] = c1[i] > c0[i] ? c1[i] - c0[i] : 0;
	}
	unknown_within(t, t0, t1, part_ns);
	/* the counters of dropped records may not add up: the parts must */
	for (int i = 0; i < STALL_NR; i++) {
		sum += part_ns[i];
		if (part_ns[i] > part_ns[big])
			big = i;
	}
	if (sum > want) {
		uint64_t over = sum - want;

		for (int i = 0; i < STALL_NR && over; i++) {
			uint64_t cut = MIN(over, part_ns[i]);

			part_ns[i] -= cut;
			over -= cut;
		}
	} else {
		part_ns[big] += want - sum;
	}
	return true;
}

const struct sched_span *sched_book__longest_span(struct sched_book *b, uint32_t tid,
						  uint64_t t0, uint64_t t1, uint32_t cause_mask)
{
	struct thr *t = thr_get(b, tid, 0, false);
	const struct sched_span *best = NULL;
	uint64_t best_ns = 0;

	if (!t)
		return NULL;
	for (size_t i = 0; i < t->nspans; i++) {
		const struct sched_span *s = &t->spans[i];
		uint64_t end = s->t_wake ? s->t_wake : s->t_in, a, z;

		if (s->t_out >= t1)
			break;
		if (!(cause_mask & (1u << s->cause)) || end <= t0)
			continue;
		a = MAX(s->t_out, t0);
		z = MIN(end, t1);
		if (z > a && z - a > best_ns) {
			best_ns = z - a;
			best = s;
		}
	}
	return best;
}

const struct sched_span *sched_book__last_span(struct sched_book *b, uint32_t tid, uint64_t t0,
					       uint64_t t1, uint32_t cause_mask)
{
	struct thr *t = thr_get(b, tid, 0, false);
	const struct sched_span *last = NULL;
	uint64_t last_end = 0;

	if (!t)
		return NULL;
	for (size_t i = 0; i < t->nspans; i++) {
		const struct sched_span *s = &t->spans[i];
		uint64_t end = s->t_wake ? s->t_wake : s->t_in;

		if (s->t_out >= t1)
			break;
		if (!(cause_mask & (1u << s->cause)) || end <= t0)
			continue;
		if (end >= last_end) {
			last_end = end;
			last = s;
		}
	}
	return last;
}

uint32_t sched_book__pid_of(struct sched_book *b, uint32_t tid)
{
	struct thr *t = thr_get(b, tid, 0, false);

	return t ? t->pid : 0;
}

uint64_t sched_book__born(struct sched_book *b, uint32_t tid, uint32_t *by)
{
	struct thr *t = thr_get(b, tid, 0, false);

	*by = t ? t->born_by : 0;
	return t ? t->t_born : 0;
}

void sched_book__exited(struct sched_book *b, uint32_t tid, uint64_t ts)
{
	struct thr *t = thr_get(b, tid, 0, false);

	if (t)
		t->t_exited = ts;
}

uint64_t sched_book__expire(struct sched_book *b, uint64_t now_ns)
{
	uint64_t gone = 0, tid, *dead = NULL;
	size_t it = 0, n = 0, cap = 0;
	void *v;

	/* the table must not change while it is walked: the threads to forget first */
	while (hmap__next(b->thr, &it, &tid, &v)) {
		struct thr *t = v;

		if ((t->last_seen + b->keep_ns < now_ns ||
		     (t->t_exited && t->t_exited + SCHED_EXITED_KEEP_NS < now_ns)) &&
		    !VEC_RESERVE(dead, &cap, n + 1, SIZE_MAX))
			dead[n++] = tid;
	}
	for (size_t i = 0; i < n; i++) {
		thr_free(hmap__del(b->thr, dead[i]));
		gone++;
	}
	free(dead);
	return gone;
}

uint64_t sched_book__threads(const struct sched_book *b)
{
	return hmap__count(b->thr);
}
