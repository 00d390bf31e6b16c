// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "util.h"

void sb_free(struct strbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->cap = 0;
}

void sb_grow(struct strbuf *sb, size_t extra)
{
	size_t need = sb->len + extra + 1;

	if (need <= sb->cap)
		return;
	if (need < 2 * sb->cap)
		need = 2 * sb->cap;
	if (need < 256)
		need = 256;
	sb->buf = xrealloc(sb->buf, need);
	sb->cap = need;
}

void sb_add(struct strbuf *sb, const void *p, size_t n)
{
	sb_grow(sb, n);
	memcpy(sb->buf + sb->len, p, n);
	sb->len += n;
}

void sb_adds(struct strbuf *sb, const char *s)
{
	sb_add(sb, s, strlen(s));
}

void sb_addc(struct strbuf *sb, char c)
{
	sb_grow(sb, 1);
	sb->buf[sb->len++] = c;
}

void sb_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	sb_grow(sb, 64);
	va_start(ap, fmt);
	n = vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		die("vsnprintf failed");
	if ((size_t)n >= sb->cap - sb->len) {
		sb_grow(sb, (size_t)n);
		va_start(ap, fmt);
		vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
		va_end(ap);
	}
	sb->len += (size_t)n;
}

void sb_add_u64(struct strbuf *sb, uint64_t v)
{
	char tmp[24];
	int i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	sb_add(sb, tmp + i, sizeof(tmp) - (size_t)i);
}

void sb_fill(struct strbuf *sb, char c, size_t n)
{
	sb_grow(sb, n);
	memset(sb->buf + sb->len, c, n);
	sb->len += n;
}

void sb_add_json_str(struct strbuf *sb, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	sb_grow(sb, n + 2);
	sb_addc(sb, '"');
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		switch (c) {
		case '"':
			sb_add(sb, "\\\"", 2);
			break;
		case '\\':
			sb_add(sb, "\\\\", 2);
			break;
		case '\n':
			sb_add(sb, "\\n", 2);
			break;
		case '\r':
			sb_add(sb, "\\r", 2);
			break;
		case '\t':
			sb_add(sb, "\\t", 2);
			break;
		default:
			if (c < 0x20) {
				char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };

				sb_add(sb, e, sizeof(e));
			} else {
				sb_addc(sb, (char)c);
			}
		}
	}
	sb_addc(sb, '"');
}

const char *sb_cstr(struct strbuf *sb)
{
	sb_grow(sb, 0);
	sb->buf[sb->len] = '\0';
	return sb->buf;
}
