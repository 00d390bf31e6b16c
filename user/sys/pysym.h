/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Python frames to names: (pid, code object, instruction offset) -> "function (file.py:line)",
 * by reading the code object from the live process (pyinfo__read) and decoding 3.11's
 * location table (co_linetable) for the line. Code objects are cached per process in a
 * bounded table and checked again at every use (one read of the object's head): a freed and
 * reused address is read afresh, and any pointer that does not lead to a code object with a
 * str name and a bytes table gives "?", never a crash.
 */
#ifndef TT_PYSYM_H
#define TT_PYSYM_H

#include <stddef.h>
#include <stdint.h>
#include "pystack.h"

#define PYSYM_NAME_MAX	128
#define PYSYM_FILE_MAX	256

struct pysym;

struct py_sym {
	char name[PYSYM_NAME_MAX];	/* co_qualname ("Class.method"), else co_name */
	char file[PYSYM_FILE_MAX];	/* co_filename as the process has it */
	int line;			/* -1 if the table says none */
	int firstlineno;
};

/* max_codes: code objects kept over all processes (0: a default of 4096) */
struct pysym *pysym__new(size_t max_codes);
void pysym__free(struct pysym *s);

/* What pid is (pyinfo__probe); again for a pid already known replaces it. 0 or -ENOMEM. */
int pysym__add_proc(struct pysym *s, uint32_t pid, const struct tt_py_proc *p);
/* pid is gone: forget it and its code objects. */
void pysym__del_proc(struct pysym *s, uint32_t pid);

/* 0, or -errno: -ESRCH pid unknown, -EFAULT / -EINVAL what code points at is not a code object. */
int pysym__lookup(struct pysym *s, uint32_t pid, uint64_t code, int32_t lasti, struct py_sym *out);

/*
 * "name (file.py:line)": file shortened to its path under site-packages / dist-packages /
 * the standard library, or its base name. "?" if the frame cannot be read. Returns the length.
 */
size_t pysym__frame(struct pysym *s, uint32_t pid, uint64_t code, int32_t lasti, char *out,
		    size_t sz);

/* Frames innermost first, " <- " between them, cut to fit sz. Returns the length. */
size_t pysym__stack(struct pysym *s, uint32_t pid, const struct tt_py_frame *frames, int n,
		    char *out, size_t sz);

/*
 * The line of code unit lasti in a 3.11 location table (Objects/locations.md), the way
 * PyCode_Addr2Line() tells it: firstlineno for lasti < 0, -1 past the table or where it says
 * there is no line. Exposed for tests.
 */
int pysym__addr2line(const uint8_t *tab, size_t len, int firstlineno, int32_t lasti);

/* The short form of a file name, as pysym__frame() shows it. */
const char *pysym__short_file(const char *file);

#endif /* TT_PYSYM_H */
