// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "util.h"

/* Next line of buf[*pos..len): bare LF accepted as well as CRLF. */
static bool next_line(const char *buf, size_t len, size_t *pos, const char **line, size_t *l)
{
	const char *nl = memchr(buf + *pos, '\n', len - *pos);

	if (!nl)
		return false;
	*line = buf + *pos;
	*l = (size_t)(nl - *line);
	if (*l && (*line)[*l - 1] == '\r')
		(*l)--;
	*pos = (size_t)(nl - buf) + 1;
	return true;
}

static bool has_token(const char *v, size_t n, const char *tok)
{
	size_t tl = strlen(tok);

	for (size_t i = 0; i + tl <= n; i++) {
		bool starts = i == 0 || v[i - 1] == ' ' || v[i - 1] == ',';
		bool ends = i + tl == n || v[i + tl] == ' ' || v[i + tl] == ',';

		if (starts && ends && !strncasecmp(v + i, tok, tl))
			return true;
	}
	return false;
}

static int parse_request_line(const char *l, size_t n, struct http_req *r)
{
	const char *sp1 = memchr(l, ' ', n), *sp2;
	size_t ml, tl;

	if (!sp1)
		return -400;
	sp2 = memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - l));
	if (!sp2)
		return -400;
	ml = (size_t)(sp1 - l);
	tl = (size_t)(sp2 - sp1 - 1);
	if (!ml || ml >= sizeof(r->method) || !tl)
		return -400;
	memcpy(r->method, l, ml);
	r->method[ml] = '\0';
	if (tl >= sizeof(r->target))
		return -414;
	memcpy(r->target, sp1 + 1, tl);
	r->target[tl] = '\0';
	for (size_t i = 0; i < ml; i++)
		if (!isupper((unsigned char)r->method[i]))
			return -400;
	for (size_t i = 0; i < tl; i++)
		if ((unsigned char)r->target[i] <= ' ' || r->target[i] == 0x7f)
			return -400;
	n -= (size_t)(sp2 + 1 - l);
	l = sp2 + 1;
	if (n == 8 && !memcmp(l, "HTTP/1.1", 8))
		r->keep_alive = true;
	else if (n == 8 && !memcmp(l, "HTTP/1.0", 8))
		r->http10 = true;
	else if (n >= 5 && !memcmp(l, "HTTP/", 5))
		return -505;
	else
		return -400;
	return 0;
}

static int parse_header(const char *l, size_t n, struct http_req *r)
{
	const char *colon = memchr(l, ':', n);
	const char *v;
	size_t nl, vl;

	if (!colon || colon == l)
		return -400;
	nl = (size_t)(colon - l);
	for (size_t i = 0; i < nl; i++)
		if (l[i] == ' ' || l[i] == '\t')
			return -400; /* no space before the colon (RFC 9112 5.1) */
	v = colon + 1;
	vl = n - nl - 1;
	while (vl && (*v == ' ' || *v == '\t'))
		v++, vl--;
	while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
		vl--;
	for (size_t i = 0; i < vl; i++)
		if ((unsigned char)v[i] < 0x20 && v[i] != '\t')
			return -400;

#define IS(name) (nl == sizeof(name) - 1 && !strncasecmp(l, name, nl))
	if (IS("content-length")) {
		long long cl = 0;

		if (!vl || r->content_length >= 0)
			return -400;
		for (size_t i = 0; i < vl; i++) {
			if (!isdigit((unsigned char)v[i]))
				return -400;
			cl = cl * 10 + (v[i] - '0');
			if (cl > HTTP_MAX_BODY)
				return -413;
		}
		r->content_length = cl;
	} else if (IS("transfer-encoding")) {
		/* chunked must be the last coding; we implement no other. */
		if (vl == 7 && !strncasecmp(v, "chunked", 7))
			r->chunked = true;
		else
			return -501;
	} else if (IS("connection")) {
		if (has_token(v, vl, "close"))
			r->keep_alive = false;
		else if (has_token(v, vl, "keep-alive"))
			r->keep_alive = true;
	} else if (IS("expect")) {
		if (vl == 12 && !strncasecmp(v, "100-continue", 12))
			r->expect_continue = true;
	} else if (IS("x-request-id")) {
		if (vl > TS_RID_MAX)
			vl = TS_RID_MAX;
		memcpy(r->rid, v, vl);
		r->rid[vl] = '\0';
	}
#undef IS
	return 0;
}

int http_parse_head(const char *buf, size_t len, struct http_req *r)
{
	size_t pos = 0, n;
	const char *line;
	int err;

	memset(r, 0, sizeof(*r));
	r->content_length = -1;
	/* Tolerate empty lines before a request (RFC 9112 2.2). */
	while (pos < len && (buf[pos] == '\r' || buf[pos] == '\n'))
		pos++;
	if (!next_line(buf, len, &pos, &line, &n))
		return len > HTTP_MAX_HEAD ? -431 : 0;
	err = parse_request_line(line, n, r);
	if (err)
		return err;
	for (;;) {
		if (!next_line(buf, len, &pos, &line, &n))
			return len > HTTP_MAX_HEAD ? -431 : 0;
		if (pos > HTTP_MAX_HEAD)
			return -431;
		if (!n)
			break;
		err = parse_header(line, n, r);
		if (err)
			return err;
	}
	if (r->chunked && r->content_length >= 0)
		return -400; /* both: a smuggling attempt, refuse (RFC 9112 6.1) */
	r->head_len = pos;
	return 1;
}

static int parse_chunked(const char *buf, size_t len, struct http_req *r)
{
	size_t pos = r->head_len, n, total = 0;
	const char *line;

	/* First pass: find the end and the decoded size without copying. */
	for (;;) {
		unsigned long long sz = 0;
		size_t i;

		if (!next_line(buf, len, &pos, &line, &n))
			return 0;
		for (i = 0; i < n && isxdigit((unsigned char)line[i]); i++) {
			sz = sz * 16 + (unsigned)(isdigit((unsigned char)line[i]) ?
							  line[i] - '0' :
							  (line[i] | 0x20) - 'a' + 10);
			if (sz > HTTP_MAX_BODY)
				return -413;
		}
		if (!i || (i < n && line[i] != ';' && line[i] != ' ' && line[i] != '\t'))
			return -400;
		if (!sz)
			break;
		if (len - pos < sz + 2)
			return 0;
		total += sz;
		if (total > HTTP_MAX_BODY)
			return -413;
		pos += sz;
		if (buf[pos] == '\r')
			pos++;
		if (buf[pos] != '\n')
			return -400;
		pos++;
	}
	/* Trailer section, ends with an empty line. */
	do {
		if (!next_line(buf, len, &pos, &line, &n))
			return 0;
	} while (n);

	r->total_len = pos;
	r->body = xmalloc(total + 1);
	r->body_len = 0;
	pos = r->head_len;
	for (;;) {
		size_t sz;

		next_line(buf, len, &pos, &line, &n);
		sz = strtoull(line, NULL, 16);
		if (!sz)
			break;
		memcpy(r->body + r->body_len, buf + pos, sz);
		r->body_len += sz;
		pos += sz;
		pos += buf[pos] == '\r' ? 2 : 1;
	}
	r->body[r->body_len] = '\0';
	return 1;
}

int http_parse_body(const char *buf, size_t len, struct http_req *r)
{
	size_t cl;

	if (r->chunked)
		return parse_chunked(buf, len, r);
	cl = r->content_length > 0 ? (size_t)r->content_length : 0;
	if (len - r->head_len < cl)
		return 0;
	r->body = xmalloc(cl + 1);
	memcpy(r->body, buf + r->head_len, cl);
	r->body[cl] = '\0';
	r->body_len = cl;
	r->total_len = r->head_len + cl;
	return 1;
}

void http_req_free(struct http_req *r)
{
	free(r->body);
	r->body = NULL;
}
