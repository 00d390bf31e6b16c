// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * HPACK decoder fuzzer, differential: the input's script (fuzz_script.h) cuts the payload
 * into pieces of header blocks; events: which % 3 == 0 ends a block, 1 abandons it, 2 sets
 * the table-size bound to 4096 << (which / 3 & 7) between blocks; a gap abandons. Every piece
 * goes, in its own buffer, to two decoders: one exact from the start, one joined at the
 * start (partial). Both must keep their fields terminated and their counts sane; and while
 * the exact one has not failed and the walk knows every field of a block, both find the
 * same kept fields with the same values.
 *
 * flags bits 0-2: the table-size bound, 4096 << bits (both decoders, from the start).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hpack.h"
#include "fuzz_script.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

struct state {
	struct hpack_decoder *exact, *partial;
	bool in_block;
	bool exact_failed;	/* the exact decoder failed or was abandoned: no longer exact */
};

static void check_fields(const struct hpack_fields *f)
{
	CHECK(memchr(f->method, 0, sizeof(f->method)) && memchr(f->path, 0, sizeof(f->path)));
	CHECK(memchr(f->authority, 0, sizeof(f->authority)));
	CHECK(memchr(f->content_type, 0, sizeof(f->content_type)));
	CHECK(memchr(f->te, 0, sizeof(f->te)));
	CHECK(memchr(f->grpc_message, 0, sizeof(f->grpc_message)));
	CHECK(memchr(f->request_id, 0, sizeof(f->request_id)));
	CHECK(memchr(f->traceparent, 0, sizeof(f->traceparent)));
	CHECK(f->unknown <= f->fields + 1);
	for (int k = 0; k < HPACK_NKEYS; k++) {
		CHECK(f->state[k] <= HPACK_UNKNOWN);
		if (f->unknown)
			CHECK(f->state[k] != HPACK_ABSENT);
	}
}

static bool same(const struct hpack_fields *a, const struct hpack_fields *b, enum hpack_key k)
{
	switch (k) {
	case HPACK_METHOD:
		return !strcmp(a->method, b->method);
	case HPACK_PATH:
		return !strcmp(a->path, b->path);
	case HPACK_STATUS:
		return a->status == b->status;
	case HPACK_AUTHORITY:
		return !strcmp(a->authority, b->authority);
	case HPACK_CONTENT_TYPE:
		return !strcmp(a->content_type, b->content_type);
	case HPACK_TE:
		return !strcmp(a->te, b->te);
	case HPACK_GRPC_STATUS:
		return a->grpc_status == b->grpc_status;
	case HPACK_GRPC_MESSAGE:
		return !strcmp(a->grpc_message, b->grpc_message);
	case HPACK_REQUEST_ID:
		return !strcmp(a->request_id, b->request_id);
	case HPACK_TRACEPARENT:
		return !strcmp(a->traceparent, b->traceparent);
	default:
		return true;
	}
}

static void begin(struct state *st)
{
	if (st->in_block)
		return;
	hpack_decoder__begin(st->exact);
	hpack_decoder__begin(st->partial);
	st->in_block = true;
}

static void op_feed(void *ud, const uint8_t *d, size_t len)
{
	struct state *st = ud;
	uint8_t *copy = malloc(len);

	if (!copy)
		return;
	memcpy(copy, d, len);
	begin(st);
	hpack_decoder__feed(st->exact, copy, len);
	hpack_decoder__feed(st->partial, copy, len);
	free(copy);
}

static void op_gap(void *ud, uint64_t len)
{
	struct state *st = ud;

	/* a gap inside a block: both abandon it */
	(void)len;
	begin(st);
	hpack_decoder__abandon(st->exact);
	hpack_decoder__abandon(st->partial);
	st->in_block = false;
	st->exact_failed = true;
}

static void end_block(struct state *st)
{
	struct hpack_fields e, p;

	begin(st);
	hpack_decoder__end(st->exact, &e);
	hpack_decoder__end(st->partial, &p);
	st->in_block = false;
	check_fields(&e);
	check_fields(&p);
	CHECK(p.partial);
	if (e.failed)
		st->exact_failed = true;
	CHECK(e.partial == st->exact_failed);
	if (st->exact_failed)
		return;
	CHECK(e.unknown == 0);
	/* past HPACK_LEARN_MAX insertions the walk forgets, and a repeated field may differ */
	if (p.unknown)
		return;
	for (int k = 0; k < HPACK_NKEYS; k++) {
		if (p.state[k] == HPACK_KNOWN) {
			/* what the walk knows, the inflater found the same */
			CHECK(e.state[k] == HPACK_KNOWN && same(&e, &p, (enum hpack_key)k));
		} else if (e.state[k] == HPACK_KNOWN) {
			/* what the walk did not find, it says it may have missed */
			CHECK(p.state[k] == HPACK_UNKNOWN);
		}
	}
}

static void op_event(void *ud, unsigned which)
{
	struct state *st = ud;

	switch (which % 3) {
	case 0:
		end_block(st);
		break;
	case 1:
		if (st->in_block) {
			hpack_decoder__abandon(st->exact);
			hpack_decoder__abandon(st->partial);
			st->in_block = false;
			st->exact_failed = true;
		}
		break;
	default:
		if (!st->in_block) {
			uint32_t size = 4096u << ((which / 3) & 7);

			hpack_decoder__set_max_table(st->exact, size);
			hpack_decoder__set_max_table(st->partial, size);
		}
		break;
	}
}

static const struct fuzz_ops ops = { .feed = op_feed, .gap = op_gap, .event = op_event };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct state st = { 0 };
	uint32_t bound = 4096u << (fuzz_script_flags(data, size) & 7);

	st.exact = hpack_decoder__new(false);
	st.partial = hpack_decoder__new(true);
	if (st.exact && st.partial) {
		hpack_decoder__set_max_table(st.exact, bound);
		hpack_decoder__set_max_table(st.partial, bound);
		fuzz_script_run(data, size, &ops, &st);
		end_block(&st);
	}
	hpack_decoder__free(st.exact);
	hpack_decoder__free(st.partial);
	return 0;
}
