/* SPDX-License-Identifier: MIT */
/*
 * What a marker function looks like: kept out of line, kept in the symbol
 * table, and with a body the compiler cannot drop, so a uprobe on its entry
 * sees the arguments in the ABI registers.  Shared by the executable's
 * tokensim_* and the library's tse_* functions.
 *
 * The body stores the request number in a volatile local.  That gives the
 * function a real frame (push %rbp; mov %rsp,%rbp) like any function of a
 * real server: an empty body compiles to a bare "ret", which x86 uprobes
 * single-step (4-13x the cost of the emulated push: BENCHMARKS.md, "Marker
 * hits"), and a stack walk from inside it would skip its caller.
 */
#ifndef TS_MARKER_H
#define TS_MARKER_H

#include <stdint.h>

#ifdef __clang__
#define MARKER_FN __attribute__((noinline, used, visibility("default")))
#else
#define MARKER_FN __attribute__((noinline, noclone, used, visibility("default")))
#endif

#define MARKER_BODY2(a, b)                                                                 \
	do {                                                                               \
		volatile uint64_t frame_ = (a);                                            \
		(void)frame_;                                                              \
		asm volatile("" ::"r"(a), "r"(b) : "memory");                              \
	} while (0)
#define MARKER_BODY3(a, b, c)                                                              \
	do {                                                                               \
		volatile uint64_t frame_ = (a);                                            \
		(void)frame_;                                                              \
		asm volatile("" ::"r"(a), "r"(b), "r"(c) : "memory");                      \
	} while (0)

#endif
