// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * HTTP/2 parser fuzzer: the input's script (fuzz_script.h) splits the payload into feeds,
 * gaps and events; event 0 makes the feeds and gaps that follow the client's, event 1 the
 * server's, event 2 closes the connection (the client's first). Every feed gets a buffer of
 * its own size. The callbacks check what
 * the correlator relies on: a stream's slot is its own from its first callback to on_close
 * and nothing follows on_close; each side ends a stream once; header fields are terminated
 * and counted sanely; DATA is never empty; windows reported match what the parser says; and
 * after EOF no stream is left open (LeakSanitizer sees a slot never closed).
 *
 * flags bits 0-1: the start (0 preface, 1 upgrade, 2 or 3 joined). The connection always
 * closes at the end.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "h2.h"
#include "fuzz_script.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

struct slot {
	uint32_t id;
	bool ended[2];
	bool closed;
};

struct state {
	struct h2_parser *p;
	long open;		/* slots allocated, not closed */
	bool upgrade;
	unsigned sum;
};

static struct slot *slot_of(struct state *st, void **sud, uint32_t id)
{
	struct slot *s;

	CHECK(sud);
	if (!*sud) {
		s = calloc(1, sizeof(*s));
		CHECK(s);
		s->id = id;
		*sud = s;
		st->open++;
	}
	s = *sud;
	CHECK(s->id == id && !s->closed);
	return s;
}

static bool terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

static void on_headers(void *ud, void **sud, const struct h2_headers *h)
{
	const struct hpack_fields *f = h->f;

	slot_of(ud, sud, h->stream);
	CHECK(h->stream && h->kind <= H2_HDR_PUSH && f);
	CHECK(terminated(f->method, sizeof(f->method)) && terminated(f->path, sizeof(f->path)));
	CHECK(terminated(f->grpc_message, sizeof(f->grpc_message)));
	CHECK(terminated(f->request_id, sizeof(f->request_id)));
	CHECK(f->unknown <= f->fields + 1);
	for (int k = 0; k < HPACK_NKEYS; k++)
		CHECK(f->state[k] <= HPACK_UNKNOWN);
	if (f->unknown)
		for (int k = 0; k < HPACK_NKEYS; k++)
			CHECK(f->state[k] != HPACK_ABSENT);
	if (f->state[HPACK_STATUS] == HPACK_KNOWN)
		CHECK(f->status == 0 || (f->status >= 100 && f->status <= 999));
	if (h->kind == H2_HDR_PUSH)
		CHECK(h->dir == H2_FROM_SERVER && !(h->stream & 1));
}

static void on_data(void *ud, void **sud, const struct h2_data *d)
{
	struct state *st = ud;
	struct slot *s = slot_of(st, sud, d->stream);

	CHECK(d->len > 0 && !s->ended[d->dir]);
	if (d->bytes)
		for (size_t i = 0; i < d->len; i++)
			st->sum += d->bytes[i];
}

static void on_end_stream(void *ud, void **sud, enum h2_dir dir, uint32_t stream)
{
	struct slot *s = slot_of(ud, sud, stream);

	CHECK(!s->ended[dir]);
	s->ended[dir] = true;
}

static void on_close(void *ud, void **sud, const struct h2_close *c)
{
	struct state *st = ud;
	struct slot *s = slot_of(st, sud, c->stream);

	CHECK(c->reason <= H2_CLOSE_EOF);
	/* a pushed stream's client side, and an upgraded request's, ended without a frame */
	if (c->reason == H2_CLOSE_DONE)
		CHECK(s->ended[H2_FROM_SERVER] && (s->ended[H2_FROM_CLIENT] || !(c->stream & 1) ||
						   (st->upgrade && c->stream == 1)));
	free(s);
	*sud = NULL;
	st->open--;
}

static void on_flow(void *ud, void **sud, const struct h2_flow *f)
{
	struct state *st = ud;
	int64_t w;

	if (f->stream)
		slot_of(st, sud, f->stream);
	else
		CHECK(!sud);
	if (h2_parser__window(st->p, f->sender, f->stream, &w))
		CHECK(f->known && w == f->window);
	else
		CHECK(!f->known);
	if (f->kind == H2_FLOW_BLOCKED)
		CHECK(f->known && f->window <= 0);
}

static void on_error(void *ud, enum h2_dir dir, const char *why)
{
	(void)ud;
	CHECK(why && why[0] && dir <= H2_FROM_SERVER);
}

static const struct h2_cb cbs = {
	.on_headers = on_headers, .on_data = on_data, .on_end_stream = on_end_stream,
	.on_close = on_close, .on_flow = on_flow, .on_error = on_error,
};

/* the direction of the feeds and gaps that follow: set by script events */
static enum h2_dir next_dir;

static void op_feed(void *ud, const uint8_t *d, size_t len)
{
	struct state *st = ud;
	uint8_t *copy = malloc(len);
	enum h2_sender who;

	if (!copy)
		return;
	memcpy(copy, d, len);
	/* what a connection joined mid-way is taken for, from the same bytes (h2_sniff.c) */
	if (h2__sniff(copy, len, &who))
		CHECK(who <= H2_SENDER_SERVER);
	else
		CHECK(who == H2_SENDER_UNKNOWN);
	(void)h2__is_settings(copy, len);
	h2_parser__feed(st->p, next_dir, copy, len);
	free(copy);
}

static void op_gap(void *ud, uint64_t len)
{
	struct state *st = ud;

	h2_parser__gap(st->p, next_dir, len);
}

static void op_event(void *ud, unsigned which)
{
	struct state *st = ud;

	if (which == 2) {
		h2_parser__eof(st->p);
		CHECK(st->open == 0);
		which = 0;
	}
	next_dir = which & 1 ? H2_FROM_SERVER : H2_FROM_CLIENT;
}

static const struct fuzz_ops ops = { .feed = op_feed, .gap = op_gap, .event = op_event };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t flags = fuzz_script_flags(data, size);
	enum h2_start start = (flags & 3) == 0 ? H2_START_PREFACE
			      : (flags & 3) == 1 ? H2_START_UPGRADE : H2_START_JOINED;
	struct state st = { 0 };

	st.p = h2_parser__new(start, &cbs, &st);
	if (!st.p)
		return 0;
	st.upgrade = start == H2_START_UPGRADE;
	if (st.upgrade)
		h2_parser__upgraded(st.p, "AAMAAABkAAQAEAAAAAIAAAAA");
	next_dir = H2_FROM_CLIENT;
	fuzz_script_run(data, size, &ops, &st);
	/* the connection ends, one way or another: every stream closes */
	h2_parser__eof(st.p);
	CHECK(st.open == 0);
	h2_parser__free(st.p);
	return 0;
}
