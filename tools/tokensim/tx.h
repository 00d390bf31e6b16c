/* SPDX-License-Identifier: MIT */
/*
 * One send's worth of response bytes.  Events are appended as segments; a
 * flush frames them (each event its own HTTP chunk when the response is
 * chunked) and hands them to the kernel in ONE syscall of the configured
 * --write-mode, timestamped just before the call.  That one-send-one-
 * timestamp rule is what the truth file's t_token_ns promises.
 */
#ifndef TS_TX_H
#define TS_TX_H

#include <stdbool.h>
#include <stdint.h>

#include "strbuf.h"

struct tx_seg {
	size_t off, len;
	bool raw; /* never chunk-framed: response headers, the terminator */
	char hex[20];
};

struct tx {
	int fd;
	bool chunked;	     /* frame body segments as HTTP chunks */
	struct strbuf data;  /* segment bytes */
	struct strbuf flat;  /* write/send: the framed bytes, contiguous */
	struct tx_seg *seg;
	unsigned nseg, seg_cap;
	struct iovec *iov;
	unsigned iov_cap;
	size_t mark;
	uint64_t t_done;     /* CLOCK_MONOTONIC right after the last flush's syscall returned */
};

void tx_init(struct tx *tx, int fd);
void tx_free(struct tx *tx);

/* Append a segment: tx_begin(), write into tx->data, tx_end(). */
struct strbuf *tx_begin(struct tx *tx);
void tx_end(struct tx *tx, bool raw);
void tx_add_raw(struct tx *tx, const char *p, size_t n);
/* The zero-length chunk that ends a chunked body (nothing when not chunked). */
void tx_add_terminator(struct tx *tx);

/* Forgets what was appended and not sent. */
void tx_discard(struct tx *tx);

static inline bool tx_empty(const struct tx *tx)
{
	return !tx->nseg;
}

/*
 * Sends everything appended since the last flush; *t_send = CLOCK_MONOTONIC
 * just before the (first) syscall.  Returns 0, or -errno when the peer is
 * gone or the send failed (the segments are dropped either way).
 */
int tx_flush(struct tx *tx, uint64_t *t_send);

#endif
