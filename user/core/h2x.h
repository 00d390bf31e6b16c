/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * HTTP/2 on a connection (h2_exchange.c, h2_body.c): a request is a stream. Each stream gets
 * the record an HTTP/1.1 exchange gets (request.h), from its request's HEADERS to the end of
 * its response: the client's END_STREAM starts TTFT, every token of its response body (an SSE
 * event, an NDJSON line, a gRPC message) is timed by the send that completed it, and it ends
 * complete at the server's END_STREAM or aborted at a reset, a GOAWAY or the connection's
 * close. The correlator's other files see the connection through this API only; conn.h
 * includes it.
 *
 * Directions: HTTP/2's client is the side requests go from (conn.h, req_dir()): a server's
 * reads, a client's sends (the target's outbound calls).
 */
#ifndef TT_H2X_H
#define TT_H2X_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "h2.h"
#include "request.h"

struct conn;
struct h2x;

/* k is HTTP/2 from now on (k->h2): its bytes go to h2x_feed(). -1: out of memory. */
int h2x_start(struct conn *k, enum h2_start start);
/*
 * A 101 to h2c answered the request at the head of k's queue (response.c): that request
 * becomes stream 1's, and HTTP/2 starts (H2_START_UPGRADE).
 */
void h2x_upgrade(struct conn *k);
/* Bytes of a record in direction dir (TT_DIR_*); len bytes after them were not captured. */
void h2x_feed(struct conn *k, int dir, const uint8_t *data, size_t len);
void h2x_gap(struct conn *k, int dir, uint64_t len);
/* The connection is closing (k->tcp.closing says who): its open streams end. */
void h2x_eof(struct conn *k);
/*
 * Records of k were dropped, or left out (--budget): its streams in flight end, reported
 * lost; what comes next is read as a connection joined mid-way.
 */
void h2x_lost(struct conn *k);
void h2x_free(struct conn *k);

bool h2x_busy(const struct conn *k);
/* Each request in flight: streaming once its response's head came. */
void h2x_foreach(const struct conn *k, void (*fn)(void *ud, struct tt_request *r, bool streaming),
		 void *ud);
/* correlator__arm_at() over k's streams */
uint64_t h2x_arm_at(struct conn *k, uint64_t now_ns, uint64_t floor);

#endif /* TT_H2X_H */
