/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The HTTP parser's head: a complete head's start line and fields, as read by http.c once
 * its last line is in. Private to the parser (http.h is the API).
 */
#ifndef TT_HTTP_HEAD_H
#define TT_HTTP_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "http.h"

static inline bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* What the fields say about framing and the connection, for http.c to decide with. */
struct head_flags {
	bool conn_close;
	bool conn_keep_alive;
	bool te;		/* a Transfer-Encoding header */
	bool te_chunked;	/* ...whose last coding is chunked */
	bool cl;		/* a Content-Length header */
	bool cl_bad;
	uint64_t cl_val;
};

/*
 * The start line (already checked byte by byte) and the fields of the complete head b[0..n)
 * of a message going dir, into h (framing and keep_alive left to the caller) and f. NULL, or
 * why the head is bad ("bad header line"...).
 */
const char *http_head__parse(enum http_dir dir, const char *b, size_t n, struct http_head *h,
			     struct head_flags *f);

#endif /* TT_HTTP_HEAD_H */
