// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * HTTP/2 parser: exchanges fed whole, split at every offset and byte by byte must give the
 * same callbacks; padding, CONTINUATION, many streams interleaved, RST_STREAM, GOAWAY, push,
 * settings and their ACK, the frame-size bound, flow-control windows, h2c upgrade, gaps,
 * EOF, a parser joined mid-connection, garbage.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "h2.h"
#include "h2_build.h"
#include "h2_real_grpc.h"

static char log_buf[1 << 17];

struct rec {
	size_t n;
	bool in_data;		/* the last entry is a DATA entry that may go on */
	enum h2_dir data_dir;
	uint32_t data_stream;
	int streams_open;	/* our own count: first callback to on_close */
	int closes, errors, blocked, opened;
	struct h2_headers last;
	struct hpack_fields last_f;
	struct h2_close last_close;
	struct h2_flow last_flow;
	bool log_flow;
};

static struct rec R;

static void put(const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(log_buf + R.n, sizeof(log_buf) - R.n, fmt, ap);
	va_end(ap);
	assert_true(k >= 0 && (size_t)k < sizeof(log_buf) - R.n);
	R.n += (size_t)k;
}

static void end_data(void)
{
	if (R.in_data)
		put("|");
	R.in_data = false;
}

/* the stream's own slot: set on its first callback, the same until on_close */
static void check_sud(void **sud, uint32_t stream)
{
	assert_non_null(sud);
	if (!*sud) {
		*sud = (void *)(uintptr_t)stream;
		R.streams_open++;
	}
	assert_int_equal((uintptr_t)*sud, stream);
}

static const char *kind_name[] = { "req", "info", "resp", "trailers", "push" };

static void on_headers(void *ud, void **sud, const struct h2_headers *h)
{
	const struct hpack_fields *f = h->f;

	(void)ud;
	end_data();
	check_sud(sud, h->stream);
	put("H%c%u:%s", h->dir ? 's' : 'c', h->stream, kind_name[h->kind]);
	if (f->state[HPACK_METHOD] == HPACK_KNOWN)
		put(" %s", f->method);
	if (f->state[HPACK_PATH] == HPACK_KNOWN)
		put(" %s", f->path);
	if (f->state[HPACK_STATUS] == HPACK_KNOWN)
		put(" %d", f->status);
	if (f->state[HPACK_CONTENT_TYPE] == HPACK_KNOWN)
		put(" ct=%s", f->content_type);
	if (f->state[HPACK_GRPC_STATUS] == HPACK_KNOWN)
		put(" grpc=%d", f->grpc_status);
	if (f->unknown)
		put(" ?%u", f->unknown);
	if (h->end_stream)
		put(" ES");
	if (h->joined)
		put(" J");
	if (h->lost)
		put(" LOST");
	if (h->kind == H2_HDR_PUSH)
		put(" on=%u", h->assoc);
	put("|");
	R.last = *h;
	R.last_f = *f;
}

static void on_data(void *ud, void **sud, const struct h2_data *d)
{
	(void)ud;
	check_sud(sud, d->stream);
	assert_true(d->len > 0);
	if (d->frame_start || !R.in_data || R.data_dir != d->dir || R.data_stream != d->stream) {
		end_data();
		put("D%c%u%s:", d->dir ? 's' : 'c', d->stream, d->joined ? "J" : "");
	}
	R.in_data = true;
	R.data_dir = d->dir;
	R.data_stream = d->stream;
	if (!d->bytes) {
		put("<gap %zu>", d->len);
		return;
	}
	for (size_t i = 0; i < d->len; i++)
		put(d->bytes[i] >= ' ' && d->bytes[i] < 0x7f ? "%c" : "\\x%02x", d->bytes[i]);
}

static void on_end_stream(void *ud, void **sud, enum h2_dir dir, uint32_t stream)
{
	(void)ud;
	end_data();
	check_sud(sud, stream);
	put("E%c%u|", dir ? 's' : 'c', stream);
}

static const char *close_name[] = { "done", "reset", "goaway", "eof" };

static void on_close(void *ud, void **sud, const struct h2_close *c)
{
	(void)ud;
	end_data();
	check_sud(sud, c->stream);
	R.streams_open--;
	*sud = NULL;
	put("C%u:%s", c->stream, close_name[c->reason]);
	if (c->reason == H2_CLOSE_RESET || c->reason == H2_CLOSE_GOAWAY)
		put(" by=%c code=%u", c->by ? 's' : 'c', c->error_code);
	put("|");
	R.closes++;
	R.last_close = *c;
}

static void on_goaway(void *ud, enum h2_dir dir, uint32_t last, uint32_t code)
{
	(void)ud;
	end_data();
	put("G%c last=%u code=%u|", dir ? 's' : 'c', last, code);
}

static void on_flow(void *ud, void **sud, const struct h2_flow *f)
{
	(void)ud;
	if (f->stream)
		check_sud(sud, f->stream);
	else
		assert_null(sud);
	if (f->kind == H2_FLOW_BLOCKED)
		R.blocked++;
	if (f->opened)
		R.opened++;
	R.last_flow = *f;
	if (!R.log_flow)
		return;
	end_data();
	put("F%c%u:%s", f->sender ? 's' : 'c', f->stream,
	    f->kind == H2_FLOW_BLOCKED ? "blocked" : "update");
	if (f->known)
		put(" w=%lld", (long long)f->window);
	else
		put(" w=?");
	if (f->opened)
		put(" opened");
	put("|");
}

static void on_error(void *ud, enum h2_dir dir, const char *why)
{
	(void)ud;
	end_data();
	assert_non_null(why);
	put("X%c:%s|", dir ? 's' : 'c', why);
	R.errors++;
}

static const struct h2_cb cbs = {
	.on_headers = on_headers, .on_data = on_data, .on_end_stream = on_end_stream,
	.on_close = on_close, .on_goaway = on_goaway, .on_flow = on_flow, .on_error = on_error,
};

static struct h2_parser *new_parser(enum h2_start start)
{
	struct h2_parser *p;

	memset(&R, 0, sizeof(R));
	log_buf[0] = '\0';
	p = h2_parser__new(start, &cbs, NULL);
	assert_non_null(p);
	return p;
}

static const char *done(struct h2_parser *p)
{
	end_data();
	h2_parser__free(p);
	return log_buf;
}

static void feed(struct h2_parser *p, enum h2_dir dir, const struct wbuf *w)
{
	h2_parser__feed(p, dir, w->b, w->len);
}

/* each test's encoders, client's and server's: fresh for every test, as for a new connection */
static nghttp2_hd_deflater *cdef, *sdef;

static int setup(void **state)
{
	(void)state;
	return nghttp2_hd_deflate_new(&cdef, 4096) || nghttp2_hd_deflate_new(&sdef, 4096);
}

static int teardown(void **state)
{
	(void)state;
	nghttp2_hd_deflate_del(cdef);
	nghttp2_hd_deflate_del(sdef);
	cdef = sdef = NULL;
	return 0;
}

/* ------------------------------------------------------------------ a gRPC-shaped exchange */

static const char *const req_nv[] = {
	":method", "POST", ":scheme", "http",
	":path", "/sglang.grpc.scheduler.SglangScheduler/Generate",
	":authority", "127.0.0.1:50051", "content-type", "application/grpc", "te", "trailers",
	NULL,
};
static const char *const resp_nv[] = { ":status", "200", "content-type", "application/grpc",
				       NULL };
static const char *const trailers_nv[] = { "grpc-status", "0", "grpc-message", "", NULL };

static size_t trailers_at;	/* where the server's trailers frame starts */

/*
 * Client: preface, SETTINGS, HEADERS (a CONTINUATION), DATA (the request message), then the
 * server's SETTINGS ACK. Server: SETTINGS, ACK, HEADERS, three padded DATA frames (three
 * messages, one of them split over two frames), trailers.
 */
static void grpc_exchange(struct wbuf *c, struct wbuf *s, struct wbuf *c2)
{
	static const uint32_t cset[] = { 2, 0, 4, 4194304, 0 };
	static const uint32_t sset[] = { 3, 100, 5, 16384, 0 };
	nghttp2_hd_deflater *cd, *sd;

	assert_int_equal(nghttp2_hd_deflate_new(&cd, 4096), 0);
	assert_int_equal(nghttp2_hd_deflate_new(&sd, 4096), 0);
	memset(c, 0, sizeof(*c));
	memset(s, 0, sizeof(*s));
	memset(c2, 0, sizeof(*c2));
	wb_put(c, H2_PREFACE, H2_PREFACE_LEN);
	wb_settings(c, cset);
	wb_u32_frame(c, H2_WINDOW_UPDATE, 0, 4128769);
	wb_headers(c, cd, 1, 0, req_nv, 20);
	wb_data(c, 1, 0x01, "\0\0\0\0\x03" "abc", 8, -1);

	wb_settings(s, sset);
	wb_frame(s, H2_SETTINGS, 0x01, 0, NULL, 0);
	wb_headers(s, sd, 1, 0, resp_nv, 0);
	wb_data(s, 1, 0, "\0\0\0\0\x02" "t1" "\0\0\0\0\x02" "t", 13, 3);
	wb_data(s, 1, 0, "2", 1, 0);
	wb_data(s, 1, 0, "\0\0\0\0\x02" "t3", 7, -1);
	trailers_at = s->len;
	wb_headers(s, sd, 1, 0x01, trailers_nv, 0);

	wb_frame(c2, H2_SETTINGS, 0x01, 0, NULL, 0);
	wb_u32_frame(c2, H2_WINDOW_UPDATE, 1, 100);
	nghttp2_hd_deflate_del(cd);
	nghttp2_hd_deflate_del(sd);
}

static const char grpc_log[] =
	"Hc1:req POST /sglang.grpc.scheduler.SglangScheduler/Generate ct=application/grpc|"
	"Dc1:\\x00\\x00\\x00\\x00\\x03abc|Ec1|"
	"Hs1:resp 200 ct=application/grpc|"
	"Ds1:\\x00\\x00\\x00\\x00\\x02t1\\x00\\x00\\x00\\x00\\x02t|Ds1:2|"
	"Ds1:\\x00\\x00\\x00\\x00\\x02t3|"
	"Hs1:trailers grpc=0 ES|Es1|C1:done|";

/* feed w to dir: whole (cut 0), split at cut, or byte by byte (cut == SIZE_MAX) */
static void feed_cut(struct h2_parser *p, enum h2_dir dir, const struct wbuf *w, size_t cut)
{
	if (cut == SIZE_MAX) {
		for (size_t i = 0; i < w->len; i++)
			h2_parser__feed(p, dir, w->b + i, 1);
	} else if (cut && cut < w->len) {
		h2_parser__feed(p, dir, w->b, cut);
		h2_parser__feed(p, dir, w->b + cut, w->len - cut);
	} else {
		feed(p, dir, w);
	}
}

static void test_grpc_exchange_every_split(void **state)
{
	static struct wbuf c, s, c2;

	(void)state;
	grpc_exchange(&c, &s, &c2);
	for (size_t cut = 0; cut <= c.len + s.len + 1; cut++) {
		struct h2_parser *p = new_parser(H2_START_PREFACE);
		size_t cc = cut <= c.len ? cut : 0, sc = cut > c.len ? cut - c.len : 0;

		if (cut == c.len + s.len + 1)
			cc = sc = SIZE_MAX;
		feed_cut(p, H2_FROM_CLIENT, &c, cc);
		feed_cut(p, H2_FROM_SERVER, &s, sc);
		feed(p, H2_FROM_CLIENT, &c2);
		assert_int_equal(R.errors, 0);
		assert_int_equal(R.streams_open, 0);
		if (strcmp(done(p), grpc_log))
			fail_msg("cut %zu: got\n%s\nwant\n%s", cut, log_buf, grpc_log);
	}
}

/* The whole exchange in one feed per side, then the stats. */
static void test_grpc_exchange_stats(void **state)
{
	static struct wbuf c, s, c2;
	struct h2_parser *p = new_parser(H2_START_PREFACE);
	struct h2_stats st;

	(void)state;
	grpc_exchange(&c, &s, &c2);
	feed(p, H2_FROM_CLIENT, &c);
	feed(p, H2_FROM_SERVER, &s);
	h2_parser__stats(p, &st);
	assert_int_equal(st.frames[H2_SETTINGS], 3);
	assert_int_equal(st.frames[H2_HEADERS], 3);
	assert_int_equal(st.frames[H2_CONTINUATION], 3);
	assert_int_equal(st.frames[H2_DATA], 4);
	assert_int_equal(st.frames[H2_WINDOW_UPDATE], 1);
	assert_int_equal(st.streams, 1);
	assert_int_equal(st.errors, 0);
	assert_int_equal(st.dropped, 0);
	done(p);
}

/*
 * A real exchange (h2_real_grpc.h): fed record by record, then with one record split at
 * each offset, then byte by byte: the same callbacks every time.
 */
static void feed_real(struct h2_parser *p, size_t split_at)
{
	size_t off = 0;

	for (size_t i = 0; i < sizeof(real_grpc) / sizeof(real_grpc[0]); i++) {
		const struct real_rec *r = &real_grpc[i];
		enum h2_dir dir = r->dir == 's' ? H2_FROM_SERVER : H2_FROM_CLIENT;

		if (split_at == SIZE_MAX) {
			for (size_t k = 0; k < r->len; k++)
				h2_parser__feed(p, dir, r->b + k, 1);
		} else if (split_at > off && split_at < off + r->len) {
			h2_parser__feed(p, dir, r->b, split_at - off);
			h2_parser__feed(p, dir, r->b + (split_at - off), r->len - (split_at - off));
		} else {
			h2_parser__feed(p, dir, r->b, r->len);
		}
		off += r->len;
	}
	h2_parser__eof(p);
}

static void test_real_grpc_every_split(void **state)
{
	static char want[sizeof(log_buf)];
	size_t total = 0;
	struct h2_parser *p = new_parser(H2_START_PREFACE);

	(void)state;
	for (size_t i = 0; i < sizeof(real_grpc) / sizeof(real_grpc[0]); i++)
		total += real_grpc[i].len;
	feed_real(p, 0);
	assert_int_equal(R.errors, 0);
	assert_int_equal(R.streams_open, 0);
	strcpy(want, done(p));
	/* four calls: three through to their trailers (one INTERNAL), one cancelled */
	assert_non_null(strstr(want, "Hc1:req POST /sglang.grpc.scheduler.SglangScheduler/Generate "
				     "ct=application/grpc|"));
	assert_non_null(strstr(want, "Hs1:resp 200 ct=application/grpc|"));
	assert_non_null(strstr(want, "grpc=13 ES|"));
	assert_non_null(strstr(want, "reset by=c code=8|"));
	for (size_t cut = 1; cut <= total; cut++) {
		p = new_parser(H2_START_PREFACE);
		feed_real(p, cut == total ? SIZE_MAX : cut);
		if (strcmp(done(p), want))
			fail_msg("split at %zu: got\n%s\nwant\n%s", cut, log_buf, want);
	}
}

/* ------------------------------------------------------------------ many streams */

static void test_interleaved_streams(void **state)
{
	static struct wbuf c, s;
	static const char *const sse_nv[] = { ":status", "200", "content-type",
					      "text/event-stream", NULL };
	struct h2_parser *p;

	(void)state;
	memset(&c, 0, sizeof(c));
	memset(&s, 0, sizeof(s));
	wb_put(&c, H2_PREFACE, H2_PREFACE_LEN);
	wb_frame(&c, H2_SETTINGS, 0, 0, NULL, 0);
	for (uint32_t id = 1; id <= 5; id += 2)
		wb_headers(&c, cdef, id, 0x01, req_nv, 0);
	for (uint32_t id = 1; id <= 5; id += 2)
		wb_headers(&s, sdef, id, 0, sse_nv, 0);
	/* round-robin: one event per stream per round, as a server flushes them */
	for (int round = 0; round < 3; round++)
		for (int id = 5; id >= 1; id -= 2)
			wb_data(&s, (uint32_t)id, round == 2 && id != 3, "data: x\n\n", 9, -1);
	wb_u32_frame(&s, H2_RST_STREAM, 3, 0);	/* ends stream 3 without an END_STREAM */

	for (size_t cut = 0; cut <= s.len; cut += 7) {
		p = new_parser(H2_START_PREFACE);
		feed(p, H2_FROM_CLIENT, &c);
		feed_cut(p, H2_FROM_SERVER, &s, cut);
		assert_int_equal(R.errors, 0);
		assert_int_equal(R.closes, 3);
		assert_non_null(strstr(log_buf, "Ds3:data: x\\x0a\\x0a|Ds1:data: x\\x0a\\x0a|"
					       "Es1|C1:done|"));
		assert_non_null(strstr(log_buf, "C3:reset by=s code=0|"));
		done(p);
	}
}

/* ------------------------------------------------------------------ padding, bounds */

static struct h2_parser *started(void)
{
	struct h2_parser *p = new_parser(H2_START_PREFACE);

	h2_parser__feed(p, H2_FROM_CLIENT, (const uint8_t *)H2_PREFACE, H2_PREFACE_LEN);
	return p;
}

static void open_stream(struct h2_parser *p, uint32_t id)
{
	struct wbuf *w = calloc(1, sizeof(*w));

	wb_headers(w, cdef, id, 0x01, req_nv, 0);
	feed(p, H2_FROM_CLIENT, w);
	free(w);
}

static void test_padding(void **state)
{
	static struct wbuf s;
	struct h2_parser *p;
	uint8_t hp[64];

	(void)state;
	p = started();
	open_stream(p, 1);
	memset(&s, 0, sizeof(s));
	/* HEADERS with padding and priority: ":status: 200" is 0x88 */
	hp[0] = 2;			/* pad length */
	wb_u32(hp + 1, 0x80000003);	/* exclusive, depends on 3 */
	hp[5] = 15;			/* weight */
	hp[6] = 0x88;
	hp[7] = hp[8] = 0;
	wb_frame(&s, H2_HEADERS, 0x04 | 0x08 | 0x20, 1, hp, 9);
	wb_data(&s, 1, 0, "", 0, 0);		/* padded, empty */
	wb_data(&s, 1, 0, "ab", 2, 255);	/* more padding than data */
	wb_data(&s, 1, 0x01, "", 0, -1);	/* END_STREAM alone */
	feed(p, H2_FROM_SERVER, &s);
	assert_string_equal(log_buf, "Hc1:req POST /sglang.grpc.scheduler.SglangScheduler/Generate "
			    "ct=application/grpc ES|Ec1|Hs1:resp 200|Ds1:ab|Es1|C1:done|");
	assert_int_equal(R.errors, 0);
	done(p);

	/* padding past the frame's end */
	p = started();
	open_stream(p, 1);
	memset(&s, 0, sizeof(s));
	hp[0] = 5;
	wb_frame(&s, H2_DATA, 0x08, 1, hp, 3);
	feed(p, H2_FROM_SERVER, &s);
	assert_non_null(strstr(log_buf, "Xs:padding longer than its frame|"));
	done(p);
}

static void test_frame_size_bound(void **state)
{
	static struct wbuf s, c;
	static uint8_t big[20000];
	static const uint32_t set32k[] = { 5, 32768, 0 };
	struct h2_parser *p;

	(void)state;
	memset(big, 'x', sizeof(big));
	/* 16385 bytes before any setting: sync lost */
	p = started();
	open_stream(p, 1);
	memset(&s, 0, sizeof(s));
	wb_frame(&s, H2_DATA, 0, 1, big, 16385);
	feed(p, H2_FROM_SERVER, &s);
	assert_non_null(strstr(log_buf, "Xs:frame longer than the peer allows|"));
	done(p);

	/* the client allows 32768: bigger frames pass, while its ACK is due and after */
	for (int acked = 0; acked < 2; acked++) {
		p = started();
		open_stream(p, 1);
		memset(&c, 0, sizeof(c));
		wb_settings(&c, set32k);
		feed(p, H2_FROM_CLIENT, &c);
		memset(&s, 0, sizeof(s));
		if (acked)
			wb_frame(&s, H2_SETTINGS, 0x01, 0, NULL, 0);
		wb_frame(&s, H2_DATA, 0x01, 1, big, 20000);
		feed(p, H2_FROM_SERVER, &s);
		assert_int_equal(R.errors, 0);
		assert_non_null(strstr(log_buf, "Es1|C1:done|"));
		done(p);
	}
}

/* ------------------------------------------------------------------ ends */

static void test_rst_goaway_push(void **state)
{
	static struct wbuf s, c;
	static const char *const push_nv[] = { ":method", "GET", ":scheme", "http", ":path",
					       "/style.css", ":authority", "x", NULL };
	struct h2_parser *p;
	uint8_t pp[128];
	size_t n;

	(void)state;
	p = started();
	for (uint32_t id = 1; id <= 7; id += 2)
		open_stream(p, id);
	memset(&s, 0, sizeof(s));
	wb_headers(&s, sdef, 1, 0, resp_nv, 0);
	/* a push promise on stream 1, stream 2 promised, then its response */
	wb_u32(pp, 2);
	n = 4 + h2b_block(sdef, push_nv, pp + 4, sizeof(pp) - 4);
	wb_frame(&s, H2_PUSH_PROMISE, 0x04, 1, pp, n);
	wb_headers(&s, sdef, 2, 0x01, resp_nv, 0);
	wb_goaway(&s, 3, 0);
	feed(p, H2_FROM_SERVER, &s);
	memset(&c, 0, sizeof(c));
	wb_u32_frame(&c, H2_RST_STREAM, 1, 8);
	/* late frames for a stream reset: no stream opens again */
	wb_u32_frame(&c, H2_WINDOW_UPDATE, 1, 10);
	feed(p, H2_FROM_CLIENT, &c);
	memset(&s, 0, sizeof(s));
	wb_data(&s, 1, 0, "late", 4, -1);
	wb_data(&s, 3, 0x01, "last", 4, -1);
	feed(p, H2_FROM_SERVER, &s);
	h2_parser__eof(p);
	assert_non_null(strstr(log_buf, "Hs2:push GET /style.css on=1|"));
	assert_non_null(strstr(log_buf, "Hs2:resp 200 ct=application/grpc ES|Es2|C2:done|"));
	assert_non_null(strstr(log_buf, "Gs last=3 code=0|C5:goaway by=s code=0|"
				       "C7:goaway by=s code=0|") ||
			strstr(log_buf, "Gs last=3 code=0|C7:goaway by=s code=0|"
				       "C5:goaway by=s code=0|"));
	assert_non_null(strstr(log_buf, "C1:reset by=c code=8|Ds3:last|Es3|C3:done|"));
	assert_null(strstr(log_buf, "late"));
	assert_int_equal(R.streams_open, 0);
	assert_int_equal(R.errors, 0);
	done(p);
}

static void test_eof_closes_open_streams(void **state)
{
	struct h2_parser *p;

	(void)state;
	p = started();
	open_stream(p, 1);
	open_stream(p, 3);
	h2_parser__eof(p);
	assert_int_equal(R.closes, 2);
	assert_int_equal(R.streams_open, 0);
	assert_non_null(strstr(log_buf, "C1:eof|"));
	assert_non_null(strstr(log_buf, "C3:eof|"));
	done(p);
}

/* A block cut off by another frame: reported lost, the decoder goes partial. */
static void test_continuation_interrupted(void **state)
{
	static struct wbuf s;
	struct h2_parser *p;
	uint8_t blk[256];
	size_t n;

	(void)state;
	p = started();
	open_stream(p, 1);
	memset(&s, 0, sizeof(s));
	n = h2b_block(sdef, resp_nv, blk, sizeof(blk));
	wb_frame(&s, H2_HEADERS, 0, 1, blk, n - 1);	/* no END_HEADERS */
	wb_data(&s, 1, 0x01, "x", 1, -1);
	feed(p, H2_FROM_SERVER, &s);
	assert_non_null(strstr(log_buf, "Xs:header block interrupted|Hs1:resp"));
	assert_true(R.last_f.partial || R.last.lost);
	assert_true(R.last.lost);
	assert_non_null(strstr(log_buf, "Ds1:x|Es1|C1:done|"));
	/* a CONTINUATION with no block */
	memset(&s, 0, sizeof(s));
	wb_frame(&s, H2_CONTINUATION, 0x04, 1, blk, 1);
	feed(p, H2_FROM_SERVER, &s);
	assert_non_null(strstr(log_buf, "Xs:CONTINUATION without a header block|"));
	done(p);
}

/* ------------------------------------------------------------------ flow control */

static void test_flow_control(void **state)
{
	static struct wbuf s, c;
	static uint8_t chunk[16384];
	static const uint32_t iws[] = { 4, 16384, 0 };
	struct h2_parser *p;
	int64_t w;

	(void)state;
	memset(chunk, 'x', sizeof(chunk));
	p = started();
	R.log_flow = true;
	open_stream(p, 1);
	open_stream(p, 3);
	assert_true(h2_parser__window(p, H2_FROM_SERVER, 0, &w));
	assert_int_equal(w, 65535);
	memset(&s, 0, sizeof(s));
	wb_headers(&s, sdef, 1, 0, resp_nv, 0);
	for (int i = 0; i < 3; i++)
		wb_frame(&s, H2_DATA, 0, 1, chunk, 16384);
	wb_frame(&s, H2_DATA, 0, 1, chunk, 16383);	/* 65535 in all: the window is used up */
	feed(p, H2_FROM_SERVER, &s);
	assert_int_equal(R.blocked, 2);		/* the stream's and the connection's */
	assert_true(h2_parser__window(p, H2_FROM_SERVER, 1, &w));
	assert_int_equal(w, 0);
	assert_true(h2_parser__window(p, H2_FROM_SERVER, 3, &w));
	assert_int_equal(w, 65535);
	assert_non_null(strstr(log_buf, "Fs0:blocked w=0|Fs1:blocked w=0|"));
	/* the client reads and opens both windows */
	memset(&c, 0, sizeof(c));
	wb_u32_frame(&c, H2_WINDOW_UPDATE, 0, 32768);
	wb_u32_frame(&c, H2_WINDOW_UPDATE, 1, 100);
	feed(p, H2_FROM_CLIENT, &c);
	assert_non_null(strstr(log_buf, "Fs0:update w=32768 opened|Fs1:update w=100 opened|"));
	assert_int_equal(R.opened, 2);
	/* a smaller initial window, acknowledged by the server: open streams move by -49151 */
	memset(&c, 0, sizeof(c));
	wb_settings(&c, iws);
	feed(p, H2_FROM_CLIENT, &c);
	assert_true(h2_parser__window(p, H2_FROM_SERVER, 3, &w));
	assert_int_equal(w, 65535);	/* not before the ACK */
	memset(&s, 0, sizeof(s));
	wb_frame(&s, H2_SETTINGS, 0x01, 0, NULL, 0);
	feed(p, H2_FROM_SERVER, &s);
	assert_true(h2_parser__window(p, H2_FROM_SERVER, 3, &w));
	assert_int_equal(w, 16384);
	assert_true(h2_parser__window(p, H2_FROM_SERVER, 1, &w));
	assert_int_equal(w, 100 - 49151);
	/* a new stream starts at the new initial window */
	open_stream(p, 5);
	assert_true(h2_parser__window(p, H2_FROM_SERVER, 5, &w));
	assert_int_equal(w, 16384);
	/* a WINDOW_UPDATE of 0 is a protocol error */
	memset(&c, 0, sizeof(c));
	wb_u32_frame(&c, H2_WINDOW_UPDATE, 0, 0);
	feed(p, H2_FROM_CLIENT, &c);
	assert_non_null(strstr(log_buf, "Xc:WINDOW_UPDATE of 0|"));
	done(p);
}

/* ------------------------------------------------------------------ h2c upgrade */

static void test_upgrade(void **state)
{
	static struct wbuf s, c;
	struct h2_parser *p;
	int64_t w;

	(void)state;
	p = new_parser(H2_START_UPGRADE);
	/* SETTINGS_MAX_CONCURRENT_STREAMS 100, SETTINGS_INITIAL_WINDOW_SIZE 1048576 (curl's) */
	assert_int_equal(h2_parser__upgraded(p, "AAMAAABkAAQAEAAAAAIAAAAA"), 0);
	assert_true(h2_parser__window(p, H2_FROM_SERVER, 1, &w));
	assert_int_equal(w, 1048576);
	memset(&s, 0, sizeof(s));
	wb_frame(&s, H2_SETTINGS, 0, 0, NULL, 0);
	wb_headers(&s, sdef, 1, 0, resp_nv, 0);
	wb_data(&s, 1, 0x01, "hi", 2, -1);
	memset(&c, 0, sizeof(c));
	wb_put(&c, H2_PREFACE, H2_PREFACE_LEN);
	wb_frame(&c, H2_SETTINGS, 0, 0, NULL, 0);
	feed(p, H2_FROM_SERVER, &s);
	feed(p, H2_FROM_CLIENT, &c);
	assert_string_equal(done(p), "Hs1:resp 200 ct=application/grpc|Ds1:hi|Es1|C1:done|");
	/* a value that is not base64url */
	p = new_parser(H2_START_UPGRADE);
	assert_int_equal(h2_parser__upgraded(p, "AA*A"), -1);
	done(p);
}

/* ------------------------------------------------------------------ gaps, sync */

static void test_gaps(void **state)
{
	static struct wbuf s, s2;
	struct h2_parser *p;

	(void)state;
	p = started();
	open_stream(p, 1);
	memset(&s, 0, sizeof(s));
	wb_headers(&s, sdef, 1, 0, resp_nv, 0);
	wb_data(&s, 1, 0, "0123456789", 10, -1);
	/* the last 6 data bytes were not captured: within the frame, framing holds */
	h2_parser__feed(p, H2_FROM_SERVER, s.b, s.len - 6);
	h2_parser__gap(p, H2_FROM_SERVER, 6);
	memset(&s2, 0, sizeof(s2));
	wb_data(&s2, 1, 0x01, "end", 3, -1);
	feed(p, H2_FROM_SERVER, &s2);
	assert_non_null(strstr(log_buf, "Ds1:0123<gap 6>|Ds1:end|Es1|C1:done|"));
	assert_int_equal(R.errors, 0);
	done(p);

	/* a gap running past the frame: sync lost, found again at the next send */
	p = started();
	open_stream(p, 3);
	memset(&s, 0, sizeof(s));
	wb_headers(&s, sdef, 3, 0, resp_nv, 0);
	wb_data(&s, 3, 0, "0123456789", 10, -1);
	h2_parser__feed(p, H2_FROM_SERVER, s.b, s.len - 6);
	h2_parser__gap(p, H2_FROM_SERVER, 6 + 20);
	feed(p, H2_FROM_SERVER, &s2);	/* stream 1: not opened, dropped as stray */
	memset(&s2, 0, sizeof(s2));
	wb_data(&s2, 3, 0x01, "end", 3, -1);
	feed(p, H2_FROM_SERVER, &s2);
	assert_non_null(strstr(log_buf, "Ds3:0123<gap 6>|Xs:gap across frames|Ds3:end|Es3|"));
	done(p);
}

static void test_no_preface_and_garbage(void **state)
{
	static struct wbuf c;
	struct h2_parser *p = new_parser(H2_START_PREFACE);
	struct h2_stats st;
	uint8_t junk[4096];
	uint32_t x = 12345;

	(void)state;
	memset(&c, 0, sizeof(c));
	wb_put(&c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
	feed(p, H2_FROM_CLIENT, &c);
	assert_non_null(strstr(log_buf, "Xc:no connection preface|"));
	/* random bytes are never taken for frames */
	for (int round = 0; round < 64; round++) {
		for (size_t i = 0; i < sizeof(junk); i++) {
			x = x * 1103515245 + 12345;
			junk[i] = (uint8_t)(x >> 16);
		}
		h2_parser__feed(p, H2_FROM_CLIENT, junk, sizeof(junk));
		h2_parser__feed(p, H2_FROM_SERVER, junk, sizeof(junk));
	}
	h2_parser__stats(p, &st);
	assert_int_equal(st.resyncs, 0);
	assert_int_equal(R.closes, 0);
	done(p);
}

/*
 * Joined while the gRPC exchange streamed: from every offset into the server's bytes, the
 * parser finds the frames that follow (a chain ending at the feed's end), the stream is
 * joined, and no stray bytes are taken for frames.
 */
static void test_joined_every_offset(void **state)
{
	static struct wbuf c, s, c2;

	(void)state;
	grpc_exchange(&c, &s, &c2);
	for (size_t off = 0; off < s.len; off++) {
		struct h2_parser *p = new_parser(H2_START_JOINED);
		struct h2_stats st;

		h2_parser__feed(p, H2_FROM_SERVER, s.b + off, s.len - off);
		h2_parser__stats(p, &st);
		assert_int_equal(R.errors, 0);
		if (off > trailers_at) {
			/* inside the last frame: no header of it to find */
			assert_int_equal(st.resyncs, 0);
			assert_int_equal(st.dropped, s.len - off);
			assert_string_equal(log_buf, "");
			done(p);
			continue;
		}
		/* the trailers always come through, on the joined stream */
		if (!strstr(log_buf, "Hs1:trailers grpc=0 ES J|Es1|"))
			fail_msg("offset %zu of %zu: %s", off, s.len, log_buf);
		assert_int_equal(st.resyncs, 1);
		h2_parser__eof(p);
		assert_int_equal(R.streams_open, 0);
		done(p);
	}
}

/* A joined parser whose first feed holds a new connection's preface: in sync at once. */
static void test_joined_sees_preface(void **state)
{
	static struct wbuf c, s, c2;
	struct h2_parser *p = new_parser(H2_START_JOINED);

	(void)state;
	grpc_exchange(&c, &s, &c2);
	feed(p, H2_FROM_CLIENT, &c);
	assert_non_null(strstr(log_buf, "Hc1:req POST /sglang.grpc.scheduler.SglangScheduler/"
				       "Generate ct=application/grpc|"));
	done(p);
}

static void test_too_many_streams(void **state)
{
	struct h2_parser *p;
	struct h2_stats st;
	static struct wbuf c;
	static const char *const nv[] = { ":method", "GET", ":path", "/", NULL };

	(void)state;
	p = started();
	memset(&c, 0, sizeof(c));
	for (uint32_t i = 0; i <= H2_STREAMS_MAX; i++)
		wb_headers(&c, cdef, 2 * i + 1, 0, nv, 0);
	feed(p, H2_FROM_CLIENT, &c);
	h2_parser__stats(p, &st);
	assert_int_equal(st.streams, H2_STREAMS_MAX);
	assert_int_equal(st.untracked, 1);
	assert_non_null(strstr(log_buf, "Xc:too many open streams|"));
	h2_parser__eof(p);
	assert_int_equal(R.closes, H2_STREAMS_MAX);
	done(p);
}

static void test_is_preface(void **state)
{
	(void)state;
	assert_true(h2__is_preface((const uint8_t *)"PRI * HTTP/2.0\r\n", 16));
	assert_true(h2__is_preface((const uint8_t *)H2_PREFACE "xyz", H2_PREFACE_LEN + 3));
	assert_false(h2__is_preface((const uint8_t *)"PRI * HTTP/1.1", 14));
	assert_false(h2__is_preface(NULL, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_grpc_exchange_every_split, setup, teardown),
		cmocka_unit_test_setup_teardown(test_grpc_exchange_stats, setup, teardown),
		cmocka_unit_test_setup_teardown(test_real_grpc_every_split, setup, teardown),
		cmocka_unit_test_setup_teardown(test_interleaved_streams, setup, teardown),
		cmocka_unit_test_setup_teardown(test_padding, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frame_size_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rst_goaway_push, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eof_closes_open_streams, setup, teardown),
		cmocka_unit_test_setup_teardown(test_continuation_interrupted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flow_control, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upgrade, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gaps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_preface_and_garbage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_joined_every_offset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_joined_sees_preface, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_many_streams, setup, teardown),
		cmocka_unit_test_setup_teardown(test_is_preface, setup, teardown),
	};

	return cmocka_run_group_tests_name("h2", tests, NULL, NULL);
}
