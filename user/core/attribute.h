/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Marker attribution: which request a uprobe / USDT marker hit belongs to.
 *
 * A keyed marker (its request key read from an argument) goes to the request that showed the
 * same key (X-Request-Id, or the stream's own id); hits that come before their key are kept,
 * bounded, until it shows. An unkeyed marker goes to the one request that can own it: the
 * only one in its phase served by the marker's thread, else the only one in its phase in the
 * process; otherwise it is counted ambiguous and the candidates say so, never guessed.
 */
#ifndef TT_ATTRIBUTE_H
#define TT_ATTRIBUTE_H

#include <stdbool.h>
#include <stdint.h>
#include "events.h"
#include "request.h"

enum marker_kind {
	MK_ADMIT,	/* the scheduler accepted the request */
	MK_FIRST,	/* the first token was produced */
	MK_TOKEN,	/* a token (the first one too, unless a first marker exists) */
	MK_DONE,	/* generation finished */
	MK_NR,
};

const char *marker_kind_name(enum marker_kind k);

struct attrib_stats {
	uint64_t markers;		/* marker hits */
	uint64_t matched;		/* given to a request */
	uint64_t ambiguous;		/* unkeyed, several requests could own it: not given */
	uint64_t unmatched;		/* no request could own it (or its key never showed) */
	uint64_t pending_evicted;	/* keyed hits whose key had not shown when the bound hit */
};

/* The requests that could own an unkeyed marker: every one in flight. */
typedef void (*attrib_each_fn)(void *ud, struct tt_request *r);
typedef void (*attrib_foreach_fn)(void *src, attrib_each_fn fn, void *ud);

struct attributor;

struct attributor *attributor__new(attrib_foreach_fn foreach, void *src);
void attributor__free(struct attributor *a);

/* The kinds (enum marker_kind) of the markers, by their index in marker records. */
void attributor__set_markers(struct attributor *a, const uint8_t *kinds, int n);
/* Any markers at all: without them keys are not indexed. */
bool attributor__active(const struct attributor *a);

/* r is known under key (its request id, its stream id): pending hits with it apply now. */
void attributor__key_add(struct attributor *a, struct tt_request *r, const char *key);
/* r is finished: forget its keys. */
void attributor__forget(struct attributor *a, struct tt_request *r);

void attributor__hit(struct attributor *a, const struct tt_marker_ev *e);

const struct attrib_stats *attributor__stats(const struct attributor *a);

#endif /* TT_ATTRIBUTE_H */
