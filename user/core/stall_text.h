/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A stall in words, for people: the line the text output, --top and the JSON "explain" field
 * show. The explanation itself (stall.h) fills struct tt_stall; this only reads it.
 */
#ifndef TT_STALL_TEXT_H
#define TT_STALL_TEXT_H

#include <stddef.h>
#include "request.h"

/*
 * The hop that did the late work, the one the line names first: the chain's last (stall.c
 * follows a thread that waited to the one that woke it, so the last is the one that did not
 * wait on another traced thread, or the last the chain could follow). -1 without a chain.
 */
int stall__root(const struct tt_stall *st);

/*
 * One line saying where the gap went, the root cause first, then the way the stream waited
 * for it, each "<-" read "woken by":
 *
 *   EngineCore (pid 4242) on-CPU 191ms in build_batch_plan (engine.py:63); api (pid 4000)
 *   sat idle 200ms waiting on a Unix socket
 *
 * then, each when there is one: where the chain was cut, the native stack of the block, the
 * Python functions that ran, time stolen by the hypervisor, what token markers say, TCP
 * trouble, records dropped. buf is cut to sz, always NUL-terminated.
 */
void stall__describe(const struct tt_stall *st, char *buf, size_t sz);

#endif /* TT_STALL_TEXT_H */
