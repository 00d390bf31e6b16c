// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The HTTP/2 parser's streams (h2_conn.h): an open-addressing table keyed by stream id, with
 * linear probing and backward-shift deletion (no tombstones, so a long-lived connection that
 * opens millions of streams never degrades), grown by doubling up to 2 * H2_STREAMS_MAX
 * slots. Closed ids are remembered in a small ring: frames a peer still had in flight when a
 * stream closed (DATA after an RST_STREAM, a late WINDOW_UPDATE) do not open it again.
 */
#include <stdlib.h>
#include <string.h>

#include "h2_conn.h"

#define TAB_MIN	16

static size_t home(const struct h2_parser *p, uint32_t id)
{
	return (size_t)(id * 2654435761u) & (p->cap - 1);
}

struct h2_stream *h2_stream__find(const struct h2_parser *p, uint32_t id)
{
	if (!p->cap || !id)
		return NULL;
	for (size_t i = home(p, id);; i = (i + 1) & (p->cap - 1)) {
		if (p->tab[i].id == id)
			return p->tab + i;
		if (!p->tab[i].id)
			return NULL;
	}
}

static struct h2_stream *insert(struct h2_parser *p, uint32_t id)
{
	size_t i = home(p, id);

	while (p->tab[i].id)
		i = (i + 1) & (p->cap - 1);
	memset(&p->tab[i], 0, sizeof(p->tab[i]));
	p->tab[i].id = id;
	p->count++;
	return &p->tab[i];
}

static bool grow(struct h2_parser *p)
{
	size_t old_cap = p->cap, cap = old_cap ? old_cap * 2 : TAB_MIN;
	struct h2_stream *old = p->tab, *tab = calloc(cap, sizeof(*tab));

	if (!tab)
		return false;
	p->tab = tab;
	p->cap = cap;
	p->count = 0;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].id)
			*insert(p, old[i].id) = old[i];
	free(old);
	return true;
}

struct h2_stream *h2_stream__add(struct h2_parser *p, uint32_t id, bool joined)
{
	struct h2_stream *st;

	if (p->count >= H2_STREAMS_MAX) {
		p->stats.untracked++;
		p->stats.errors++;
		if (p->cb.on_error)
			p->cb.on_error(p->ud, h2__initiator(id), "too many open streams");
		return NULL;
	}
	if ((p->count + 1) * 2 > p->cap && !grow(p)) {
		p->stats.untracked++;
		return NULL;
	}
	st = insert(p, id);
	st->joined = joined;
	p->stats.streams++;
	h2_flow__new_stream(p, st);
	return st;
}

static bool recently_closed(const struct h2_parser *p, uint32_t id)
{
	for (unsigned i = 0; i < H2_CLOSED_MAX; i++)
		if (p->closed[i] == id)
			return true;
	return false;
}

struct h2_stream *h2_stream__for(struct h2_parser *p, enum h2_dir dir, uint32_t id,
				 bool opening)
{
	struct h2_stream *st = h2_stream__find(p, id);
	struct h2_side *init = &p->side[h2__initiator(id)];

	if (st)
		return st;
	if (recently_closed(p, id))
		goto stray;
	if (opening && id > init->max_opened) {
		init->max_opened = id;
		if (p->joined && !init->join_first)
			init->join_first = id;
		return h2_stream__add(p, id, false);
	}
	/*
	 * Joined: a stream opened before the first one seen opening may have been open all
	 * along. Past that, every stream opened was seen opening: this one closed.
	 */
	if (p->joined && (!init->join_first || id < init->join_first))
		return h2_stream__add(p, id, true);
stray:
	(void)dir;
	p->stats.stray++;
	return NULL;
}

/* Backward-shift deletion: later entries of the probe run move up into the hole. */
static void remove_at(struct h2_parser *p, size_t hole)
{
	size_t i = hole;

	p->tab[hole].id = 0;
	p->count--;
	for (;;) {
		size_t h;

		i = (i + 1) & (p->cap - 1);
		if (!p->tab[i].id)
			return;
		h = home(p, p->tab[i].id);
		/* can the entry at i move to the hole: is the hole on its probe path? */
		if (((i - h) & (p->cap - 1)) >= ((i - hole) & (p->cap - 1))) {
			p->tab[hole] = p->tab[i];
			p->tab[i].id = 0;
			hole = i;
		}
	}
}

void h2_stream__close(struct h2_parser *p, struct h2_stream *st, enum h2_close_reason why,
		      enum h2_dir by, uint32_t code)
{
	struct h2_close c = {
		.stream = st->id, .reason = why, .by = by, .error_code = code,
		.joined = st->joined,
	};

	if (p->cb.on_close)
		p->cb.on_close(p->ud, &st->sud, &c);
	p->closed[p->closed_next] = st->id;
	p->closed_next = (p->closed_next + 1) % H2_CLOSED_MAX;
	remove_at(p, (size_t)(st - p->tab));
}

void h2_stream__close_all(struct h2_parser *p, bool (*match)(const struct h2_stream *, uint32_t),
			  uint32_t arg, enum h2_close_reason why, enum h2_dir by, uint32_t code)
{
	/*
	 * A removal shifts later entries into the slot just emptied, so the slot is looked at
	 * again; an entry shifted from past the wrap into a slot already passed was looked at
	 * where it was.
	 */
	for (size_t i = 0; i < p->cap;) {
		if (p->tab[i].id && match(&p->tab[i], arg))
			h2_stream__close(p, &p->tab[i], why, by, code);
		else
			i++;
	}
}

void h2_stream__free_all(struct h2_parser *p)
{
	free(p->tab);
	p->tab = NULL;
	p->cap = p->count = 0;
}
