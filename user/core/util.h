/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef TT_UTIL_H
#define TT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define MIN(a, b)	((a) < (b) ? (a) : (b))
#define MAX(a, b)	((a) > (b) ? (a) : (b))

/* The one checked number parser: whole string, base 10, within [min, max]. 0 or -EINVAL. */
int parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* A non-negative decimal (seconds, ms...) within [min, max]. */
int parse_double(const char *s, double min, double max, double *out);

uint64_t now_mono_ns(void);
/* CLOCK_REALTIME ns of a CLOCK_MONOTONIC timestamp, by the offset taken at first use. */
uint64_t mono_to_wall_ns(uint64_t mono_ns);
/* REALTIME - MONOTONIC; a replay sets the recording's so wall times come out the same. */
int64_t wall_offset(void);
void set_wall_offset(int64_t off);
/* "HH:MM:SS.mmm" local time of a CLOCK_MONOTONIC timestamp. */
void fmt_clock(char *buf, size_t sz, uint64_t mono_ns);
/* A duration in a short human unit: "812us", "52.1ms", "1.20s". */
void fmt_dur(char *buf, size_t sz, uint64_t ns);

/* qsort comparator for uint64_t */
int cmp_u64(const void *a, const void *b);

/* Copy a string, cut to fit, always NUL-terminated. Returns true if it was cut. */
bool strlcpy_cut(char *dst, const char *src, size_t sz);
bool strncpy_cut(char *dst, size_t sz, const char *src, size_t n);

#endif /* TT_UTIL_H */
