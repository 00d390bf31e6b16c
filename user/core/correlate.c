// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Correlation of socket records into requests. See correlate.h.
 *
 * Time rule: a callback of a parser runs inside the feed of one record, so "now" for it is
 * that record's timestamp (conn->ts). A content chunk is timestamped by the send in which its
 * event or line completed: that is when the whole of it had left the server.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "events.h"
#include "correlate.h"
#include "http.h"
#include "attribute.h"
#include "proxy.h"
#include "ndjson.h"
#include "sched_book.h"
#include "stall.h"
#include "sse.h"
#include "util.h"

#define TCP_ESTABLISHED	1
#define TCP_FIN_WAIT1	4
#define TCP_CLOSE	7
#define TCP_CLOSE_WAIT	8

#define DROP_WINDOWS	64
#define COMMS_MAX	256
/* Records of a connection whose role is still unknown before we stop looking at it. */
#define UNKNOWN_FEEDS_MAX	64

enum role {
	ROLE_UNKNOWN,
	ROLE_SERVER,	/* the target reads requests and writes responses */
	ROLE_CLIENT,	/* the target writes requests and reads responses: an outbound call */
	ROLE_IGNORED,	/* the bytes are not HTTP */
};

struct conn {
	struct conn *hnext;
	struct conn *lru_prev, *lru_next;	/* most recently active first */
	uint64_t last_ts;		/* the last record of the connection */
	struct correlator *c;
	uint64_t id;
	uint64_t sk;
	uint32_t pid;
	char comm[16];
	char addr[REQ_ADDR_MAX];
	uint64_t t_accept_ns;
	enum role role;
	uint32_t unknown_feeds;
	bool peer_closed;		/* the client sent its FIN (or reset) */
	uint64_t seg_next;		/* offset the next segment of the send in flight must have */
	bool unix_sk;			/* a Unix-domain socket */
	bool tls;			/* its data is TLS plaintext from OpenSSL's calls */
	bool we_closed;			/* the server closed its side first */
	/* correlator__arm_at(): the stream's stall threshold as of its chunk count */
	uint64_t arm_thr;
	uint32_t arm_chunks;

	/* the record being fed: "now" for parser callbacks */
	uint64_t ts;
	uint32_t tid;
	uint64_t t_established;		/* handshake done, from the accept record */
	uint64_t rq_arrival;		/* when the current request's first bytes arrived */

	/* requests, as the server reads them */
	struct http_parser *rq;
	struct tt_request *reading;	/* head seen, body not complete */
	uint64_t rq_first_ts;		/* record in which the current request began */
	uint8_t *body;			/* request body prefix, for model/stream */
	size_t body_len, body_cap;
	bool body_cut;
	uint64_t seq;

	/* read and not yet answered, oldest first */
	struct tt_request *pend_head, *pend_tail;
	/*
	 * Records were dropped while requests waited: a response may be missing whole, and the
	 * next one would pair with the wrong request. Set by a loss, cleared once no request
	 * waits (in sync again); meanwhile every pairing is flagged lost.
	 */
	bool pairing_suspect;

	/* the response being written */
	struct http_parser *rs;
	bool resp_active;		/* inside a response message */
	bool resp_informational;	/* 1xx: answers nothing by itself */
	struct tt_request *resp;	/* the request it answers; NULL if unmatched */
	enum body_format fmt;
	bool sniff;			/* decide SSE from the first body bytes */
	struct sse_parser *sse;
	struct ndjson_parser *nd;
	uint8_t *jbody;			/* non-streaming JSON body prefix, to classify */
	size_t jbody_len, jbody_cap;
	bool jbody_cut;
	uint64_t body_bytes;
	/* why the connection is closing, while the parser is told of the EOF */
	enum abort_reason closing;
	/* TCP trouble: recent retransmits and the last zero-window spell */
	uint64_t retrans[16];
	uint32_t nretrans;
	uint64_t zw_from, zw_to;	/* zw_to 0: still zero */
};

struct correlator {
	struct corr_opts o;
	struct corr_stats st;
	struct attributor *attr;
	struct proxy *proxy;
	struct sched_book *sched;
	struct pysamples *py;		/* CPython stacks, with stalls and a py_name */
	struct conn **tab;
	size_t nbuckets;
	size_t nconns;
	struct conn *lru_head, *lru_tail;
	/*
	 * Records the kernel dropped, from the headers' running count: when the count moved,
	 * and the windows in which it did (a stall spanning one was explained without them).
	 */
	uint32_t drops_seen;
	bool drops_init;
	uint64_t last_rec_ts, last_drop_ts;
	struct {
		uint64_t from, to;
	} drop_win[DROP_WINDOWS];
	uint32_t ndrop_win;
	struct {
		uint32_t pid;
		char comm[16];
	} comms[COMMS_MAX];	/* process names; when full the oldest entry goes */
	size_t ncomms, comms_next;
};

/* ------------------------------------------------------------------ connection table */

static size_t bucket(const struct correlator *c, uint64_t id)
{
	return (id * 0x9e3779b97f4a7c15ull) >> 32 & (c->nbuckets - 1);
}

static struct conn *conn_find(struct correlator *c, uint64_t id)
{
	for (struct conn *k = c->tab[bucket(c, id)]; k; k = k->hnext)
		if (k->id == id)
			return k;
	return NULL;
}

static void lru_unlink(struct correlator *c, struct conn *k)
{
	if (k->lru_prev)
		k->lru_prev->lru_next = k->lru_next;
	else if (c->lru_head == k)
		c->lru_head = k->lru_next;
	if (k->lru_next)
		k->lru_next->lru_prev = k->lru_prev;
	else if (c->lru_tail == k)
		c->lru_tail = k->lru_prev;
	k->lru_prev = k->lru_next = NULL;
}

/* A record of k arrived: it is the most recently active. */
static void conn_touch(struct correlator *c, struct conn *k, uint64_t ts)
{
	if (ts > k->last_ts)
		k->last_ts = ts;
	if (c->lru_head == k)
		return;
	lru_unlink(c, k);
	k->lru_next = c->lru_head;
	if (c->lru_head)
		c->lru_head->lru_prev = k;
	c->lru_head = k;
	if (!c->lru_tail)
		c->lru_tail = k;
}

static void grow(struct correlator *c)
{
	size_t old = c->nbuckets, nb = old * 2;
	struct conn **tab = calloc(nb, sizeof(*tab));

	if (!tab)
		return;	/* chains just get longer */
	for (size_t i = 0; i < old; i++) {
		struct conn *k = c->tab[i], *next;

		for (; k; k = next) {
			size_t b;

			next = k->hnext;
			c->nbuckets = nb;
			b = bucket(c, k->id);
			c->nbuckets = old;
			k->hnext = tab[b];
			tab[b] = k;
		}
	}
	free(c->tab);
	c->tab = tab;
	c->nbuckets = nb;
}

static const struct http_cb rq_cb, rs_cb;

static const char *comm_of(struct correlator *c, uint32_t pid)
{
	for (size_t i = 0; i < c->ncomms; i++)
		if (c->comms[i].pid == pid)
			return c->comms[i].comm;
	return NULL;
}

static struct conn *conn_new(struct correlator *c, uint64_t id, uint32_t pid)
{
	struct conn *k = calloc(1, sizeof(*k));
	const char *comm;
	size_t b;

	if (!k)
		return NULL;
	k->c = c;
	k->id = id;
	k->pid = pid;
	strcpy(k->addr, "?");
	comm = comm_of(c, pid);
	if (comm)
		strlcpy_cut(k->comm, sizeof(k->comm), comm);
	k->rq = http_parser__new(HTTP_REQUEST, &rq_cb, k);
	k->rs = http_parser__new(HTTP_RESPONSE, &rs_cb, k);
	if (!k->rq || !k->rs) {
		http_parser__free(k->rq);
		http_parser__free(k->rs);
		free(k);
		return NULL;
	}
	if (c->nconns >= c->nbuckets * 2)
		grow(c);
	b = bucket(c, id);
	k->hnext = c->tab[b];
	c->tab[b] = k;
	c->nconns++;
	c->st.conns++;
	conn_touch(c, k, 0);
	return k;
}

static void conn_unlink(struct correlator *c, struct conn *k)
{
	struct conn **pp = &c->tab[bucket(c, k->id)];

	lru_unlink(c, k);
	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == k) {
			*pp = k->hnext;
			c->nconns--;
			return;
		}
	}
}

static void conn_free(struct conn *k)
{
	struct tt_request *r, *next;

	for (r = k->pend_head; r; r = next) {
		next = r->next;
		request__free(r);
	}
	if (k->resp) {
		/* the answered request was already taken off the pending queue */
		request__free(k->resp);
	}
	request__free(k->reading);
	http_parser__free(k->rq);
	http_parser__free(k->rs);
	sse_parser__free(k->sse);
	ndjson_parser__free(k->nd);
	free(k->body);
	free(k->jbody);
	free(k);
}

/*
 * Append to a buffer that grows as needed up to max, so an idle connection holds no body
 * buffer and a short body a short one. Sets *cut when bytes did not fit.
 */
static void buf_append(uint8_t **buf, size_t *len, size_t *cap, size_t max,
		       const uint8_t *data, size_t n, bool *cut)
{
	if (n > max - *len) {
		n = max - *len;
		*cut = true;
	}
	if (*len + n > *cap) {
		size_t nc = *cap ? *cap : 1024;
		uint8_t *nb;

		while (nc < *len + n)
			nc *= 2;
		if (nc > max)
			nc = max;
		nb = realloc(*buf, nc);
		if (!nb) {
			*cut = true;
			return;
		}
		*buf = nb;
		*cap = nc;
	}
	memcpy(*buf + *len, data, n);
	*len += n;
}

static void buf_release(uint8_t **buf, size_t *len, size_t *cap)
{
	free(*buf);
	*buf = NULL;
	*len = *cap = 0;
}

/* ------------------------------------------------------------------ requests */

static void finish(struct conn *k, struct tt_request *r)
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

static void pend_push(struct conn *k, struct tt_request *r)
{
	r->next = NULL;
	if (k->pend_tail)
		k->pend_tail->next = r;
	else
		k->pend_head = r;
	k->pend_tail = r;
}

static struct tt_request *pend_pop(struct conn *k)
{
	struct tt_request *r = k->pend_head;

	if (!r)
		return NULL;
	k->pend_head = r->next;
	if (!k->pend_head)
		k->pend_tail = NULL;
	r->next = NULL;
	return r;
}

/*
 * The response in flight ended before its HTTP framing did. If the stream's own end had
 * arrived ([DONE], "done":true, message_stop...), the client got everything: it is complete,
 * whatever came of the chunked terminator (clients stop reading at [DONE] and close, and
 * llama.cpp's server sends the terminator apart). Otherwise it was aborted.
 */
static void abort_response(struct conn *k, enum abort_reason why)
{
	struct tt_request *r = k->resp;

	k->resp = NULL;
	k->resp_active = false;
	if (!r)
		return;
	if (r->saw_final && why != ABORT_LOST && why != ABORT_DESYNC)
		r->complete = true;
	else
		r->abort = why;
	finish(k, r);
}

/* ------------------------------------------------------------------ request side */

static void rq_on_head(void *ud, const struct http_head *h)
{
	struct conn *k = ud;
	struct tt_request *r;

	request__free(k->reading);
	k->reading = r = request__new();
	k->body_len = 0;
	k->body_cut = false;
	if (!r)
		return;
	r->pid = k->pid;
	r->client = k->role == ROLE_CLIENT;
	r->tls = k->tls;
	memcpy(r->comm, k->comm, sizeof(r->comm));
	r->conn_id = k->id;
	memcpy(r->conn, k->addr, sizeof(r->conn));
	r->seq = ++k->seq;
	memcpy(r->method, h->method, sizeof(r->method));
	memcpy(r->path, h->path, sizeof(r->path));
	memcpy(r->request_id, h->request_id, sizeof(r->request_id));
	memcpy(r->host, h->host, sizeof(r->host));
	r->t_recv_ns = k->rq_first_ts;
	r->io_tid = k->tid;
	if (k->rq_arrival && k->rq_arrival <= k->rq_first_ts) {
		r->queue_ns = k->rq_first_ts - k->rq_arrival;
		r->queue_known = true;
	}
	if (r->seq == 1 && k->t_established && k->t_accept_ns >= k->t_established) {
		r->accept_wait_ns = k->t_accept_ns - k->t_established;
		r->accept_wait_known = true;
	}
}

static void rq_on_body(void *ud, const uint8_t *data, size_t len)
{
	struct conn *k = ud;

	if (!k->reading)
		return;
	buf_append(&k->body, &k->body_len, &k->body_cap, k->c->o.req_body_max, data, len,
		   &k->body_cut);
}

static void rq_on_body_gap(void *ud, uint64_t len)
{
	struct conn *k = ud;

	k->body_cut = true;
	if (k->reading)
		k->reading->truncated = true;
}

static void rq_on_end(void *ud)
{
	struct conn *k = ud;
	struct tt_request *r = k->reading;
	struct req_info ri;

	k->reading = NULL;
	/* a pipelined request that follows begins in this same record */
	k->rq_first_ts = k->ts;
	if (!r)
		return;
	r->t_start_ns = k->ts;
	r->io_tid = k->tid;
	if (k->body_len) {
		classify__req_info((const char *)k->body, k->body_len, k->body_cut, &ri);
		strlcpy_cut(r->model, sizeof(r->model), ri.model);
		r->stream = ri.stream;
		r->max_tokens = ri.max_tokens;
	}
	buf_release(&k->body, &k->body_len, &k->body_cap);
	pend_push(k, r);
	attributor__key_add(k->c->attr, r, r->request_id);
}

static void rq_on_error(void *ud, const char *why)
{
	struct conn *k = ud;

	k->c->st.parse_errors++;
	request__free(k->reading);
	k->reading = NULL;
}

static const struct http_cb rq_cb = {
	.on_head = rq_on_head,
	.on_body = rq_on_body,
	.on_body_gap = rq_on_body_gap,
	.on_end = rq_on_end,
	.on_error = rq_on_error,
};

/* ------------------------------------------------------------------ response side */

static void add_sender(uint32_t *v, uint32_t *n, uint32_t tid)
{
	for (uint32_t i = 0; i < *n; i++)
		if (v[i] == tid)
			return;
	if (*n < 4)
		v[(*n)++] = tid;
}

static const char *comm_of_cb(void *ud, uint32_t pid)
{
	return comm_of(ud, pid);
}

/* The gap [t0, t1] before the chunk being added is a stall: say where the time went. */
static void explain_stall(struct conn *k, struct tt_request *r, uint64_t t0, uint64_t t1)
{
	struct correlator *c = k->c;
	struct stall_net net = {
		.retrans = k->retrans,
		.nretrans = MIN(k->nretrans, ARRAY_SIZE(k->retrans)),
		.zw_from = k->zw_from,
		.zw_to = k->zw_to,
	};

	struct stall_env env = {
		.sb = c->sched,
		.stack_str = c->o.stack_str,
		.stack_ud = c->o.stack_ud,
		.ps = c->py,
		.py_name = c->o.py_name,
		.py_ud = c->o.py_ud,
		.comm_of = comm_of_cb,
		.comm_ud = c,
	};

	if (stall__explain(r, &env, k->tid, t0, t1, &net))
		return;
	c->st.stalls++;
	/* scheduler records of the gap may be among those dropped: its parts are not sure */
	if (correlator__dropped_within(c, t0, t1))
		r->stalls[r->nstalls - 1].lost = true;
}

static void account(struct conn *k, const struct chunk_info *ci)
{
	struct tt_request *r = k->resp;
	uint64_t gap;

	if (!r)
		return;
	switch (ci->kind) {
	case CHUNK_CONTENT:
		gap = r->chunks ? k->ts - r->tok_ns[r->chunks - 1] : 0;
		/* under the floor a gap is never a stall: no need for the median (a sort) */
		/* a client's gaps are its upstream's: nothing local to explain */
		if (k->c->o.stalls && k->role == ROLE_SERVER &&
		    gap > (k->c->o.stall_ns ?: STALL_FLOOR_NS) &&
		    gap > stall__threshold(r, k->c->o.stall_ns))
			explain_stall(k, r, r->tok_ns[r->chunks - 1], k->ts);
		request__add_chunk(r, k->ts);
		r->tid = k->tid;
		k->c->st.chunks++;
		break;
	case CHUNK_TOOL:
		r->tool_frames++;
		break;
	case CHUNK_UNKNOWN:
		r->unknown_events++;
		if (ci->cut)
			r->truncated = true;
		break;
	case CHUNK_ERROR:
		/* the status said 200 long before: the stream itself failed */
		r->stream_error = true;
		r->empty_events++;
		break;
	case CHUNK_DONE:
	case CHUNK_EMPTY:
		r->empty_events++;
		break;
	}
	if (ci->final)
		r->saw_final = true;
	if (ci->model_tokens >= 0)
		r->model_tokens = ci->model_tokens;	/* the last count wins */
	if (!r->model[0] && ci->model[0])
		memcpy(r->model, ci->model, sizeof(r->model));
	if (!r->resp_id[0] && ci->id[0]) {
		memcpy(r->resp_id, ci->id, sizeof(r->resp_id));
		attributor__key_add(k->c->attr, r, r->resp_id);
	}
}

static void on_sse_event(void *ud, const struct sse_event *ev)
{
	struct chunk_info ci;

	classify__chunk(ev->data, ev->data_len, ev->truncated, ev->event, &ci);
	account(ud, &ci);
}

static void on_sse_comment(void *ud)
{
	struct conn *k = ud;

	if (k->resp)
		k->resp->comments++;
}

static void on_nd_line(void *ud, const struct ndjson_line *l)
{
	struct chunk_info ci;

	classify__chunk(l->text, l->len, l->truncated, NULL, &ci);
	account(ud, &ci);
}

static const struct sse_cb sse_cb = { .on_event = on_sse_event, .on_comment = on_sse_comment };
static const struct ndjson_cb nd_cb = { .on_line = on_nd_line };

static bool media_is(const char *ctype, const char *media)
{
	size_t n = strlen(media);

	while (*ctype == ' ')
		ctype++;
	return !strncasecmp(ctype, media, n) &&
	       (ctype[n] == '\0' || ctype[n] == ';' || ctype[n] == ' ');
}

/* The body format from Content-Type; sniffed from the first bytes where it says nothing. */
static enum body_format format_of(const struct http_head *h, bool *sniff)
{
	const char *ct = h->content_type;
	static const char *const ndjson[] = {
		"application/x-ndjson", "application/ndjson", "application/jsonl",
		"application/x-jsonlines", "application/jsonlines", "application/json-seq",
	};

	*sniff = false;
	if (h->framing == HTTP_BODY_NONE)
		return FMT_NONE;
	if (media_is(ct, "text/event-stream"))
		return FMT_SSE;
	for (size_t i = 0; i < ARRAY_SIZE(ndjson); i++)
		if (media_is(ct, ndjson[i]))
			return FMT_NDJSON;
	/* some servers stream SSE as text/plain or without a type at all */
	*sniff = !ct[0] || media_is(ct, "text/plain") || media_is(ct, "application/octet-stream");
	if (media_is(ct, "application/json") || strstr(ct, "+json"))
		return FMT_JSON;
	return FMT_RAW;
}

static bool looks_like_sse(const uint8_t *d, size_t n)
{
	static const char *const fields[] = { "data:", "event:", "id:", "retry:", ":" };

	for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
		size_t l = strlen(fields[i]);

		if (n >= l && !memcmp(d, fields[i], l))
			return true;
	}
	return false;
}

static bool answers_head(void *ud)
{
	struct conn *k = ud;

	return k->pend_head && !strcmp(k->pend_head->method, "HEAD");
}

static void rs_on_head(void *ud, const struct http_head *h)
{
	struct conn *k = ud;
	struct tt_request *r;
	bool by_id = false;

	k->resp_active = true;
	k->resp_informational = h->status < 200;
	if (k->resp_informational)
		return;
	if (k->resp)	/* a previous response never ended: cannot happen with a sane parser */
		abort_response(k, ABORT_DESYNC);
	k->fmt = format_of(h, &k->sniff);
	buf_release(&k->jbody, &k->jbody_len, &k->jbody_cap);
	k->jbody_cut = false;
	k->body_bytes = 0;
	if (k->sse)
		sse_parser__reset(k->sse);
	if (k->nd)
		ndjson_parser__reset(k->nd);

	/*
	 * After a loss, a response that names its request (X-Request-Id echoed) answers that
	 * one: those read before it lost their responses to the drop, and go now, as lost.
	 */
	if (k->pairing_suspect && h->request_id[0]) {
		struct tt_request *q;

		for (q = k->pend_head; q && strcmp(q->request_id, h->request_id); q = q->next)
			;
		by_id = q != NULL;
		while (q && k->pend_head != q) {
			r = pend_pop(k);
			r->lost = true;
			r->abort = ABORT_LOST;
			finish(k, r);
		}
	}
	r = pend_pop(k);
	if (!r) {
		k->c->st.unmatched_responses++;
		return;
	}
	if (k->pairing_suspect && !by_id)
		r->lost = true;	/* it may answer another request than this */
	if (!k->pend_head)
		k->pairing_suspect = false;
	k->resp = r;
	r->status = h->status;
	r->t_head_ns = k->ts;
	r->t_end_ns = k->ts;
	r->tid = k->tid;
	r->format = k->fmt;
	if (!r->request_id[0])
		memcpy(r->request_id, h->request_id, sizeof(r->request_id));
}

static void body_json(struct conn *k, const uint8_t *data, size_t len)
{
	buf_append(&k->jbody, &k->jbody_len, &k->jbody_cap, k->c->o.req_body_max, data, len,
		   &k->jbody_cut);
}

static void rs_on_body(void *ud, const uint8_t *data, size_t len)
{
	struct conn *k = ud;
	struct tt_request *r = k->resp;

	if (k->resp_informational || !len)
		return;
	if (k->sniff && !k->body_bytes && looks_like_sse(data, len))
		k->fmt = FMT_SSE;
	k->sniff = false;
	k->body_bytes += len;
	if (r) {
		r->t_end_ns = k->ts;
		r->format = k->fmt;
	}
	switch (k->fmt) {
	case FMT_SSE:
		if (!k->sse && !(k->sse = sse_parser__new(&sse_cb, k)))
			break;
		sse_parser__feed(k->sse, data, len);
		break;
	case FMT_NDJSON:
		if (!k->nd && !(k->nd = ndjson_parser__new(&nd_cb, k)))
			break;
		ndjson_parser__feed(k->nd, data, len);
		break;
	case FMT_JSON:
		body_json(k, data, len);
		break;
	default:
		break;
	}
}

static void rs_on_body_gap(void *ud, uint64_t len)
{
	struct conn *k = ud;

	if (k->resp_informational)
		return;
	k->sniff = false;
	k->body_bytes += len;
	if (k->resp) {
		k->resp->truncated = true;
		k->resp->t_end_ns = k->ts;
	}
	if (k->fmt == FMT_SSE && k->sse)
		sse_parser__gap(k->sse, len);
	else if (k->fmt == FMT_NDJSON && k->nd)
		ndjson_parser__gap(k->nd, len);
	else
		k->jbody_cut = true;
}

static void rs_on_end(void *ud)
{
	struct conn *k = ud;
	struct tt_request *r = k->resp;
	struct chunk_info ci;

	k->resp_active = false;
	if (k->resp_informational)
		return;
	if (k->fmt == FMT_SSE && k->sse)
		sse_parser__end(k->sse);
	else if (k->fmt == FMT_NDJSON && k->nd)
		ndjson_parser__end(k->nd);
	if (r && (k->fmt == FMT_JSON || k->fmt == FMT_RAW)) {
		r->stream = 0;
		/*
		 * A non-streaming answer is one unit, there when its last byte is. An error's
		 * body is no answer: nothing came first, no token.
		 */
		if (k->body_bytes && !request__is_error(r) && k->fmt == FMT_JSON) {
			classify__chunk((const char *)k->jbody, k->jbody_len, k->jbody_cut, NULL, &ci);
			ci.kind = CHUNK_CONTENT;
			account(k, &ci);
		} else if (k->body_bytes && !request__is_error(r)) {
			request__add_chunk(r, k->ts);
			k->c->st.chunks++;
		}
	} else if (r && (k->fmt == FMT_SSE || k->fmt == FMT_NDJSON)) {
		r->stream = 1;
	}
	buf_release(&k->jbody, &k->jbody_len, &k->jbody_cap);
	k->resp = NULL;
	if (!r)
		return;
	/* an end learned late, from the next message after a gap, is not the end's time */
	if (!http_parser__ended_in_gap(k->rs))
		r->t_end_ns = k->ts;
	r->complete = true;
	finish(k, r);
}

static void rs_on_error(void *ud, const char *why)
{
	struct conn *k = ud;

	/* a connection closing inside a response is an abort, not a parse error */
	if (k->closing) {
		abort_response(k, k->closing);
		return;
	}
	k->c->st.parse_errors++;
	abort_response(k, ABORT_DESYNC);
}

static const struct http_cb rs_cb = {
	.on_head = rs_on_head,
	.on_body = rs_on_body,
	.on_body_gap = rs_on_body_gap,
	.on_end = rs_on_end,
	.on_error = rs_on_error,
	.answers_head = answers_head,
};

/* ------------------------------------------------------------------ records */

static bool is_request_line(const uint8_t *d, size_t n)
{
	size_t i = 0;

	while (i < n && i < HTTP_METHOD_MAX && d[i] >= 'A' && d[i] <= 'Z')
		i++;
	return i > 0 && i < n && d[i] == ' ';
}

static bool is_status_line(const uint8_t *d, size_t n)
{
	return n >= 7 && !memcmp(d, "HTTP/1.", 7);
}

/* TLS record header: handshake or application data, version 3.x */
static bool is_tls(const uint8_t *d, size_t n)
{
	return n >= 3 && (d[0] == 0x16 || d[0] == 0x17) && d[1] == 0x03 && d[2] <= 0x04;
}

static void ignore(struct conn *k)
{
	k->role = ROLE_IGNORED;
	k->c->st.conns_ignored++;
	if (k->c->o.ignore_conn)
		k->c->o.ignore_conn(k->c->o.ignore_ud, k->id);
}

/*
 * HTTP/1.x is text from its first byte, and so is any part of a body this tool parses
 * (chunk sizes, SSE, NDJSON, JSON). A first byte that is a control or not ASCII is another
 * protocol (ZMQ, gRPC, msgpack, a database's): no need to wait for more of it.
 */
static bool is_binary(const uint8_t *d, size_t n)
{
	return n && (d[0] >= 0x80 || (d[0] < 0x20 && d[0] != '\t' && d[0] != '\r' &&
				      d[0] != '\n'));
}

/*
 * Who is the server on this connection? The first bytes say: a request line read by the
 * target makes it the server; a request line it writes makes it a client (of another
 * server: not what we trace). A connection joined mid-exchange shows neither at first; it
 * keeps being looked at until a message starts, for a bounded number of records.
 */
static void classify_role(struct conn *k, const struct tt_data_ev *e)
{
	const uint8_t *d = e->data;
	size_t n = e->cap;

	/*
	 * Unix sockets carry the servers' own plumbing (ZMQ, gRPC) far more than HTTP: binary
	 * there is never worth waiting for; over TCP a client may still follow garbage with a
	 * request, so only the bounded wait gives up on it.
	 */
	if (is_tls(d, n) || (k->unix_sk && is_binary(d, n))) {
		ignore(k);
		return;
	}
	if (e->dir == TT_DIR_RECV && is_request_line(d, n))
		k->role = ROLE_SERVER;
	else if (e->dir == TT_DIR_SEND && is_status_line(d, n))
		k->role = ROLE_SERVER;
	else if (e->dir == TT_DIR_SEND && is_request_line(d, n))
		k->role = ROLE_CLIENT;	/* the target calls another server: an outbound stream */
	else if (e->dir == TT_DIR_RECV && is_status_line(d, n))
		k->role = ROLE_CLIENT;
	else if (++k->unknown_feeds > UNKNOWN_FEEDS_MAX)
		ignore(k);
}

/* Start both directions over: they resync at the next message start. */
static void parsers_restart(struct conn *k)
{
	http_parser__free(k->rq);
	http_parser__free(k->rs);
	k->rq = http_parser__new(HTTP_REQUEST, &rq_cb, k);
	k->rs = http_parser__new(HTTP_RESPONSE, &rs_cb, k);
	request__free(k->reading);
	k->reading = NULL;
	k->resp_active = false;
}

/*
 * Records of this connection were dropped: whatever was in flight can no longer be trusted.
 * may_hide: the kernel says the lost records went both ways or held a state change
 * (TT_DF_LOST_XDIR, a state record's count), so they crossed between a request and its
 * answer.
 */
static void conn_lost(struct conn *k, uint32_t n, bool may_hide)
{
	struct tt_request *r;

	k->c->st.lost_records += n;
	/*
	 * Whole requests may be among the lost records when they crossed between a request
	 * and its answer, or when nothing was in flight here (a request whose first record was
	 * dropped is never seen: the kernel sends nothing more of a run that lost one). Such
	 * requests have nothing to flag; the loss is counted instead.
	 */
	if (may_hide || (!k->pend_head && !k->reading && !k->resp))
		k->c->st.lost_between++;
	for (r = k->pend_head; r; r = r->next)
		r->lost = true;
	if (k->pend_head)
		k->pairing_suspect = true;
	if (k->reading)
		k->reading->lost = true;
	if (k->resp) {
		k->resp->lost = true;
		k->resp->lost_records += n;
		abort_response(k, ABORT_LOST);
	}
	parsers_restart(k);
}

/* What k has in flight ends now, reported as lost (never as a client's abort). */
static void inflight_lost(struct conn *k)
{
	struct tt_request *r;

	if (k->resp) {
		k->resp->lost = true;
		abort_response(k, ABORT_LOST);
	}
	while ((r = pend_pop(k))) {
		r->lost = true;
		r->abort = ABORT_LOST;
		finish(k, r);
	}
}

/*
 * The kernel left whole exchanges of k out under --budget, and this record starts the next
 * one; both parsers start over here. Nothing should be in flight: the kernel decides at a
 * request's first bytes, after the last answer. A pipelined request (read before the last
 * answer ended) can still leave one, and so can a request whose body came after the server's
 * "100 Continue" (a new run the way requests go): the rest went with the exchange left out,
 * and every request read before this one has had its answer, or lost it, by now. They go as
 * lost, never paired with a later answer.
 */
static void conn_skipped(struct conn *k)
{
	if (k->reading) {
		pend_push(k, k->reading);
		k->reading = NULL;
	}
	inflight_lost(k);
	k->pairing_suspect = false;
	parsers_restart(k);
}

/*
 * When a token's bytes could first be read: the moment the send handed them to a reader on
 * this machine (t_ready) when the kernel saw that, else when the socket layer was done.
 */
static uint64_t data_time(const struct tt_data_ev *e)
{
	return e->t_ready && e->t_ready <= e->h.ts ? e->t_ready : e->h.ts;
}

/* The direction requests go: read by a server, written by a client. */
static int req_dir(const struct conn *k)
{
	return k->role == ROLE_CLIENT ? TT_DIR_SEND : TT_DIR_RECV;
}

/* The first record of a send or receive: what it says about the connection. */
static bool on_data_first(struct correlator *c, struct conn *k, const struct tt_data_ev *e)
{
	/* the thread's counters and last wake, at a send or a receive of it */
	if (c->sched && (e->flags & TT_DF_CUM)) {
		sched_book__counters(c->sched, e->h.tid, e->h.tgid, e->h.ts, e->cum);
		sched_book__woken(c->sched, e->h.tid, e->h.tgid, e->t_woken, e->waker_tid,
				  e->waker_tgid);
	}
	if (e->flags & TT_DF_LOST)
		conn_lost(k, e->lost, e->flags & TT_DF_LOST_XDIR);
	if (e->skipped)
		conn_skipped(k);
	if (e->ret < 0) {
		/* the client is gone: a reset or a write to a closed peer */
		if (e->dir == TT_DIR_SEND && (e->ret == -EPIPE || e->ret == -ECONNRESET))
			abort_response(k, k->role == ROLE_CLIENT ? ABORT_SERVER : ABORT_CLIENT);
		return false;
	}
	if (k->role == ROLE_UNKNOWN) {
		classify_role(k, e);
		if (k->role != ROLE_SERVER && k->role != ROLE_CLIENT)
			return false;
	}
	/* a send went through: the peer's window, zero when the sender blocked, opened again */
	if (e->dir == TT_DIR_SEND && e->ret > 0 && k->zw_from && !k->zw_to)
		k->zw_to = k->ts;
	if (e->dir == TT_DIR_SEND && c->sched) {
		/* the sender was on CPU then; and it serves this response */
		sched_book__oncpu(c->sched, e->h.tid, e->h.ts);
		if (k->resp)
			add_sender(k->resp->senders, &k->resp->nsenders, e->h.tid);
	}
	if (e->dir == req_dir(k) && k->rq && !http_parser__in_message(k->rq)) {
		k->rq_first_ts = k->ts;
		/* how long a request waited in the socket: the server's side only */
		k->rq_arrival = k->role == ROLE_SERVER ? e->arrival : 0;
	}
	return true;
}

/*
 * The first TLS plaintext of a connection: it was ignored while only its ciphertext showed
 * (a handshake); from now on its plaintext is parsed, its ciphertext is not.
 */
static void tls_begins(struct correlator *c, struct conn *k, const struct tt_data_ev *e)
{
	k->tls = true;
	c->st.conns_tls++;
	if (e->conn_id & TT_CONN_SSL)
		snprintf(k->addr, sizeof(k->addr), "tls:memory-bio");
	if (k->role != ROLE_IGNORED)
		return;
	c->st.conns_ignored--;
	k->role = ROLE_UNKNOWN;
	k->unknown_feeds = 0;
	k->seg_next = 0;
	http_parser__free(k->rq);
	http_parser__free(k->rs);
	k->rq = http_parser__new(HTTP_REQUEST, &rq_cb, k);
	k->rs = http_parser__new(HTTP_RESPONSE, &rs_cb, k);
}

static void on_data(struct correlator *c, const struct tt_data_ev *e)
{
	struct conn *k = conn_find(c, e->conn_id);
	uint64_t moved, end = (uint64_t)e->off + e->cap;
	bool last = !(e->flags & TT_DF_MORE);
	struct http_parser *p;

	if (!e->off)
		c->st.data_records++;	/* what --budget paid for, whatever comes of it */
	/* a failing read or write on a connection already gone starts nothing */
	if (!k && (e->ret <= 0 || e->off || !(k = conn_new(c, e->conn_id, e->h.tgid))))
		return;
	conn_touch(c, k, e->h.ts);
	if (e->flags & TT_DF_TLS) {
		if (!k->tls)
			tls_begins(c, k, e);
	} else if (k->tls) {
		return;	/* ciphertext of a connection whose plaintext is known */
	}
	if (k->role == ROLE_IGNORED)
		return;
	k->ts = data_time(e);
	k->tid = e->h.tid;
	if (e->off != k->seg_next && !(e->flags & TT_DF_LOST)) {
		/* a segment of a send is missing: what follows cannot be parsed in sync */
		conn_lost(k, 1, false);
		k->seg_next = 0;
		if (e->off)
			return;
	}
	if (!e->off && !on_data_first(c, k, e))
		return;
	k->seg_next = last ? 0 : end;
	if (k->role != ROLE_SERVER && k->role != ROLE_CLIENT)
		return;
	p = e->dir == req_dir(k) ? k->rq : k->rs;
	if (!p)
		return;
	http_parser__feed(p, e->data, e->cap);
	moved = (uint64_t)e->ret;
	if (last && moved > end) {
		c->st.truncated_sends++;
		http_parser__gap(p, moved - end);
	}
}

static void fmt_addr(char *buf, size_t sz, const struct tt_conn_ev *e)
{
	char l[INET6_ADDRSTRLEN], r[INET6_ADDRSTRLEN], path[TT_UNIX_PATH + 1];
	int af = e->family == 10 ? AF_INET6 : AF_INET;

	if (e->flags & TT_CF_UNIX) {
		/* the socket's path (the listener's, for an accepted one) and the peer process */
		memcpy(path, e->path, TT_UNIX_PATH);
		path[TT_UNIX_PATH] = '\0';
		if (e->peer_pid)
			snprintf(buf, sz, "unix:%s-pid:%u", path[0] ? path : "?", e->peer_pid);
		else
			snprintf(buf, sz, "unix:%s", path[0] ? path : "?");
		return;
	}
	inet_ntop(af, e->laddr, l, sizeof(l));
	inet_ntop(af, e->raddr, r, sizeof(r));
	if (af == AF_INET6)
		snprintf(buf, sz, "[%s]:%u-[%s]:%u", l, e->lport, r, e->rport);
	else
		snprintf(buf, sz, "%s:%u-%s:%u", l, e->lport, r, e->rport);
}

static void on_conn(struct correlator *c, const struct tt_conn_ev *e)
{
	struct conn *k = conn_find(c, e->conn_id);

	if (!k && !(k = conn_new(c, e->conn_id, e->h.tgid)))
		return;
	conn_touch(c, k, e->h.ts);
	k->sk = e->sk;
	k->unix_sk = e->flags & TT_CF_UNIX;
	fmt_addr(k->addr, sizeof(k->addr), e);
	if (!k->comm[0])
		strncpy_cut(k->comm, sizeof(k->comm), e->comm, strnlen(e->comm, TT_COMM_LEN));
	if (e->flags & TT_CF_ACCEPTED)
		k->t_accept_ns = e->h.ts;
	k->t_established = e->t_established;
}

static void on_state(struct correlator *c, const struct tt_state_ev *e)
{
	struct conn *k = conn_find(c, e->conn_id);
	struct tt_request *r;

	if (!k)
		return;
	conn_touch(c, k, e->h.ts);
	k->ts = e->h.ts;
	/* records dropped just before the close: what was in flight is not an abort to trust */
	if (e->lost)
		conn_lost(k, e->lost, true);
	switch (e->newstate) {
	case TCP_CLOSE_WAIT:
		k->peer_closed = true;
		return;
	case TCP_FIN_WAIT1:
		k->we_closed = true;
		break;
	case TCP_CLOSE:
		/*
		 * Straight from established to closed, neither side having sent a FIN: a
		 * reset, and resets come from clients going away far more than from servers
		 */
		if (!k->we_closed)
			k->peer_closed = true;
		break;
	default:
		return;
	}
	/*
	 * Ends a close-delimited body; anything else in flight is cut short. On a client's
	 * connection the peer is the server.
	 */
	k->closing = (k->peer_closed ^ (k->role == ROLE_CLIENT)) ? ABORT_CLIENT : ABORT_SERVER;
	if ((k->role == ROLE_SERVER || k->role == ROLE_CLIENT) && k->rs)
		http_parser__eof(k->rs);
	if (k->resp || k->resp_active)
		abort_response(k, k->closing);
	k->closing = ABORT_NONE;
	if (e->newstate != TCP_CLOSE)
		return;
	/* read but never answered: the client gave up waiting, or the server dropped them */
	while ((r = pend_pop(k))) {
		r->abort = (k->peer_closed ^ (k->role == ROLE_CLIENT)) ? ABORT_CLIENT : ABORT_SERVER;
		/* its response may have gone to another request, after a loss */
		if (k->pairing_suspect)
			r->lost = true;
		c->st.unanswered++;
		finish(k, r);
	}
	/* closed before its bytes said what it was (garbage, a scan): left unparsed too */
	if (k->role == ROLE_UNKNOWN && k->unknown_feeds)
		c->st.conns_ignored++;
	conn_unlink(c, k);
	conn_free(k);
}

static void on_tcp(struct correlator *c, const struct tt_tcp_ev *e)
{
	struct conn *k = conn_find(c, e->conn_id);

	if (!k)
		return;
	switch (e->kind) {
	case TT_TCP_RETRANSMIT:
		k->retrans[k->nretrans++ % ARRAY_SIZE(k->retrans)] = e->h.ts;
		break;
	case TT_TCP_ZERO_WINDOW:
		k->zw_from = e->h.ts;
		k->zw_to = 0;
		break;
	case TT_TCP_WINDOW_OPEN:
		k->zw_to = e->h.ts;
		break;
	}
}

/* every request in flight, for unkeyed markers */
static void foreach_request(void *src, attrib_each_fn fn, void *ud)
{
	struct correlator *c = src;

	for (size_t i = 0; i < c->nbuckets; i++) {
		for (struct conn *k = c->tab[i]; k; k = k->hnext) {
			if (k->resp)
				fn(ud, k->resp);
			for (struct tt_request *r = k->pend_head; r; r = r->next)
				fn(ud, r);
		}
	}
}

void correlator__set_markers(struct correlator *c, const uint8_t *kinds, int n)
{
	attributor__set_markers(c->attr, kinds, n);
}

/*
 * The kernel's running count of dropped records moved since the last record: something
 * (a connection's close, a thread's switch) is missing between the two.
 */
static void note_drops(struct correlator *c, const struct tt_hdr *h)
{
	uint32_t d;

	if (h->type == TT_EV_STACK || h->type == TT_EV_PYNAME)	/* made by userspace */
		return;
	if (!c->drops_init) {
		c->drops_init = true;
		c->drops_seen = h->drops;
	}
	d = h->drops - c->drops_seen;
	if (d && d < UINT32_MAX / 2) {
		c->drops_seen = h->drops;
		c->st.drops_seen += d;
		c->drop_win[c->ndrop_win++ % DROP_WINDOWS].from = c->last_rec_ts;
		c->drop_win[(c->ndrop_win - 1) % DROP_WINDOWS].to = h->ts;
		c->last_drop_ts = h->ts;
	}
	if (h->ts > c->last_rec_ts)
		c->last_rec_ts = h->ts;
}

bool correlator__dropped_within(const struct correlator *c, uint64_t t0, uint64_t t1)
{
	for (uint32_t i = 0; i < MIN(c->ndrop_win, DROP_WINDOWS); i++)
		if (c->drop_win[i].from <= t1 && c->drop_win[i].to >= t0)
			return true;
	return false;
}

int correlator__record(struct correlator *c, const void *data, size_t size)
{
	const struct tt_hdr *h = data;

	c->st.records++;
	if (size < sizeof(*h) || h->size > size || h->size < sizeof(*h))
		goto bad;
	note_drops(c, h);
	switch (h->type) {
	case TT_EV_DATA: {
		const struct tt_data_ev *e = data;

		if (size < sizeof(*e) || sizeof(*e) + e->cap > size)
			goto bad;
		on_data(c, e);
		return 0;
	}
	case TT_EV_CONN:
		if (size < sizeof(struct tt_conn_ev))
			goto bad;
		on_conn(c, data);
		return 0;
	case TT_EV_STATE:
		if (size < sizeof(struct tt_state_ev))
			goto bad;
		on_state(c, data);
		return 0;
	case TT_EV_MARKER:
		if (size < sizeof(struct tt_marker_ev))
			goto bad;
		attributor__hit(c->attr, data);
		return 0;
	case TT_EV_SCHED:
		if (size < sizeof(struct tt_sched_ev))
			goto bad;
		c->st.sched_records++;
		if (c->sched)
			sched_book__record(c->sched, data);
		return 0;
	case TT_EV_TCP:
		if (size < sizeof(struct tt_tcp_ev))
			goto bad;
		on_tcp(c, data);
		return 0;
	case TT_EV_PYSTACK:
		if (size < TT_PYSTACK_HDR_SIZE)
			goto bad;
		c->st.py_records++;
		if (c->py)
			pysamples__record(c->py, data, size);
		return 0;
	case TT_EV_PROC:
		if (size >= sizeof(struct tt_proc_ev) && c->sched &&
		    ((const struct tt_proc_ev *)data)->kind == TT_PROC_THREAD_EXIT)
			sched_book__exited(c->sched, ((const struct tt_hdr *)data)->tid,
					   ((const struct tt_hdr *)data)->ts);
		return 0;	/* else for the session: the traced set */
	case TT_EV_STACK:
	case TT_EV_PYNAME:
		return 0;	/* for the session: a recording's texts */
	default:
		goto bad;
	}
bad:
	c->st.bad_records++;
	return -EINVAL;
}

/* ------------------------------------------------------------------ lifetime */

struct correlator *correlator__new(const struct corr_opts *opts)
{
	struct correlator *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->o = *opts;
	if (!c->o.req_body_max)
		c->o.req_body_max = 64 * 1024;
	if (!c->o.max_conns)
		c->o.max_conns = CORR_MAX_CONNS;
	if (!c->o.idle_ns)
		c->o.idle_ns = CORR_IDLE_NS;
	c->nbuckets = 1024;
	c->tab = calloc(c->nbuckets, sizeof(*c->tab));
	c->attr = attributor__new(foreach_request, c);
	c->proxy = proxy__new(256);
	/* a minute of scheduler history: the longest stall it can fully explain */
	if (c->o.stalls)
		c->sched = sched_book__new(60000000000ull);
	if (c->o.stalls && c->o.py_name)
		c->py = pysamples__new(0, 0, 0);
	if (!c->tab || !c->attr || !c->proxy || (c->o.stalls && !c->sched) ||
	    (c->o.stalls && c->o.py_name && !c->py)) {
		free(c->tab);
		pysamples__free(c->py);
		attributor__free(c->attr);
		proxy__free(c->proxy);
		sched_book__free(c->sched);
		free(c);
		return NULL;
	}
	return c;
}

void correlator__free(struct correlator *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct conn *k = c->tab[i], *next;

		for (; k; k = next) {
			next = k->hnext;
			conn_free(k);
		}
	}
	free(c->tab);
	sched_book__free(c->sched);
	pysamples__free(c->py);
	attributor__free(c->attr);
	proxy__free(c->proxy);
	free(c);
}

void correlator__set_comm(struct correlator *c, uint32_t pid, const char *comm)
{
	size_t i;

	for (i = 0; i < c->ncomms; i++)
		if (c->comms[i].pid == pid)
			break;
	if (i == ARRAY_SIZE(c->comms))
		i = c->comms_next++ % ARRAY_SIZE(c->comms);
	else if (i == c->ncomms)
		c->ncomms++;
	c->comms[i].pid = pid;
	strlcpy_cut(c->comms[i].comm, sizeof(c->comms[i].comm), comm);
}

/* k goes with whatever it had in flight: reported as lost, never as a client's abort. */
static void conn_evict(struct correlator *c, struct conn *k)
{
	inflight_lost(k);
	conn_unlink(c, k);
	conn_free(k);
}

static bool conn_busy(const struct conn *k)
{
	return k->resp || k->pend_head || k->reading;
}

void correlator__expire(struct correlator *c, uint64_t now_ns)
{
	struct conn *k, *prev;

	/* over the bound: the least recently active go first; a loss if they had work */
	while (c->nconns > c->o.max_conns && (k = c->lru_tail)) {
		if (conn_busy(k))
			c->st.conns_evicted++;
		conn_evict(c, k);
	}
	/*
	 * Its close may be among records the kernel dropped: a connection with work in flight,
	 * silent since before a drop and for idle_ns, is not coming back.
	 */
	for (k = c->lru_tail; k && k->last_ts + c->o.idle_ns < now_ns; k = prev) {
		prev = k->lru_prev;
		if (conn_busy(k) && k->last_ts < c->last_drop_ts) {
			c->st.conns_orphaned++;
			conn_evict(c, k);
		} else if (!conn_busy(k) && (k->id & TT_CONN_SSL)) {
			/* a memory BIO's connection has no socket, so no close to see: idle, gone */
			conn_evict(c, k);
		}
	}
	/* threads not heard of for the history kept: gone (a worker that exited), or idle */
	if (c->sched)
		c->st.threads_forgotten += sched_book__expire(c->sched, now_ns);
}

uint64_t correlator__in_flight(const struct correlator *c)
{
	uint64_t n = 0;

	for (size_t i = 0; i < c->nbuckets; i++) {
		for (struct conn *k = c->tab[i]; k; k = k->hnext) {
			for (struct tt_request *r = k->pend_head; r; r = r->next)
				n++;
			if (k->resp)
				n++;
		}
	}
	return n;
}

void correlator__foreach_inflight(const struct correlator *c,
				  void (*fn)(void *ud, const struct tt_request *r, bool streaming),
				  void *ud)
{
	for (size_t i = 0; i < c->nbuckets; i++) {
		for (struct conn *k = c->tab[i]; k; k = k->hnext) {
			if (k->resp)
				fn(ud, k->resp, true);
			for (struct tt_request *r = k->pend_head; r; r = r->next)
				fn(ud, r, false);
		}
	}
}

const struct pysamples *correlator__pysamples(const struct correlator *c)
{
	return c->py;
}

const struct corr_stats *correlator__stats(struct correlator *c)
{
	c->st.markers = *attributor__stats(c->attr);
	return &c->st;
}

uint64_t correlator__arm_at(struct correlator *c, uint64_t now_ns)
{
	uint64_t best = UINT64_MAX, floor = (c->o.stall_ns ?: STALL_FLOOR_NS) / STALL_ARM_DIV;

	if (!c->o.stalls)
		return best;
	for (size_t i = 0; i < c->nbuckets; i++) {
		for (struct conn *k = c->tab[i]; k; k = k->hnext) {
			struct tt_request *r = k->resp;
			uint64_t last, at;

			if (!r || k->role != ROLE_SERVER || !r->chunks)
				continue;
			last = r->tok_ns[r->chunks - 1];
			/*
			 * Silent since before the kernel last dropped records: its chunks may be
			 * among them, and the rest of a run that lost one is held back (tt_conn.shed)
			 * until its next request. No sign of a stall: under a ring that overflows
			 * it would keep the hooks on, dearest when the server is busiest.
			 */
			if (last <= c->last_drop_ts)
				continue;
			at = last + floor;
			/* the threshold (a median) only for a gap over the floor's share */
			if (at <= now_ns && !c->o.stall_ns) {
				if (k->arm_chunks != r->chunks) {
					k->arm_thr = stall__threshold(r, 0);
					k->arm_chunks = r->chunks;
				}
				at = last + k->arm_thr / STALL_ARM_DIV;
			}
			best = MIN(best, at);
		}
	}
	return best;
}
