/* SPDX-License-Identifier: MIT */
/*
 * A small, allocation-free JSON scanner: validate a document and find one
 * value by a dotted path ("stream_options.include_usage", "choices.0.text").
 * Enough for request bodies (tokensim) and streamed events (tokenload); it
 * never trusts its input and bounds nesting depth.
 */
#ifndef TS_JSON_H
#define TS_JSON_H

#include <stdbool.h>
#include <stddef.h>

enum json_type { JSON_NONE, JSON_NULL, JSON_BOOL, JSON_NUM, JSON_STR, JSON_ARR, JSON_OBJ };

struct json_val {
	enum json_type type;
	const char *p; /* JSON_STR: the raw bytes between the quotes; else the raw text */
	size_t n;
};

/* True if s[0..n) is exactly one JSON value, surrounded by optional whitespace. */
bool json_valid(const char *s, size_t n);

/*
 * Finds the value at path (keys separated by '.', array elements by their
 * index).  path "" is the whole document.  False when absent or malformed.
 */
bool json_get(const char *s, size_t n, const char *path, struct json_val *out);

/* Typed getters: false when absent or of another type (or not an integer). */
bool json_get_bool(const char *s, size_t n, const char *path, bool *out);
bool json_get_int(const char *s, size_t n, const char *path, long long *out);
bool json_get_str(const char *s, size_t n, const char *path, struct json_val *out);

/*
 * Unescapes string value v into out (at most outsz - 1 bytes, always
 * NUL-terminated; \u escapes become UTF-8).  Returns the full unescaped
 * length, which may exceed outsz - 1 (then out is truncated).
 */
size_t json_unescape(const struct json_val *v, char *out, size_t outsz);

#endif
