/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Proxies: a process that serves a stream and makes the upstream call for it (nginx, an LLM
 * gateway) gets the two paired, and its own share of every token's delay.
 *
 * The rule: an upstream call (a client-direction request of the same process, finished
 * recently) belongs to a downstream request when the stream's own id matches (the proxy
 * passed the bytes through: the same chatcmpl-..., msg_...), else when the request id does
 * (X-Request-Id forwarded), else when it is the only call the process made between the
 * downstream request's read and its first token whose first token came before the
 * downstream's. Anything else stays unpaired: reported alone, never guessed.
 */
#ifndef TT_PROXY_H
#define TT_PROXY_H

#include "request.h"

enum pair_by {
	PAIR_NONE,
	PAIR_STREAM_ID,
	PAIR_REQUEST_ID,
	PAIR_TIMING,
};

const char *pair_by_name(enum pair_by b);

struct proxy;

/* keep: upstream calls remembered for pairing (the oldest go first) */
struct proxy *proxy__new(unsigned keep);
void proxy__free(struct proxy *p);

/* An upstream call (r->client) finished. */
void proxy__upstream(struct proxy *p, const struct tt_request *r);

/* A downstream request finished: pair it with its upstream call if one is found (r->up). */
void proxy__pair(struct proxy *p, struct tt_request *r);

#endif /* TT_PROXY_H */
