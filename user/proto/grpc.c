// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* gRPC message framer (grpc.h): five bytes of state and a count, nothing buffered. */
#include <stdlib.h>
#include <string.h>

#include "grpc.h"

enum gstate {
	G_PREFIX,	/* n bytes of a prefix */
	G_BODY,		/* remain bytes of a message */
	G_LOST,		/* waiting for a frame start */
};

struct grpc_parser {
	struct grpc_cb cb;
	void *ud;
	enum gstate st;
	uint8_t prefix[GRPC_PREFIX_LEN];
	unsigned n;
	uint64_t remain;
	struct grpc_message cur;
	bool next_resynced;
	struct grpc_stats stats;
};

static void lose(struct grpc_parser *p, const char *why)
{
	p->st = G_LOST;
	p->stats.errors++;
	if (p->cb.on_error)
		p->cb.on_error(p->ud, why);
}

static void message_done(struct grpc_parser *p)
{
	p->stats.messages++;
	p->st = G_PREFIX;
	p->n = 0;
	if (p->cb.on_message)
		p->cb.on_message(p->ud, &p->cur);
}

static void prefix_done(struct grpc_parser *p)
{
	if (p->prefix[0] > 1) {
		lose(p, "bad message prefix");
		return;
	}
	memset(&p->cur, 0, sizeof(p->cur));
	p->cur.compressed = p->prefix[0];
	p->cur.length = (uint32_t)p->prefix[1] << 24 | (uint32_t)p->prefix[2] << 16 |
			(uint32_t)p->prefix[3] << 8 | p->prefix[4];
	p->cur.resynced = p->next_resynced;
	p->next_resynced = false;
	p->stats.bytes += p->cur.length;
	p->remain = p->cur.length;
	p->st = G_BODY;
	if (!p->remain)
		message_done(p);
}

/* A plausible prefix at the start of a frame, as far as the feed shows it? */
static bool plausible(const uint8_t *d, size_t len)
{
	uint32_t l = 0;

	if (d[0] > 1)
		return false;
	for (size_t i = 1; i < GRPC_PREFIX_LEN; i++)
		l = l << 8 | (i < len ? d[i] : 0);
	return l <= GRPC_RESYNC_MAX;
}

struct grpc_parser *grpc_parser__new(const struct grpc_cb *cb, void *ud, bool joined)
{
	struct grpc_parser *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (cb)
		p->cb = *cb;
	p->ud = ud;
	p->st = joined ? G_LOST : G_PREFIX;
	return p;
}

void grpc_parser__free(struct grpc_parser *p)
{
	free(p);
}

void grpc_parser__feed(struct grpc_parser *p, const uint8_t *data, size_t len, bool frame_start)
{
	size_t i = 0;

	if (!p || !data || !len)
		return;
	if (p->st == G_LOST) {
		if (!frame_start || !plausible(data, len)) {
			p->stats.dropped += len;
			return;
		}
		p->st = G_PREFIX;
		p->n = 0;
		p->next_resynced = true;
	}
	while (i < len && p->st != G_LOST) {
		if (p->st == G_PREFIX) {
			size_t k = GRPC_PREFIX_LEN - p->n < len - i ? GRPC_PREFIX_LEN - p->n
								    : len - i;

			memcpy(p->prefix + p->n, data + i, k);
			p->n += (unsigned)k;
			i += k;
			if (p->n == GRPC_PREFIX_LEN)
				prefix_done(p);
		} else {
			uint64_t k = len - i < p->remain ? len - i : p->remain;

			i += (size_t)k;
			p->remain -= k;
			if (!p->remain)
				message_done(p);
		}
	}
	if (i < len)
		p->stats.dropped += len - i;
}

void grpc_parser__gap(struct grpc_parser *p, uint64_t len)
{
	if (!p || !len || p->st == G_LOST) {
		if (p)
			p->stats.dropped += len;
		return;
	}
	if (p->st == G_BODY) {
		uint64_t k = len < p->remain ? len : p->remain;

		p->cur.truncated = true;
		p->remain -= k;
		len -= k;
		if (!p->remain)
			message_done(p);
		if (!len)
			return;
	}
	/* the next prefix, or part of one, went uncaptured */
	lose(p, "gap over a message prefix");
	p->stats.dropped += len;
}

bool grpc_parser__end(struct grpc_parser *p)
{
	bool clean;

	if (!p)
		return false;
	clean = p->st == G_PREFIX && p->n == 0;
	if (p->st != G_LOST && !clean) {
		p->stats.errors++;
		if (p->cb.on_error)
			p->cb.on_error(p->ud, "stream ended inside a message");
	}
	p->st = G_PREFIX;
	p->n = 0;
	return clean;
}

const struct grpc_stats *grpc_parser__stats(const struct grpc_parser *p)
{
	static const struct grpc_stats none;

	return p ? &p->stats : &none;
}
