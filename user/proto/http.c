// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Incremental HTTP/1.1 parser (RFC 9112 framing), one per direction of a connection.
 *
 * Body bytes are handed to on_body straight from the fed buffer: nothing is copied but a head
 * split over several feeds, which goes into a buffer of HTTP_HEAD_MAX bytes allocated the
 * first time that happens (most heads arrive whole in one send, so most parsers never
 * allocate it). The start line is checked byte by byte as it arrives so that garbage is
 * refused at once rather than after HTTP_HEAD_MAX bytes.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "http_head.h"

#define CHUNK_LINE_MAX	4096	/* chunk-size line with its extensions */

enum hstate {
	H_IDLE,		/* between messages: the next byte but CR/LF starts a head */
	H_HEAD,		/* inside a head */
	H_BODY_LEN,	/* Content-Length body: remain bytes left */
	H_BODY_CLOSE,	/* body until EOF */
	H_CHUNK_SIZE,	/* hex digits of a chunk-size line */
	H_CHUNK_BWS,	/* whitespace after the digits */
	H_CHUNK_EXT,	/* a chunk extension: skipped up to the LF */
	H_CHUNK_LF,	/* the chunk-size line's CR was seen */
	H_CHUNK_DATA,	/* remain bytes of chunk data left */
	H_DATA_CR,	/* the CRLF after chunk data */
	H_DATA_LF,
	H_TRAILER,	/* trailer fields after the last chunk, up to an empty line */
	H_CHUNK_RESYNC,	/* a gap hid where the next chunk starts: look at the next feed */
	H_LOST,		/* out of sync: the rest of the feed is dropped */
	H_TUNNEL,	/* after 101 Switching Protocols the bytes are not HTTP any more */
};

/* Start-line check, one byte at a time. */
enum sl_state {
	SL_METHOD,	/* requests: "GET" */
	SL_TARGET,	/* requests: "/v1/chat/completions" */
	SL_VERSION,	/* "HTTP/1.1" */
	SL_VERSION_END,	/* requests: CR or LF after the version */
	SL_SP,		/* responses: the space after the version */
	SL_STATUS,	/* responses: three digits */
	SL_STATUS_END,	/* responses: SP, CR or LF */
	SL_REASON,	/* responses: reason phrase */
	SL_CR,		/* LF expected */
	SL_DONE,
};

struct http_parser {
	enum http_dir dir;
	struct http_cb cb;
	void *ud;
	enum hstate st;
	/*
	 * Resyncing after a loss of sync: a head that turns out bad is dropped without a
	 * new on_error, the loss having been reported already.
	 */
	bool quiet;

	/* head in progress */
	char *hbuf;		/* HTTP_HEAD_MAX bytes, allocated on the first split head */
	size_t hlen;		/* bytes in hbuf */
	size_t head_len;	/* bytes of the head so far, buffered or not */
	size_t line_len;	/* bytes of the current head line, CR and LF not counted */
	enum sl_state sl;
	unsigned sl_n;		/* bytes into the current start-line element */

	/* body in progress */
	uint64_t remain;
	uint64_t chunk_size;
	unsigned chunk_digits;
	size_t line_n;		/* bytes into a chunk-size line, or of trailers */
	bool tunnel_next;	/* 101: no HTTP after this message */
	bool ended_in_gap;	/* inside an on_end found late: see http_parser__ended_in_gap() */

	struct http_head head;
};

static const char *const VERSION_PREFIX = "HTTP/1.";

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void fail(struct http_parser *p, const char *why)
{
	if (!p->quiet && p->cb.on_error)
		p->cb.on_error(p->ud, why);
	p->quiet = false;
	p->st = H_LOST;
	p->hlen = 0;
}

static void end_message(struct http_parser *p)
{
	p->st = p->tunnel_next ? H_TUNNEL : H_IDLE;
	if (p->cb.on_end)
		p->cb.on_end(p->ud);
}

/* One byte of the start line; false if it cannot be one. */
static bool sl_step(struct http_parser *p, unsigned char c)
{
	switch (p->sl) {
	case SL_METHOD:
		/* methods are case-sensitive and every one in use is upper case */
		if (c >= 'A' && c <= 'Z' && p->sl_n < HTTP_METHOD_MAX - 1) {
			p->sl_n++;
			return true;
		}
		if (c == ' ' && p->sl_n) {
			p->sl = SL_TARGET;
			p->sl_n = 0;
			return true;
		}
		return false;
	case SL_TARGET:
		if (c > ' ' && c != 0x7f) {
			p->sl_n++;
			return true;
		}
		if (c == ' ' && p->sl_n) {
			p->sl = SL_VERSION;
			p->sl_n = 0;
			return true;
		}
		return false;
	case SL_VERSION:
		if (p->sl_n < 7 ? c != (unsigned char)VERSION_PREFIX[p->sl_n] : !is_digit(c))
			return false;
		if (++p->sl_n == 8) {
			p->sl = p->dir == HTTP_REQUEST ? SL_VERSION_END : SL_SP;
			p->sl_n = 0;
		}
		return true;
	case SL_SP:
		if (c != ' ')
			return false;
		p->sl = SL_STATUS;
		return true;
	case SL_STATUS:
		if (!is_digit(c) || (p->sl_n == 0 && c == '0'))
			return false;
		if (++p->sl_n == 3)
			p->sl = SL_STATUS_END;
		return true;
	case SL_STATUS_END:
		/* a missing reason phrase (and its space) is tolerated: CR or LF may follow */
		if (c == ' ') {
			p->sl = SL_REASON;
			return true;
		}
		/* fall through */
	case SL_VERSION_END:
	case SL_REASON:
		if (c == '\r') {
			p->sl = SL_CR;
			return true;
		}
		if (c == '\n') {
			p->sl = SL_DONE;
			return true;
		}
		if (p->sl == SL_REASON)
			return c >= ' ' || c == '\t';
		return false;
	case SL_CR:
		if (c != '\n')
			return false;
		p->sl = SL_DONE;
		return true;
	case SL_DONE:
		return true;
	}
	return false;
}

static void start_head(struct http_parser *p)
{
	p->st = H_HEAD;
	p->hlen = 0;
	p->head_len = 0;
	p->line_len = 0;
	p->sl = p->dir == HTTP_REQUEST ? SL_METHOD : SL_VERSION;
	p->sl_n = 0;
}

/* Parse a complete head (its start line already checked by sl_step) and decide its framing. */
static const char *parse_head(struct http_parser *p, const char *b, size_t n)
{
	struct http_head *h = &p->head;
	struct head_flags f;
	const char *why = http_head__parse(p->dir, b, n, h, &f);

	if (why)
		return why;
	if (h->version_minor >= 1)
		h->keep_alive = !f.conn_close;
	else
		h->keep_alive = f.conn_keep_alive && !f.conn_close;

	p->tunnel_next = false;
	if (p->dir == HTTP_RESPONSE && h->status < 200) {
		/* 1xx: interim, never a body; 101 hands the connection to another protocol */
		h->framing = HTTP_BODY_NONE;
		p->tunnel_next = h->status == 101;
	} else if (p->dir == HTTP_RESPONSE &&
		   ((p->cb.answers_head && p->cb.answers_head(p->ud)) ||
		    h->status == 204 || h->status == 304)) {
		h->framing = HTTP_BODY_NONE;
	} else if (f.te) {
		if (f.te_chunked) {
			h->framing = HTTP_BODY_CHUNKED;	/* wins over Content-Length */
		} else if (p->dir == HTTP_REQUEST) {
			/* RFC 9112 6.3: a request body of unknown length cannot be framed */
			return "bad transfer-encoding";
		} else {
			h->framing = HTTP_BODY_CLOSE;
		}
	} else if (f.cl_bad) {
		return "bad content-length";
	} else if (f.cl) {
		h->framing = HTTP_BODY_LENGTH;
		h->content_length = f.cl_val;
	} else {
		h->framing = p->dir == HTTP_REQUEST ? HTTP_BODY_NONE : HTTP_BODY_CLOSE;
	}
	/* whatever the headers said, a body ended by closing cannot be followed by another */
	if (h->framing == HTTP_BODY_CLOSE)
		h->keep_alive = false;
	return NULL;
}

static void head_done(struct http_parser *p, const char *b, size_t n)
{
	const char *why = parse_head(p, b, n);

	p->hlen = 0;
	if (why) {
		fail(p, why);
		return;
	}
	p->quiet = false;	/* in sync again */
	if (p->cb.on_head)
		p->cb.on_head(p->ud, &p->head);
	switch (p->head.framing) {
	case HTTP_BODY_NONE:
		end_message(p);
		break;
	case HTTP_BODY_LENGTH:
		p->remain = p->head.content_length;
		if (p->remain)
			p->st = H_BODY_LEN;
		else
			end_message(p);
		break;
	case HTTP_BODY_CHUNKED:
		p->st = H_CHUNK_SIZE;
		p->chunk_size = 0;
		p->chunk_digits = 0;
		p->line_n = 0;
		break;
	case HTTP_BODY_CLOSE:
		p->st = H_BODY_CLOSE;
		break;
	}
}

/* Head bytes from d[0..len): returns how many belong to the head (all but what follows it). */
static size_t feed_head(struct http_parser *p, const uint8_t *d, size_t len)
{
	size_t i;
	bool end = false;

	for (i = 0; i < len; i++) {
		unsigned char c = d[i];

		if (p->sl != SL_DONE && !sl_step(p, c)) {
			fail(p, p->dir == HTTP_REQUEST ? "bad request line" : "bad status line");
			return len;	/* the rest of the feed goes with it */
		}
		if (c == '\n') {
			if (p->line_len == 0) {
				end = true;
				i++;
				break;
			}
			p->line_len = 0;
		} else if (c != '\r') {
			p->line_len++;
		}
	}
	if (i > HTTP_HEAD_MAX - p->head_len) {
		fail(p, "head too long");
		return len;
	}
	p->head_len += i;
	if (end && p->hlen == 0) {
		/* the whole head is in this feed: parse it where it is */
		head_done(p, (const char *)d, i);
		return i;
	}
	if (!p->hbuf) {
		p->hbuf = malloc(HTTP_HEAD_MAX);
		if (!p->hbuf) {
			fail(p, "out of memory");
			return len;
		}
	}
	/* hlen + i <= head_len <= HTTP_HEAD_MAX, checked above */
	memcpy(p->hbuf + p->hlen, d, i);
	p->hlen += i;
	if (end)
		head_done(p, p->hbuf, p->hlen);
	return i;
}

/* Chunk-size line, trailer and CRLF states: one byte; false if the message broke. */
static bool chunk_byte(struct http_parser *p, unsigned char c)
{
	if (p->st != H_TRAILER && ++p->line_n > CHUNK_LINE_MAX) {
		fail(p, "chunk-size line too long");
		return false;
	}
	switch (p->st) {
	case H_CHUNK_SIZE: {
		int v = hexval(c);

		if (v >= 0) {
			/* room for one more hex digit without wrapping */
			if (p->chunk_size >> 60) {
				fail(p, "bad chunk size");
				return false;
			}
			p->chunk_size = p->chunk_size * 16 + (uint64_t)v;
			p->chunk_digits++;
			return true;
		}
		if (!p->chunk_digits) {
			fail(p, "bad chunk size");
			return false;
		}
		p->st = H_CHUNK_BWS;
	}
		/* fall through */
	case H_CHUNK_BWS:
		if (c == ' ' || c == '\t')
			return true;
		if (c == ';') {
			p->st = H_CHUNK_EXT;
			return true;
		}
		if (c == '\r') {
			p->st = H_CHUNK_LF;
			return true;
		}
		if (c != '\n') {
			fail(p, "bad chunk size");
			return false;
		}
		break;
	case H_CHUNK_EXT:
		/* extensions carry nothing we use; a CR inside one just precedes the LF */
		if (c != '\n')
			return true;
		break;
	case H_CHUNK_LF:
		if (c != '\n') {
			fail(p, "bad chunk size");
			return false;
		}
		break;
	case H_DATA_CR:
		/* a bare LF is tolerated as a line end */
		if (c == '\r') {
			p->st = H_DATA_LF;
			return true;
		}
		/* fall through */
	case H_DATA_LF:
		if (c != '\n') {
			fail(p, "bad chunk end");
			return false;
		}
		p->st = H_CHUNK_SIZE;
		p->chunk_size = 0;
		p->chunk_digits = 0;
		p->line_n = 0;
		return true;
	case H_TRAILER:
		if (++p->line_n > HTTP_HEAD_MAX) {
			fail(p, "trailers too long");
			return false;
		}
		if (c == '\n') {
			if (p->line_len == 0)
				end_message(p);
			p->line_len = 0;
		} else if (c != '\r') {
			p->line_len++;
		}
		return true;
	default:
		return true;
	}
	/* the LF that ends a chunk-size line */
	if (p->chunk_size == 0) {
		p->st = H_TRAILER;	/* the last chunk: trailers, then an empty line */
		p->line_n = 0;
		p->line_len = 0;
	} else {
		p->st = H_CHUNK_DATA;
		p->remain = p->chunk_size;
	}
	return true;
}

/*
 * Does d start with a chunk-size line ("1a4\r\n", "0\r\n", "10;ext=1\r\n")? The syntax
 * chunk_byte() accepts; a line the end of the feed cuts short counts if what there is of it
 * fits. SSE and NDJSON data never starts this way: "data:" stops at the 't', JSON at the '{'.
 */
static bool is_chunk_line(const uint8_t *d, size_t len)
{
	size_t i = 0;

	while (i < len && i < CHUNK_LINE_MAX && hexval(d[i]) >= 0)
		i++;
	if (!i)
		return false;
	while (i < len && (d[i] == ' ' || d[i] == '\t'))
		i++;
	if (i < len && d[i] == ';') {
		while (i < len && i < CHUNK_LINE_MAX && d[i] != '\n')
			i++;
		return i == len || d[i] == '\n';
	}
	if (i < len && d[i] == '\r')
		i++;
	return i == len || d[i] == '\n';
}

/* Does d start with a start line of this parser's direction, as far as it goes? */
static bool is_message_start(const struct http_parser *p, const uint8_t *d, size_t len)
{
	size_t i = 0;

	if (p->dir == HTTP_RESPONSE) {
		size_t n = len < 7 ? len : 7;

		return memcmp(d, VERSION_PREFIX, n) == 0;
	}
	while (i < len && i < HTTP_METHOD_MAX && d[i] >= 'A' && d[i] <= 'Z')
		i++;
	return i && (i == len || d[i] == ' ');
}

/*
 * A gap ran past the end of the chunk whose length was known, or cut a chunk-size line: where
 * the next chunk starts is unknown, and so are these len bytes (data and framing). Servers
 * write whole chunks per syscall (uvicorn's writev of queued events, Node's writev per event,
 * cpp-httplib's send per chunk), so the next feed most likely starts at a chunk boundary:
 * wait for it rather than abandon the message. The bytes go to the body parsers as a gap, so
 * that what they were building is flagged cut.
 */
static void chunk_resync_wait(struct http_parser *p, uint64_t len)
{
	if (p->cb.on_body_gap)
		p->cb.on_body_gap(p->ud, len);
	p->st = H_CHUNK_RESYNC;
}

/*
 * The first feed after such a gap: a chunk-size line resumes the body; a start line begins
 * the next message, so this one ended inside the gap; anything else loses sync.
 */
static void chunk_resync(struct http_parser *p, const uint8_t *d, size_t len)
{
	if (is_chunk_line(d, len)) {
		p->st = H_CHUNK_SIZE;
		p->chunk_size = 0;
		p->chunk_digits = 0;
		p->line_n = 0;
	} else if (!is_message_start(p, d, len)) {
		fail(p, "chunk framing lost in a gap");
	} else if (p->dir == HTTP_RESPONSE) {
		/* a server sends a response only after the previous one is whole */
		p->ended_in_gap = true;
		end_message(p);
		p->ended_in_gap = false;
	} else {
		/*
		 * A request's end is when it became runnable, and this one's is lost in the
		 * gap; its response has gone out since, before anyone knew the request was
		 * whole. Ending it now would time it, and pair it, with the request that
		 * follows: lose it instead, and read that next request from this feed's start.
		 */
		fail(p, "request end lost in a gap");
		p->st = H_IDLE;
		p->quiet = true;
	}
}

struct http_parser *http_parser__new(enum http_dir dir, const struct http_cb *cb, void *ud)
{
	struct http_parser *p;

	if (dir != HTTP_REQUEST && dir != HTTP_RESPONSE)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->dir = dir;
	if (cb)
		p->cb = *cb;
	p->ud = ud;
	p->st = H_IDLE;
	return p;
}

void http_parser__free(struct http_parser *p)
{
	if (!p)
		return;
	free(p->hbuf);
	free(p);
}

void http_parser__feed(struct http_parser *p, const uint8_t *data, size_t len)
{
	size_t i = 0;

	if (!p || !data || !len)
		return;
	/* servers start a message with a new syscall: the start of a feed is where to resync */
	if (p->st == H_LOST) {
		p->st = H_IDLE;
		p->quiet = true;
	} else if (p->st == H_CHUNK_RESYNC) {
		chunk_resync(p, data, len);
	}
	while (i < len) {
		switch (p->st) {
		case H_IDLE:
			/* RFC 9112 2.2: empty lines before a start line are ignored */
			if (data[i] == '\r' || data[i] == '\n') {
				i++;
				break;
			}
			start_head(p);
			/* fall through */
		case H_HEAD:
			i += feed_head(p, data + i, len - i);
			break;
		case H_BODY_LEN:
		case H_CHUNK_DATA: {
			uint64_t n = len - i;

			if (n > p->remain)
				n = p->remain;
			if (p->cb.on_body)
				p->cb.on_body(p->ud, data + i, (size_t)n);
			i += (size_t)n;
			p->remain -= n;
			if (p->remain)
				break;
			if (p->st == H_BODY_LEN)
				end_message(p);
			else
				p->st = H_DATA_CR;
			break;
		}
		case H_BODY_CLOSE:
			if (p->cb.on_body)
				p->cb.on_body(p->ud, data + i, len - i);
			i = len;
			break;
		case H_TUNNEL:
			if (p->cb.on_tunnel)
				p->cb.on_tunnel(p->ud, data + i, len - i);
			i = len;
			break;
		case H_LOST:
			i = len;
			break;
		default:
			chunk_byte(p, data[i++]);
			break;
		}
	}
}

void http_parser__gap(struct http_parser *p, uint64_t len)
{
	uint64_t n;

	if (!p || !len)
		return;
	switch (p->st) {
	case H_BODY_LEN:
		n = len < p->remain ? len : p->remain;
		if (p->cb.on_body_gap)
			p->cb.on_body_gap(p->ud, n);
		p->remain -= n;
		len -= n;
		if (p->remain)
			return;
		end_message(p);
		if (len && p->st == H_IDLE)
			fail(p, "gap at a message start");
		return;
	case H_BODY_CLOSE:
		if (p->cb.on_body_gap)
			p->cb.on_body_gap(p->ud, len);
		return;
	case H_CHUNK_DATA:
		n = len < p->remain ? len : p->remain;
		if (p->cb.on_body_gap)
			p->cb.on_body_gap(p->ud, n);
		p->remain -= n;
		len -= n;
		if (p->remain)
			return;
		/* the CRLF after chunk data is known by its length */
		p->st = H_DATA_CR;
		/* fall through */
	case H_DATA_CR:
		if (len && p->st == H_DATA_CR) {
			len--;
			p->st = H_DATA_LF;
		}
		/* fall through */
	case H_DATA_LF:
		if (len && p->st == H_DATA_LF) {
			len--;
			p->st = H_CHUNK_SIZE;
			p->chunk_size = 0;
			p->chunk_digits = 0;
			p->line_n = 0;
		}
		/* the gap runs on into chunks whose sizes it hid */
		if (len)
			chunk_resync_wait(p, len);
		return;
	case H_CHUNK_RESYNC:
		if (p->cb.on_body_gap)
			p->cb.on_body_gap(p->ud, len);
		return;
	case H_IDLE:
		fail(p, "gap at a message start");
		return;
	case H_HEAD:
		fail(p, "gap in a head");
		return;
	case H_TRAILER:
		fail(p, "gap in trailers");
		return;
	case H_LOST:
	case H_TUNNEL:
		return;
	default:
		/* inside a chunk-size line: the chunk's size is unknown */
		chunk_resync_wait(p, len);
		return;
	}
}

void http_parser__eof(struct http_parser *p)
{
	if (!p)
		return;
	switch (p->st) {
	case H_BODY_CLOSE:
		end_message(p);
		break;
	case H_IDLE:
	case H_LOST:
	case H_TUNNEL:
		break;
	default:
		fail(p, "connection closed inside a message");
		break;
	}
	/* whatever comes next (nothing, on a closed connection) starts afresh */
	p->st = H_IDLE;
	p->quiet = false;
	p->hlen = 0;
	p->tunnel_next = false;
}

bool http_parser__ended_in_gap(const struct http_parser *p)
{
	return p && p->ended_in_gap;
}

bool http_parser__in_message(const struct http_parser *p)
{
	if (!p)
		return false;
	switch (p->st) {
	case H_IDLE:
	case H_LOST:
	case H_TUNNEL:
		return false;
	default:
		return true;
	}
}
