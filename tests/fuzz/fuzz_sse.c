// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * SSE parser fuzzer: the input's script (fuzz_script.h) splits the payload into feeds, gaps,
 * ends and resets; each feed gets a buffer of its own size. Every event is checked for what
 * a consumer relies on: terminated strings, consistent lengths, no line end inside a line.
 *
 * flags bit 0: end() at the end. Script events: even end(), odd reset().
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sse.h"
#include "fuzz_script.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

struct state {
	struct sse_parser *p;
	uint64_t events;	/* since the last reset */
	unsigned sum;
};

static void on_event(void *ud, const struct sse_event *ev)
{
	struct state *st = ud;
	size_t elen;

	CHECK(ev->event && ev->data);
	CHECK(ev->data_len <= SSE_DATA_MAX);
	CHECK(ev->data[ev->data_len] == '\0');
	CHECK(ev->data_total >= ev->data_len);
	/* only a cut or a gap makes the kept data differ from the whole */
	if (!ev->truncated)
		CHECK(ev->data_total == ev->data_len);
	/* CR ends a line: it can be in neither; '\n' only joins data lines */
	CHECK(!memchr(ev->data, '\r', ev->data_len));
	elen = strlen(ev->event);
	CHECK(elen < SSE_EVENT_MAX);
	CHECK(!memchr(ev->event, '\r', elen) && !memchr(ev->event, '\n', elen));
	for (size_t i = 0; i < ev->data_len; i++)
		st->sum += (uint8_t)ev->data[i];
	st->events++;
}

static void on_comment(void *ud)
{
	(void)ud;
}

static const struct sse_cb cbs = { .on_event = on_event, .on_comment = on_comment };

static void op_feed(void *ud, const uint8_t *d, size_t len)
{
	struct state *st = ud;
	uint8_t *copy = malloc(len);

	if (!copy)
		return;
	memcpy(copy, d, len);
	sse_parser__feed(st->p, copy, len);
	free(copy);
	CHECK(sse_parser__stats(st->p)->events == st->events);
}

static void op_gap(void *ud, uint64_t len)
{
	struct state *st = ud;

	sse_parser__gap(st->p, len);
}

static void op_event(void *ud, unsigned which)
{
	struct state *st = ud;

	if (which & 1) {
		sse_parser__reset(st->p);
		st->events = 0;
	} else {
		sse_parser__end(st->p);
	}
	CHECK(sse_parser__stats(st->p)->events == st->events);
}

static const struct fuzz_ops ops = { .feed = op_feed, .gap = op_gap, .event = op_event };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct state st = { 0 };

	st.p = sse_parser__new(&cbs, &st);
	if (!st.p)
		return 0;
	fuzz_script_run(data, size, &ops, &st);
	if (fuzz_script_flags(data, size) & 1)
		op_event(&st, 0);
	sse_parser__free(st.p);
	return 0;
}
