// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * HPACK decoder: RFC 7541's own examples (Appendix C) fed whole, split at every offset and
 * byte by byte; blocks made by libnghttp2's deflater the way gRPC stacks send them; a decoder
 * joined mid-connection (static table, literals and the entries it saw inserted decode, the
 * rest is unknown); a decoder that fails (partial from then on, its neighbour untouched);
 * table-size settings; values cut to fit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <nghttp2/nghttp2.h>

#include "hpack.h"
#include "hpack_walk.h"

struct blk {
	uint8_t b[4096];
	size_t len;
};

static struct blk hex(const char *s)
{
	struct blk k = { 0 };

	for (; s[0] && s[1]; s += 2) {
		unsigned v;

		while (*s == ' ')
			s++;
		assert_int_equal(sscanf(s, "%2x", &v), 1);
		k.b[k.len++] = (uint8_t)v;
	}
	return k;
}

/* RFC 7541 C.3 (no Huffman) and C.4 (Huffman): three requests on one connection */
static const char *const c3[] = {
	"828684410f7777772e6578616d706c652e636f6d",
	"828684be58086e6f2d6361636865",
	"828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565",
};
static const char *const c4[] = {
	"828684418cf1e3c2e5f23a6ba0ab90f4ff",
	"828684be5886a8eb10649cbf",
	"828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf",
};

/* feed a block in pieces: cut = 0 whole, k > 0 split at k, SIZE_MAX byte by byte */
static void decode(struct hpack_decoder *d, const struct blk *k, size_t cut,
		   struct hpack_fields *f)
{
	hpack_decoder__begin(d);
	if (cut == SIZE_MAX) {
		for (size_t i = 0; i < k->len; i++)
			hpack_decoder__feed(d, k->b + i, 1);
	} else if (cut && cut < k->len) {
		hpack_decoder__feed(d, k->b, cut);
		hpack_decoder__feed(d, k->b + cut, k->len - cut);
	} else {
		hpack_decoder__feed(d, k->b, k->len);
	}
	hpack_decoder__end(d, f);
}

static void check_request(const struct hpack_fields *f, const char *path)
{
	assert_int_equal(f->state[HPACK_METHOD], HPACK_KNOWN);
	assert_string_equal(f->method, "GET");
	assert_int_equal(f->state[HPACK_PATH], HPACK_KNOWN);
	assert_string_equal(f->path, path);
	assert_int_equal(f->state[HPACK_AUTHORITY], HPACK_KNOWN);
	assert_string_equal(f->authority, "www.example.com");
	assert_int_equal(f->state[HPACK_STATUS], HPACK_ABSENT);
	assert_int_equal(f->state[HPACK_CONTENT_TYPE], HPACK_ABSENT);
	assert_int_equal(f->unknown, 0);
	assert_false(f->partial);
}

static void rfc_examples_every_split(const char *const *blocks)
{
	struct blk k[3];
	size_t maxlen = 0;

	for (int i = 0; i < 3; i++) {
		k[i] = hex(blocks[i]);
		if (k[i].len > maxlen)
			maxlen = k[i].len;
	}
	for (size_t cut = 0; cut <= maxlen + 1; cut++) {
		struct hpack_decoder *d = hpack_decoder__new(false);
		struct hpack_fields f;
		size_t c = cut == maxlen + 1 ? SIZE_MAX : cut;

		assert_non_null(d);
		decode(d, &k[0], c, &f);
		check_request(&f, "/");
		assert_int_equal(f.fields, 4);
		decode(d, &k[1], c, &f);
		check_request(&f, "/");
		assert_int_equal(f.fields, 5);
		decode(d, &k[2], c, &f);
		check_request(&f, "/index.html");
		assert_int_equal(f.fields, 5);
		assert_false(hpack_decoder__partial(d));
		hpack_decoder__free(d);
	}
}

static void test_rfc_c3_every_split(void **state)
{
	(void)state;
	rfc_examples_every_split(c3);
}

static void test_rfc_c4_every_split(void **state)
{
	(void)state;
	rfc_examples_every_split(c4);
}

/*
 * Joined before the second request: its :authority refers to the entry the first one
 * inserted, which this decoder never saw; cache-control it sees inserted, and learns. The
 * third request's :authority is then index 63: still the unknown entry.
 */
static void test_joined_mid_connection(void **state)
{
	const char *const *sets[] = { c3, c4 };

	(void)state;
	for (int s = 0; s < 2; s++) {
		struct hpack_decoder *d = hpack_decoder__new(true);
		struct blk k1 = hex(sets[s][1]), k2 = hex(sets[s][2]);
		struct hpack_fields f;

		assert_non_null(d);
		assert_true(hpack_decoder__partial(d));
		decode(d, &k1, 0, &f);
		assert_true(f.partial);
		assert_int_equal(f.fields, 5);
		assert_int_equal(f.unknown, 1);
		assert_string_equal(f.method, "GET");
		assert_string_equal(f.path, "/");
		assert_int_equal(f.state[HPACK_AUTHORITY], HPACK_UNKNOWN);
		/* absent or not, a field the block may have held is unknown */
		assert_int_equal(f.state[HPACK_CONTENT_TYPE], HPACK_UNKNOWN);
		assert_int_equal(f.state[HPACK_REQUEST_ID], HPACK_UNKNOWN);
		decode(d, &k2, 0, &f);
		assert_int_equal(f.unknown, 1);
		assert_string_equal(f.path, "/index.html");
		assert_int_equal(f.state[HPACK_AUTHORITY], HPACK_UNKNOWN);
		hpack_decoder__free(d);
	}
}

/* Joined right before the first block: everything it refers to, it saw inserted. */
static void test_joined_at_first_block_is_exact(void **state)
{
	(void)state;
	for (size_t cut = 0; cut < 20; cut++) {
		struct hpack_decoder *d = hpack_decoder__new(true);
		struct hpack_fields f;

		for (int i = 0; i < 3; i++) {
			struct blk k = hex(c4[i]);

			decode(d, &k, cut, &f);
			assert_int_equal(f.unknown, 0);
			assert_true(f.partial);
			assert_string_equal(f.authority, "www.example.com");
			assert_string_equal(f.path, i == 2 ? "/index.html" : "/");
		}
		hpack_decoder__free(d);
	}
}

/* ---------------------------------------------------------------- deflater-made blocks */

static struct blk deflate(nghttp2_hd_deflater *def, const char *const *nv)
{
	nghttp2_nv v[32];
	size_t n = 0;
	struct blk k = { 0 };
	ssize_t rv;

	for (; nv[2 * n]; n++) {
		v[n] = (nghttp2_nv){ (uint8_t *)nv[2 * n], (uint8_t *)nv[2 * n + 1],
				     strlen(nv[2 * n]), strlen(nv[2 * n + 1]),
				     NGHTTP2_NV_FLAG_NONE };
		/* as nghttp2 and grpc do for credentials */
		if (!strcmp(nv[2 * n], "authorization"))
			v[n].flags = NGHTTP2_NV_FLAG_NO_INDEX;
	}
	rv = nghttp2_hd_deflate_hd(def, k.b, sizeof(k.b), v, n);
	assert_true(rv > 0);
	k.len = (size_t)rv;
	return k;
}

static const char *const grpc_req[] = {
	":method", "POST", ":scheme", "http",
	":path", "/sglang.grpc.scheduler.SglangScheduler/Generate",
	":authority", "127.0.0.1:50051", "content-type", "application/grpc", "te", "trailers",
	"grpc-accept-encoding", "identity,deflate,gzip", "user-agent", "grpc-python/1.51.1",
	"authorization", "Bearer secret-token", "x-request-id", "req-1", NULL,
};
static const char *const grpc_resp[] = {
	":status", "200", "content-type", "application/grpc", "grpc-accept-encoding",
	"identity,deflate,gzip", NULL,
};
static const char *const grpc_trailers_ok[] = { "grpc-status", "0", NULL };
static const char *const grpc_trailers_err[] = {
	"grpc-status", "8", "grpc-message", "too%20many%20tokens", NULL,
};

#define TP "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

static void test_grpc_exchange(void **state)
{
	nghttp2_hd_deflater *req_def, *resp_def;
	struct hpack_decoder *req, *resp;
	struct hpack_fields f;
	struct blk k;

	(void)state;
	assert_int_equal(nghttp2_hd_deflate_new(&req_def, 4096), 0);
	assert_int_equal(nghttp2_hd_deflate_new(&resp_def, 4096), 0);
	req = hpack_decoder__new(false);
	resp = hpack_decoder__new(false);
	for (int round = 0; round < 3; round++) {
		k = deflate(req_def, grpc_req);
		decode(req, &k, round, &f);
		assert_int_equal(f.unknown, 0);
		assert_string_equal(f.method, "POST");
		assert_string_equal(f.path, "/sglang.grpc.scheduler.SglangScheduler/Generate");
		assert_string_equal(f.authority, "127.0.0.1:50051");
		assert_string_equal(f.content_type, "application/grpc");
		assert_string_equal(f.te, "trailers");
		assert_string_equal(f.request_id, "req-1");
		assert_int_equal(f.state[HPACK_GRPC_STATUS], HPACK_ABSENT);
		assert_int_equal(f.fields, 10);
		k = deflate(resp_def, grpc_resp);
		decode(resp, &k, 0, &f);
		assert_int_equal(f.status, 200);
		assert_string_equal(f.content_type, "application/grpc");
		k = deflate(resp_def, round == 2 ? grpc_trailers_err : grpc_trailers_ok);
		decode(resp, &k, 0, &f);
		assert_int_equal(f.state[HPACK_GRPC_STATUS], HPACK_KNOWN);
		assert_int_equal(f.grpc_status, round == 2 ? 8 : 0);
		assert_int_equal(f.state[HPACK_GRPC_MESSAGE],
				 round == 2 ? HPACK_KNOWN : HPACK_ABSENT);
		if (round == 2)
			assert_string_equal(f.grpc_message, "too%20many%20tokens");
		assert_int_equal(f.state[HPACK_STATUS], HPACK_ABSENT);
	}
	hpack_decoder__free(req);
	hpack_decoder__free(resp);
	nghttp2_hd_deflate_del(req_def);
	nghttp2_hd_deflate_del(resp_def);
}

/*
 * A decoder joined after the first gRPC request: the second refers to what the first
 * inserted, so those fields are unknown; a new literal is learned and decodes when referred
 * to again.
 */
static void test_grpc_joined(void **state)
{
	static const char *const req2[] = {
		":method", "POST", ":scheme", "http", ":path", "/other.Service/Call",
		":authority", "127.0.0.1:50051", "content-type", "application/grpc", "te",
		"trailers", "x-request-id", "req-2", "traceparent", TP, NULL,
	};
	static const char *const req3[] = {
		":method", "POST", ":path", "/other.Service/Call", "x-request-id", "req-2",
		"traceparent", TP, NULL,
	};
	nghttp2_hd_deflater *def;
	struct hpack_decoder *d = hpack_decoder__new(true);
	struct hpack_fields f;
	struct blk k;

	(void)state;
	assert_int_equal(nghttp2_hd_deflate_new(&def, 4096), 0);
	deflate(def, grpc_req);		/* sent before the tracer attached */
	k = deflate(def, grpc_req);
	decode(d, &k, 0, &f);
	assert_true(f.unknown > 0);
	assert_string_equal(f.method, "POST");	/* static */
	/* libnghttp2 never indexes :path: a literal each time, known even when joined */
	assert_string_equal(f.path, "/sglang.grpc.scheduler.SglangScheduler/Generate");
	assert_int_equal(f.state[HPACK_REQUEST_ID], HPACK_UNKNOWN);
	assert_int_equal(f.state[HPACK_AUTHORITY], HPACK_UNKNOWN);
	k = deflate(def, req2);
	decode(d, &k, 0, &f);
	assert_string_equal(f.path, "/other.Service/Call");
	/* a new value under a name known only by a reference to an unknown entry */
	assert_int_equal(f.state[HPACK_REQUEST_ID], HPACK_UNKNOWN);
	/* a new literal name */
	assert_string_equal(f.traceparent, TP);
	assert_int_equal(f.state[HPACK_CONTENT_TYPE], HPACK_UNKNOWN);
	k = deflate(def, req3);
	decode(d, &k, 0, &f);
	/* traceparent by reference to what req2 inserted: learned */
	assert_string_equal(f.traceparent, TP);
	/* and x-request-id by reference to req2's entry, whose name was unknown */
	assert_int_equal(f.unknown, 1);
	assert_int_equal(f.state[HPACK_REQUEST_ID], HPACK_UNKNOWN);
	hpack_decoder__free(d);
	nghttp2_hd_deflate_del(def);
}

/* A block the inflater refuses: that block and that decoder go partial, not the other one. */
static void test_failure_poisons_one_decoder(void **state)
{
	struct hpack_decoder *a = hpack_decoder__new(false), *b = hpack_decoder__new(false);
	struct blk bad = hex("828684bf"), k1 = hex(c4[0]), k2 = hex(c4[1]);
	struct hpack_fields f;

	(void)state;
	/* index 63 in a table that is empty */
	decode(a, &bad, 0, &f);
	assert_true(f.failed && f.partial);
	assert_true(f.unknown > 0);
	assert_int_equal(f.state[HPACK_AUTHORITY], HPACK_UNKNOWN);
	assert_true(hpack_decoder__partial(a));
	/* the neighbour decodes exactly */
	decode(b, &k1, 0, &f);
	decode(b, &k2, 0, &f);
	check_request(&f, "/");
	assert_false(hpack_decoder__partial(b));
	/* the failed one: what it sees inserted from now on, it knows */
	decode(a, &k1, 0, &f);
	assert_true(f.partial);
	assert_false(f.failed);
	assert_int_equal(f.unknown, 0);
	decode(a, &k2, 0, &f);
	assert_int_equal(f.unknown, 0);
	assert_string_equal(f.authority, "www.example.com");
	/* index 0 is an error in the walk too */
	bad = hex("8280");
	decode(a, &bad, 0, &f);
	assert_true(f.unknown > 0);
	assert_string_equal(f.method, "GET");
	hpack_decoder__free(a);
	hpack_decoder__free(b);
}

/* A block cut by a gap: abandoned, the decoder goes partial. */
static void test_abandon(void **state)
{
	struct hpack_decoder *d = hpack_decoder__new(false);
	struct blk k1 = hex(c4[0]), k2 = hex(c4[1]);
	struct hpack_fields f;

	(void)state;
	hpack_decoder__begin(d);
	hpack_decoder__feed(d, k1.b, 5);
	hpack_decoder__abandon(d);
	assert_true(hpack_decoder__partial(d));
	decode(d, &k2, 0, &f);
	assert_int_equal(f.state[HPACK_AUTHORITY], HPACK_UNKNOWN);
	assert_string_equal(f.path, "/");
	/* end() without begin(): nothing known */
	hpack_decoder__end(d, &f);
	assert_int_equal(f.state[HPACK_PATH], HPACK_UNKNOWN);
	hpack_decoder__free(d);
}

/* SETTINGS_HEADER_TABLE_SIZE: the encoder's size update within it decodes; beyond, fails. */
static void test_table_size(void **state)
{
	nghttp2_hd_deflater *def;
	struct hpack_decoder *d = hpack_decoder__new(false);
	struct hpack_fields f;
	struct blk k;

	(void)state;
	assert_int_equal(nghttp2_hd_deflate_new(&def, 65536), 0);
	hpack_decoder__set_max_table(d, 65536);
	assert_int_equal(nghttp2_hd_deflate_change_table_size(def, 65536), 0);
	k = deflate(def, grpc_req);
	assert_int_equal(k.b[0] & 0xe0, 0x20);	/* starts with a size update */
	decode(d, &k, 0, &f);
	assert_int_equal(f.unknown, 0);
	assert_string_equal(f.path, "/sglang.grpc.scheduler.SglangScheduler/Generate");
	/* shrunk to 0: the encoder must say so in its next block */
	hpack_decoder__set_max_table(d, 0);
	assert_int_equal(nghttp2_hd_deflate_change_table_size(def, 0), 0);
	k = deflate(def, grpc_req);
	decode(d, &k, 0, &f);
	assert_int_equal(f.unknown, 0);
	assert_string_equal(f.request_id, "req-1");
	assert_false(hpack_decoder__partial(d));
	hpack_decoder__free(d);
	nghttp2_hd_deflate_del(def);

	/* a partial decoder: a size update to 0 empties the table, so all is known after */
	d = hpack_decoder__new(true);
	k = hex("20828684418cf1e3c2e5f23a6ba0ab90f4ff");
	decode(d, &k, 0, &f);
	assert_int_equal(f.unknown, 0);
	k = hex(c4[1]);
	decode(d, &k, 0, &f);
	assert_int_equal(f.unknown, 0);
	assert_string_equal(f.authority, "www.example.com");
	hpack_decoder__free(d);
}

/* The static table as libnghttp2 has it, entry by entry. */
static void test_static_table(void **state)
{
	(void)state;
	for (unsigned i = 1; i <= HPACK_STATIC_LEN; i++) {
		nghttp2_hd_inflater *inf;
		uint8_t b = (uint8_t)(0x80 | i);
		nghttp2_nv nv;
		int flags = 0;

		assert_int_equal(nghttp2_hd_inflate_new(&inf), 0);
		assert_true(nghttp2_hd_inflate_hd2(inf, &nv, &flags, &b, 1, 1) >= 0);
		assert_true(flags & NGHTTP2_HD_INFLATE_EMIT);
		assert_int_equal(nv.namelen, strlen(hpack__static_name(i)));
		assert_memory_equal(nv.name, hpack__static_name(i), nv.namelen);
		assert_int_equal(nv.valuelen, strlen(hpack__static_value(i)));
		assert_memory_equal(nv.value, hpack__static_value(i), nv.valuelen);
		nghttp2_hd_inflate_del(inf);
	}
	assert_null(hpack__static_name(0));
	assert_null(hpack__static_name(HPACK_STATIC_LEN + 1));
}

static void test_keys_and_cut_values(void **state)
{
	char longpath[400];
	const char *nv[] = { ":path", longpath, ":status", "2x0", "grpc-status", "-1", NULL };
	nghttp2_hd_deflater *def;
	struct hpack_fields f;
	struct blk k;

	(void)state;
	assert_int_equal(hpack__key("authorization", 13), HPACK_OTHER);
	assert_int_equal(hpack__key("cookie", 6), HPACK_OTHER);
	assert_int_equal(hpack__key("host", 4), HPACK_AUTHORITY);
	assert_int_equal(hpack__key("X-Request-Id", 12), HPACK_REQUEST_ID);
	memset(longpath, 'p', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	for (int joined = 0; joined < 2; joined++) {
		struct hpack_decoder *d = hpack_decoder__new(joined);

		assert_int_equal(nghttp2_hd_deflate_new(&def, 4096), 0);
		for (int twice = 0; twice < 2; twice++) {
			k = deflate(def, nv);
			decode(d, &k, 0, &f);
			assert_int_equal(f.unknown, 0);
			assert_int_equal(strlen(f.path), HTTP_PATH_MAX - 1);
			assert_true(f.cut & (1u << HPACK_PATH));
			assert_int_equal(f.state[HPACK_STATUS], HPACK_KNOWN);
			assert_int_equal(f.status, 0);
			assert_int_equal(f.grpc_status, -1);
		}
		hpack_decoder__free(d);
		nghttp2_hd_deflate_del(def);
	}
}

/* A partial decoder learns HPACK_LEARN_MAX entries; older ones go unknown. */
static void test_learn_bound(void **state)
{
	nghttp2_hd_deflater *def;
	struct hpack_decoder *d = hpack_decoder__new(true);
	struct hpack_fields f;
	struct blk k;
	char v[16];
	const char *nv[] = { "x-request-id", v, NULL };

	(void)state;
	/* a table big enough for all of them */
	assert_int_equal(nghttp2_hd_deflate_new(&def, 1 << 20), 0);
	assert_int_equal(nghttp2_hd_deflate_change_table_size(def, 1 << 20), 0);
	hpack_decoder__set_max_table(d, 1 << 20);
	for (int i = 0; i <= HPACK_LEARN_MAX; i++) {
		snprintf(v, sizeof(v), "r%d", i);
		k = deflate(def, nv);
		decode(d, &k, 0, &f);
		assert_int_equal(f.unknown, 0);
	}
	/* the newest is still known, the first one is not */
	snprintf(v, sizeof(v), "r%d", HPACK_LEARN_MAX);
	k = deflate(def, nv);
	assert_true(k.b[0] & 0x80);
	decode(d, &k, 0, &f);
	assert_string_equal(f.request_id, v);
	snprintf(v, sizeof(v), "r0");
	k = deflate(def, nv);
	assert_true(k.b[0] & 0x80);
	decode(d, &k, 0, &f);
	assert_int_equal(f.state[HPACK_REQUEST_ID], HPACK_UNKNOWN);
	hpack_decoder__free(d);
	nghttp2_hd_deflate_del(def);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc_c3_every_split),
		cmocka_unit_test(test_rfc_c4_every_split),
		cmocka_unit_test(test_joined_mid_connection),
		cmocka_unit_test(test_joined_at_first_block_is_exact),
		cmocka_unit_test(test_grpc_exchange),
		cmocka_unit_test(test_grpc_joined),
		cmocka_unit_test(test_failure_poisons_one_decoder),
		cmocka_unit_test(test_abandon),
		cmocka_unit_test(test_table_size),
		cmocka_unit_test(test_static_table),
		cmocka_unit_test(test_keys_and_cut_values),
		cmocka_unit_test(test_learn_bound),
	};

	return cmocka_run_group_tests_name("hpack", tests, NULL, NULL);
}
