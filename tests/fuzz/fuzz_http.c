// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * HTTP parser fuzzer: the input's script (fuzz_script.h) splits the payload into feeds, gaps
 * and EOFs; the same script runs once per direction. Each feed is copied into a buffer of its
 * own size, so a read past a feed is caught even inside the fuzzer's input. The callbacks
 * check what the correlator relies on: callback order, framing kept, strings terminated, and
 * that a gap inside a chunked body never abandons the message (it waits for the next feed to
 * resync) but in the trailers, where no chunk can follow.
 *
 * flags bit 0: EOF at the end; bits 1-7: answers_head() replies, one per final response.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "fuzz_script.h"

struct state {
	struct http_parser *p;
	bool open;		/* on_head seen, neither on_end nor on_error since */
	struct http_head head;
	uint64_t body;		/* body bytes and gap bytes of the open message */
	uint8_t answers;
	unsigned asked;
	unsigned sum;		/* every body byte is read */
	const char *why;	/* the last on_error's reason */
};

#define CHECK(c) do { if (!(c)) abort(); } while (0)

static bool terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

static void on_head(void *ud, const struct http_head *h)
{
	struct state *st = ud;

	CHECK(!st->open);
	CHECK(terminated(h->method, sizeof(h->method)));
	CHECK(terminated(h->path, sizeof(h->path)));
	CHECK(terminated(h->request_id, sizeof(h->request_id)));
	CHECK(terminated(h->content_type, sizeof(h->content_type)));
	CHECK(h->framing >= HTTP_BODY_NONE && h->framing <= HTTP_BODY_CLOSE);
	CHECK(h->version_minor >= 0 && h->version_minor <= 9);
	if (h->dir == HTTP_RESPONSE)
		CHECK(h->status >= 100 && h->status <= 999);
	else
		CHECK(h->method[0] && h->path[0]);
	st->open = true;
	st->head = *h;
	st->body = 0;
}

static void on_body(void *ud, const uint8_t *d, size_t len)
{
	struct state *st = ud;

	CHECK(st->open && d && len);
	CHECK(st->head.framing != HTTP_BODY_NONE);
	for (size_t i = 0; i < len; i++)
		st->sum += d[i];
	st->body += len;
	if (st->head.framing == HTTP_BODY_LENGTH)
		CHECK(st->body <= st->head.content_length);
}

static void on_body_gap(void *ud, uint64_t len)
{
	struct state *st = ud;

	CHECK(st->open && len);
	CHECK(st->head.framing != HTTP_BODY_NONE);
	st->body += len;
	if (st->head.framing == HTTP_BODY_LENGTH)
		CHECK(st->body <= st->head.content_length);
}

static void on_end(void *ud)
{
	struct state *st = ud;

	CHECK(st->open);
	if (st->head.framing == HTTP_BODY_LENGTH)
		CHECK(st->body == st->head.content_length);
	/* only a chunked response's end can be found late, at the next response */
	if (http_parser__ended_in_gap(st->p))
		CHECK(st->head.dir == HTTP_RESPONSE && st->head.framing == HTTP_BODY_CHUNKED);
	st->open = false;
}

static bool answers_head(void *ud)
{
	struct state *st = ud;

	return (st->answers >> (st->asked++ % 7)) & 1;
}

static void on_error(void *ud, const char *why)
{
	struct state *st = ud;

	CHECK(why && why[0]);
	st->open = false;
	st->why = why;
}

static const struct http_cb cbs = {
	.on_head = on_head, .on_body = on_body, .on_body_gap = on_body_gap, .on_end = on_end,
	.answers_head = answers_head, .on_error = on_error,
};

static void op_feed(void *ud, const uint8_t *d, size_t len)
{
	struct state *st = ud;
	uint8_t *copy = malloc(len);

	if (!copy)
		return;
	memcpy(copy, d, len);
	http_parser__feed(st->p, copy, len);
	free(copy);
	/* a message whose head was parsed is owed bytes until it ends */
	if (st->open)
		CHECK(http_parser__in_message(st->p));
	CHECK(!http_parser__ended_in_gap(st->p));
}

static void op_gap(void *ud, uint64_t len)
{
	struct state *st = ud;
	bool chunked = st->open && st->head.framing == HTTP_BODY_CHUNKED;

	st->why = NULL;
	http_parser__gap(st->p, len);
	if (chunked && !st->open)
		CHECK(st->why && !strcmp(st->why, "gap in trailers"));
}

static void op_event(void *ud, unsigned which)
{
	struct state *st = ud;

	(void)which;
	http_parser__eof(st->p);
	CHECK(!st->open && !http_parser__in_message(st->p));
}

static const struct fuzz_ops ops = { .feed = op_feed, .gap = op_gap, .event = op_event };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t flags = fuzz_script_flags(data, size);

	for (int dir = HTTP_REQUEST; dir <= HTTP_RESPONSE; dir++) {
		struct state st = { .answers = flags >> 1 };

		st.p = http_parser__new((enum http_dir)dir, &cbs, &st);
		if (!st.p)
			return 0;
		fuzz_script_run(data, size, &ops, &st);
		if (flags & 1)
			op_event(&st, 0);
		http_parser__free(st.p);
	}
	return 0;
}
