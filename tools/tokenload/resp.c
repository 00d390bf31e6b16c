// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "json.h"
#include "resp.h"

/* Where each API puts a stream event's generated text, and its token count. */
static const char *const stream_text[] = {
	"choices.0.delta.content", /* OpenAI chat */
	"choices.0.text",	   /* OpenAI completions */
	"token.text",		   /* TGI */
	"delta.text",		   /* Anthropic content_block_delta */
	"message.content",	   /* Ollama chat */
	"response",		   /* Ollama generate */
	"content",		   /* llama.cpp */
};
static const char *const body_text[] = {
	"choices.0.message.content", "choices.0.text", "generated_text", "content.0.text",
	"message.content",	     "response",       "content",
};
static const char *const count_fields[] = {
	"usage.completion_tokens", "usage.output_tokens", "eval_count",
	"details.generated_tokens", "tokens_predicted",
};

void rp_init(struct rp *p, long chunk_limit, bool stop_at_final)
{
	memset(p, 0, sizeof(*p));
	p->tokens = -1;
	p->chunk_limit = chunk_limit;
	p->stop_at_final = stop_at_final;
}

bool rp_halted(const struct rp *p)
{
	return p->limit_hit || (p->final && p->stop_at_final);
}

void rp_free(struct rp *p)
{
	sb_free(&p->frame);
	sb_free(&p->line);
	sb_free(&p->data);
}

static void fail(struct rp *p, const char *why)
{
	if (p->state != RP_ERROR)
		p->error = why;
	p->state = RP_ERROR;
}

/* The stream's own end, whatever HTTP framing may still follow it. */
static bool is_final(const char *js, size_t n)
{
	struct json_val v;
	bool b;

	if (json_get_bool(js, n, "done", &b) && b)	/* Ollama */
		return true;
	if (json_get_bool(js, n, "stop", &b) && b)	/* llama.cpp /completion */
		return true;
	if (json_get_str(js, n, "type", &v))		/* Anthropic, Responses API */
		return (v.n == 12 && !memcmp(v.p, "message_stop", 12)) ||
		       (v.n == 18 && !memcmp(v.p, "response.completed", 18));
	return false;
}

static void count_chunk(struct rp *p)
{
	p->chunks++;
	if (p->chunk_limit >= 0 && p->chunks >= (unsigned long)p->chunk_limit)
		p->limit_hit = true;
}

/* One JSON document: an SSE event's data, an NDJSON line, or a whole body. */
static void classify(struct rp *p, const char *js, size_t n, bool stream)
{
	const char *const *text = stream ? stream_text : body_text;
	size_t ntext = stream ? sizeof(stream_text) / sizeof(*stream_text) :
				sizeof(body_text) / sizeof(*body_text);
	struct json_val v;
	long long ll;
	bool special;

	if (!json_valid(js, n)) {
		fail(p, "invalid JSON in the response");
		return;
	}
	if (stream && is_final(js, n))
		p->final = true;
	for (size_t i = 0; i < sizeof(count_fields) / sizeof(*count_fields); i++)
		if (json_get_int(js, n, count_fields[i], &ll))
			p->tokens = ll;
	if (json_get_bool(js, n, "token.special", &special) && special)
		return;
	for (size_t i = 0; i < ntext; i++) {
		if (json_get_str(js, n, text[i], &v)) {
			if (v.n)
				count_chunk(p);
			return;
		}
	}
}

static void sse_dispatch(struct rp *p)
{
	if (p->has_data && p->data.len == 6 && !memcmp(p->data.buf, "[DONE]", 6))
		p->final = true;
	else if (p->has_data)
		classify(p, p->data.buf, p->data.len, true);
	sb_reset(&p->data);
	p->has_data = false;
}

static void sse_line(struct rp *p, const char *l, size_t n)
{
	const char *colon, *v;
	size_t fl, vl;

	if (!n) {
		sse_dispatch(p);
		return;
	}
	if (l[0] == ':')
		return; /* comment: heartbeats */
	colon = memchr(l, ':', n);
	fl = colon ? (size_t)(colon - l) : n;
	v = colon ? colon + 1 : l + n;
	vl = n - (size_t)(v - l);
	if (vl && *v == ' ')
		v++, vl--;
	if (fl == 4 && !memcmp(l, "data", 4)) {
		if (p->has_data)
			sb_addc(&p->data, '\n');
		sb_add(&p->data, v, vl);
		p->has_data = true;
	}
	/* event:, id:, retry: change nothing we count. */
}

static void body_line(struct rp *p, const char *l, size_t n)
{
	if (n && l[n - 1] == '\r')
		n--;
	if (p->kind == BODY_SSE)
		sse_line(p, l, n);
	else if (n)
		classify(p, l, n, true);
}

/* Decoded body bytes; returns how many were taken (fewer when the limit hits). */
static size_t body_bytes(struct rp *p, const char *b, size_t n)
{
	size_t i = 0;

	if (p->kind == BODY_IGNORE)
		return n;
	if (p->kind == BODY_JSON) {
		sb_add(&p->data, b, n);
		return n;
	}
	while (i < n && p->state != RP_ERROR && !rp_halted(p)) {
		const char *nl = memchr(b + i, '\n', n - i);

		if (!nl) {
			sb_add(&p->line, b + i, n - i);
			return n;
		}
		if (p->line.len) {
			sb_add(&p->line, b + i, (size_t)(nl - (b + i)));
			body_line(p, p->line.buf, p->line.len);
			sb_reset(&p->line);
		} else {
			body_line(p, b + i, (size_t)(nl - (b + i)));
		}
		i = (size_t)(nl - b) + 1;
	}
	return i;
}

static void body_done(struct rp *p)
{
	if (p->kind == BODY_JSON && p->data.len) {
		classify(p, p->data.buf, p->data.len, false);
		p->final = p->state != RP_ERROR; /* a whole answer is its own end */
	}
	else if (p->kind == BODY_NDJSON && p->line.len)
		body_line(p, p->line.buf, p->line.len);
	if (p->state != RP_ERROR)
		p->state = RP_DONE;
}

static bool header_is(const char *l, size_t n, const char *name, const char **v, size_t *vl)
{
	size_t nl = strlen(name);

	if (n <= nl || l[nl] != ':' || strncasecmp(l, name, nl))
		return false;
	*v = l + nl + 1;
	*vl = n - nl - 1;
	while (*vl && (**v == ' ' || **v == '\t'))
		(*v)++, (*vl)--;
	return true;
}

static bool contains(const char *v, size_t vl, const char *word)
{
	size_t wl = strlen(word);

	for (size_t i = 0; i + wl <= vl; i++)
		if (!strncasecmp(v + i, word, wl))
			return true;
	return false;
}

/* The head is in p->frame, ending with an empty line. */
static void parse_head(struct rp *p)
{
	const char *h = p->frame.buf, *end = h + p->frame.len, *v;
	bool http10, ctype_sse = false, ctype_nd = false;
	size_t vl;

	p->body_left = -1;
	if (p->frame.len < 12 || memcmp(h, "HTTP/1.", 7) || h[8] != ' ') {
		fail(p, "bad status line");
		return;
	}
	http10 = h[7] == '0';
	p->status = atoi(h + 9);
	if (p->status < 100 || p->status > 599) {
		fail(p, "bad status code");
		return;
	}
	p->conn_close = http10;
	for (const char *l = memchr(h, '\n', (size_t)(end - h)) + 1; l < end;) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		size_t n = (size_t)(nl - l);

		if (n && l[n - 1] == '\r')
			n--;
		if (header_is(l, n, "content-length", &v, &vl)) {
			p->body_left = strtoll(v, NULL, 10);
		} else if (header_is(l, n, "transfer-encoding", &v, &vl)) {
			p->chunked = contains(v, vl, "chunked");
		} else if (header_is(l, n, "connection", &v, &vl)) {
			if (contains(v, vl, "close"))
				p->conn_close = true;
			else if (contains(v, vl, "keep-alive"))
				p->conn_close = false;
		} else if (header_is(l, n, "content-type", &v, &vl)) {
			ctype_sse = contains(v, vl, "text/event-stream");
			ctype_nd = contains(v, vl, "ndjson");
		}
		l = nl + 1;
	}
	sb_reset(&p->frame);
	if (p->status >= 100 && p->status < 200) {
		p->state = RP_HEAD; /* interim (100 Continue): the real head follows */
		return;
	}
	if (p->status < 200 || p->status > 299)
		p->kind = BODY_IGNORE;
	else
		p->kind = ctype_sse ? BODY_SSE : ctype_nd ? BODY_NDJSON : BODY_JSON;
	p->state = RP_BODY;
	if (p->chunk_limit == 0)
		p->limit_hit = true;
	if (p->chunked) {
		p->cstate = CH_SIZE;
	} else if (p->body_left < 0) {
		p->close_delim = true;
		p->conn_close = true;
	} else if (p->body_left == 0 || p->status == 204 || p->status == 304) {
		body_done(p);
	}
}

/* Head bytes: accumulate up to the empty line. */
static size_t feed_head(struct rp *p, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		sb_addc(&p->frame, b[i]);
		if (b[i] != '\n')
			continue;
		/* The head ends with an empty line: LF LF, or CRLF CRLF. */
		if ((p->frame.len >= 2 && p->frame.buf[p->frame.len - 2] == '\n') ||
		    (p->frame.len >= 4 && p->frame.buf[p->frame.len - 2] == '\r' &&
		     p->frame.buf[p->frame.len - 3] == '\n')) {
			parse_head(p);
			return i + 1;
		}
		if (p->frame.len > 65536) {
			fail(p, "response head too large");
			return i + 1;
		}
	}
	return n;
}

static size_t feed_chunked(struct rp *p, const char *b, size_t n)
{
	size_t i = 0, take;
	char *end;
	unsigned long long sz;

	while (i < n && p->state == RP_BODY && !rp_halted(p)) {
		switch (p->cstate) {
		case CH_DATA:
			take = n - i < p->chunk_left ? n - i : (size_t)p->chunk_left;
			take = body_bytes(p, b + i, take);
			i += take;
			p->chunk_left -= take;
			if (!p->chunk_left)
				p->cstate = CH_DATA_END;
			continue;
		default:
			break;
		}
		/* Line-oriented states: size line, CRLF after data, trailers. */
		sb_addc(&p->frame, b[i++]);
		if (p->frame.buf[p->frame.len - 1] != '\n') {
			if (p->frame.len > 1024)
				fail(p, "bad chunk framing");
			continue;
		}
		switch (p->cstate) {
		case CH_SIZE:
			sz = strtoull(sb_cstr(&p->frame), &end, 16);
			if (end == p->frame.buf || (*end != '\r' && *end != '\n' && *end != ';')) {
				fail(p, "bad chunk size");
				break;
			}
			p->chunk_left = sz;
			p->cstate = sz ? CH_DATA : CH_TRAILER;
			break;
		case CH_DATA_END:
			if (p->frame.len > 2 || (p->frame.len == 2 && p->frame.buf[0] != '\r'))
				fail(p, "chunk data longer than its size");
			p->cstate = CH_SIZE;
			break;
		case CH_TRAILER:
			if (p->frame.len <= 2)
				body_done(p);
			break;
		default:
			break;
		}
		sb_reset(&p->frame);
	}
	return i;
}

size_t rp_feed(struct rp *p, const char *b, size_t n)
{
	size_t i = 0, used;

	while (i < n && (p->state == RP_HEAD || p->state == RP_BODY) && !rp_halted(p)) {
		if (p->state == RP_HEAD) {
			used = feed_head(p, b + i, n - i);
		} else if (p->chunked) {
			used = feed_chunked(p, b + i, n - i);
		} else if (p->close_delim) {
			used = body_bytes(p, b + i, n - i);
		} else {
			used = n - i < (size_t)p->body_left ? n - i : (size_t)p->body_left;
			used = body_bytes(p, b + i, used);
			p->body_left -= (long long)used;
			if (!p->body_left)
				body_done(p);
		}
		i += used;
	}
	p->bytes += i;
	return i;
}

void rp_eof(struct rp *p)
{
	if (p->state == RP_BODY && p->close_delim)
		body_done(p);
	else if (p->state == RP_HEAD)
		fail(p, p->bytes ? "connection closed in the response head" :
				   "connection closed before a response");
	else if (p->state == RP_BODY)
		fail(p, "connection closed in the middle of the body");
}
