/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * HPACK (RFC 7541) header-block decoder for one direction of one HTTP/2 connection, keeping
 * only the fields a request record needs.
 *
 * HPACK state is per direction and per connection, and every header block must be fed, in
 * order, whole: a block missed or cut leaves the dynamic table wrong for every later block.
 * Blocks arrive in pieces (a HEADERS frame's fragment, its CONTINUATIONs, each maybe split
 * across sends); they are fed as they come between hpack_decoder__begin() and __end().
 *
 * Two ways to decode:
 *   exact    a decoder that saw the connection from its first block: libnghttp2's inflater
 *            (nghttp2_hd_inflate_hd2), fed each piece at once, knows every field.
 *   partial  a decoder joined mid-connection (the tracer attached while it was open), or one
 *            whose inflater failed (a gap inside a block, corrupt bytes: the inflater is then
 *            unusable, "poisoned"): the dynamic table's older entries are unknown. Blocks are
 *            walked representation by representation: static-table references and literals
 *            decode (strings through a scratch nghttp2 inflater that never indexes), and so do
 *            references to entries inserted since the decoder lost track, which it learns;
 *            every other reference is counted unknown. A block may then lack a field that was
 *            really sent: with unknown > 0, an absent field is HPACK_UNKNOWN, not HPACK_ABSENT.
 * A decoder that fails goes partial for good: its connection's later blocks are never
 * decoded against a table that may be wrong, and no other decoder is touched.
 *
 * Memory: the inflater's table (bounded by SETTINGS_HEADER_TABLE_SIZE), a partial decoder's
 * block buffer (HPACK_BLOCK_MAX) and learned entries (HPACK_LEARN_MAX); learned entries keep
 * the kept fields' values alone, so authorization and cookie values are never stored
 * outside the inflater that must hold them.
 */
#ifndef TT_HPACK_H
#define TT_HPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"

#define HPACK_BLOCK_MAX		65536	/* a partial decoder's whole-block buffer */
#define HPACK_LEARN_MAX		1024	/* entries a partial decoder learns */
#define HPACK_GRPC_MSG_MAX	128
#define HPACK_TRACEPARENT_MAX	64	/* "00-<32 hex>-<16 hex>-<2 hex>" is 55 */
#define HPACK_TE_MAX		16
#define HPACK_DEFAULT_TABLE	4096	/* SETTINGS_HEADER_TABLE_SIZE until a peer says */

/* The fields kept, by key. */
enum hpack_key {
	HPACK_METHOD,		/* :method */
	HPACK_PATH,		/* :path */
	HPACK_STATUS,		/* :status */
	HPACK_AUTHORITY,	/* :authority, or host */
	HPACK_CONTENT_TYPE,
	HPACK_TE,
	HPACK_GRPC_STATUS,
	HPACK_GRPC_MESSAGE,	/* as sent: percent-encoded */
	HPACK_REQUEST_ID,	/* x-request-id */
	HPACK_TRACEPARENT,
	HPACK_NKEYS,
	HPACK_OTHER = HPACK_NKEYS,	/* any other name: not kept */
};

enum hpack_state {
	HPACK_ABSENT,		/* not in the block */
	HPACK_KNOWN,		/* in the block: its value is below */
	HPACK_UNKNOWN,		/* the block had fields that could not be decoded: maybe there */
};

/* The kept fields of one header block. Strings are NUL-terminated, cut to fit. */
struct hpack_fields {
	uint8_t state[HPACK_NKEYS];	/* enum hpack_state */
	uint16_t cut;			/* bit per key: the value was longer than kept */
	char method[HTTP_METHOD_MAX];
	char path[HTTP_PATH_MAX];
	int status;			/* 100..999 when known; 0 if not a number */
	char authority[HTTP_HOST_MAX];
	char content_type[HTTP_CTYPE_MAX];
	char te[HPACK_TE_MAX];
	int grpc_status;		/* -1 when not a number */
	char grpc_message[HPACK_GRPC_MSG_MAX];
	char request_id[HTTP_REQID_MAX];
	char traceparent[HPACK_TRACEPARENT_MAX];
	uint32_t fields;		/* fields in the block, decoded or not */
	uint32_t unknown;		/* ...of which these could not be decoded */
	bool partial;			/* decoded without the whole dynamic table */
	bool failed;			/* this block broke the decoder (it is partial from now) */
};

struct hpack_decoder;

/* joined: the connection was open before this decoder's first block (partial at once). */
struct hpack_decoder *hpack_decoder__new(bool joined);
void hpack_decoder__free(struct hpack_decoder *d);

/*
 * The decoding side's SETTINGS_HEADER_TABLE_SIZE, once the encoding side acknowledged it:
 * the most the encoder's table-size updates may ask for. Between blocks only.
 */
void hpack_decoder__set_max_table(struct hpack_decoder *d, uint32_t size);

void hpack_decoder__begin(struct hpack_decoder *d);
void hpack_decoder__feed(struct hpack_decoder *d, const uint8_t *frag, size_t len);
/* The block is whole: its kept fields into out (always filled, whatever happened). */
void hpack_decoder__end(struct hpack_decoder *d, struct hpack_fields *out);
/*
 * The block will never be whole (bytes of it were not captured, the connection closed
 * inside it): what it inserted into the table is unknown, so the decoder goes partial.
 */
void hpack_decoder__abandon(struct hpack_decoder *d);

/* True once the decoder no longer knows the whole table (joined, or failed since). */
bool hpack_decoder__partial(const struct hpack_decoder *d);

/* The key of a header name, HPACK_OTHER if it is not kept. */
enum hpack_key hpack__key(const char *name, size_t len);

#endif /* TT_HPACK_H */
