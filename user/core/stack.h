/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A stack as the kernel captured it: return addresses, kernel side and user side. Turning
 * them into names reads the process's files (sys/symbolize.c); the core only keeps them and
 * the text, keyed by their hash, so a recording holds the text a live run made.
 */
#ifndef TT_STACK_H
#define TT_STACK_H

#include <stdint.h>
#include <string.h>
#include "events.h"

struct stack_ips {
	uint32_t pid;		/* whose user addresses */
	uint16_t nk, nu;
	uint64_t k[TT_KSTACK_MAX];
	uint64_t u[TT_USTACK_MAX];
};

/* Fill from the kernel's arrays (counts bounded). */
static inline void stack_ips__set(struct stack_ips *s, uint32_t pid, const __u64 *k, unsigned nk,
				  const __u64 *u, unsigned nu)
{
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->nk = nk < TT_KSTACK_MAX ? nk : TT_KSTACK_MAX;
	s->nu = nu < TT_USTACK_MAX ? nu : TT_USTACK_MAX;
	if (k)
		memcpy(s->k, k, s->nk * sizeof(*k));
	if (u)
		memcpy(s->u, u, s->nu * sizeof(*u));
}

static inline int stack_ips__empty(const struct stack_ips *s)
{
	return !s->nk && !s->nu;
}

/* FNV-1a of the addresses (and the process, when there are user ones); never 0. */
static inline uint64_t stack_ips__key(const struct stack_ips *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	const uint64_t *v[2] = { s->k, s->u };
	unsigned n[2] = { s->nk, s->nu };

	if (s->nu)
		h = (h ^ s->pid) * 0x100000001b3ull;
	for (int j = 0; j < 2; j++) {
		h = (h ^ (0x5a + j)) * 0x100000001b3ull;
		for (unsigned i = 0; i < n[j]; i++)
			h = (h ^ v[j][i]) * 0x100000001b3ull;
	}
	return h ? h : 1;
}

/*
 * The text of a stack ("fn <- fn ... [k] fn <- ..."), into buf: true when it is known now,
 * false when it will be resolved later.
 */
typedef bool (*stack_str_fn)(void *ud, const struct stack_ips *s, char *buf, size_t sz);

#endif /* TT_STACK_H */
