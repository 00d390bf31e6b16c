/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Is a process CPython 3.11, and where is its runtime: the interpreter found in the process's
 * mappings (a python3.11 executable or libpython3.11.so), its version read from Py_Version,
 * _PyRuntime's address in the process (symbol + load bias), and the struct offsets of that
 * version (bpf/pystack.h). Any other version is refused with a one-line reason: offsets are
 * known, never guessed. Also reads of the process's memory and, for tests and one-off looks,
 * the frame walk of bpf/python.bpf.h done from userspace.
 */
#ifndef TT_PYINFO_H
#define TT_PYINFO_H

#include <stddef.h>
#include <stdint.h>
#include "pystack.h"

/*
 * Fill *out for pid. 0, or -errno with why set to one line:
 *   -ENOENT   no CPython in the process
 *   -ENOTSUP  another version than 3.11 (or a layout that does not check out)
 *   -EAGAIN   the interpreter is not initialized yet (no thread state): try again later
 *   other     the process could not be read (-ESRCH gone, -EPERM no access)
 */
int pyinfo__probe(uint32_t pid, struct tt_py_proc *out, char *why, size_t whysz);

/* The offsets of a Py_Version value, NULL for versions whose layout is not known. */
const struct tt_py_offsets *pyinfo__offsets(uint32_t version);

/* "3.11.2", "3.12.0rc1" */
void pyinfo__version_str(uint32_t version, char *buf, size_t sz);

/* Copy len bytes at addr of pid. 0, or -errno (-EFAULT for a partial read). */
int pyinfo__read(uint32_t pid, uint64_t addr, void *buf, size_t len);

/*
 * The frames of thread tid, innermost first, the way py_walk() reads them in the kernel.
 * Returns how many (up to max), -ESRCH if tid has no thread state, -EFAULT on a bad read.
 */
int pyinfo__walk(uint32_t pid, const struct tt_py_proc *p, uint32_t tid,
		 struct tt_py_frame *frames, int max);

/* The native thread ids of pid's thread states, up to max. Returns how many or -errno. */
int pyinfo__threads(uint32_t pid, const struct tt_py_proc *p, uint32_t *tids, int max);

#endif /* TT_PYINFO_H */
