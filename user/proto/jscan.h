/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Allocation-free JSON scanner for the small JSON objects LLM servers stream, which may be
 * cut short by the capture size: it walks the text once and calls a visitor for every value
 * with the path that leads to it, and says whether the text was complete, cut, or malformed.
 * Values seen before a cut are reported; nothing after it is guessed.
 */
#ifndef TT_JSCAN_H
#define TT_JSCAN_H

#include <stdbool.h>
#include <stddef.h>

#define JSCAN_DEPTH_MAX	32	/* deeper text is reported as JSCAN_ERROR */

enum jscan_type {
	JS_STRING,	/* raw: between the quotes, escapes not decoded */
	JS_NUMBER,	/* raw: the number's text */
	JS_TRUE,
	JS_FALSE,
	JS_NULL,
	JS_OBJECT,	/* reported when opened; its members follow with a longer path */
	JS_ARRAY,	/* reported when opened; raw_len is 0 */
};

/* One step of a path: an object member (key) or an array element (index >= 0). */
struct jscan_step {
	const char *key;	/* raw key text, escapes not decoded; NULL for array elements */
	size_t key_len;
	int index;		/* array element index, or -1 for object members */
};

struct jscan_path {
	int depth;		/* steps in use; 0 is the top-level value itself */
	struct jscan_step step[JSCAN_DEPTH_MAX];
};

struct jscan_value {
	enum jscan_type type;
	const char *raw;
	size_t raw_len;
	bool cut;		/* a string or number that the end of the text cut short */
};

/* Return non-zero to stop the walk early (jscan__walk() then returns JSCAN_STOPPED). */
typedef int (*jscan_visit_fn)(void *ud, const struct jscan_path *path,
			      const struct jscan_value *v);

enum jscan_result {
	JSCAN_OK = 0,		/* one complete JSON value (surrounding whitespace allowed) */
	JSCAN_CUT = 1,		/* the text ended inside the value */
	JSCAN_ERROR = 2,	/* malformed (or trailing garbage, or too deep) */
	JSCAN_STOPPED = 3,	/* the visitor asked to stop */
};

enum jscan_result jscan__walk(const char *text, size_t len, jscan_visit_fn visit, void *ud);

/*
 * Does path match the pattern? The pattern is a NULL-terminated list of keys, where "*"
 * matches any array index and "**" any run of zero or more steps. Example:
 *   jscan__path_match(p, "choices", "*", "delta", "content", NULL)
 */
bool jscan__path_match(const struct jscan_path *path, ...);

/* The last step's key equals key (exact, raw). False for array elements and depth 0. */
bool jscan__key_is(const struct jscan_path *path, const char *key);

/*
 * Decode a JS_STRING's raw text (escapes, \uXXXX with surrogate pairs to UTF-8) into out,
 * NUL-terminated and cut to fit outsz. Returns the decoded length before cutting.
 */
size_t jscan__string(const struct jscan_value *v, char *out, size_t outsz);

/* A JS_NUMBER (or a cut one) as an integer; false if not an integer in range. */
bool jscan__int(const struct jscan_value *v, long long *out);

#endif /* TT_JSCAN_H */
