// SPDX-License-Identifier: MIT
/*
 * One worker thread per connection.  It takes --pipeline request numbers at
 * a time, sends them back to back on its keep-alive connection, then reads
 * the responses in order.  When a connection ends early (an abort on
 * purpose, "Connection: close", an error), the requests still unanswered on
 * it are sent again on a new connection, each under a new X-Request-Id
 * (PREFIX<n>.<k> for the k-th resend): the server may have started one
 * before the connection died, and its truth then holds that attempt too.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "resp.h"
#include "strbuf.h"
#include "tokenload.h"
#include "util.h"

#define RX_BUF (64 * 1024)

static atomic_ulong next_seq;

struct client {
	int fd;
	bool reused; /* the connection already carried a response */
	/* around its connect(): the handshake completed in between (on loopback) */
	uint64_t t_connect_ns, t_connected_ns;
	char *buf;
	size_t have;	 /* bytes in buf not yet parsed: the next response's */
	uint64_t t_read; /* of the read that brought them */
};

enum rr { RR_OK, RR_CLOSE, RR_ABORTED, RR_NONE, RR_ERROR };

static int connect_new(const char **err, uint64_t *t0, uint64_t *t1)
{
	int fd = socket(cfg.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, v;

	if (fd < 0) {
		*err = "socket failed";
		return -1;
	}
	if (cfg.rcvbuf) {
		/* Before connect(): the window is negotiated on the handshake. */
		v = (int)cfg.rcvbuf;
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	}
	if (cfg.mss && cfg.addr.ss_family != AF_UNIX) {
		/*
		 * The MSS we announce sizes the server's send buffer: Linux grows it to a few
		 * times cwnd x MSS, about 4 MiB for loopback's 64 KiB MSS, more than any
		 * pause lets a token stream queue. A far client's MSS (536) makes it small,
		 * so a pause fills it and the server's writes hit EAGAIN.
		 */
		v = (int)cfg.mss;
		setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &v, sizeof(v));
	}
	if (cfg.addr.ss_family != AF_UNIX)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*t0 = now_ns();
	if (connect(fd, (struct sockaddr *)&cfg.addr, cfg.addrlen)) {
		*err = errno == ECONNREFUSED ? "connection refused" : "connect failed";
		close(fd);
		return -1;
	}
	*t1 = now_ns();
	return fd;
}

static void drop_conn(struct client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->have = 0;
	c->reused = false;
}

static void add_chunk_times(struct tl_result *r, uint32_t upto, uint64_t t)
{
	if (upto > r->chunk_cap) {
		r->chunk_cap = upto > 2 * r->chunk_cap ? upto : 2 * r->chunk_cap;
		r->t_chunk_ns = xrealloc(r->t_chunk_ns, r->chunk_cap * sizeof(uint64_t));
	}
	while (r->chunks < upto)
		r->t_chunk_ns[r->chunks++] = t;
}

static bool wants_abort(unsigned long seq)
{
	return cfg.abort_after >= 0 && seq % cfg.abort_every == 0;
}

/* Parses what is buffered; true when the response is settled one way or another. */
static bool parse_buffered(struct client *c, struct rp *p, struct tl_result *r)
{
	uint32_t before = p->chunks;
	size_t used = rp_feed(p, c->buf, c->have);

	memmove(c->buf, c->buf + used, c->have - used);
	c->have -= used;
	add_chunk_times(r, p->chunks, c->t_read);
	/*
	 * Slow reader: leave the socket alone for a while, once per K chunks crossed: after
	 * a pause one read may bring in more than K of them.
	 */
	if (cfg.pause_every && p->state == RP_BODY && !rp_halted(p) &&
	    p->chunks / cfg.pause_every > before / cfg.pause_every)
		sleep_until_ns(now_ns() + cfg.pause_ns * (p->chunks / cfg.pause_every -
							   before / cfg.pause_every));
	return p->state == RP_DONE || p->state == RP_ERROR || rp_halted(p);
}

static enum rr read_response(struct client *c, unsigned long seq, struct tl_result *r)
{
	struct rp p;
	enum rr ret;

	rp_init(&p, wants_abort(seq) ? cfg.abort_after : -1, cfg.close_at_final);
	for (;;) {
		uint64_t now, deadline = r->t_sent_ns + cfg.timeout_ns;
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		ssize_t n;
		int pr;

		if (c->have && parse_buffered(c, &p, r))
			break;
		now = now_ns();
		pr = now >= deadline ? 0 :
				       poll(&pfd, 1, (int)((deadline - now) / NSEC_PER_MSEC) + 1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			r->error = "timeout";
			ret = RR_ERROR;
			goto out;
		}
		n = read(c->fd, c->buf + c->have, RX_BUF - c->have);
		c->t_read = now_ns();
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rp_eof(&p);
			break;
		}
		c->have += (size_t)n;
	}
	r->status = p.status;
	r->tokens = p.tokens;
	r->bytes = p.bytes;
	r->final = p.final;
	if (p.limit_hit && p.state == RP_BODY && !p.final) {
		r->aborted = true;
		ret = RR_ABORTED;
	} else if (p.final && p.stop_at_final && p.state == RP_BODY) {
		/* What the rest of the body holds (framing) stays unread: close, not reuse. */
		ret = RR_CLOSE;
	} else if (p.state == RP_DONE) {
		ret = p.conn_close ? RR_CLOSE : RR_OK;
	} else if (!p.bytes) {
		r->error = p.error;
		ret = RR_NONE;
	} else {
		r->error = p.error ? p.error : "bad response";
		ret = RR_ERROR;
	}
out:
	r->t_done_ns = now_ns();
	rp_free(&p);
	return ret;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void finish(struct tl_result *r)
{
	report_result(r);
	free(r->t_chunk_ns);
	r->t_chunk_ns = NULL;
}

/* Serves seqs[0..n): every one of them ends up reported exactly once. */
static void run_group(struct client *c, const unsigned long *seqs, unsigned n)
{
	struct tl_result res[TL_MAX_PIPELINE];
	struct strbuf req = STRBUF_INIT;
	unsigned attempts[TL_MAX_PIPELINE] = { 0 };
	unsigned done = 0, i;
	bool retried = false;
	const char *err = NULL;

	for (i = 0; i < n; i++) {
		memset(&res[i], 0, sizeof(res[i]));
		snprintf(res[i].request_id, sizeof(res[i].request_id), "%s%lu", cfg.id_prefix,
			 seqs[i]);
		res[i].tokens = -1;
	}
	while (done < n) {
		bool reused;

		if (c->fd < 0 &&
		    (c->fd = connect_new(&err, &c->t_connect_ns, &c->t_connected_ns)) < 0) {
			for (i = done; i < n; i++) {
				res[i].error = err;
				res[i].t_sent_ns = res[i].t_done_ns = now_ns();
				finish(&res[i]);
			}
			break;
		}
		reused = c->reused;
		for (i = done; i < n; i++) {
			if (attempts[i]++)
				snprintf(res[i].request_id, sizeof(res[i].request_id), "%s%lu.%u",
					 cfg.id_prefix, seqs[i], attempts[i] - 1);
			sb_reset(&req);
			build_request(&req, res[i].request_id, !cfg.keepalive);
			/* the connection's first request: when it was made */
			res[i].t_connect_ns = reused || i != done ? 0 : c->t_connect_ns;
			res[i].t_connected_ns = reused || i != done ? 0 : c->t_connected_ns;
			res[i].t_sent_ns = now_ns();
			if (send_all(c->fd, req.buf, req.len))
				break;
		}
		if (i < n) {
			/* A kept-alive connection the server closed: one more try on a new one. */
			drop_conn(c);
			if (reused && !retried) {
				retried = true;
				continue;
			}
			for (i = done; i < n; i++) {
				res[i].error = "send failed";
				res[i].t_done_ns = now_ns();
				finish(&res[i]);
			}
			break;
		}
		for (i = done; i < n; i++) {
			enum rr rr = read_response(c, seqs[i], &res[i]);

			if (rr == RR_NONE && reused && i == done && !retried) {
				retried = true;
				drop_conn(c);
				break;
			}
			finish(&res[i]);
			done++;
			if (rr == RR_OK) {
				c->reused = true;
				continue;
			}
			drop_conn(c); /* the rest are sent again on a new connection */
			break;
		}
	}
	sb_free(&req);
}

void *client_main(void *arg)
{
	struct client c = { .fd = -1 };
	unsigned long seqs[TL_MAX_PIPELINE];

	(void)arg;
	set_thread_name("tl-conn");
	c.buf = xmalloc(RX_BUF);
	for (;;) {
		unsigned n = 0;

		while (n < cfg.pipeline) {
			unsigned long s = atomic_fetch_add(&next_seq, 1) + 1;

			if (s > cfg.requests)
				break;
			seqs[n++] = s;
		}
		if (!n)
			break;
		run_group(&c, seqs, n);
	}
	drop_conn(&c);
	free(c.buf);
	return NULL;
}
