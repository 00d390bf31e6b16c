/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Incremental newline-delimited JSON splitter (Ollama's application/x-ndjson streams, and
 * any JSON-lines body). One line = one record; "\r\n" and "\n" both end a line; blank lines
 * are skipped. Kept line bytes are bounded (NDJSON_LINE_MAX) and flagged when cut; a gap
 * flags the line it falls in, and the next one if the gap may have hidden a line end. As
 * servers write a line per send, the line a gap falls in is dispatched at the gap (inside
 * ndjson_parser__gap(), flagged).
 */
#ifndef TT_NDJSON_H
#define TT_NDJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NDJSON_LINE_MAX	65536

struct ndjson_line {
	const char *text;	/* NUL-terminated, without the line end */
	size_t len;
	uint64_t total;		/* full length, kept or not */
	bool truncated;
};

struct ndjson_cb {
	void (*on_line)(void *ud, const struct ndjson_line *line);
};

struct ndjson_parser;

struct ndjson_parser *ndjson_parser__new(const struct ndjson_cb *cb, void *ud);
void ndjson_parser__free(struct ndjson_parser *p);
void ndjson_parser__reset(struct ndjson_parser *p);
void ndjson_parser__feed(struct ndjson_parser *p, const uint8_t *data, size_t len);
void ndjson_parser__gap(struct ndjson_parser *p, uint64_t len);
/* The body ended: a last line without "\n" is dispatched. */
void ndjson_parser__end(struct ndjson_parser *p);

#endif /* TT_NDJSON_H */
