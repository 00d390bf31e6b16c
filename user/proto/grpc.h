/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Incremental gRPC message framer for one direction of one stream: the DATA bytes of an
 * HTTP/2 stream (h2.h's on_data) are length-prefixed messages, a 1-byte compressed flag and
 * a 4-byte big-endian length before each (gRPC's PROTOCOL-HTTP2.md, "Length-Prefixed-
 * Message"). Messages and DATA frames do not align: a message may span frames and sends,
 * several may share one, and a prefix may itself be split. Payloads are not decoded (and not
 * kept): a message is reported, with its length, when its last byte is fed, so the caller
 * times it by the send or receive that completed it.
 *
 * Lengths are never used to size anything: nothing of a message is buffered. A gap inside a
 * message is skipped by length and flags it; a gap over a prefix, a flag byte other than 0
 * or 1, loses sync. Out of sync, and from the start for a stream joined mid-way, the framer
 * waits for a DATA frame's first byte (stacks start a message with a frame far more often
 * than not) and takes a plausible prefix there: flag 0 or 1, length within GRPC_RESYNC_MAX.
 */
#ifndef TT_GRPC_H
#define TT_GRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GRPC_PREFIX_LEN		5
#define GRPC_RESYNC_MAX		(16u << 20)	/* gRPC's default limit is 4 MiB */

struct grpc_message {
	bool compressed;
	uint32_t length;	/* payload bytes, prefix not counted */
	bool truncated;		/* bytes of it were not captured */
	bool resynced;		/* the first message after a resync: its start was a guess */
};

struct grpc_stats {
	uint64_t messages;
	uint64_t bytes;		/* payload bytes of the messages, captured or not */
	uint64_t dropped;	/* bytes dropped out of sync */
	uint64_t errors;
};

struct grpc_cb {
	void (*on_message)(void *ud, const struct grpc_message *m);
	/* sync lost; why is a short static string */
	void (*on_error)(void *ud, const char *why);
};

struct grpc_parser;

/* joined: the stream's first bytes were not seen (resync at the first frame start) */
struct grpc_parser *grpc_parser__new(const struct grpc_cb *cb, void *ud, bool joined);
void grpc_parser__free(struct grpc_parser *p);
/* DATA bytes; frame_start: they begin a DATA frame (h2_data.frame_start) */
void grpc_parser__feed(struct grpc_parser *p, const uint8_t *data, size_t len, bool frame_start);
void grpc_parser__gap(struct grpc_parser *p, uint64_t len);
/* The direction's stream ended: false if it ended inside a message (or out of sync). */
bool grpc_parser__end(struct grpc_parser *p);
const struct grpc_stats *grpc_parser__stats(const struct grpc_parser *p);

#endif /* TT_GRPC_H */
