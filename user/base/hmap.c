// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The one hash table. See hmap.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include "hmap.h"

#define HMAP_MIN_SLOTS	16

struct slot {
	uint64_t key;
	void *val;	/* NULL: free */
};

struct hmap {
	struct slot *s;
	size_t mask;	/* slots - 1, slots a power of two */
	size_t n;
};

/* splitmix64's finalizer: sequential ids and pointers spread over every slot */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Over 7/10 full a probe runs long: time to double. */
static bool too_full(size_t n, size_t slots)
{
	return n * 10 > slots * 7;
}

static struct slot *slots_new(size_t nslots)
{
	return calloc(nslots, sizeof(struct slot));
}

struct hmap *hmap__new(size_t hint)
{
	struct hmap *m = calloc(1, sizeof(*m));
	size_t nslots = HMAP_MIN_SLOTS;

	if (!m)
		return NULL;
	while (too_full(hint, nslots))
		nslots *= 2;
	m->s = slots_new(nslots);
	if (!m->s) {
		free(m);
		return NULL;
	}
	m->mask = nslots - 1;
	return m;
}

void hmap__free(struct hmap *m)
{
	if (!m)
		return;
	free(m->s);
	free(m);
}

/* The slot holding key, or the free one where it would go. */
static size_t find(const struct slot *s, size_t mask, uint64_t key)
{
	size_t i = mix(key) & mask;

	while (s[i].val && s[i].key != key)
		i = (i + 1) & mask;
	return i;
}

static int grow(struct hmap *m)
{
	size_t nslots = (m->mask + 1) * 2, nmask = nslots - 1;
	struct slot *ns = slots_new(nslots);

	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i <= m->mask; i++)
		if (m->s[i].val)
			ns[find(ns, nmask, m->s[i].key)] = m->s[i];
	free(m->s);
	m->s = ns;
	m->mask = nmask;
	return 0;
}

void *hmap__get(const struct hmap *m, uint64_t key)
{
	return m->s[find(m->s, m->mask, key)].val;
}

int hmap__put(struct hmap *m, uint64_t key, void *val)
{
	size_t i;

	if (!val)
		return -EINVAL;
	i = find(m->s, m->mask, key);
	if (m->s[i].val) {
		m->s[i].val = val;
		return 0;
	}
	if (too_full(m->n + 1, m->mask + 1)) {
		/* a table that cannot grow still takes entries while it has a free slot */
		if (grow(m) == 0)
			i = find(m->s, m->mask, key);
		else if (m->n + 1 > m->mask)
			return -ENOMEM;
	}
	m->s[i].key = key;
	m->s[i].val = val;
	m->n++;
	return 0;
}

void *hmap__del(struct hmap *m, uint64_t key)
{
	size_t i = find(m->s, m->mask, key), j = i;
	void *val = m->s[i].val;

	if (!val)
		return NULL;
	m->s[i].val = NULL;
	m->n--;
	/*
	 * Entries after the freed slot whose home is at or before it (cyclically) would be cut
	 * off from it by the hole: move each back into the hole, which moves on to its slot.
	 */
	for (;;) {
		size_t home;

		j = (j + 1) & m->mask;
		if (!m->s[j].val)
			break;
		home = mix(m->s[j].key) & m->mask;
		/* home in (i, j]: it can stay */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		m->s[i] = m->s[j];
		m->s[j].val = NULL;
		i = j;
	}
	return val;
}

size_t hmap__count(const struct hmap *m)
{
	return m->n;
}

bool hmap__next(const struct hmap *m, size_t *iter, uint64_t *key, void **val)
{
	for (size_t i = *iter; i <= m->mask; i++) {
		if (!m->s[i].val)
			continue;
		if (key)
			*key = m->s[i].key;
		*val = m->s[i].val;
		*iter = i + 1;
		return true;
	}
	*iter = m->mask + 1;
	return false;
}
