// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * HTTP/2 through the correlator (core/h2x.h): frames as stacks write them, in canned
 * records; what is reported per stream must follow from the bytes and the records' times.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "core/corr_feed.h"
#include "proto/h2_build.h"

#define MS 1000000ull

static const char *const grpc_req[] = {
	":method", "POST", ":scheme", "http", ":path", "/sglang.Scheduler/Generate",
	":authority", "127.0.0.1:50051", "content-type", "application/grpc", "te", "trailers",
	NULL, NULL, NULL,
};
static const char *const grpc_resp[] = {
	":status", "200", "content-type", "application/grpc", NULL,
};
static const char *const trailers_ok[] = { "grpc-status", "0", NULL };
static const char *const trailers_err[] = {
	"grpc-status", "13", "grpc-message", "engine failure", NULL,
};

/* Both sides' HPACK encoders and the bytes of the record being built. */
struct h2c {
	nghttp2_hd_deflater *cli, *srv;
	struct wbuf w;
};

static void h2c_init(struct h2c *h)
{
	assert_int_equal(nghttp2_hd_deflate_new(&h->cli, 4096), 0);
	assert_int_equal(nghttp2_hd_deflate_new(&h->srv, 4096), 0);
	h->w.len = 0;
}

static void h2c_fini(struct h2c *h)
{
	nghttp2_hd_deflate_del(h->cli);
	nghttp2_hd_deflate_del(h->srv);
}

/* the record built so far, sent by dir at ts */
static void flush_rec(struct correlator *c, struct h2c *h, uint64_t id, int dir, uint64_t ts)
{
	rec_data(c, id, dir, ts, (const char *)h->w.b, h->w.len);
	h->w.len = 0;
}

/* a gRPC message of n payload bytes */
static void grpc_msg(struct h2c *h, uint32_t stream, size_t n, uint8_t flags)
{
	uint8_t m[256] = { 0, 0, 0, 0, (uint8_t)n };

	assert_true(n + 5 <= sizeof(m));
	memset(m + 5, 'x', n);
	wb_data(&h->w, stream, flags, m, n + 5, -1);
}

/* the first stall of the last request reported (done[] keeps no stalls: they are freed) */
static struct tt_stall stall0;

static void on_request_stall(void *ud, const struct tt_request *r)
{
	on_request(ud, r);
	if (r->nstalls)
		stall0 = r->stalls[0];
	done[ndone - 1].r.stalls = NULL;
}

static struct correlator *corr_stalls(void)
{
	struct corr_opts o = { .on_request = on_request_stall, .ignore_conn = on_ignore,
			       .stalls = true };

	ndone = 0;
	return correlator__new(&o);
}

/* the client's preface, SETTINGS (INITIAL_WINDOW_SIZE win), a Generate call on stream */
static void client_call(struct h2c *h, uint32_t stream, bool preface, uint32_t win,
			const char *rid)
{
	const char *nv[16];

	memcpy(nv, grpc_req, sizeof(grpc_req));
	if (rid) {
		nv[12] = "x-request-id";
		nv[13] = rid;
	}
	if (preface) {
		uint32_t set[] = { 4, win, 0 };

		wb_put(&h->w, H2_PREFACE, H2_PREFACE_LEN);
		wb_settings(&h->w, set);
	}
	wb_headers(&h->w, h->cli, stream, 0, nv, 0);
	grpc_msg(h, stream, 20, 0x01);
}

static void server_settings(struct h2c *h)
{
	uint32_t none[] = { 0 };

	wb_settings(&h->w, none);
	wb_frame(&h->w, H2_SETTINGS, 0x01, 0, NULL, 0);	/* ACK of the client's */
}

/* A Generate stream: its start, every message at the send that completed it, its status. */
static void test_grpc_stream(void **state)
{
	struct correlator *c = new_corr();
	struct h2c h;
	uint8_t m[5 + 10] = { 0, 0, 0, 0, 10 };

	h2c_init(&h);
	rec_conn(c, 1, 100);
	client_call(&h, 1, true, 65535, "rid-1");
	flush_rec(c, &h, 1, TT_DIR_RECV, 1 * MS);
	server_settings(&h);
	flush_rec(c, &h, 1, TT_DIR_SEND, 2 * MS);
	wb_headers(&h.w, h.srv, 1, 0, grpc_resp, 0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 3 * MS);
	grpc_msg(&h, 1, 10, 0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 5 * MS);
	/* a message split across two DATA frames and two sends: timed by the second */
	wb_data(&h.w, 1, 0, m, 8, -1);
	flush_rec(c, &h, 1, TT_DIR_SEND, 7 * MS);
	wb_data(&h.w, 1, 0, m + 8, sizeof(m) - 8, 4);
	grpc_msg(&h, 1, 10, 0);		/* and another in the same send */
	flush_rec(c, &h, 1, TT_DIR_SEND, 8 * MS);
	wb_headers(&h.w, h.srv, 1, 0x01, trailers_ok, 0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 9 * MS);

	assert_int_equal(ndone, 1);
	struct tt_request *r = &done[0].r;
	assert_true(r->h2);
	assert_int_equal(r->h2_stream, 1);
	assert_string_equal(r->method, "POST");
	assert_string_equal(r->path, "/sglang.Scheduler/Generate");
	assert_string_equal(r->request_id, "rid-1");
	assert_string_equal(r->host, "127.0.0.1:50051");
	assert_int_equal(r->status, 200);
	assert_int_equal(r->format, FMT_GRPC);
	assert_int_equal(r->grpc_status, 0);
	assert_int_equal(r->t_start_ns, 1 * MS);
	assert_int_equal(r->t_head_ns, 3 * MS);
	assert_int_equal(r->chunks, 3);
	assert_int_equal(done[0].tok[0], 5 * MS);
	assert_int_equal(done[0].tok[1], 8 * MS);
	assert_int_equal(done[0].tok[2], 8 * MS);
	assert_int_equal(r->ttft_ns, 4 * MS);
	assert_int_equal(r->t_end_ns, 9 * MS);
	assert_true(r->complete);
	assert_false(r->truncated || r->lost || r->joined);
	assert_int_equal(r->abort, ABORT_NONE);
	assert_int_equal(r->unknown, 0);
	assert_false(request__is_error(r));
	h2c_fini(&h);
	correlator__free(c);
}

/* Streams interleaved on one connection: each its own record, statuses their own. */
static void test_interleaved_statuses(void **state)
{
	struct correlator *c = new_corr();
	struct h2c h;

	h2c_init(&h);
	rec_conn(c, 1, 100);
	client_call(&h, 1, true, 65535, "a");
	client_call(&h, 3, false, 0, "b");
	client_call(&h, 5, false, 0, "c");
	flush_rec(c, &h, 1, TT_DIR_RECV, 1 * MS);
	server_settings(&h);
	wb_headers(&h.w, h.srv, 3, 0, grpc_resp, 0);
	grpc_msg(&h, 3, 4, 0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 2 * MS);
	wb_headers(&h.w, h.srv, 1, 0, grpc_resp, 0);
	grpc_msg(&h, 1, 4, 0);
	grpc_msg(&h, 3, 4, 0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 3 * MS);
	wb_headers(&h.w, h.srv, 3, 0x01, trailers_err, 0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 4 * MS);
	/* the client gives up on stream 1: RST_STREAM CANCEL */
	wb_u32_frame(&h.w, H2_RST_STREAM, 1, 8);
	flush_rec(c, &h, 1, TT_DIR_RECV, 5 * MS);
	/* a trailers-only answer: refused before any message */
	wb_headers(&h.w, h.srv, 5, 0x01,
		   (const char *const[]){ ":status", "200", "content-type", "application/grpc",
					  "grpc-status", "3", "grpc-message", "too long", NULL },
		   0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 6 * MS);

	assert_int_equal(ndone, 3);
	assert_string_equal(done[0].r.request_id, "b");
	assert_int_equal(done[0].r.chunks, 2);
	assert_int_equal(done[0].r.grpc_status, 13);
	assert_string_equal(done[0].r.grpc_message, "engine failure");
	assert_true(done[0].r.complete);
	assert_true(request__is_error(&done[0].r));
	assert_int_equal(done[0].r.seq, 2);

	assert_string_equal(done[1].r.request_id, "a");
	assert_int_equal(done[1].r.chunks, 1);
	assert_int_equal(done[1].r.abort, ABORT_CLIENT);
	assert_false(done[1].r.complete);
	assert_int_equal(done[1].r.grpc_status, -1);

	assert_string_equal(done[2].r.request_id, "c");
	assert_int_equal(done[2].r.chunks, 0);
	assert_int_equal(done[2].r.format, FMT_GRPC);
	assert_int_equal(done[2].r.grpc_status, 3);
	assert_true(done[2].r.complete);
	h2c_fini(&h);
	correlator__free(c);
}

/*
 * The client withholds WINDOW_UPDATE: the server's stream window runs out with a message
 * sent, and the next waits until the update. That gap is flow control.
 */
static void test_flow_control_stall(void **state)
{
	struct correlator *c = corr_stalls();
	struct h2c h;

	h2c_init(&h);
	rec_conn(c, 1, 100);
	client_call(&h, 1, true, 30, NULL);		/* a 30-byte stream window */
	flush_rec(c, &h, 1, TT_DIR_RECV, 1 * MS);
	server_settings(&h);
	wb_headers(&h.w, h.srv, 1, 0, grpc_resp, 0);
	grpc_msg(&h, 1, 10, 0);				/* 15 bytes: 15 left */
	flush_rec(c, &h, 1, TT_DIR_SEND, 10 * MS);
	grpc_msg(&h, 1, 10, 0);				/* 0 left: blocked */
	flush_rec(c, &h, 1, TT_DIR_SEND, 11 * MS);
	wb_u32_frame(&h.w, H2_WINDOW_UPDATE, 1, 30);
	flush_rec(c, &h, 1, TT_DIR_RECV, 311 * MS);
	grpc_msg(&h, 1, 10, 0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 312 * MS);
	wb_headers(&h.w, h.srv, 1, 0x01, trailers_ok, 0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 313 * MS);

	assert_int_equal(ndone, 1);
	struct tt_request *r = &done[0].r;
	assert_int_equal(r->chunks, 3);
	assert_int_equal(r->nstalls, 1);
	assert_int_equal(stall0.cause, STALL_FLOW);
	assert_int_equal(stall0.flow_window, FLOW_WINDOW_STREAM);
	assert_int_equal(stall0.part_ns[STALL_FLOW], 300 * MS);
	assert_int_equal(stall0.part_ns[STALL_UNKNOWN], 1 * MS);
	h2c_fini(&h);
	correlator__free(c);
}

/*
 * The same gap with open windows and a zero TCP window instead (a client that stops
 * reading): not flow control.
 */
static void test_tcp_stall_not_flow(void **state)
{
	struct correlator *c = corr_stalls();
	struct tt_tcp_ev zw = {
		.h = { .ts = 12 * MS, .type = TT_EV_TCP, .size = sizeof(zw) },
		.conn_id = 1, .kind = TT_TCP_ZERO_WINDOW,
	};
	struct h2c h;

	h2c_init(&h);
	rec_conn(c, 1, 100);
	client_call(&h, 1, true, 1 << 20, NULL);
	flush_rec(c, &h, 1, TT_DIR_RECV, 1 * MS);
	server_settings(&h);
	wb_headers(&h.w, h.srv, 1, 0, grpc_resp, 0);
	grpc_msg(&h, 1, 10, 0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 10 * MS);
	grpc_msg(&h, 1, 10, 0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 11 * MS);
	assert_int_equal(correlator__record(c, &zw, sizeof(zw)), 0);
	grpc_msg(&h, 1, 10, 0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 312 * MS);
	wb_headers(&h.w, h.srv, 1, 0x01, trailers_ok, 0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 313 * MS);

	assert_int_equal(ndone, 1);
	assert_int_equal(done[0].r.nstalls, 1);
	assert_int_not_equal(stall0.cause, STALL_FLOW);
	assert_int_equal(stall0.part_ns[STALL_FLOW], 0);
	assert_true(stall0.zero_window);
	h2c_fini(&h);
	correlator__free(c);
}

/*
 * Records lost mid-stream: the stream goes, lost; what is seen of it after the loss is not
 * a new request; a stream begun after it is, its headers decoded as far as they can be.
 */
static void test_loss_mid_stream(void **state)
{
	struct correlator *c = new_corr();
	struct h2c h;

	h2c_init(&h);
	rec_conn(c, 1, 100);
	client_call(&h, 1, true, 65535, "a");
	flush_rec(c, &h, 1, TT_DIR_RECV, 1 * MS);
	server_settings(&h);
	wb_headers(&h.w, h.srv, 1, 0, grpc_resp, 0);
	grpc_msg(&h, 1, 4, 0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 2 * MS);
	grpc_msg(&h, 1, 4, 0);
	rec_data_cap(c, 1, TT_DIR_SEND, 3 * MS, (const char *)h.w.b, h.w.len, h.w.len,
		     TT_DF_LOST, 0);
	h.w.len = 0;
	assert_int_equal(ndone, 1);
	assert_true(done[0].r.lost);
	assert_int_equal(done[0].r.abort, ABORT_LOST);
	assert_int_equal(done[0].r.chunks, 1);
	wb_headers(&h.w, h.srv, 1, 0x01, trailers_ok, 0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 4 * MS);
	client_call(&h, 3, false, 0, "b");
	flush_rec(c, &h, 1, TT_DIR_RECV, 5 * MS);
	wb_headers(&h.w, h.srv, 3, 0, grpc_resp, 0);
	grpc_msg(&h, 3, 4, 0);
	wb_headers(&h.w, h.srv, 3, 0x01, trailers_ok, 0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 6 * MS);

	assert_int_equal(ndone, 2);
	assert_int_equal(done[1].r.h2_stream, 3);
	assert_false(done[1].r.joined);
	assert_false(done[1].r.lost);
	assert_int_equal(done[1].r.chunks, 1);
	assert_true(done[1].r.complete);
	assert_int_equal(done[1].r.t_start_ns, 5 * MS);
	/* the client's table was lost with the records: what it cannot know, it says */
	assert_string_equal(done[1].r.path, "/sglang.Scheduler/Generate");	/* a literal */
	assert_true(done[1].r.unknown & 1u << RF_REQUEST_ID);	/* a name the table held */
	assert_string_equal(done[1].r.request_id, "");
	assert_false(done[1].r.unknown & 1u << RF_PATH);
	h2c_fini(&h);
	correlator__free(c);
}

/* The target made the call (an outbound gRPC client): the record says client. */
static void test_outbound(void **state)
{
	struct correlator *c = new_corr();
	struct h2c h;

	h2c_init(&h);
	client_call(&h, 1, true, 65535, "up-1");
	flush_rec(c, &h, 9, TT_DIR_SEND, 1 * MS);
	server_settings(&h);
	wb_headers(&h.w, h.srv, 1, 0, grpc_resp, 0);
	grpc_msg(&h, 1, 4, 0);
	flush_rec(c, &h, 9, TT_DIR_RECV, 4 * MS);
	wb_headers(&h.w, h.srv, 1, 0x01, trailers_ok, 0);
	flush_rec(c, &h, 9, TT_DIR_RECV, 5 * MS);

	assert_int_equal(ndone, 1);
	assert_true(done[0].r.client);
	assert_int_equal(done[0].r.t_start_ns, 1 * MS);
	assert_int_equal(done[0].r.ttft_ns, 3 * MS);
	assert_true(done[0].r.complete);
	h2c_fini(&h);
	correlator__free(c);
}

/* A connection open before tracing: its first bytes are frames, and a response's :status. */
static void test_joined_connection(void **state)
{
	struct correlator *c = new_corr();
	struct tt_conn_ev e = {
		.h = { .ts = 1, .tgid = 42, .tid = 42, .type = TT_EV_CONN, .size = sizeof(e) },
		.conn_id = 2, .family = 2, .lport = 8000, .rport = 50002,
		.laddr = { 127, 0, 0, 1 }, .raddr = { 127, 0, 0, 1 }, .comm = "server",
	};
	struct h2c h;

	h2c_init(&h);
	assert_int_equal(correlator__record(c, &e, sizeof(e)), 0);
	/* streams 1 and 3 were open before; the server answers 3 and streams 1 */
	wb_headers(&h.w, h.srv, 3, 0, grpc_resp, 0);
	grpc_msg(&h, 3, 4, 0);
	grpc_msg(&h, 1, 4, 0);
	flush_rec(c, &h, 2, TT_DIR_SEND, 2 * MS);
	grpc_msg(&h, 1, 4, 0);
	flush_rec(c, &h, 2, TT_DIR_SEND, 3 * MS);
	wb_headers(&h.w, h.srv, 1, 0x01, trailers_ok, 0);
	wb_headers(&h.w, h.srv, 3, 0x01, trailers_ok, 0);
	flush_rec(c, &h, 2, TT_DIR_SEND, 4 * MS);

	assert_int_equal(ndone, 2);
	for (int i = 0; i < 2; i++) {
		struct tt_request *r = &done[i].r;

		assert_false(r->client);
		assert_true(r->joined);
		assert_true(r->unknown & 1u << RF_PATH);
		assert_int_equal(r->t_start_ns, 0);
		assert_int_equal(r->format, FMT_GRPC);
		assert_true(r->complete);
	}
	assert_int_equal(done[0].r.h2_stream, 1);
	assert_int_equal(done[0].r.chunks, 2);
	assert_int_equal(done[0].tok[0], 2 * MS);
	assert_int_equal(done[0].tok[1], 3 * MS);
	/* stream 3's head was seen: its status is known */
	assert_int_equal(done[1].r.status, 200);
	assert_int_equal(done[1].r.chunks, 1);
	h2c_fini(&h);
	correlator__free(c);
}

/* gRPC over a Unix socket (TGI's router and shards): binary, yet parsed. */
static void test_unix_socket(void **state)
{
	struct correlator *c = new_corr();
	struct tt_conn_ev e = {
		.h = { .ts = 1, .tgid = 42, .tid = 42, .type = TT_EV_CONN, .size = sizeof(e) },
		.conn_id = 3, .flags = TT_CF_ACCEPTED | TT_CF_UNIX, .path = "/tmp/shard.sock",
	};
	struct h2c h;

	h2c_init(&h);
	assert_int_equal(correlator__record(c, &e, sizeof(e)), 0);
	/* C-core speaks first */
	server_settings(&h);
	h.w.len -= 9;	/* no ACK yet */
	flush_rec(c, &h, 3, TT_DIR_SEND, 1 * MS);
	client_call(&h, 1, true, 65535, NULL);
	flush_rec(c, &h, 3, TT_DIR_RECV, 2 * MS);
	wb_headers(&h.w, h.srv, 1, 0, grpc_resp, 0);
	grpc_msg(&h, 1, 4, 0);
	wb_headers(&h.w, h.srv, 1, 0x01, trailers_ok, 0);
	flush_rec(c, &h, 3, TT_DIR_SEND, 3 * MS);

	assert_int_equal(ignored_id, 0);
	assert_int_equal(ndone, 1);
	assert_int_equal(done[0].r.chunks, 1);
	assert_int_equal(done[0].r.ttft_ns, 1 * MS);
	assert_true(done[0].r.complete);
	h2c_fini(&h);
	correlator__free(c);
}

/* --budget left runs out: the streams they cut go lost, never as what they were not. */
static void test_budget_skipped(void **state)
{
	struct correlator *c = new_corr();
	struct h2c h;

	h2c_init(&h);
	rec_conn(c, 1, 100);
	client_call(&h, 1, true, 65535, "a");
	flush_rec(c, &h, 1, TT_DIR_RECV, 1 * MS);
	wb_headers(&h.w, h.srv, 1, 0, grpc_resp, 0);
	grpc_msg(&h, 1, 4, 0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 2 * MS);
	next_skipped = 1;
	grpc_msg(&h, 1, 4, 0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 3 * MS);

	assert_int_equal(ndone, 1);
	assert_true(done[0].r.lost);
	assert_int_equal(done[0].r.abort, ABORT_LOST);
	h2c_fini(&h);
	correlator__free(c);
}

/* The connection closes with a stream open: aborted, the side that closed said. */
static void test_close_mid_stream(void **state)
{
	struct correlator *c = new_corr();
	struct h2c h;

	h2c_init(&h);
	rec_conn(c, 1, 100);
	client_call(&h, 1, true, 65535, "a");
	flush_rec(c, &h, 1, TT_DIR_RECV, 1 * MS);
	wb_headers(&h.w, h.srv, 1, 0, grpc_resp, 0);
	grpc_msg(&h, 1, 4, 0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 2 * MS);
	rec_state(c, 1, TCP_CLOSE_WAIT, 3 * MS);
	rec_state(c, 1, TCP_CLOSE, 4 * MS);

	assert_int_equal(ndone, 1);
	assert_int_equal(done[0].r.abort, ABORT_CLIENT);
	assert_int_equal(done[0].r.chunks, 1);
	assert_int_equal(correlator__in_flight(c), 0);
	h2c_fini(&h);
	correlator__free(c);
}

/* One segment of a send (off, more to come or not), as the kernel splits a large one. */
static void rec_segment(struct correlator *c, uint64_t id, uint64_t ts, const uint8_t *b,
			size_t off, size_t n, size_t total)
{
	size_t size = sizeof(struct tt_data_ev) + n;
	struct tt_data_ev *e = calloc(1, size);

	e->h = (struct tt_hdr){ .ts = ts, .tgid = 42, .tid = 44, .type = TT_EV_DATA,
				.size = (uint16_t)size };
	e->conn_id = id;
	e->ret = (int)total;
	e->cap = n;
	e->off = off;
	e->dir = TT_DIR_SEND;
	e->flags = off + n < total ? TT_DF_MORE : 0;
	memcpy(e->data, b + off, n);
	assert_int_equal(correlator__record(c, e, size), 0);
	free(e);
}

/*
 * HTTP/2 is full duplex: another thread's read of the connection (a WINDOW_UPDATE) comes
 * between the segments of a large send. Nothing is missing.
 */
static void test_read_between_segments(void **state)
{
	struct correlator *c = new_corr();
	struct h2c h;
	uint8_t send[512];
	size_t n;

	h2c_init(&h);
	rec_conn(c, 1, 100);
	client_call(&h, 1, true, 65535, "a");
	flush_rec(c, &h, 1, TT_DIR_RECV, 1 * MS);
	wb_headers(&h.w, h.srv, 1, 0, grpc_resp, 0);
	for (int i = 0; i < 4; i++)
		grpc_msg(&h, 1, 40, 0);
	n = h.w.len;
	memcpy(send, h.w.b, n);
	h.w.len = 0;
	rec_segment(c, 1, 2 * MS, send, 0, n / 2, n);
	wb_u32_frame(&h.w, H2_WINDOW_UPDATE, 0, 1000);
	flush_rec(c, &h, 1, TT_DIR_RECV, 2 * MS + 10);
	rec_segment(c, 1, 2 * MS, send, n / 2, n - n / 2, n);
	wb_headers(&h.w, h.srv, 1, 0x01, trailers_ok, 0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 3 * MS);

	assert_int_equal(ndone, 1);
	assert_false(done[0].r.lost);
	assert_false(done[0].r.truncated);
	assert_int_equal(done[0].r.chunks, 4);
	assert_true(done[0].r.complete);
	h2c_fini(&h);
	correlator__free(c);
}

/* SSE in DATA frames, the request's JSON body read for its model (nginx with http2). */
static void test_sse_over_h2(void **state)
{
	struct correlator *c = new_corr();
	const char *const req[] = {
		":method", "POST", ":scheme", "https", ":path", "/v1/chat/completions",
		":authority", "api", "content-type", "application/json", NULL,
	};
	const char *const resp[] = { ":status", "200", "content-type", "text/event-stream", NULL };
	const char *ev[] = { ROLE TOK("a"), TOK("b"), TOK("c") FIN, DONE };
	struct h2c h;

	h2c_init(&h);
	rec_conn(c, 1, 100);
	wb_put(&h.w, H2_PREFACE, H2_PREFACE_LEN);
	wb_settings(&h.w, (const uint32_t[]){ 0 });
	wb_headers(&h.w, h.cli, 1, 0, req, 0);
	wb_data(&h.w, 1, 0x01, req_body, strlen(req_body), -1);
	flush_rec(c, &h, 1, TT_DIR_RECV, 1 * MS);
	wb_headers(&h.w, h.srv, 1, 0, resp, 0);
	flush_rec(c, &h, 1, TT_DIR_SEND, 2 * MS);
	for (int i = 0; i < 4; i++) {
		wb_data(&h.w, 1, i == 3 ? 0x01 : 0, ev[i], strlen(ev[i]), -1);
		flush_rec(c, &h, 1, TT_DIR_SEND, (10 + i) * MS);
	}
	assert_int_equal(ndone, 1);
	assert_int_equal(done[0].r.format, FMT_SSE);
	assert_string_equal(done[0].r.model, "llama-3");
	assert_int_equal(done[0].r.stream, 1);
	assert_int_equal(done[0].r.chunks, 3);
	assert_int_equal(done[0].tok[0], 10 * MS);
	assert_int_equal(done[0].tok[2], 12 * MS);
	assert_true(done[0].r.saw_final);
	assert_true(done[0].r.complete);
	h2c_fini(&h);
	correlator__free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grpc_stream),
		cmocka_unit_test(test_interleaved_statuses),
		cmocka_unit_test(test_flow_control_stall),
		cmocka_unit_test(test_tcp_stall_not_flow),
		cmocka_unit_test(test_loss_mid_stream),
		cmocka_unit_test(test_outbound),
		cmocka_unit_test(test_joined_connection),
		cmocka_unit_test(test_unix_socket),
		cmocka_unit_test(test_budget_skipped),
		cmocka_unit_test(test_close_mid_stream),
		cmocka_unit_test(test_sse_over_h2),
		cmocka_unit_test(test_read_between_segments),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
