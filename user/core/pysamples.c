// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hmap.h"
#include "pysamples.h"
#include "vec.h"

#define DEF_THREADS	256
#define DEF_SAMPLES	1024
#define DEF_BLOCKED	256
/* a ring grows to its bound (vec.h): quiet threads stay small */

struct sample {
	uint64_t ts;
	uint8_t n;
	uint8_t flags;
	uint16_t pad;
	int32_t lasti[PYSAMPLES_KEEP];
	uint64_t code[PYSAMPLES_KEEP];
};

/* Entries in time order of arrival; once full, the oldest is overwritten. */
struct ring {
	void *buf;
	size_t esz;
	size_t cap;		/* allocated */
	uint32_t max;		/* bound */
	uint32_t len, head;	/* head: where the next one goes */
};

struct thread {
	uint32_t tid, pid;	/* tid 0: a free slot */
	uint64_t last_ts;
	struct ring samples;
	struct ring blocked;	/* struct py_blocked */
};

struct pysamples {
	struct thread *thr;
	struct hmap *bytid;	/* tid -> its entry in thr */
	uint32_t nthr, max_threads;
	uint32_t per_thread, blocked_per_thread;
	struct pysamples_counts c;
};

struct pysamples *pysamples__new(uint32_t max_threads, uint32_t per_thread,
				 uint32_t blocked_per_thread)
{
	struct pysamples *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return NULL;
	ps->max_threads = max_threads ? max_threads : DEF_THREADS;
	ps->per_thread = per_thread ? per_thread : DEF_SAMPLES;
	ps->blocked_per_thread = blocked_per_thread ? blocked_per_thread : DEF_BLOCKED;
	ps->thr = calloc(ps->max_threads, sizeof(*ps->thr));
	ps->bytid = hmap__new(ps->max_threads);
	if (!ps->thr || !ps->bytid) {
		pysamples__free(ps);
		return NULL;
	}
	return ps;
}

static void ring_free(struct ring *r)
{
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

void pysamples__free(struct pysamples *ps)
{
	if (!ps)
		return;
	for (uint32_t i = 0; i < ps->nthr; i++) {
		ring_free(&ps->thr[i].samples);
		ring_free(&ps->thr[i].blocked);
	}
	free(ps->thr);
	hmap__free(ps->bytid);
	free(ps);
}

/* A slot for the next entry (the oldest one's when full: *dropped set), or NULL (memory). */
static void *ring_push(struct ring *r, bool *dropped)
{
	void *slot;

	*dropped = false;
	if (r->len == r->cap && r->cap < r->max) {
		/*
		 * Full but allowed to grow: it has not wrapped yet (growing comes first), so its
		 * entries are in order from slot 0 and the next goes right after them.
		 */
		if (vec__reserve(&r->buf, &r->cap, r->esz, (size_t)r->len + 1, r->max))
			return NULL;
		r->head = r->len;
	}
	if (!r->cap)
		return NULL;
	slot = (char *)r->buf + (size_t)r->head * r->esz;
	r->head = (r->head + 1) % r->cap;
	if (r->len < r->cap)
		r->len++;
	else
		*dropped = true;
	return slot;
}

static const void *ring_at(const struct ring *r, uint32_t i)
{
	return (const char *)r->buf + (size_t)i * r->esz;
}

static struct thread *thread_find(const struct pysamples *ps, uint32_t tid)
{
	return hmap__get(ps->bytid, tid);
}

static struct thread *thread_get(struct pysamples *ps, uint32_t tid, uint32_t pid)
{
	struct thread *t = thread_find(ps, tid);

	if (t) {
		t->pid = pid;
		return t;
	}
	if (ps->nthr < ps->max_threads) {
		t = &ps->thr[ps->nthr++];
	} else {
		/* the thread heard from least recently makes room */
		t = &ps->thr[0];
		for (uint32_t i = 1; i < ps->nthr; i++)
			if (ps->thr[i].last_ts < t->last_ts)
				t = &ps->thr[i];
		ring_free(&t->samples);
		ring_free(&t->blocked);
		hmap__del(ps->bytid, t->tid);
		ps->c.threads_dropped++;
	}
	memset(t, 0, sizeof(*t));
	if (hmap__put(ps->bytid, tid, t)) {
		if (t == &ps->thr[ps->nthr - 1])
			ps->nthr--;	/* a new slot, given back */
		return NULL;
	}
	t->tid = tid;
	t->pid = pid;
	t->samples.esz = sizeof(struct sample);
	t->samples.max = ps->per_thread;
	t->blocked.esz = sizeof(struct py_blocked);
	t->blocked.max = ps->blocked_per_thread;
	return t;
}

void pysamples__record(struct pysamples *ps, const struct tt_pystack_ev *e, size_t size)
{
	uint32_t n, keep;
	struct thread *t;
	bool dropped;

	if (size < TT_PYSTACK_HDR_SIZE || e->h.type != TT_EV_PYSTACK || e->nframes > TT_PY_DEPTH ||
	    size < TT_PYSTACK_HDR_SIZE + e->nframes * sizeof(struct tt_py_frame) || !e->h.tid ||
	    (e->kind != TT_PY_SAMPLE && e->kind != TT_PY_BLOCKED)) {
		ps->c.bad++;
		return;
	}
	n = e->nframes;
	keep = n < PYSAMPLES_KEEP ? n : PYSAMPLES_KEEP;
	t = thread_get(ps, e->h.tid, e->h.tgid);
	if (!t) {
		ps->c.nomem++;
		return;
	}
	if (e->h.ts > t->last_ts)
		t->last_ts = e->h.ts;
	if (e->kind == TT_PY_SAMPLE) {
		struct sample *s = ring_push(&t->samples, &dropped);

		if (!s) {
			ps->c.nomem++;
			return;
		}
		ps->c.samples++;
		ps->c.dropped += dropped;
		memset(s, 0, sizeof(*s));
		s->ts = e->h.ts;
		s->n = keep;
		s->flags = e->flags;
		for (uint32_t i = 0; i < keep; i++) {
			s->code[i] = e->frames[i].code;
			s->lasti[i] = e->frames[i].lasti;
		}
	} else {
		struct py_blocked *b = ring_push(&t->blocked, &dropped);

		if (!b) {
			ps->c.nomem++;
			return;
		}
		ps->c.blocked++;
		ps->c.dropped += dropped;
		memset(b, 0, sizeof(*b));
		b->ts = e->h.ts;
		b->pid = e->h.tgid;
		b->tid = e->h.tid;
		b->sysnr = e->sysnr;
		b->futex = e->futex;
		b->gil = e->gil;
		b->flags = e->flags;
		b->nframes = keep;
		b->depth = n;
		b->gil_holder = e->gil_holder;
		for (uint32_t i = 0; i < keep; i++) {
			b->code[i] = e->frames[i].code;
			b->lasti[i] = e->frames[i].lasti;
		}
	}
}

/* one sample of the interval, by the function it was in */
struct hit {
	uint32_t pid;
	uint64_t code;
	int32_t lasti;
	uint8_t flags;
	const struct sample *s;
};

static int cmp_hit(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->code != y->code)
		return x->code < y->code ? -1 : 1;
	return (x->lasti > y->lasti) - (x->lasti < y->lasti);
}

/* one function's samples, and one of them whose stack stands for it */
struct agg {
	struct py_top top;
	const struct sample *rep;
};

static int cmp_agg(const void *a, const void *b)
{
	const struct py_top *x = &((const struct agg *)a)->top, *y = &((const struct agg *)b)->top;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->code > y->code) - (x->code < y->code);
}

size_t pysamples__format(uint32_t pid, const uint64_t *code, const int32_t *lasti, int n,
			 py_name_fn name, void *ud, char *buf, size_t sz)
{
	size_t len = 0;

	if (!sz)
		return 0;
	buf[0] = '\0';
	for (int i = 0; i < n && len + 1 < sz; i++) {
		if (i) {
			int k = snprintf(buf + len, sz - len, " <- ");

			len += k < 0 ? 0 : (size_t)k >= sz - len ? sz - len - 1 : (size_t)k;
			if (len + 1 >= sz)
				break;
		}
		if (name) {
			size_t k = name(ud, pid, code[i], lasti[i], buf + len, sz - len);

			len += k >= sz - len ? sz - len - 1 : k;
		} else {
			int k = snprintf(buf + len, sz - len, "0x%llx+%d",
					 (unsigned long long)code[i], lasti[i]);

			len += k < 0 ? 0 : (size_t)k >= sz - len ? sz - len - 1 : (size_t)k;
		}
	}
	buf[len] = '\0';
	return len;
}

static void fill_name(struct py_top *t, const struct sample *s, py_name_fn name, void *ud)
{
	if (!t->code) {
		snprintf(t->name, sizeof(t->name), "(no Python frame)");
		t->stack[0] = '\0';
		return;
	}
	pysamples__format(t->pid, &t->code, &t->lasti, 1, name, ud, t->name, sizeof(t->name));
	pysamples__format(t->pid, s->code, s->lasti, s->n, name, ud, t->stack, sizeof(t->stack));
}

int pysamples__top(struct pysamples *ps, const uint32_t *tids, int n, uint64_t t0, uint64_t t1,
		   struct py_top *out, int max, uint32_t *total, py_name_fn name, void *ud)
{
	struct agg *aggs = NULL;
	struct hit *hits = NULL;
	size_t nh = 0, cap = 0, nagg = 0;
	int written = 0;

	*total = 0;
	for (int i = 0; i < n; i++) {
		const struct thread *t = thread_find(ps, tids[i]);

		/* the same thread twice in tids counts once */
		for (int j = 0; j < i && t; j++)
			if (tids[j] == tids[i])
				t = NULL;
		if (!t)
			continue;
		for (uint32_t k = 0; k < t->samples.len; k++) {
			const struct sample *s = ring_at(&t->samples, k);

			if (s->ts < t0 || s->ts > t1)
				continue;
			if (VEC_RESERVE(hits, &cap, nh + 1, SIZE_MAX)) {
				ps->c.nomem++;
				goto out;
			}
			hits[nh++] = (struct hit){
				.pid = t->pid,
				.code = s->n ? s->code[0] : 0,
				.lasti = s->n ? s->lasti[0] : 0,
				.flags = s->flags,
				.s = s,
			};
		}
	}
	*total = nh;
	if (!nh || max <= 0)
		goto out;
	qsort(hits, nh, sizeof(*hits), cmp_hit);
	aggs = calloc(nh, sizeof(*aggs));
	if (!aggs) {
		ps->c.nomem++;
		goto out;
	}
	/* runs of one function; inside a run, runs of one instruction give its busiest line */
	for (size_t i = 0; i < nh;) {
		struct agg *g = &aggs[nagg++];
		struct py_top *t = &g->top;
		size_t j = i, best = 0;

		t->pid = hits[i].pid;
		t->code = hits[i].code;
		while (j < nh && hits[j].pid == t->pid && hits[j].code == t->code) {
			size_t k = j;

			while (k < nh && hits[k].pid == t->pid && hits[k].code == t->code &&
			       hits[k].lasti == hits[j].lasti) {
				t->kernel += !!(hits[k].flags & TT_PYF_KERNEL);
				t->no_gil += !(hits[k].flags & TT_PYF_HOLDS_GIL);
				k++;
			}
			if (k - j > best) {
				best = k - j;
				t->lasti = hits[j].lasti;
				g->rep = hits[j].s;
			}
			j = k;
		}
		t->samples = j - i;
		t->share = (double)t->samples / nh;
		i = j;
	}
	qsort(aggs, nagg, sizeof(*aggs), cmp_agg);
	for (size_t i = 0; i < nagg && written < max; i++) {
		out[written] = aggs[i].top;
		fill_name(&out[written], aggs[i].rep, name, ud);
		written++;
	}
out:
	free(aggs);
	free(hits);
	return written;
}

int pysamples__blocked_at(const struct pysamples *ps, uint32_t tid, uint64_t t0, uint64_t t1,
			  struct py_blocked *out)
{
	const struct thread *t = thread_find(ps, tid);
	const struct py_blocked *best = NULL;

	if (!t)
		return -ENOENT;
	for (uint32_t k = 0; k < t->blocked.len; k++) {
		const struct py_blocked *b = ring_at(&t->blocked, k);

		if (b->ts >= t0 && b->ts <= t1 && (!best || b->ts >= best->ts))
			best = b;
	}
	if (!best)
		return -ENOENT;
	*out = *best;
	return 0;
}

static int cmp_blocked_ts(const void *a, const void *b)
{
	const struct py_blocked *x = *(const struct py_blocked *const *)a;
	const struct py_blocked *y = *(const struct py_blocked *const *)b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

size_t pysamples__blocked_in(const struct pysamples *ps, uint32_t tid, uint64_t t0, uint64_t t1,
			     const struct py_blocked **out, size_t max)
{
	const struct thread *t = thread_find(ps, tid);
	const struct py_blocked *before = NULL, **all;
	size_t n = 0, skip;

	if (!t || !max || !(all = calloc(t->blocked.len + 1, sizeof(*all))))
		return 0;
	for (uint32_t k = 0; k < t->blocked.len; k++) {
		const struct py_blocked *b = ring_at(&t->blocked, k);

		if (b->ts < t0 && (!before || b->ts > before->ts))
			before = b;
		else if (b->ts >= t0 && b->ts <= t1)
			all[n++] = b;
	}
	if (before)
		all[n++] = before;
	qsort(all, n, sizeof(*all), cmp_blocked_ts);
	/* over max: the latest, the ones nearest the gap's end */
	skip = n > max ? n - max : 0;
	memcpy(out, all + skip, (n - skip) * sizeof(*out));
	free(all);
	return n - skip;
}

/* snprintf at buf + *len, never past sz, *len kept below sz */
static void add(char *buf, size_t sz, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void add(char *buf, size_t sz, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (*len + 1 >= sz)
		return;
	va_start(ap, fmt);
	k = vsnprintf(buf + *len, sz - *len, fmt, ap);
	va_end(ap);
	if (k > 0)
		*len += (size_t)k >= sz - *len ? sz - *len - 1 : (size_t)k;
}

size_t pysamples__explain(struct pysamples *ps, const struct py_ask *q, char *buf, size_t sz)
{
	struct py_top top[3];
	struct py_blocked b;
	char where[PYSAMPLES_NAME_MAX];
	uint32_t total;
	size_t len = 0;
	int k;

	if (!sz)
		return 0;
	buf[0] = '\0';
	k = pysamples__top(ps, q->tids, q->n, q->t0, q->t1, top, 3, &total, q->name, q->ud);
	for (int i = 0; i < k; i++)
		add(buf, sz, &len, "%s%s %.0f%%", i ? ", " : "ran: ", top[i].name,
		    100 * top[i].share);
	if (!q->btid || pysamples__blocked_at(ps, q->btid, q->t_out, q->t_out, &b))
		return len;
	if (b.nframes)
		pysamples__format(b.pid, b.code, b.lasti, 1, q->name, q->ud, where, sizeof(where));
	else
		snprintf(where, sizeof(where), "(no Python frame)");
	add(buf, sz, &len, "%s", len ? "; " : "");
	if (b.gil == TT_PY_GIL_WAIT && b.gil_holder) {
		uint32_t h = b.gil_holder;

		add(buf, sz, &len, "thread %u waiting for the GIL in %s, held by thread %u",
		    q->btid, where, h);
		if (pysamples__top(ps, &h, 1, b.ts, q->t1, top, 1, &total, q->name, q->ud) == 1)
			add(buf, sz, &len, ", running %s", top[0].name);
	} else {
		add(buf, sz, &len, "thread %u blocked in %s", q->btid, where);
	}
	return len;
}

void pysamples__counts(const struct pysamples *ps, struct pysamples_counts *out)
{
	*out = ps->c;
}
