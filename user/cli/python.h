/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * CPython stacks for the main loop: every process that joins the trace (given, forked,
 * found, a Unix peer, after an exec) is probed (sys/pyinfo.h); a CPython 3.11 gets its frames
 * named in the kernel (loader__py_add) and by userspace (sys/pysym.h). An interpreter not
 * started yet is probed again for a while; another version is said once, in one line.
 */
#ifndef TT_CLI_PYTHON_H
#define TT_CLI_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct loader;
struct pyctl;

struct pyctl *pyctl__new(struct loader *l, bool verbose);
void pyctl__free(struct pyctl *p);

/* pid joined the trace, or runs a new program: is it CPython 3.11? */
void pyctl__probe(struct pyctl *p, uint32_t pid);
void pyctl__gone(struct pyctl *p, uint32_t pid);
/* Probe again the processes whose interpreter was not ready (call now and then). */
void pyctl__retry(struct pyctl *p, uint64_t now_ns);

/* The name of a frame of pid, "function (file.py:line)": the length, 0 if not known. */
size_t pyctl__name(struct pyctl *p, uint32_t pid, uint64_t code, int32_t lasti, char *buf,
		   size_t sz);

/* CPython processes whose stacks are read now. */
int pyctl__nprocs(const struct pyctl *p);

#endif /* TT_CLI_PYTHON_H */
