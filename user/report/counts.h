/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What --metrics and --otlp count alike: requests by HTTP status, bounded, and the losses as
 * the summaries tell them.
 */
#ifndef TT_COUNTS_H
#define TT_COUNTS_H

#include <stdint.h>
#include "stats.h"

#define STATUS_MAX	16

/* Requests by status: at most STATUS_MAX values, the last slot ("other", -1) for the rest;
 * 0 is "none" (no status was sent, or not one of 100-599). */
struct status_counts {
	int status[STATUS_MAX];
	uint64_t n[STATUS_MAX];
	int nstatus;
};

void status_counts__add(struct status_counts *c, int status);

/* The losses since the start, from the summaries: each window's are added, the final one
 * (the whole run's) replaces their sum. */
struct lost_totals {
	uint64_t lost;		/* lost_total() */
	uint64_t between;	/* losses that may hide whole requests (between_requests) */
	uint64_t left_out;	/* --budget: exchanges left out whole */
	uint64_t by[LOST_NR];
};

void lost_totals__add(struct lost_totals *t, const struct summary *s);

#endif /* TT_COUNTS_H */
