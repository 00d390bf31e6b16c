/* SPDX-License-Identifier: MIT */
/* A growable byte buffer with the few appenders the wire formats need. */
#ifndef TS_STRBUF_H
#define TS_STRBUF_H

#include <stddef.h>
#include <stdint.h>

struct strbuf {
	char *buf;
	size_t len;
	size_t cap;
};

#define STRBUF_INIT { NULL, 0, 0 }

void sb_free(struct strbuf *sb);
static inline void sb_reset(struct strbuf *sb)
{
	sb->len = 0;
}
void sb_grow(struct strbuf *sb, size_t extra);
void sb_add(struct strbuf *sb, const void *p, size_t n);
void sb_adds(struct strbuf *sb, const char *s);
void sb_addc(struct strbuf *sb, char c);
void sb_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_add_u64(struct strbuf *sb, uint64_t v);
void sb_fill(struct strbuf *sb, char c, size_t n);
/* s as a quoted JSON string, escaped (bytes >= 0x80 pass through: UTF-8 stays UTF-8). */
void sb_add_json_str(struct strbuf *sb, const char *s, size_t n);
/* NUL-terminates without counting the NUL in len. */
const char *sb_cstr(struct strbuf *sb);

#endif
