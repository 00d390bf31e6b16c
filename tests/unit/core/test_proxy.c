// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Pairing a proxy's downstream requests with its upstream calls: by the stream's own id, by
 * the request id, by timing only when one call alone fits; never across processes; each
 * upstream call pairs once; TTFT splits exactly into the proxy's delays and the upstream's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "proxy.h"

static struct tt_request *req(bool client, uint32_t pid, uint64_t start, const uint64_t *tok,
			      int n, const char *resp_id, const char *rid)
{
	struct tt_request *r = request__new();

	r->client = client;
	r->pid = pid;
	r->t_start_ns = start;
	for (int i = 0; i < n; i++)
		assert_int_equal(request__add_chunk(r, tok[i]), 0);
	snprintf(r->resp_id, sizeof(r->resp_id), "%s", resp_id);
	snprintf(r->request_id, sizeof(r->request_id), "%s", rid);
	snprintf(r->conn, sizeof(r->conn), "up-%s", rid);
	request__finish(r);
	return r;
}

static void test_by_stream_id(void **state)
{
	struct proxy *p = proxy__new(8);
	uint64_t ut[] = { 300, 400, 500 }, dt[] = { 310, 430, 505 };
	struct tt_request *u = req(true, 7, 120, ut, 3, "chatcmpl-x", "");
	struct tt_request *d = req(false, 7, 100, dt, 3, "chatcmpl-x", "");

	proxy__upstream(p, u);
	proxy__pair(p, d);
	assert_true(d->up.paired);
	assert_int_equal(d->up.by, PAIR_STREAM_ID);
	assert_int_equal(d->up.request_delay_ns, 20);
	assert_int_equal(d->up.ttft_ns, 180);
	assert_int_equal(d->up.first_token_delay_ns, 10);
	/* TTFT = the proxy's delay before the call + the upstream's TTFT + forwarding */
	assert_int_equal(d->ttft_ns, d->up.request_delay_ns + d->up.ttft_ns +
				     d->up.first_token_delay_ns);
	assert_int_equal(d->up.token_delay_max_ns, 30);
	assert_int_equal(d->up.token_delay_p50_ns, 10);
	assert_string_equal(d->up.conn, "up-");
	/* one call pairs once */
	struct tt_request *d2 = req(false, 7, 100, dt, 3, "chatcmpl-x", "");
	proxy__pair(p, d2);
	assert_false(d2->up.paired);
	request__free(u);
	request__free(d);
	request__free(d2);
	proxy__free(p);
}

static void test_by_timing_only_when_alone(void **state)
{
	struct proxy *p = proxy__new(8);
	uint64_t ut[] = { 300, 400 }, dt[] = { 310, 410 };
	struct tt_request *u1 = req(true, 7, 120, ut, 2, "", "a");
	struct tt_request *u2 = req(true, 7, 130, ut, 2, "", "b");
	struct tt_request *other = req(true, 8, 120, ut, 2, "", "c");
	struct tt_request *d = req(false, 7, 100, dt, 2, "", "");

	proxy__upstream(p, other);	/* another process's call: never */
	proxy__upstream(p, u1);
	proxy__pair(p, d);
	assert_true(d->up.paired);
	assert_int_equal(d->up.by, PAIR_TIMING);
	assert_string_equal(d->up.request_id, "a");
	request__free(d);
	/* two calls fit: unpaired, reported alone */
	d = req(false, 7, 100, dt, 2, "", "");
	proxy__upstream(p, u1);
	proxy__upstream(p, u2);
	proxy__pair(p, d);
	assert_false(d->up.paired);
	/* the request id forwarded decides it */
	request__free(d);
	d = req(false, 7, 100, dt, 2, "", "b");
	proxy__pair(p, d);
	assert_true(d->up.paired);
	assert_int_equal(d->up.by, PAIR_REQUEST_ID);
	request__free(u1);
	request__free(u2);
	request__free(other);
	request__free(d);
	proxy__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_by_stream_id),
		cmocka_unit_test(test_by_timing_only_when_alone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
