/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Markers inside the serving process: --uprobe / --uretprobe / --usdt options, parsed and
 * resolved against the traced process (its executable and shared libraries, as mapped in
 * /proc/PID/maps). A probe is only ever placed on a function start found in the file's
 * symbols, or on a USDT probe the file declares: a uprobe placed mid-instruction would corrupt
 * the traced process.
 */
#ifndef TT_MARKERS_H
#define TT_MARKERS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include "attribute.h"

enum marker_probe {
	MP_UPROBE,
	MP_URETPROBE,
	MP_USDT,
};

struct marker {
	enum marker_kind kind;
	enum marker_probe probe;
	char arg[512];			/* the option as given, for messages */
	char binary[256];
	char symbol[128];		/* function, or USDT provider */
	char usdt_name[128];
	uint64_t sym_off;		/* SYMBOL+OFFSET */
	int key_arg;			/* 0 none, 1..6 argument, TT_KEYARG_RET return value */
	bool key_str;			/* the key is a pointer to a NUL-terminated string */
	/* resolved for one process */
	char path[PATH_MAX + 32];	/* /proc/PID/root/<mapped path> */
	uint64_t file_off;		/* uprobes: file offset of the probed instruction */
};

const char *marker_probe_name(enum marker_probe p);

/* "NAME=BINARY:SYMBOL[+OFFSET][,key=argN[:str]]" or, for USDT, "NAME=BINARY:PROVIDER:PROBE[...]".
 * 0, or -EINVAL with a one-line error on stderr. */
int marker__parse(const char *arg, enum marker_probe probe, struct marker *m);
/* Find the binary in pid and the probe in it. 0, or -errno with a one-line error on stderr. */
int marker__resolve(struct marker *m, uint32_t pid);

#endif /* TT_MARKERS_H */
