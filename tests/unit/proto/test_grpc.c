// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gRPC message framer: messages fed whole, split at every offset and byte by byte give the
 * same messages; empty and compressed messages, several in one feed, a message over many
 * feeds; a bad prefix, gaps inside a message and over a prefix, resync at a frame's start,
 * the stream's end inside a message.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "grpc.h"

static char log_buf[8192];
static size_t log_n;

static void put(const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(log_buf + log_n, sizeof(log_buf) - log_n, fmt, ap);
	va_end(ap);
	assert_true(k >= 0 && (size_t)k < sizeof(log_buf) - log_n);
	log_n += (size_t)k;
}

static void on_message(void *ud, const struct grpc_message *m)
{
	(void)ud;
	put("M%u%s%s%s|", m->length, m->compressed ? "z" : "", m->truncated ? "!" : "",
	    m->resynced ? "~" : "");
}

static void on_error(void *ud, const char *why)
{
	(void)ud;
	put("X:%s|", why);
}

static const struct grpc_cb cbs = { .on_message = on_message, .on_error = on_error };

static struct grpc_parser *new_parser(bool joined)
{
	struct grpc_parser *p = grpc_parser__new(&cbs, NULL, joined);

	assert_non_null(p);
	log_n = 0;
	log_buf[0] = '\0';
	return p;
}

/* three GenerateResponse-sized messages, an empty one and a compressed one */
static const uint8_t stream[] = {
	0, 0, 0, 0, 6, 0x0a, 4, 'r', 'e', 'q', '1',
	0, 0, 0, 0, 9, 0x12, 7, 0x08, 0x2a, 0x12, 3, ' ', 'h', 'i',
	0, 0, 0, 0, 0,
	1, 0, 0, 0, 3, 0x1f, 0x8b, 0x08,
	0, 0, 0, 0, 2, 0x08, 0x01,
};
static const char stream_log[] = "M6|M9|M0|M3z|M2|";

static void test_every_split(void **state)
{
	(void)state;
	for (size_t a = 0; a <= sizeof(stream); a++) {
		for (size_t b = a; b <= sizeof(stream); b++) {
			struct grpc_parser *p = new_parser(false);

			grpc_parser__feed(p, stream, a, true);
			grpc_parser__feed(p, stream + a, b - a, false);
			grpc_parser__feed(p, stream + b, sizeof(stream) - b, false);
			assert_true(grpc_parser__end(p));
			if (strcmp(log_buf, stream_log))
				fail_msg("cuts %zu %zu: %s", a, b, log_buf);
			grpc_parser__free(p);
		}
	}
	{
		struct grpc_parser *p = new_parser(false);

		for (size_t i = 0; i < sizeof(stream); i++)
			grpc_parser__feed(p, stream + i, 1, false);
		assert_string_equal(log_buf, stream_log);
		assert_int_equal(grpc_parser__stats(p)->messages, 5);
		assert_int_equal(grpc_parser__stats(p)->bytes, 20);
		grpc_parser__free(p);
	}
}

static void test_bad_prefix_and_resync(void **state)
{
	struct grpc_parser *p = new_parser(false);
	static const uint8_t bad[] = { 2, 0, 0, 0, 1, 'x' };

	(void)state;
	grpc_parser__feed(p, bad, sizeof(bad), true);
	/* lost: a feed inside a frame is not where a message starts */
	grpc_parser__feed(p, stream, 11, false);
	/* a frame's start with a plausible prefix is */
	grpc_parser__feed(p, stream + 11, sizeof(stream) - 11, true);
	assert_string_equal(log_buf, "X:bad message prefix|M9~|M0|M3z|M2|");
	assert_int_equal(grpc_parser__stats(p)->dropped, 1 + 11);
	grpc_parser__free(p);

	/* joined: the first frame start that looks like a prefix */
	p = new_parser(true);
	grpc_parser__feed(p, stream + 6, 5, true);	/* mid-message: flag byte 4 */
	grpc_parser__feed(p, stream + 11, 14, true);
	assert_string_equal(log_buf, "M9~|");
	grpc_parser__free(p);
}

static void test_gaps(void **state)
{
	struct grpc_parser *p = new_parser(false);

	(void)state;
	/* the second message's last 4 bytes were not captured */
	grpc_parser__feed(p, stream, 11 + 10, true);
	grpc_parser__gap(p, 4);
	grpc_parser__feed(p, stream + 25, sizeof(stream) - 25, true);
	assert_string_equal(log_buf, "M6|M9!|M0|M3z|M2|");
	assert_true(grpc_parser__end(p));
	grpc_parser__free(p);

	/* a gap past the message's end hides the next prefix */
	p = new_parser(false);
	grpc_parser__feed(p, stream, 11 + 10, true);
	grpc_parser__gap(p, 4 + 2);
	grpc_parser__feed(p, stream + 27, sizeof(stream) - 27, false);
	grpc_parser__feed(p, stream + 30, sizeof(stream) - 30, true);
	assert_string_equal(log_buf, "M6|M9!|X:gap over a message prefix|M3z~|M2|");
	grpc_parser__free(p);
}

static void test_end_inside_message(void **state)
{
	struct grpc_parser *p = new_parser(false);

	(void)state;
	grpc_parser__feed(p, stream, 13, true);
	assert_false(grpc_parser__end(p));
	assert_string_equal(log_buf, "M6|X:stream ended inside a message|");
	/* a big length is only a count: nothing is allocated for it */
	grpc_parser__feed(p, (const uint8_t *)"\0\xff\xff\xff\xff", 5, true);
	grpc_parser__gap(p, 0xffffffffu);
	assert_true(grpc_parser__end(p));
	assert_int_equal(grpc_parser__stats(p)->messages, 2);
	grpc_parser__free(p);
	assert_int_equal(grpc_parser__stats(NULL)->messages, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_split),
		cmocka_unit_test(test_bad_prefix_and_resync),
		cmocka_unit_test(test_gaps),
		cmocka_unit_test(test_end_inside_message),
	};

	return cmocka_run_group_tests_name("grpc", tests, NULL, NULL);
}
