// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A complete HTTP head's start line and fields. See http_head.h. */
#include <string.h>
#include <strings.h>
#include "http_head.h"

static bool is_tchar(unsigned char c)
{
	/* RFC 9110 token characters */
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c);
}

/* Next line of a complete head, without its CR LF; false after the last one. */
static bool next_line(const char *b, size_t n, size_t *pos, const char **line, size_t *len)
{
	const char *nl;
	size_t l;

	if (*pos >= n)
		return false;
	nl = memchr(b + *pos, '\n', n - *pos);
	l = nl ? (size_t)(nl - (b + *pos)) : n - *pos;
	*line = b + *pos;
	*pos += l + (nl ? 1 : 0);
	if (l && (*line)[l - 1] == '\r')
		l--;
	*len = l;
	return true;
}

static bool name_is(const char *name, size_t len, const char *want)
{
	return strlen(want) == len && strncasecmp(name, want, len) == 0;
}

static void copy_value(char *dst, size_t dstsz, const char *v, size_t len, bool *trunc)
{
	size_t n = len < dstsz - 1 ? len : dstsz - 1;

	memcpy(dst, v, n);
	dst[n] = '\0';
	if (trunc)
		*trunc = n < len;
}

/*
 * Calls fn for each comma-separated element of a header value, trimmed; elements are
 * compared case-insensitively by every user, as RFC 9110 lists are.
 */
static void for_each_token(const char *v, size_t len, void (*fn)(void *, const char *, size_t),
			   void *arg)
{
	size_t i = 0;

	while (i <= len) {
		size_t s = i, e;

		while (i < len && v[i] != ',')
			i++;
		e = i;
		while (s < e && (v[s] == ' ' || v[s] == '\t'))
			s++;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e > s)
			fn(arg, v + s, e - s);
		i++;
	}
}


static void conn_token(void *arg, const char *t, size_t n)
{
	struct head_flags *f = arg;

	if (name_is(t, n, "close"))
		f->conn_close = true;
	else if (name_is(t, n, "keep-alive"))
		f->conn_keep_alive = true;
}

static void upgrade_token(void *arg, const char *t, size_t n)
{
	struct http_head *h = arg;

	if (name_is(t, n, "h2c"))
		h->upgrade_h2c = true;
}

static void te_token(void *arg, const char *t, size_t n)
{
	struct head_flags *f = arg;

	/* only the last coding frames the message; "chunked, gzip" is not chunked framing */
	f->te_chunked = name_is(t, n, "chunked");
}

static void cl_token(void *arg, const char *t, size_t n)
{
	struct head_flags *f = arg;
	uint64_t v = 0;

	if (n == 0)
		f->cl_bad = true;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit((unsigned char)t[i]) || v > (UINT64_MAX - 9) / 10) {
			f->cl_bad = true;
			return;
		}
		v = v * 10 + (uint64_t)(t[i] - '0');
	}
	/* "Content-Length: 5, 5" or a repeated header is fine; differing values are not */
	if (f->cl && v != f->cl_val)
		f->cl_bad = true;
	f->cl = true;
	f->cl_val = v;
}

static const char *start_line(enum http_dir dir, const char *line, size_t len,
			      struct http_head *h)
{
	if (dir == HTTP_REQUEST) {
		const char *sp1 = memchr(line, ' ', len), *sp2;

		if (!sp1)
			return "bad request line";
		sp2 = memchr(sp1 + 1, ' ', len - (size_t)(sp1 + 1 - line));
		if (!sp2 || line + len - sp2 != 9)
			return "bad request line";
		copy_value(h->method, sizeof(h->method), line, (size_t)(sp1 - line), NULL);
		copy_value(h->path, sizeof(h->path), sp1 + 1, (size_t)(sp2 - sp1 - 1),
			   &h->path_trunc);
		h->version_minor = sp2[8] - '0';
		return NULL;
	}
	if (len < 12)
		return "bad status line";
	h->version_minor = line[7] - '0';
	h->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
	return NULL;
}

/* One field: the name nlen bytes long, its value trimmed. */
static void field(enum http_dir dir, const char *line, size_t nlen, const char *v, size_t vlen,
		  struct http_head *h, struct head_flags *f)
{
	if (name_is(line, nlen, "content-length")) {
		for_each_token(v, vlen, cl_token, f);
		if (!f->cl)
			f->cl_bad = true;	/* an empty value */
	} else if (name_is(line, nlen, "transfer-encoding")) {
		f->te = true;
		for_each_token(v, vlen, te_token, f);
	} else if (name_is(line, nlen, "connection")) {
		for_each_token(v, vlen, conn_token, f);
	} else if (name_is(line, nlen, "x-request-id")) {
		if (!h->request_id[0])
			copy_value(h->request_id, sizeof(h->request_id), v, vlen, NULL);
	} else if (name_is(line, nlen, "host")) {
		if (dir == HTTP_REQUEST && !h->host[0])
			copy_value(h->host, sizeof(h->host), v, vlen, NULL);
	} else if (name_is(line, nlen, "traceparent")) {
		if (dir == HTTP_REQUEST && !h->traceparent[0])
			copy_value(h->traceparent, sizeof(h->traceparent), v, vlen, NULL);
	} else if (name_is(line, nlen, "content-type")) {
		if (!h->content_type[0])
			copy_value(h->content_type, sizeof(h->content_type), v, vlen, NULL);
	} else if (name_is(line, nlen, "upgrade")) {
		for_each_token(v, vlen, upgrade_token, h);
	} else if (name_is(line, nlen, "http2-settings")) {
		if (dir == HTTP_REQUEST)
			copy_value(h->http2_settings, sizeof(h->http2_settings), v, vlen, NULL);
	} else if (name_is(line, nlen, "expect")) {
		if (dir == HTTP_REQUEST && name_is(v, vlen, "100-continue"))
			h->expect_continue = true;
	}
}

const char *http_head__parse(enum http_dir dir, const char *b, size_t n, struct http_head *h,
			     struct head_flags *f)
{
	const char *line, *why;
	size_t pos = 0, len;

	memset(h, 0, sizeof(*h));
	memset(f, 0, sizeof(*f));
	h->dir = dir;
	if (!next_line(b, n, &pos, &line, &len))
		return "empty head";
	why = start_line(dir, line, len, h);
	if (why)
		return why;
	while (next_line(b, n, &pos, &line, &len) && len) {
		const char *colon, *v;
		size_t nlen, vlen;

		/* obs-fold: RFC 9112 lets a recipient reject it, and no LLM server sends it */
		if (line[0] == ' ' || line[0] == '\t')
			return "header folding";
		colon = memchr(line, ':', len);
		if (!colon || colon == line)
			return "bad header line";
		nlen = (size_t)(colon - line);
		for (size_t i = 0; i < nlen; i++)
			if (!is_tchar((unsigned char)line[i]))
				return "bad header line";
		v = colon + 1;
		vlen = len - nlen - 1;
		while (vlen && (*v == ' ' || *v == '\t')) {
			v++;
			vlen--;
		}
		while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
			vlen--;
		field(dir, line, nlen, v, vlen, h, f);
	}
	return NULL;
}
