/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Incremental HTTP/1.1 message parser, one per direction of a connection.
 *
 * It is fed the bytes of each send or receive in order, exactly as the syscalls moved them,
 * and reports message heads, de-chunked body bytes and message ends through callbacks, which
 * run synchronously inside http_parser__feed(): the caller knows which syscall (and so which
 * timestamp) the callback belongs to.
 *
 * Bytes that moved but were not captured (a send longer than the capture size) are reported
 * with http_parser__gap(): body framing continues through them by length where it can. Where
 * a gap in a chunked body runs past the chunk whose size was known, or cuts a chunk-size line,
 * the rest of the gap is reported as on_body_gap and the next feed decides: a chunk-size line
 * at its start ("1a4\r\n"; "0\r\n" is the last chunk) resumes the body there, since servers
 * write whole chunks per syscall; a status line means the response ended inside the gap
 * (on_end, with http_parser__ended_in_gap() true, then the next response); a request line
 * loses the request whose end the gap hid (on_error, then the next request); anything else
 * loses sync (on_error). Elsewhere (a head, trailers, between messages) a gap loses sync at
 * once.
 *
 * Out of sync (garbage, a connection joined mid-message, a lost head), the parser drops bytes
 * and tries again at the start of each later feed(), since servers start a new message with a
 * new syscall: a request line ("GET /x HTTP/1.1") or a status line ("HTTP/1.1 200").
 *
 * Never allocates per byte; the head is kept in a bounded buffer.
 */
#ifndef TT_HTTP_H
#define TT_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_HEAD_MAX		16384	/* request/status line + headers; longer heads are errors */
#define HTTP_METHOD_MAX		16
#define HTTP_PATH_MAX		256
#define HTTP_REQID_MAX		128
#define HTTP_CTYPE_MAX		128
#define HTTP_HOST_MAX		128
/* W3C traceparent: version 00 ("00-<32 hex>-<16 hex>-<2 hex>") is 55 characters; one more
 * is kept so that a longer value is seen as such (a later version's '-' after the flags) */
#define HTTP_TRACEPARENT_MAX	57
#define HTTP_H2_SETTINGS_MAX	128	/* base64url of a few SETTINGS parameters */

enum http_dir {
	HTTP_REQUEST,	/* bytes the server reads: requests */
	HTTP_RESPONSE,	/* bytes the server writes: responses */
};

enum http_framing {
	HTTP_BODY_NONE,		/* no body: GET without length, 1xx/204/304, response to HEAD */
	HTTP_BODY_LENGTH,	/* Content-Length */
	HTTP_BODY_CHUNKED,	/* Transfer-Encoding: chunked (wins over Content-Length) */
	HTTP_BODY_CLOSE,	/* response without either: ends when the connection closes */
};

/* A parsed message head. Strings are NUL-terminated, cut to fit, with *_trunc set. */
struct http_head {
	enum http_dir dir;
	int version_minor;		/* HTTP/1.<minor> */
	char method[HTTP_METHOD_MAX];	/* requests */
	char path[HTTP_PATH_MAX];	/* requests: the request target as sent */
	bool path_trunc;
	int status;			/* responses */
	char request_id[HTTP_REQID_MAX];	/* X-Request-Id (case-insensitive name), "" if none */
	char content_type[HTTP_CTYPE_MAX];	/* value as sent, "" if none */
	char host[HTTP_HOST_MAX];	/* requests: Host, "" if none */
	/* requests: W3C traceparent as sent (the first one), cut to fit, "" if none: the
	 * caller's span, which the request's own span joins (report/otlp.c checks it) */
	char traceparent[HTTP_TRACEPARENT_MAX];
	enum http_framing framing;
	uint64_t content_length;	/* HTTP_BODY_LENGTH */
	bool keep_alive;		/* false: "Connection: close", or HTTP/1.0 without keep-alive */
	bool expect_continue;		/* requests with "Expect: 100-continue" */
	/*
	 * "Upgrade: h2c" (RFC 7540 3.2): a request asking for HTTP/2 on this connection, or
	 * the 101 that grants it; then h2.h takes the connection over (h2_parser__upgraded()).
	 */
	bool upgrade_h2c;
	char http2_settings[HTTP_H2_SETTINGS_MAX];	/* requests: HTTP2-Settings, "" if none */
};

struct http_cb {
	/* The head is complete: framing is known. */
	void (*on_head)(void *ud, const struct http_head *h);
	/* Body bytes, chunked framing removed, in order. */
	void (*on_body)(void *ud, const uint8_t *data, size_t len);
	/* len body bytes moved but were not captured. */
	void (*on_body_gap)(void *ud, uint64_t len);
	/* The message is complete (body length reached, last chunk and trailers, or EOF). */
	void (*on_end)(void *ud);
	/*
	 * Responses, optional: asked once per response head (status >= 200) before framing is
	 * decided; true if this response answers a HEAD request and so has no body whatever its
	 * headers say. Only the caller, who pairs responses with requests, knows.
	 */
	bool (*answers_head)(void *ud);
	/*
	 * Optional: the bytes after a 101 response's head, in the feed it ended in and every
	 * later one, which are another protocol's (HTTP/2 after an h2c upgrade).
	 */
	void (*on_tunnel)(void *ud, const uint8_t *data, size_t len);
	/* Sync lost; why is a short static string ("bad request line", "head too long"...).
	 * A message in progress is abandoned: no on_end follows for it. */
	void (*on_error)(void *ud, const char *why);
};

struct http_parser;

struct http_parser *http_parser__new(enum http_dir dir, const struct http_cb *cb, void *ud);
void http_parser__free(struct http_parser *p);

/* The bytes of one send or receive. */
void http_parser__feed(struct http_parser *p, const uint8_t *data, size_t len);
/* len bytes that followed the last feed but were not captured. */
void http_parser__gap(struct http_parser *p, uint64_t len);
/*
 * The peer or the process closed: ends a close-delimited body (on_end); any other message in
 * progress is abandoned with on_error (a client that went away mid-stream).
 */
void http_parser__eof(struct http_parser *p);

/*
 * True only inside an on_end for a response that ended somewhere in an earlier gap, found when
 * this feed started the next response: the end belongs to that gap's send, not to this feed.
 */
bool http_parser__ended_in_gap(const struct http_parser *p);

/* True between a message's first byte and its end: bytes are owed to a message. */
bool http_parser__in_message(const struct http_parser *p);

#endif /* TT_HTTP_H */
