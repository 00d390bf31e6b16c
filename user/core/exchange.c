// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Exchanges: requests as the target reads them (or, a client, writes them), queued in the
 * order they were read, and each response paired with the request it answers (keep-alive
 * and pipelining answer in order; after a loss, an echoed X-Request-Id says which). A
 * finished request goes to the markers, the proxy pairing and the caller. See conn.h.
 */
#include <stdlib.h>
#include <string.h>
#include "attribute.h"
#include "classify.h"
#include "conn.h"
#include "proxy.h"
#include "util.h"

void exchange_finish(struct conn *k, struct tt_request *r)
{
	struct correlator *c = k->c;

	attributor__forget(c->attr, r);
	request__finish(r);
	/* a proxy: its upstream calls are kept a while, its downstream requests paired */
	if (r->client)
		proxy__upstream(c->proxy, r);
	else
		proxy__pair(c->proxy, r);
	c->st.requests++;
	if (c->o.on_request)
		c->o.on_request(c->o.ud, r);
	request__free(r);
}

void exchange_push(struct conn *k, struct tt_request *r)
{
	r->next = NULL;
	if (k->rq.pend_tail)
		k->rq.pend_tail->next = r;
	else
		k->rq.pend_head = r;
	k->rq.pend_tail = r;
}

struct tt_request *exchange_pop(struct conn *k)
{
	struct tt_request *r = k->rq.pend_head;

	if (!r)
		return NULL;
	k->rq.pend_head = r->next;
	if (!k->rq.pend_head)
		k->rq.pend_tail = NULL;
	r->next = NULL;
	return r;
}

/*
 * The request a response with head h answers, taken off the queue; NULL if none waits (the
 * connection was joined mid-exchange: counted).
 */
struct tt_request *exchange_pair(struct conn *k, const struct http_head *h)
{
	struct tt_request *r;
	bool by_id = false;

	/*
	 * After a loss, a response that names its request (X-Request-Id echoed) answers that
	 * one: those read before it lost their responses to the drop, and go now, as lost.
	 */
	if (k->loss.pairing_suspect && h->request_id[0]) {
		struct tt_request *q;

		for (q = k->rq.pend_head; q && strcmp(q->request_id, h->request_id); q = q->next)
			;
		by_id = q != NULL;
		while (q && k->rq.pend_head != q) {
			r = exchange_pop(k);
			r->lost = true;
			r->abort = ABORT_LOST;
			exchange_finish(k, r);
		}
	}
	r = exchange_pop(k);
	if (!r) {
		k->c->st.unmatched_responses++;
		return NULL;
	}
	if (k->loss.pairing_suspect && !by_id)
		r->lost = true;	/* it may answer another request than this */
	if (!k->rq.pend_head)
		k->loss.pairing_suspect = false;
	return r;
}

/* ------------------------------------------------------------------ the request parser */

struct tt_request *exchange_request_new(struct conn *k)
{
	struct tt_request *r = request__new();

	if (!r)
		return NULL;
	r->pid = k->pid;
	r->client = k->role == ROLE_CLIENT;
	r->tls = k->tls;
	memcpy(r->comm, k->comm, sizeof(r->comm));
	r->conn_id = k->id;
	memcpy(r->conn, k->addr, sizeof(r->conn));
	r->seq = ++k->rq.seq;
	return r;
}

static void rq_on_head(void *ud, const struct http_head *h)
{
	struct conn *k = ud;
	struct tt_request *r;

	request__free(k->rq.reading);
	k->rq.reading = r = exchange_request_new(k);
	buf__reset(&k->rq.body);
	k->rq.body_cut = false;
	if (!r)
		return;
	memcpy(r->method, h->method, sizeof(r->method));
	memcpy(r->path, h->path, sizeof(r->path));
	memcpy(r->request_id, h->request_id, sizeof(r->request_id));
	memcpy(r->host, h->host, sizeof(r->host));
	memcpy(r->traceparent, h->traceparent, sizeof(r->traceparent));
	/* "Upgrade: h2c": a 101 would hand the connection to HTTP/2 (response.c) */
	k->rq.h2c_asked = h->upgrade_h2c;
	memcpy(k->rq.h2c_settings, h->http2_settings, sizeof(k->rq.h2c_settings));
	r->t_recv_ns = k->rq.first_ts;
	r->io_tid = k->tid;
	if (k->rq.arrival && k->rq.arrival <= k->rq.first_ts) {
		r->queue_ns = k->rq.first_ts - k->rq.arrival;
		r->queue_known = true;
	}
	if (r->seq == 1 && k->tcp.t_established && k->tcp.t_accept_ns >= k->tcp.t_established) {
		r->accept_wait_ns = k->tcp.t_accept_ns - k->tcp.t_established;
		r->accept_wait_known = true;
	}
}

static void rq_on_body(void *ud, const uint8_t *data, size_t len)
{
	struct conn *k = ud;

	if (!k->rq.reading)
		return;
	if (buf__append(&k->rq.body, data, len, k->c->o.req_body_max) < len)
		k->rq.body_cut = true;
}

static void rq_on_body_gap(void *ud, uint64_t len)
{
	struct conn *k = ud;

	k->rq.body_cut = true;
	if (k->rq.reading)
		k->rq.reading->truncated = true;
}

static void rq_on_end(void *ud)
{
	struct conn *k = ud;
	struct tt_request *r = k->rq.reading;
	struct req_info ri;

	k->rq.reading = NULL;
	/* a pipelined request that follows begins in this same record */
	k->rq.first_ts = k->ts;
	if (!r)
		return;
	r->t_start_ns = k->ts;
	r->io_tid = k->tid;
	if (k->rq.body.len) {
		classify__req_info((const char *)k->rq.body.data, k->rq.body.len, k->rq.body_cut,
				   &ri);
		strlcpy_cut(r->model, sizeof(r->model), ri.model);
		r->stream = ri.stream;
		r->max_tokens = ri.max_tokens;
	}
	/* an idle connection holds no body buffer */
	buf__release(&k->rq.body);
	exchange_push(k, r);
	attributor__key_add(k->c->attr, r, r->request_id);
}

static void rq_on_error(void *ud, const char *why)
{
	struct conn *k = ud;

	k->c->st.parse_errors++;
	request__free(k->rq.reading);
	k->rq.reading = NULL;
}

const struct http_cb request_side_cb = {
	.on_head = rq_on_head,
	.on_body = rq_on_body,
	.on_body_gap = rq_on_body_gap,
	.on_end = rq_on_end,
	.on_error = rq_on_error,
};

/* ------------------------------------------------------------------ both parsers */

int exchange_parsers_start(struct conn *k)
{
	k->rq.p = http_parser__new(HTTP_REQUEST, &request_side_cb, k);
	k->rs.p = http_parser__new(HTTP_RESPONSE, &response_side_cb, k);
	return k->rq.p && k->rs.p ? 0 : -1;
}

/* Start both directions over: they resync at the next message start. */
void exchange_parsers_restart(struct conn *k)
{
	http_parser__free(k->rq.p);
	http_parser__free(k->rs.p);
	exchange_parsers_start(k);
	request__free(k->rq.reading);
	k->rq.reading = NULL;
	k->rs.active = false;
	/* held bytes of a first start line: what follows them is not what came after them */
	role_restart(k);
}

void exchange_free(struct conn *k)
{
	struct tt_request *r, *next;

	for (r = k->rq.pend_head; r; r = next) {
		next = r->next;
		request__free(r);
	}
	k->rq.pend_head = k->rq.pend_tail = NULL;
	request__free(k->rq.reading);
	k->rq.reading = NULL;
	http_parser__free(k->rq.p);
	k->rq.p = NULL;
	buf__release(&k->rq.body);
}
