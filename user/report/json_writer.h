/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One small JSON writer for every JSON tokentrace prints (requests, summaries, errors,
 * metadata): objects are built in a reusable buffer and written as one line. Strings from the
 * wire are escaped and made valid UTF-8 (invalid bytes become U+FFFD); controls, C1 included,
 * are escaped as \uNNNN.
 */
#ifndef TT_JSON_WRITER_H
#define TT_JSON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "vec.h"

#define JW_DEPTH_MAX	16

struct jw {
	struct buf b;
	int depth;
	bool first[JW_DEPTH_MAX];	/* no member written yet at this depth */
	bool after_key;
	bool oom;
};

void jw__init(struct jw *w);
void jw__free(struct jw *w);
void jw__reset(struct jw *w);

void jw__obj_open(struct jw *w);
void jw__obj_close(struct jw *w);
void jw__arr_open(struct jw *w);
void jw__arr_close(struct jw *w);
void jw__key(struct jw *w, const char *key);

void jw__str(struct jw *w, const char *s);
void jw__strn(struct jw *w, const char *s, size_t n);
void jw__u64(struct jw *w, uint64_t v);
void jw__i64(struct jw *w, int64_t v);
void jw__f64(struct jw *w, double v);	/* %.6g; NaN and infinities as null */
void jw__bool(struct jw *w, bool v);
void jw__null(struct jw *w);

/* key + value in one call */
void jw__kstr(struct jw *w, const char *key, const char *s);
void jw__ku64(struct jw *w, const char *key, uint64_t v);
void jw__ki64(struct jw *w, const char *key, int64_t v);
void jw__kf64(struct jw *w, const char *key, double v);
void jw__kbool(struct jw *w, const char *key, bool v);
void jw__knull(struct jw *w, const char *key);

/* Bytes as they are, inside a value the caller began (a number's decimals). */
void jw__raw(struct jw *w, const char *s, size_t n);

/* Write the buffer and a newline to f, then reset. */
int jw__flush_line(struct jw *w, FILE *f);
const char *jw__data(const struct jw *w);	/* NUL-terminated */

#endif /* TT_JSON_WRITER_H */
