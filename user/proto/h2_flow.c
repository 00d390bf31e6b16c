// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The HTTP/2 parser's settings and flow-control windows (h2_conn.h, RFC 9113 6.5 and 6.9).
 *
 * A side's SETTINGS constrain what the other side sends, from the moment that other side
 * applied them; it acknowledges after applying, so they take effect here at its ACK, in the
 * order of its own bytes. Every DATA frame's whole length (padding included) comes off its
 * sender's connection window and stream window; WINDOW_UPDATE from the receiver adds back;
 * a new SETTINGS_INITIAL_WINDOW_SIZE moves every open stream's window by the difference.
 * A window is known only if the parser saw it from its start, and never after frames of the
 * connection were lost.
 */
#include <string.h>

#include "h2_conn.h"

#define WINDOW_MAX	0x7fffffff

void h2_flow__init(struct h2_parser *p)
{
	for (int d = 0; d < 2; d++) {
		struct h2_side *s = &p->side[d];

		s->frame_max = H2_DEFAULT_FRAME_MAX;
		s->init_window = H2_DEFAULT_WINDOW;
		s->init_known = !p->joined;
		s->conn_win = H2_DEFAULT_WINDOW;
		s->conn_known = !p->joined;
	}
}

void h2_flow__new_stream(struct h2_parser *p, struct h2_stream *st)
{
	for (int d = 0; d < 2; d++) {
		st->win[d] = p->side[d].init_window;
		st->win_known[d] = p->side[d].init_known && !st->joined;
	}
}

static void report(struct h2_parser *p, struct h2_stream *st, const struct h2_flow *f)
{
	if (p->cb.on_flow)
		p->cb.on_flow(p->ud, st ? &st->sud : NULL, f);
}

/* A window of sender's moved by delta: report it. */
static void move(struct h2_parser *p, enum h2_dir sender, struct h2_stream *st, int64_t *win,
		 bool known, int64_t delta, enum h2_flow_kind kind)
{
	int64_t before = *win;
	struct h2_flow f = {
		.kind = kind, .sender = sender, .stream = st ? st->id : 0, .known = known,
		.delta = delta,
	};

	if (known) {
		*win += delta;
		f.window = *win;
		f.opened = before <= 0 && *win > 0;
	}
	if (kind == H2_FLOW_UPDATE || (known && before > 0 && *win <= 0))
		report(p, st, &f);
}

void h2_flow__data(struct h2_parser *p, enum h2_dir dir, struct h2_stream *st, uint32_t len)
{
	struct h2_side *s = &p->side[dir];

	if (!len)
		return;
	move(p, dir, NULL, &s->conn_win, s->conn_known, -(int64_t)len, H2_FLOW_BLOCKED);
	if (st)
		move(p, dir, st, &st->win[dir], st->win_known[dir], -(int64_t)len,
		     H2_FLOW_BLOCKED);
}

void h2_flow__window_update(struct h2_parser *p, enum h2_dir from, uint32_t stream,
			    uint32_t inc)
{
	enum h2_dir sender = h2__other(from);
	struct h2_side *s = &p->side[sender];
	struct h2_stream *st;

	if (!inc) {
		p->stats.errors++;
		if (p->cb.on_error)
			p->cb.on_error(p->ud, from, "WINDOW_UPDATE of 0");
		return;
	}
	if (!stream) {
		move(p, sender, NULL, &s->conn_win, s->conn_known, inc, H2_FLOW_UPDATE);
		return;
	}
	st = h2_stream__find(p, stream);
	if (!st) {
		p->stats.stray++;	/* for a closed stream: common, and harmless */
		return;
	}
	move(p, sender, st, &st->win[sender], st->win_known[sender], inc, H2_FLOW_UPDATE);
}

void h2_flow__forget(struct h2_parser *p)
{
	for (int d = 0; d < 2; d++) {
		p->side[d].conn_known = false;
		for (size_t i = 0; i < p->cap; i++)
			p->tab[i].win_known[d] = false;
	}
}

static void initial_window(struct h2_parser *p, enum h2_dir sender, uint32_t v)
{
	struct h2_side *s = &p->side[sender];
	int64_t delta = (int64_t)v - s->init_window;
	bool was_known = s->init_known;

	s->init_window = v;
	s->init_known = true;
	if (!was_known || !delta)
		return;
	for (size_t i = 0; i < p->cap; i++) {
		struct h2_stream *st = &p->tab[i];

		if (st->id && st->win_known[sender])
			move(p, sender, st, &st->win[sender], true, delta, H2_FLOW_UPDATE);
	}
}

/* The frame bound for what sender sends: the larger of the applied and any pending one. */
static void frame_bound(struct h2_parser *p, enum h2_dir sender)
{
	const struct h2_side *r = &p->side[h2__other(sender)];
	uint32_t max = p->side[sender].frame_max;

	for (unsigned i = 0; i < r->npending; i++)
		if ((r->pending[i].mask & 1u << SET_MAX_FRAME_SIZE) &&
		    r->pending[i].v[SET_MAX_FRAME_SIZE] > max)
			max = r->pending[i].v[SET_MAX_FRAME_SIZE];
	p->side[sender].rd.max_len = max;
}

void h2_flow__apply(struct h2_parser *p, enum h2_dir constrained,
		    const struct h2_settings_frame *set)
{
	struct h2_side *s = &p->side[constrained];

	if (set->mask & 1u << SET_HEADER_TABLE_SIZE)
		hpack_decoder__set_max_table(s->hpack, set->v[SET_HEADER_TABLE_SIZE]);
	if ((set->mask & 1u << SET_INITIAL_WINDOW_SIZE) &&
	    set->v[SET_INITIAL_WINDOW_SIZE] <= WINDOW_MAX)
		initial_window(p, constrained, set->v[SET_INITIAL_WINDOW_SIZE]);
	if ((set->mask & 1u << SET_MAX_FRAME_SIZE) &&
	    set->v[SET_MAX_FRAME_SIZE] >= H2_DEFAULT_FRAME_MAX &&
	    set->v[SET_MAX_FRAME_SIZE] <= H2_FRAME_MAX_LIMIT)
		s->frame_max = set->v[SET_MAX_FRAME_SIZE];
	frame_bound(p, constrained);
}

void h2_flow__setting(struct h2_parser *p, enum h2_dir from, uint16_t id, uint32_t value)
{
	struct h2_settings_frame *cur = &p->side[from].cur;

	/* unknown settings must be ignored (RFC 9113 6.5.2) */
	if (id && id < H2_SETTING_IDS) {
		cur->mask |= (uint8_t)(1u << id);
		cur->v[id] = value;
	}
}

void h2_flow__settings_end(struct h2_parser *p, enum h2_dir dir, bool ack)
{
	struct h2_side *s = &p->side[dir];
	enum h2_dir other = h2__other(dir);

	if (ack) {
		/* dir applied the oldest settings the other side sent */
		struct h2_side *r = &p->side[other];

		if (!r->npending)
			return;		/* sent before the parser joined */
		h2_flow__apply(p, dir, &r->pending[0]);
		memmove(r->pending, r->pending + 1, (r->npending - 1) * sizeof(r->pending[0]));
		r->npending--;
		frame_bound(p, dir);
		return;
	}
	if (s->npending == H2_PENDING_MAX) {
		/* a peer that never acknowledges: take the oldest as applied */
		h2_flow__apply(p, other, &s->pending[0]);
		memmove(s->pending, s->pending + 1, (s->npending - 1) * sizeof(s->pending[0]));
		s->npending--;
	}
	s->pending[s->npending++] = s->cur;
	memset(&s->cur, 0, sizeof(s->cur));
	frame_bound(p, other);
}
