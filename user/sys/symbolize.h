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
/*
 * A kernel stack alone, up to frames names: how a waker woke a thread needs the calls
 * above the wakeup (futex_wake, unix_stream_sendmsg, hrtimer_wakeup...).
 */
size_t symbolizer__format_kernel(struct symbolizer *s, const uint64_t *kips, int nk, int frames,
				 char *out, size_t sz);
size_t symbolizer__format(struct symbolizer *s, uint32_t pid, const uint64_t *uips, int nu,
			  const uint64_t *kips, int nk, char *out, size_t sz);

#endif /* TT_SYMBOLIZE_H */
