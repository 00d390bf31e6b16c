/* SPDX-License-Identifier: MIT */
/*
 * HTTP/1.1 request parsing over a connection's receive buffer: the head,
 * then a Content-Length or chunked body.  Pure functions of the bytes, so
 * pipelined requests are parsed one after the other from the same buffer.
 */
#ifndef TS_HTTP_H
#define TS_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "engine.h"

#define HTTP_MAX_HEAD (64 * 1024)
#define HTTP_MAX_BODY (64u << 20)

struct http_req {
	char method[16];
	char target[1024];
	char rid[TS_RID_MAX + 1]; /* X-Request-Id, "" when absent */
	bool http10;
	bool keep_alive;	  /* HTTP/1.1 default, or "Connection: keep-alive" on 1.0 */
	bool expect_continue;
	bool chunked;
	long long content_length; /* -1: none */
	size_t head_len;
	char *body; /* decoded, NUL-terminated, malloc'd; free with http_req_free() */
	size_t body_len;
	size_t total_len; /* bytes of the request on the wire */
};

/*
 * Parses the head at buf[0..len).  Returns 1 when complete, 0 when more
 * bytes are needed, or -status (400, 413, 431, 501, 505) when the request
 * is malformed.  On -status, r->method/target hold what could be read.
 */
int http_parse_head(const char *buf, size_t len, struct http_req *r);

/* Same contract for the body that follows the head (after a 1 from above). */
int http_parse_body(const char *buf, size_t len, struct http_req *r);

void http_req_free(struct http_req *r);

#endif
