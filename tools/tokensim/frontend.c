// SPDX-License-Identifier: MIT
/*
 * Front end: one thread per connection.  The order of operations mirrors an
 * OpenAI-compatible API server: the request is read (t_start is taken right
 * after the read that returned its last byte), the response headers go out
 * in their own send, the request is handed to the engine, and each event the
 * engine produces is formatted and sent as it arrives.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "frontend.h"
#include "http.h"
#include "truth.h"
#include "tx.h"
#include "util.h"
#include "wire.h"

/* Room for the largest head and chunked body we accept. */
#define RX_MAX (HTTP_MAX_HEAD + 2 * (size_t)HTTP_MAX_BODY)
/* How long a closing connection drains what the client still sends. */
#define LINGER_NS (1 * NSEC_PER_SEC)
/* Events taken from the engine per wake-up. */
#define EV_BATCH 64

static atomic_uint_fast64_t req_counter; /* every request, 1-based: req_num */
static atomic_uint_fast64_t gen_counter; /* generation requests, for --error-every */

struct fe {
	struct conn *c;
	char *buf; /* received, not yet consumed bytes */
	size_t len, cap;
	uint64_t t_read; /* just after the last read() that returned bytes */
	struct tx tx;	 /* the response's sends */
	struct tx hb;	 /* heartbeats: they must not flush events waiting in tx */
};

/* One response in the making. */
struct resp {
	struct fe *fe;
	const struct http_req *hr;
	struct truth t;
	struct gen g;
	char rid[TS_RID_MAX + 1];
	struct ts_req *r;
	uint64_t *t_prod;  /* per content event, as the engine produced them */
	uint64_t *t_token; /* per content event, just before the send carrying it */
	uint64_t *t_token_end; /* per content event, right after that send returned */
	uint64_t last_send;
	bool close; /* close the connection after this response */
};

static ssize_t read_more(struct fe *fe)
{
	ssize_t n;

	if (fe->len == fe->cap) {
		if (fe->cap >= RX_MAX)
			return -EMSGSIZE;
		fe->cap = fe->cap ? 2 * fe->cap : 16384;
		if (fe->cap > RX_MAX)
			fe->cap = RX_MAX;
		fe->buf = xrealloc(fe->buf, fe->cap);
	}
	do {
		n = read(fe->c->fd, fe->buf + fe->len, fe->cap - fe->len);
	} while (n < 0 && errno == EINTR);
	if (n > 0) {
		fe->t_read = now_ns();
		fe->len += (size_t)n;
	}
	return n < 0 ? -errno : n;
}

static void consume(struct fe *fe, size_t n)
{
	memmove(fe->buf, fe->buf + n, fe->len - n);
	fe->len -= n;
}

/*
 * Reads until buf holds one whole request.  Bytes are read only while the
 * current request is incomplete, so everything after it in buf came with
 * the last read: that read returned the request's last byte, and t_read is
 * its t_start even when the request was pipelined behind another.
 * Returns 1, 0 when the client is gone, or -status for a malformed request.
 */
static int read_request(struct fe *fe, struct http_req *hr)
{
	bool head_done = false, continued = false;
	ssize_t n;
	int st;

	for (;;) {
		if (!head_done) {
			st = http_parse_head(fe->buf, fe->len, hr);
			if (st == 1) {
				head_done = true;
				continue;
			}
		} else {
			st = http_parse_body(fe->buf, fe->len, hr);
			if (st == 1)
				return 1;
			if (!st && hr->expect_continue && !continued) {
				uint64_t t;

				/* curl waits for this before sending a large body. */
				tx_add_raw(&fe->tx, "HTTP/1.1 100 Continue\r\n\r\n", 25);
				if (tx_flush(&fe->tx, &t))
					return 0;
				continued = true;
			}
		}
		if (st < 0)
			return st;
		n = read_more(fe);
		if (n == -EMSGSIZE)
			return -413;
		if (n <= 0)
			return 0; /* EOF or error: nobody left to answer */
	}
}

static void add_headers(struct strbuf *sb, const struct resp *rs, unsigned status,
			const char *ctype, long long clen)
{
	struct utc_time u;

	utc_now(&u);
	sb_addf(sb, "HTTP/1.1 %u %s\r\ndate: %s, %02d %s %04d %02d:%02d:%02d GMT\r\n", status,
		http_reason(status), utc_wday_names[u.wday], u.mday, utc_mon_names[u.mon], u.year,
		u.hour, u.min, u.sec);
	sb_addf(sb, "server: tokensim\r\ncontent-type: %s\r\n", ctype);
	sb_addf(sb, "x-request-id: %s\r\n", rs->rid);
	if (clen >= 0)
		sb_addf(sb, "content-length: %lld\r\n", clen);
	else if (rs->fe->tx.chunked)
		sb_adds(sb, "transfer-encoding: chunked\r\n");
	if (rs->close)
		sb_adds(sb, "connection: close\r\n");
	sb_adds(sb, "\r\n");
}

/* One send; on failure the response is aborted and the engine told to stop. */
static int do_send(struct resp *rs, struct tx *tx, uint64_t *t)
{
	int err = tx_flush(tx, t);

	rs->t.t_end_ns = now_ns();
	if (err) {
		rs->t.aborted = true;
		if (rs->r)
			atomic_store(&rs->r->cancelled, true);
		return err;
	}
	rs->last_send = *t;
	return 0;
}

static void finish_truth(struct resp *rs)
{
	struct stall_rec *stalls = NULL;

	if (rs->r) {
		pthread_mutex_lock(&rs->r->mu);
		rs->t.t_admit_ns = rs->r->t_admit;
		rs->t.t_admit_end_ns = rs->r->t_admit_end;
		rs->t.t_first_end_ns = rs->r->t_first_end;
		rs->t.nstalls = rs->r->nstalls;
		if (rs->t.nstalls) {
			stalls = xmalloc(rs->t.nstalls * sizeof(*stalls));
			memcpy(stalls, rs->r->stalls, rs->t.nstalls * sizeof(*stalls));
		}
		pthread_mutex_unlock(&rs->r->mu);
		rs->t.stalls = stalls;
	}
	truth_write(&rs->t);
	free(stalls);
}

/* A response with a Content-Length body: headers, then the body (uvicorn does two writes). */
static bool respond_fixed(struct resp *rs, unsigned status, const char *ctype, const char *body,
			  size_t n)
{
	struct tx *tx = &rs->fe->tx;
	uint64_t t;

	rs->t.status = status;
	tx->chunked = false;
	add_headers(tx_begin(tx), rs, status, ctype, (long long)n);
	tx_end(tx, true);
	if (!do_send(rs, tx, &rs->t.t_headers_ns)) {
		tx_add_raw(tx, body, n);
		do_send(rs, tx, &t);
	}
	finish_truth(rs);
	return !rs->t.aborted && !rs->close;
}

static bool respond_error(struct resp *rs, unsigned status, const char *msg)
{
	struct strbuf sb = STRBUF_INIT;
	bool keep;

	wire_error_body(status, msg, &sb);
	keep = respond_fixed(rs, status, "application/json", sb.buf, sb.len);
	sb_free(&sb);
	return keep;
}

static void add_events(struct tx *tx, const struct gen *g,
		       bool (*render)(const struct gen *, unsigned, struct strbuf *))
{
	for (unsigned i = 0;; i++) {
		struct strbuf *sb = tx_begin(tx);

		if (!render(g, i, sb))
			break;
		tx_end(tx, false);
	}
}

static void add_tail(struct resp *rs)
{
	add_events(&rs->fe->tx, &rs->g, wire_tail);
	tx_add_terminator(&rs->fe->tx);
}

/*
 * llama.cpp's server (cpp-httplib's chunked content provider) writes every tail event with
 * its own sink.write(), [DONE] last, and then sink.done() writes "0\r\n" and the closing
 * "\r\n" as two more sends. The stream's own end is out once [DONE] is: a client may close
 * right there (the OpenAI SDKs do), so a failed framing send afterwards is no abort.
 */
static int send_tail_llamacpp(struct resp *rs)
{
	struct tx *tx = &rs->fe->tx;
	uint64_t t;

	for (unsigned i = 0;; i++) {
		if (!wire_tail(&rs->g, i, tx_begin(tx)))
			break;
		tx_end(tx, false);
		if (do_send(rs, tx, &t))
			return -1;
	}
	if (!tx->chunked)
		return 0;
	if (cfg.end_gap_ns)
		sleep_until_ns(now_ns() + cfg.end_gap_ns);
	tx_add_raw(tx, "0\r\n", 3);
	if (!tx_flush(tx, &t)) {
		tx_add_raw(tx, "\r\n", 2);
		if (!tx_flush(tx, &t)) {
			rs->t.t_end_ns = now_ns();
			return 0;
		}
	}
	rs->close = true; /* the peer is gone: nothing more on this connection */
	return 0;
}

static int send_ping(struct resp *rs)
{
	struct tx *hb = &rs->fe->hb;
	uint64_t t;

	hb->chunked = rs->fe->tx.chunked;
	wire_ping(tx_begin(hb));
	tx_end(hb, false);
	if (do_send(rs, hb, &t))
		return -1;
	rs->t.heartbeats++;
	return 0;
}

/*
 * Waits for events after the first `consumed` ones and copies up to max of
 * them.  Sends heartbeats while waiting.  Returns how many were copied (0
 * when the engine is done), or -1 when the client went away.
 */
static int wait_events(struct resp *rs, uint32_t consumed, struct ts_event *evs, uint32_t max,
		       bool *done)
{
	struct ts_req *r = rs->r;
	bool hb = cfg.heartbeat_ns && wire_is_sse(rs->g.fmt);
	uint32_t n;

	pthread_mutex_lock(&r->mu);
	while (r->produced == consumed && !r->done) {
		uint64_t due = rs->last_send + cfg.heartbeat_ns;
		struct timespec ts = { (time_t)(due / NSEC_PER_SEC), (long)(due % NSEC_PER_SEC) };

		if (!hb) {
			pthread_cond_wait(&r->cv, &r->mu);
			continue;
		}
		if (pthread_cond_timedwait(&r->cv, &r->mu, &ts) != ETIMEDOUT ||
		    r->produced != consumed || r->done)
			continue;
		pthread_mutex_unlock(&r->mu);
		if (send_ping(rs))
			return -1;
		pthread_mutex_lock(&r->mu);
	}
	n = r->produced - consumed;
	if (n > max)
		n = max;
	memcpy(evs, &r->ev[consumed], n * sizeof(*evs));
	*done = r->done && consumed + n == r->produced;
	if (*done && r->dropped)
		rs->t.aborted = true;
	rs->g.t_admit = r->t_admit;
	pthread_mutex_unlock(&r->mu);
	return (int)n;
}

static void frontend_stall(struct resp *rs, uint32_t idx)
{
	struct stall_rec rec = {
		.before_chunk = idx,
		.kind = cfg.stall_kind,
		.where = STALL_IN_FRONTEND,
		.cause_req_num = rs->r->req_num,
	};

	stall_run(cfg.stall_kind, cfg.stall_ns, &rec.t_start_ns, &rec.t_end_ns, &rec.thread_cpu_ns);
	req_add_stall(rs->r, &rec);
}

static bool respond_stream(struct resp *rs)
{
	struct tx *tx = &rs->fe->tx;
	struct ts_req *r = rs->r;
	struct ts_event evs[EV_BATCH];
	uint32_t consumed = 0, batch = 0, batch_tokens = 0;
	bool done = false;
	uint64_t t;
	int n;

	tx->chunked = cfg.framing == FRAMING_CHUNKED && !rs->hr->http10;
	if (!tx->chunked)
		rs->close = true; /* the body ends when we close */
	add_headers(tx_begin(tx), rs, 200, wire_content_type(&rs->g), -1);
	tx_end(tx, true);
	if (do_send(rs, tx, &rs->t.t_headers_ns))
		goto out;

	/*
	 * The role-only chunk (Anthropic: message_start...) goes out alone now
	 * with --role-separate; otherwise it waits in tx and shares the send of
	 * the first event the engine produces.
	 */
	add_events(tx, &rs->g, wire_preamble);
	if (cfg.role_separate && !tx_empty(tx) && do_send(rs, tx, &t))
		goto out;

	engine_submit(r);
	while (!done) {
		n = wait_events(rs, consumed, evs, EV_BATCH, &done);
		if (n < 0)
			goto out;
		consumed += (uint32_t)n;
		for (int i = 0; i < n; i++) {
			struct ts_event *e = &evs[i];
			bool last;

			if (e->kind == EV_TOOL) {
				wire_tool(&rs->g, e->index, tx_begin(tx));
				tx_end(tx, false);
				if (do_send(rs, tx, &t))
					goto out;
				rs->t.tool_frames++;
				continue;
			}
			rs->t_prod[e->index] = e->t_produced;
			if (cfg.stall_in == STALL_IN_FRONTEND && stall_due(e->index))
				frontend_stall(rs, e->index);
			last = e->index + 1 == r->n_content;
			wire_content(&rs->g, e, last, tx_begin(tx));
			tx_end(tx, false);
			batch++;
			batch_tokens += e->ntok;
			if (batch < cfg.events_per_send && !last)
				continue;
			if (last) {
				rs->g.t_first = rs->t_prod[0];
				rs->g.t_last = e->t_produced;
				if (cfg.tail_with_last)
					add_tail(rs);
			}
			if (do_send(rs, tx, &t))
				goto out;
			for (uint32_t k = 0; k < batch; k++) {
				rs->t_token_end[rs->t.chunks] = tx->t_done;
				rs->t_token[rs->t.chunks++] = t;
			}
			rs->t.tokens += batch_tokens;
			batch = batch_tokens = 0;
			if (last && cfg.end_style == END_LLAMACPP) {
				if (send_tail_llamacpp(rs))
					goto out;
			} else if (last && !cfg.tail_with_last) {
				add_tail(rs);
				if (!tx_empty(tx) && do_send(rs, tx, &t))
					goto out;
			}
		}
	}
out:
	tx_discard(tx); /* events of a dropped request that were never sent */
	rs->t.t_produced_ns = rs->t_prod;
	rs->t.n_produced = rs->t.chunks; /* only what was sent */
	rs->t.t_token_ns = rs->t_token;
	rs->t.t_token_end_ns = rs->t_token_end;
	finish_truth(rs);
	return !rs->t.aborted && !rs->close;
}

static bool respond_full(struct resp *rs)
{
	struct ts_req *r = rs->r;
	struct strbuf body = STRBUF_INIT;
	struct tx *tx = &rs->fe->tx;
	uint32_t i;

	engine_submit(r);
	pthread_mutex_lock(&r->mu);
	while (!r->done)
		pthread_cond_wait(&r->cv, &r->mu);
	for (i = 0; i < r->n_content; i++)
		rs->t_prod[i] = r->ev[r->n_tool + i].t_produced;
	rs->t.aborted = r->dropped;
	rs->g.t_admit = r->t_admit;
	pthread_mutex_unlock(&r->mu);
	rs->t.t_produced_ns = rs->t_prod;
	rs->t.t_token_ns = rs->t_token;
	rs->t.t_token_end_ns = rs->t_token_end;
	if (rs->t.aborted) {
		rs->t.t_end_ns = now_ns();
		goto out;
	}
	rs->t.n_produced = r->n_content;
	rs->g.t_first = rs->t_prod[0];
	rs->g.t_last = rs->t_prod[r->n_content - 1];
	wire_body(&rs->g, &body);

	/* Headers need the length, so they follow generation, in their own send. */
	tx->chunked = false;
	add_headers(tx_begin(tx), rs, 200, "application/json", (long long)body.len);
	tx_end(tx, true);
	if (do_send(rs, tx, &rs->t.t_headers_ns))
		goto out;
	tx_add_raw(tx, body.buf, body.len);
	if (do_send(rs, tx, &rs->t_token[0]))
		goto out;
	rs->t_token_end[0] = tx->t_done;
	rs->t.chunks = 1;
	rs->t.tokens = r->max_tokens;
out:
	finish_truth(rs);
	sb_free(&body);
	return !rs->t.aborted && !rs->close;
}

static void resp_init(struct resp *rs, struct fe *fe, const struct http_req *hr, uint64_t req_num)
{
	memset(rs, 0, sizeof(*rs));
	rs->fe = fe;
	rs->hr = hr;
	if (hr->rid[0])
		snprintf(rs->rid, sizeof(rs->rid), "%s", hr->rid);
	else
		snprintf(rs->rid, sizeof(rs->rid), "ts-%llu", (unsigned long long)req_num);
	rs->close = !hr->keep_alive || atomic_load(&ts_exiting);
	rs->t = (struct truth){
		.request_id = rs->rid,
		.req_num = req_num,
		.conn_num = fe->c->conn_num,
		.method = hr->method,
		.path = hr->target,
		.format = format_name(FMT_NONE),
		.model = "",
		.t_accept_call_ns = fe->c->t_accept_call,
		.t_accept_ns = fe->c->t_accept,
		.t_start_ns = fe->t_read,
	};
}

/* Serves one request; returns whether the connection stays open. */
static bool serve(struct fe *fe, const struct http_req *hr, uint64_t req_num)
{
	struct resp rs;
	char err[160];
	int status;
	bool keep;

	resp_init(&rs, fe, hr, req_num);
	if (!strcmp(hr->method, "GET") && wire_path_is(hr->target, "/health"))
		return respond_fixed(&rs, 200, "text/plain; charset=utf-8", "ok", 2);

	rs.g.fmt = cfg.format != FMT_AUTO ? cfg.format : wire_format_for_path(hr->target);
	if (rs.g.fmt == FMT_NONE)
		return respond_error(&rs, 404, "no such endpoint");
	rs.t.format = format_name(rs.g.fmt);
	if (strcmp(hr->method, "POST"))
		return respond_error(&rs, 405, "use POST");

	rs.g.rid = rs.rid;
	rs.g.created = time(NULL);
	rs.g.t_start = rs.t.t_start_ns;
	status = wire_parse_body(&rs.g, hr->target, hr->body, hr->body_len, err, sizeof(err));
	rs.t.model = rs.g.model;
	rs.t.stream = rs.g.stream;
	rs.t.prompt_tokens = rs.g.prompt_tokens;
	if (status)
		return respond_error(&rs, (unsigned)status, err);
	if (cfg.error_every && atomic_fetch_add(&gen_counter, 1) % cfg.error_every ==
				       cfg.error_every - 1)
		return respond_error(&rs, cfg.error_status, "injected error (--error-every)");

	rs.t.count_on_wire = !rs.g.stream || rs.g.usage ||
			     (rs.g.fmt != FMT_OPENAI_CHAT && rs.g.fmt != FMT_OPENAI_COMPL);
	rs.t.status = 200;
	/* Tool-call deltas exist only in OpenAI chat streams. */
	rs.r = req_new(req_num, rs.rid, rs.g.max_tokens,
		       rs.g.fmt == FMT_OPENAI_CHAT && rs.g.stream ? cfg.tool_frames : 0);
	rs.t_prod = xcalloc(rs.r->n_content, sizeof(uint64_t));
	rs.t_token = xcalloc(rs.r->n_content, sizeof(uint64_t));
	rs.t_token_end = xcalloc(rs.r->n_content, sizeof(uint64_t));
	keep = rs.g.stream ? respond_stream(&rs) : respond_full(&rs);
	free(rs.t_prod);
	free(rs.t_token);
	free(rs.t_token_end);
	req_put(rs.r);
	return keep;
}

/* A request we could not parse: answer it (status is 400, 413...) and close. */
static void serve_malformed(struct fe *fe, const struct http_req *hr, unsigned status,
			    uint64_t req_num)
{
	struct resp rs;

	resp_init(&rs, fe, hr, req_num);
	rs.close = true;
	respond_error(&rs, status, "malformed request");
}

/* Close after a response: let the client read it all before an RST could hit it. */
static void linger_close(int fd)
{
	uint64_t end = now_ns() + LINGER_NS;
	char tmp[4096];

	shutdown(fd, SHUT_WR);
	for (;;) {
		uint64_t now = now_ns();
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (now >= end || poll(&p, 1, (int)((end - now) / NSEC_PER_MSEC) + 1) <= 0 ||
		    read(fd, tmp, sizeof(tmp)) <= 0)
			break;
	}
}

void *frontend_main(void *arg)
{
	struct fe fe = { .c = arg };
	struct conn *c = fe.c;
	bool linger = false;

	set_thread_name("ts-front");
	tx_init(&fe.tx, c->fd);
	tx_init(&fe.hb, c->fd);
	for (;;) {
		struct http_req hr;
		uint64_t req_num;
		int st = read_request(&fe, &hr);
		bool keep;

		if (st == 0) {
			http_req_free(&hr);
			break;
		}
		req_num = atomic_fetch_add(&req_counter, 1) + 1;
		if (st < 0) {
			serve_malformed(&fe, &hr, (unsigned)-st, req_num);
			http_req_free(&hr);
			linger = true;
			break;
		}
		keep = serve(&fe, &hr, req_num);
		consume(&fe, hr.total_len);
		http_req_free(&hr);
		if (!keep) {
			linger = true;
			break;
		}
	}
	if (linger)
		linger_close(c->fd);
	tx_free(&fe.tx);
	tx_free(&fe.hb);
	free(fe.buf);
	server_conn_done(c);
	close(c->fd);
	free(c);
	return NULL;
}
