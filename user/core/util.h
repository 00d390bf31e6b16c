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
bool strlcpy_cut(char *dst, size_t sz, const char *src);
bool strncpy_cut(char *dst, size_t sz, const char *src, size_t n);

/*
 * Strings from the wire, a traced process or a recording are untrusted: a request path can
 * hold terminal control sequences, a model name invalid UTF-8. Each output kind escapes them
 * with its own one function: esc_term() here for terminals and stderr, the JSON writer's for
 * --json and --perfetto, the metrics output's for Prometheus labels.
 */

/* Length of the valid UTF-8 sequence at s (at most n bytes) and its code point; 0 if invalid
 * (overlong forms, surrogates and values past U+10FFFF included). */
size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp);
/* Code points a display must not get raw: C0, DEL, C1 (U+0080-U+009F, CSI among them), the
 * line and paragraph separators and the bidirectional overrides that reorder what follows. */
bool cp_is_control(uint32_t cp);
/*
 * Code points a display shows as nothing, so that text can hide in them or two strings look
 * the same: Unicode's default-ignorables (zero-width spaces and joiners U+200B-U+200F, word
 * joiner and invisible operators U+2060-U+206F, BOM U+FEFF, soft hyphen, Hangul fillers,
 * variation selectors, the TAG characters U+E0000-U+E007F and the rest of U+E0000-U+E0FFF)
 * and the interlinear annotation marks U+FFF9-U+FFFB. An emoji's joiner or presentation
 * selector is one of them: a terminal shows it escaped, the emoji's parts apart.
 */
bool cp_is_invisible(uint32_t cp);
/*
 * For a terminal: src[0..n) with C0, DEL and invalid UTF-8 bytes as \xNN, other controls
 * (C1, bidi) and invisible code points as \uNNNN (\UNNNNNNNN past U+FFFF), a backslash as
 * \\; printable UTF-8 kept. dst is NUL-terminated and cut at an escape boundary; true if
 * something was left out.
 */
bool esc_term(char *dst, size_t sz, const char *src, size_t n);
/* A user's argument for an error message: escaped as esc_term() and cut to ARG_QUOTE_MAX - 1
 * bytes, "..." marking a cut. Returns dst. */
#define ARG_QUOTE_MAX	100
const char *arg_quote(char dst[ARG_QUOTE_MAX], const char *s);

/* A request path as outputs show it: the query string (?...) and fragment dropped, since they
 * carry API keys and tokens, unless show_query. The length of what to show. */
size_t path_shown_len(const char *path, bool show_query);

/*
 * Create an output file for writing (-w, --perfetto: every file tokentrace writes), safely
 * when its directory is writable by others:
 *   - a new file is created exclusively (O_EXCL), mode 0600;
 *   - a symbolic link there is never followed: refused, or with force replaced by the file;
 *   - an existing regular file (or FIFO) is replaced only when it is the caller's (or with
 *     force), by a new 0600 file renamed over it, so its inode, its owner and its other hard
 *     links are left as they were;
 *   - a character device (/dev/null, /dev/full) is written as it is.
 * Returns the fd, or -errno with a one-line reason in why (what to do included).
 */
#define SAFE_FORCE	0x1
int safe_create(const char *path, unsigned int flags, char *why, size_t whysz);

#endif /* TT_UTIL_H */
