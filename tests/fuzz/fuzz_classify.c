// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Classification fuzzer: classify__chunk() and classify__req_info() on the input, and jscan on
 * it directly with a visitor that exercises every helper on every value. The text is copied
 * into a buffer of its exact size, so a read past it is caught.
 *
 * Input: byte 0 picks the SSE event name and the cut flag and a prefix length; the rest is
 * the text.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "classify.h"
#include "jscan.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

static const char *const events[] = {
	NULL, "", "message_start", "content_block_delta", "message_stop", "ping", "error",
	"message_delta",
};

static int visit(void *ud, const struct jscan_path *p, const struct jscan_value *v)
{
	char small[5], big[64];
	long long n;
	size_t l;

	(void)ud;
	CHECK(p->depth >= 0 && p->depth <= JSCAN_DEPTH_MAX);
	CHECK(v->raw || v->raw_len == 0);
	if (v->type == JS_STRING) {
		l = jscan__string(v, small, sizeof(small));
		CHECK(strlen(small) <= l && strlen(small) < sizeof(small));
		CHECK(jscan__string(v, big, sizeof(big)) == l);
		CHECK(strlen(big) <= l);
		CHECK(jscan__string(v, NULL, 0) == l);
		/* decoded text is never longer than raw text: escapes only shrink or keep it */
		CHECK(l <= v->raw_len);
	}
	if (v->type == JS_NUMBER && jscan__int(v, &n) && !v->cut) {
		/* an integer as sent: digits only, so its text is short */
		CHECK(v->raw_len <= 20);
	}
	(void)jscan__path_match(p, "choices", "*", "delta", "content", NULL);
	(void)jscan__path_match(p, "**", "content", NULL);
	(void)jscan__path_match(p, "**", "*", "**", "text", "**", NULL);
	(void)jscan__key_is(p, "content");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct chunk_info ci;
	struct req_info ri;
	enum jscan_result r, rp;
	const char *ev;
	char *text;
	size_t len, plen;
	bool cut;

	if (size < 1)
		return 0;
	ev = events[data[0] & 7];
	cut = data[0] & 8;
	len = size - 1;
	text = malloc(len ? len : 1);
	if (!text)
		return 0;
	memcpy(text, data + 1, len);

	classify__chunk(text, len, cut, ev, &ci);
	CHECK(ci.kind >= CHUNK_CONTENT && ci.kind <= CHUNK_UNKNOWN);
	CHECK(memchr(ci.model, '\0', sizeof(ci.model)) && memchr(ci.id, '\0', sizeof(ci.id)));
	CHECK(ci.model_tokens >= -1);
	if (ci.kind == CHUNK_DONE)
		CHECK(ci.final);
	if (cut)
		CHECK(ci.cut);

	classify__req_info(text, len, cut, &ri);
	CHECK(memchr(ri.model, '\0', sizeof(ri.model)));
	CHECK(ri.stream >= -1 && ri.stream <= 1);

	r = jscan__walk(text, len, visit, NULL);
	CHECK(r == JSCAN_OK || r == JSCAN_CUT || r == JSCAN_ERROR);

	/*
	 * A prefix of text that is not malformed is never malformed either: the scanner decides
	 * an error from the bytes before it only.
	 */
	plen = len ? (size_t)(data[0] >> 4) * len / 16 : 0;
	rp = jscan__walk(text, plen, visit, NULL);
	if (r != JSCAN_ERROR)
		CHECK(rp != JSCAN_ERROR);
	classify__chunk(text, plen, true, ev, &ci);
	CHECK(ci.cut);

	free(text);
	return 0;
}
