/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One direction's HTTP/2 frame reader, internal to h2.c: the connection preface, 9-byte frame
 * headers checked against the bounds, each frame's leading fields (pad length, priority,
 * promised stream) and padding taken off, the rest handed on as it arrives; resync on a
 * plausible chain of frame headers when out of sync.
 */
#ifndef TT_H2_FRAME_H
#define TT_H2_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "h2.h"

#define H2_FLAG_END_STREAM	0x01
#define H2_FLAG_ACK		0x01
#define H2_FLAG_END_HEADERS	0x04
#define H2_FLAG_PADDED		0x08
#define H2_FLAG_PRIORITY	0x20
#define H2_CTL_MAX		8	/* a control frame's bytes kept: GOAWAY's fixed part */

struct h2_frame {
	uint32_t len;
	uint8_t type;		/* enum h2_frame_type, or an unknown type (>= H2_NTYPES) */
	uint8_t flags;
	uint32_t stream;
	/* known at begin() */
	uint8_t pad;		/* padding length */
	uint32_t promised;	/* PUSH_PROMISE */
	uint32_t body_len;	/* the payload less its leading fields and padding */
};

/*
 * What the reader reports. body() gets DATA bytes and header-block fragments; a SETTINGS
 * frame's parameters come one by one; end() gets the first H2_CTL_MAX bytes of a control
 * frame (RST_STREAM, PING, GOAWAY, WINDOW_UPDATE, PRIORITY). lost(): sync is lost, the
 * frame in progress (if any: begin() without end()) is abandoned.
 */
struct h2_frame_ops {
	void (*begin)(void *ud, enum h2_dir dir, const struct h2_frame *f);
	void (*body)(void *ud, enum h2_dir dir, const struct h2_frame *f, const uint8_t *b,
		     size_t len);
	void (*body_gap)(void *ud, enum h2_dir dir, const struct h2_frame *f, uint64_t len);
	void (*setting)(void *ud, enum h2_dir dir, uint16_t id, uint32_t value);
	void (*end)(void *ud, enum h2_dir dir, const struct h2_frame *f, const uint8_t *ctl,
		    size_t n);
	void (*lost)(void *ud, enum h2_dir dir, const char *why);
};

enum h2_rstate {
	R_PREFACE,	/* the client's connection preface */
	R_HEAD,		/* a frame header */
	R_LEAD,		/* pad length, priority, promised stream */
	R_PAYLOAD,	/* body and padding */
	R_LOST,		/* out of sync: look for frame headers */
};

struct h2_reader {
	enum h2_dir dir;
	const struct h2_frame_ops *ops;
	void *ud;
	enum h2_rstate st;
	unsigned n;			/* bytes into the preface, the header or the lead */
	uint8_t hdr[H2_FRAME_HEADER_LEN];
	uint8_t lead[10];
	unsigned lead_len;
	struct h2_frame f;
	uint32_t off;			/* payload bytes past the lead */
	uint8_t ctl[H2_CTL_MAX];
	unsigned nctl;
	uint8_t set[6];			/* a SETTINGS parameter in progress */
	unsigned nset;
	uint32_t max_len;		/* frame length bound */
	uint64_t dropped, resyncs;
};

void h2_reader__init(struct h2_reader *r, enum h2_dir dir, bool preface, bool joined,
		     const struct h2_frame_ops *ops, void *ud);
void h2_reader__feed(struct h2_reader *r, const uint8_t *d, size_t len);
void h2_reader__gap(struct h2_reader *r, uint64_t len);
/* Between frames (nothing owed to a frame in progress)? */
bool h2_reader__idle(const struct h2_reader *r);

/* Why this header cannot be a frame's, or NULL; strict: unknown types and flags too. */
const char *h2__check_header(const struct h2_frame *f, uint32_t max_len, bool strict);
void h2__parse_header(const uint8_t *b, struct h2_frame *f);

static inline uint32_t h2__be32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

#endif /* TT_H2_FRAME_H */
