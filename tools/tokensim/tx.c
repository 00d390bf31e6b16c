// SPDX-License-Identifier: MIT
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "config.h"
#include "tx.h"
#include "util.h"

void tx_init(struct tx *tx, int fd)
{
	memset(tx, 0, sizeof(*tx));
	tx->fd = fd;
}

void tx_free(struct tx *tx)
{
	sb_free(&tx->data);
	sb_free(&tx->flat);
	free(tx->seg);
	free(tx->iov);
	tx->seg = NULL;
	tx->iov = NULL;
}

struct strbuf *tx_begin(struct tx *tx)
{
	tx->mark = tx->data.len;
	return &tx->data;
}

void tx_end(struct tx *tx, bool raw)
{
	struct tx_seg *s;

	if (tx->data.len == tx->mark)
		return; /* an empty chunk would end the body: never send one */
	if (tx->nseg == tx->seg_cap) {
		tx->seg_cap = tx->seg_cap ? 2 * tx->seg_cap : 16;
		tx->seg = xrealloc(tx->seg, tx->seg_cap * sizeof(*tx->seg));
	}
	s = &tx->seg[tx->nseg++];
	s->off = tx->mark;
	s->len = tx->data.len - tx->mark;
	s->raw = raw;
	snprintf(s->hex, sizeof(s->hex), "%zx", s->len);
}

void tx_add_raw(struct tx *tx, const char *p, size_t n)
{
	sb_add(tx_begin(tx), p, n);
	tx_end(tx, true);
}

void tx_add_terminator(struct tx *tx)
{
	if (tx->chunked)
		tx_add_raw(tx, "0\r\n\r\n", 5);
}

static bool framed(const struct tx *tx, const struct tx_seg *s)
{
	return tx->chunked && !s->raw;
}

static void add_iov(struct tx *tx, unsigned *n, const void *p, size_t len)
{
	if (*n == tx->iov_cap) {
		tx->iov_cap = tx->iov_cap ? 2 * tx->iov_cap : 64;
		tx->iov = xrealloc(tx->iov, tx->iov_cap * sizeof(*tx->iov));
	}
	tx->iov[(*n)++] = (struct iovec){ .iov_base = (void *)p, .iov_len = len };
}

/* Node style: size line, CRLF, data, CRLF as four iovecs of one writev. */
static int flush_writev(struct tx *tx, uint64_t *t_send)
{
	struct iovec *iov;
	unsigned n = 0, i;
	ssize_t w;

	for (i = 0; i < tx->nseg; i++) {
		struct tx_seg *s = &tx->seg[i];

		if (framed(tx, s))
			add_iov(tx, &n, s->hex, strlen(s->hex)), add_iov(tx, &n, "\r\n", 2);
		add_iov(tx, &n, tx->data.buf + s->off, s->len);
		if (framed(tx, s))
			add_iov(tx, &n, "\r\n", 2);
	}
	iov = tx->iov;
	*t_send = now_ns();
	while (n) {
		w = writev(tx->fd, iov, n < IOV_MAX ? (int)n : IOV_MAX);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		/* A short write (only on a signal: our sockets block) resumes here. */
		while (n && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++, n--;
		}
		if (n) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	tx->t_done = now_ns();
	return 0;
}

static int flush_flat(struct tx *tx, uint64_t *t_send)
{
	const char *p;
	size_t left;
	ssize_t w;

	sb_reset(&tx->flat);
	for (unsigned i = 0; i < tx->nseg; i++) {
		struct tx_seg *s = &tx->seg[i];

		if (framed(tx, s)) {
			sb_adds(&tx->flat, s->hex);
			sb_add(&tx->flat, "\r\n", 2);
		}
		sb_add(&tx->flat, tx->data.buf + s->off, s->len);
		if (framed(tx, s))
			sb_add(&tx->flat, "\r\n", 2);
	}
	p = tx->flat.buf;
	left = tx->flat.len;
	*t_send = now_ns();
	while (left) {
		if (cfg.write_mode == WM_SEND)
			w = send(tx->fd, p, left, MSG_NOSIGNAL);
		else
			w = write(tx->fd, p, left);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		left -= (size_t)w;
		tx->t_done = now_ns();
	}
	return 0;
}

void tx_discard(struct tx *tx)
{
	tx->nseg = 0;
	sb_reset(&tx->data);
}

int tx_flush(struct tx *tx, uint64_t *t_send)
{
	int err;

	*t_send = 0;
	if (!tx->nseg)
		return 0;
	if (cfg.write_mode == WM_WRITEV)
		err = flush_writev(tx, t_send);
	else
		err = flush_flat(tx, t_send);
	tx_discard(tx);
	return err;
}
