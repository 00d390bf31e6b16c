/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stacks to names: kernel addresses from /proc/kallsyms, user addresses through the
 * process's mappings and the ELF symbols of the mapped files (elfsym.h), cached.
 */
#ifndef TT_SYMBOLIZE_H
#define TT_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

struct symbolizer;

struct symbolizer *symbolizer__new(void);
void symbolizer__free(struct symbolizer *s);

/*
 * "bin`fn <- bin`caller <- ... [k] kfn <- kcaller": the user frames innermost first, then
 * the kernel frames below the scheduler (those say how it blocked: futex_wait, ...).
 * Either list may be empty. Returns the length written.
 */
size_t symbolizer__format(struct symbolizer *s, uint32_t pid, const uint64_t *uips, int nu,
			  const uint64_t *kips, int nk, char *out, size_t sz);

#endif /* TT_SYMBOLIZE_H */
