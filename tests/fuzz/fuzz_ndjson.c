// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * NDJSON splitter fuzzer: the input's script (fuzz_script.h) splits the payload into feeds,
 * gaps, ends and resets; each feed gets a buffer of its own size. Every line is checked: NUL
 * terminated, no '\n' inside, lengths consistent, whole unless flagged.
 *
 * flags bit 0: end() at the end. Script events: even end(), odd reset().
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ndjson.h"
#include "fuzz_script.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

struct state {
	struct ndjson_parser *p;
	unsigned sum;
};

static void on_line(void *ud, const struct ndjson_line *l)
{
	struct state *st = ud;

	CHECK(l->text);
	CHECK(l->len <= NDJSON_LINE_MAX);
	CHECK(l->text[l->len] == '\0');
	CHECK(l->total >= l->len);
	if (!l->truncated)
		CHECK(l->total == l->len && l->len > 0);
	CHECK(!memchr(l->text, '\n', l->len));
	for (size_t i = 0; i < l->len; i++)
		st->sum += (uint8_t)l->text[i];
}

static const struct ndjson_cb cbs = { .on_line = on_line };

static void op_feed(void *ud, const uint8_t *d, size_t len)
{
	struct state *st = ud;
	uint8_t *copy = malloc(len);

	if (!copy)
		return;
	memcpy(copy, d, len);
	ndjson_parser__feed(st->p, copy, len);
	free(copy);
}

static void op_gap(void *ud, uint64_t len)
{
	struct state *st = ud;

	ndjson_parser__gap(st->p, len);
}

static void op_event(void *ud, unsigned which)
{
	struct state *st = ud;

	if (which & 1)
		ndjson_parser__reset(st->p);
	else
		ndjson_parser__end(st->p);
}

static const struct fuzz_ops ops = { .feed = op_feed, .gap = op_gap, .event = op_event };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct state st = { 0 };

	st.p = ndjson_parser__new(&cbs, &st);
	if (!st.p)
		return 0;
	fuzz_script_run(data, size, &ops, &st);
	if (fuzz_script_flags(data, size) & 1)
		op_event(&st, 0);
	ndjson_parser__free(st.p);
	return 0;
}
