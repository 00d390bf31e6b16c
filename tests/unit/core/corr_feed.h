/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Canned ring-buffer records for the correlator's tests, as the kernel side would write them,
 * and the requests it reports, kept in done[]. Included by one test program each, after
 * <cmocka.h>.
 */
#ifndef TT_TEST_CORR_FEED_H
#define TT_TEST_CORR_FEED_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "correlate.h"
#include "events.h"

#define TCP_FIN_WAIT1	4
#define TCP_CLOSE	7
#define TCP_CLOSE_WAIT	8
#define MAX_DONE	16

struct done {
	struct tt_request r;
	uint64_t tok[256];
};

static struct done done[MAX_DONE];
static int ndone;
static uint64_t ignored_id;

static inline void on_request(void *ud, const struct tt_request *r)
{
	assert_true(ndone < MAX_DONE);
	done[ndone].r = *r;
	assert_true(r->chunks <= 256);
	if (r->chunks)	/* a request without tokens has no tok_ns */
		memcpy(done[ndone].tok, r->tok_ns, r->chunks * sizeof(uint64_t));
	done[ndone].r.tok_ns = done[ndone].tok;
	ndone++;
}

static inline void on_ignore(void *ud, uint64_t sk)
{
	ignored_id = sk;
}

static struct correlator *new_corr(void)
{
	struct corr_opts o = { .on_request = on_request, .ignore_conn = on_ignore };

	ndone = 0;
	ignored_id = 0;
	return correlator__new(&o);
}

static inline void rec_conn(struct correlator *c, uint64_t id, uint64_t ts)
{
	struct tt_conn_ev e = {
		.h = { .ts = ts, .tgid = 42, .tid = 42, .type = TT_EV_CONN, .size = sizeof(e) },
		.conn_id = id,
		.sk = 0xffff000000000000ull + id,
		.family = 2,
		.lport = 8000,
		.rport = 50000 + id,
		.flags = TT_CF_ACCEPTED,
		.laddr = { 127, 0, 0, 1 },
		.raddr = { 127, 0, 0, 1 },
		.comm = "server",
	};

	assert_int_equal(correlator__record(c, &e, sizeof(e)), 0);
}

/* --budget: the next record says this many exchanges were left out before it */
static uint16_t next_skipped;
/* the next record's bytes arrived in the socket at this time (0: not known) */
static uint64_t next_arrival;

/*
 * A send or receive of len bytes of which cap were captured, made when the kernel's running
 * count of dropped records was drops.
 */
static inline void rec_data_drops(struct correlator *c, uint64_t id, int dir, uint64_t ts,
				  const char *buf, size_t len, size_t cap, uint8_t flags, int ret,
				  uint32_t drops)
{
	size_t size = sizeof(struct tt_data_ev) + cap;
	struct tt_data_ev *e = calloc(1, size);

	e->h.ts = ts;
	e->h.tgid = 42;
	e->h.tid = 43;
	e->h.type = TT_EV_DATA;
	e->h.size = size;
	e->h.drops = drops;
	e->conn_id = id;
	e->ret = ret ? ret : (int)len;
	e->cap = cap;
	e->dir = dir;
	e->flags = flags | (cap < len ? TT_DF_TRUNC : 0);
	if (flags & TT_DF_LOST)
		e->lost = 3;
	e->skipped = next_skipped;
	next_skipped = 0;
	e->arrival = next_arrival;
	next_arrival = 0;
	memcpy(e->data, buf, cap);
	assert_int_equal(correlator__record(c, e, size), 0);
	free(e);
}

static inline void rec_data_cap(struct correlator *c, uint64_t id, int dir, uint64_t ts,
				const char *buf, size_t len, size_t cap, uint8_t flags, int ret)
{
	rec_data_drops(c, id, dir, ts, buf, len, cap, flags, ret, 0);
}

static inline void rec_data(struct correlator *c, uint64_t id, int dir, uint64_t ts,
			    const char *buf, size_t len)
{
	rec_data_cap(c, id, dir, ts, buf, len, len, 0, 0);
}

static inline void recv_s(struct correlator *c, uint64_t id, uint64_t ts, const char *s)
{
	rec_data(c, id, TT_DIR_RECV, ts, s, strlen(s));
}

static inline void send_s(struct correlator *c, uint64_t id, uint64_t ts, const char *s)
{
	rec_data(c, id, TT_DIR_SEND, ts, s, strlen(s));
}

static inline void rec_state(struct correlator *c, uint64_t id, int newstate, uint64_t ts)
{
	struct tt_state_ev e = {
		.h = { .ts = ts, .type = TT_EV_STATE, .size = sizeof(e) },
		.conn_id = id,
		.oldstate = 1,
		.newstate = newstate,
	};

	assert_int_equal(correlator__record(c, &e, sizeof(e)), 0);
}

static const char req_body[] = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
			       "\"model\":\"llama-3\",\"stream\":true}";

/* a chat completion request with X-Request-Id rid, in buf */
static inline const char *request_text(char *buf, size_t n, const char *rid)
{
	snprintf(buf, n,
		 "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Request-Id: %s\r\n"
		 "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
		 rid, strlen(req_body), req_body);
	return buf;
}

static inline void send_request(struct correlator *c, uint64_t id, uint64_t ts, const char *rid)
{
	char buf[1024];

	recv_s(c, id, ts, request_text(buf, sizeof(buf), rid));
}

static const char sse_head[] = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; "
			       "charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n";

/* one SSE event framed as one HTTP chunk */
static inline void chunk(char *out, size_t sz, const char *event)
{
	snprintf(out, sz, "%zx\r\n%s\r\n", strlen(event), event);
}

#define ROLE "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
#define TOK(t) "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" t "\"}}]}\n\n"
#define FIN "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
#define DONE "data: [DONE]\n\n"

#endif /* TT_TEST_CORR_FEED_H */
