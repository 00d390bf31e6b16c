// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Marker attribution. See attribute.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "attribute.h"
#include "hmap.h"
#include "util.h"

/* Keyed markers kept until a request shows their key (a stream id comes with its first chunk) */
#define PEND_MARKERS_MAX	4096
#define PM_CONSUMED		0xff

/* A request under one of its keys (request id, stream id). */
struct keyent {
	struct keyent *next;	/* another request under the same key's hash, older */
	uint64_t hash;
	struct tt_request *r;
};

struct pend_marker {
	uint64_t hash;
	uint64_t ts;
	uint32_t pid;
	uint32_t tid;
	uint8_t kind;
};

struct attributor {
	attrib_foreach_fn foreach;
	void *src;
	struct attrib_stats st;
	uint8_t kind[TT_MARKERS_MAX];
	int nmarkers;
	bool have_kind[MK_NR];
	struct hmap *keyidx;	/* a key's hash -> its requests, newest first */
	struct pend_marker pend[PEND_MARKERS_MAX];	/* FIFO ring */
	size_t pend_head, pend_len;
};

const char *marker_kind_name(enum marker_kind k)
{
	static const char *const names[MK_NR] = { "admit", "first", "token", "done" };

	return (unsigned int)k < MK_NR ? names[k] : "?";
}

static uint64_t hash_key(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h ? h : 1;
}

struct attributor *attributor__new(attrib_foreach_fn foreach, void *src)
{
	struct attributor *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->foreach = foreach;
	a->src = src;
	a->keyidx = hmap__new(0);
	if (!a->keyidx) {
		free(a);
		return NULL;
	}
	return a;
}

void attributor__free(struct attributor *a)
{
	void *v;

	if (!a)
		return;
	for (size_t it = 0; hmap__next(a->keyidx, &it, NULL, &v);) {
		for (struct keyent *e = v, *next; e; e = next) {
			next = e->next;
			free(e);
		}
	}
	hmap__free(a->keyidx);
	free(a);
}

void attributor__set_markers(struct attributor *a, const uint8_t *kinds, int n)
{
	a->nmarkers = MIN(n, TT_MARKERS_MAX);
	memset(a->have_kind, 0, sizeof(a->have_kind));
	for (int i = 0; i < a->nmarkers; i++) {
		a->kind[i] = kinds[i];
		if (kinds[i] < MK_NR)
			a->have_kind[kinds[i]] = true;
	}
}

bool attributor__active(const struct attributor *a)
{
	return a->nmarkers > 0;
}

static void apply(struct attributor *a, struct tt_request *r, uint8_t kind, uint64_t ts,
		  uint32_t tid)
{
	a->st.matched++;
	if (kind == MK_TOKEN || kind == MK_FIRST)
		r->made_tid = tid;
	switch (kind) {
	case MK_ADMIT:
		if (!r->t_admit_ns)
			r->t_admit_ns = ts;
		break;
	case MK_FIRST:
		if (!r->t_made_first_ns)
			r->t_made_first_ns = ts;
		break;
	case MK_TOKEN:
		request__add_made(r, ts);
		if (!a->have_kind[MK_FIRST] && !r->t_made_first_ns)
			r->t_made_first_ns = ts;
		break;
	case MK_DONE:
		r->t_made_done_ns = ts;
		break;
	}
}

void attributor__key_add(struct attributor *a, struct tt_request *r, const char *key)
{
	struct keyent *e;
	uint64_t h;

	if (!a->nmarkers || !key[0])
		return;
	h = hash_key(key);
	e = malloc(sizeof(*e));
	if (!e)
		return;
	e->hash = h;
	e->r = r;
	e->next = hmap__get(a->keyidx, h);
	if (hmap__put(a->keyidx, h, e)) {
		free(e);
		return;
	}
	/* markers that came before their key did (a stream id shows with the first chunk) */
	for (size_t i = 0; i < a->pend_len; i++) {
		struct pend_marker *pm = &a->pend[(a->pend_head + i) % PEND_MARKERS_MAX];

		if (pm->hash == h && pm->pid == r->pid && pm->kind != PM_CONSUMED) {
			apply(a, r, pm->kind, pm->ts, pm->tid);
			pm->kind = PM_CONSUMED;
		}
	}
}

void attributor__forget(struct attributor *a, struct tt_request *r)
{
	const char *keys[2] = { r->request_id, r->resp_id };

	if (!a->nmarkers)
		return;
	for (int i = 0; i < 2; i++) {
		struct keyent *head, **pp;
		uint64_t h;

		if (!keys[i][0])
			continue;
		h = hash_key(keys[i]);
		head = hmap__get(a->keyidx, h);
		for (pp = &head; *pp;) {
			if ((*pp)->r == r) {
				struct keyent *e = *pp;

				*pp = e->next;
				free(e);
				continue;
			}
			pp = &(*pp)->next;
		}
		if (head)
			hmap__put(a->keyidx, h, head);	/* replaces: no memory needed */
		else
			hmap__del(a->keyidx, h);
	}
}

static struct tt_request *key_find(struct attributor *a, uint64_t h, uint32_t pid)
{
	for (struct keyent *e = hmap__get(a->keyidx, h); e; e = e->next)
		if (e->r->pid == pid)
			return e->r;
	return NULL;
}

static void pend_push(struct attributor *a, uint64_t h, const struct tt_marker_ev *e,
		      uint8_t kind)
{
	if (a->pend_len == PEND_MARKERS_MAX) {
		/* the oldest never found its request: a bound reached, counted */
		if (a->pend[a->pend_head].kind != PM_CONSUMED) {
			a->st.unmatched++;
			a->st.pending_evicted++;
		}
		a->pend_head = (a->pend_head + 1) % PEND_MARKERS_MAX;
		a->pend_len--;
	}
	a->pend[(a->pend_head + a->pend_len++) % PEND_MARKERS_MAX] = (struct pend_marker){
		.hash = h, .ts = e->h.ts, .pid = e->h.tgid, .tid = e->h.tid, .kind = kind,
	};
}

/* Could r own an unkeyed marker of this kind, given what it has seen so far? */
static bool in_phase(const struct attributor *a, const struct tt_request *r, uint8_t kind)
{
	bool admitted = r->t_admit_ns || !a->have_kind[MK_ADMIT];

	if (!r->t_start_ns)
		return false;
	switch (kind) {
	case MK_ADMIT:
		return !r->t_admit_ns;
	case MK_FIRST:
		return admitted && !r->t_made_first_ns;
	case MK_TOKEN:
		return admitted && !r->t_made_done_ns;
	case MK_DONE:
		return r->t_made_first_ns && !r->t_made_done_ns;
	}
	return false;
}

struct pick {
	const struct attributor *a;
	const struct tt_marker_ev *e;
	uint8_t kind;
	struct tt_request *same_thread, *any;
	int n_same_thread, n_any;
};

static void consider(void *ud, struct tt_request *r)
{
	struct pick *p = ud;

	if (r->pid != p->e->h.tgid || !in_phase(p->a, r, p->kind))
		return;
	p->any = r;
	p->n_any++;
	if (r->io_tid == p->e->h.tid) {
		p->same_thread = r;
		p->n_same_thread++;
	}
}

static void mark_ambiguous(void *ud, struct tt_request *r)
{
	struct pick *p = ud;

	if (r->pid == p->e->h.tgid && in_phase(p->a, r, p->kind))
		r->markers_ambiguous++;
}

static void unkeyed(struct attributor *a, const struct tt_marker_ev *e, uint8_t kind)
{
	struct pick p = { .a = a, .e = e, .kind = kind };

	a->foreach(a->src, consider, &p);
	if (p.n_same_thread == 1) {
		apply(a, p.same_thread, kind, e->h.ts, e->h.tid);
	} else if (p.n_any == 1) {
		apply(a, p.any, kind, e->h.ts, e->h.tid);
	} else if (!p.n_any) {
		a->st.unmatched++;
	} else {
		a->st.ambiguous++;
		a->foreach(a->src, mark_ambiguous, &p);
	}
}

void attributor__hit(struct attributor *a, const struct tt_marker_ev *e)
{
	char key[TT_KEY_MAX + 1];
	struct tt_request *r;
	uint8_t kind;
	uint64_t h;

	a->st.markers++;
	if (e->marker >= a->nmarkers) {
		a->st.unmatched++;
		return;
	}
	kind = a->kind[e->marker];
	switch (e->key_kind) {
	case TT_KEY_STR:
		memcpy(key, e->key_str, TT_KEY_MAX);
		key[TT_KEY_MAX] = '\0';
		break;
	case TT_KEY_INT:
		/* an integer key is matched as the decimal text of an id */
		snprintf(key, sizeof(key), "%llu", (unsigned long long)e->key);
		break;
	default:
		unkeyed(a, e, kind);
		return;
	}
	h = hash_key(key);
	r = key_find(a, h, e->h.tgid);
	if (r)
		apply(a, r, kind, e->h.ts, e->h.tid);
	else
		pend_push(a, h, e, kind);
}

const struct attrib_stats *attributor__stats(const struct attributor *a)
{
	return &a->st;
}
