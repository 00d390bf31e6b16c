// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* What --metrics and --otlp count alike (counts.h). */
#include "counts.h"
#include "util.h"

void status_counts__add(struct status_counts *c, int status)
{
	if (status < 100 || status > 599)
		status = 0;
	for (int i = 0; i < c->nstatus; i++) {
		if (c->status[i] == status) {
			c->n[i]++;
			return;
		}
	}
	if (c->nstatus < STATUS_MAX - 1) {
		c->status[c->nstatus] = status;
		c->n[c->nstatus++] = 1;
		return;
	}
	if (c->nstatus == STATUS_MAX - 1) {	/* the last slot: every status past the others */
		c->status[c->nstatus] = -1;
		c->n[c->nstatus++] = 0;
	}
	c->n[STATUS_MAX - 1]++;
}

void lost_totals__add(struct lost_totals *t, const struct summary *s)
{
	if (s->final) {
		t->lost = MAX(t->lost, lost_total(&s->lost));
		t->between = MAX(t->between, s->lost.between_requests);
		t->left_out = MAX(t->left_out, s->lost.left_out);
		for (int i = 0; i < LOST_NR; i++)
			t->by[i] = MAX(t->by[i], s->lost.n[i]);
		return;
	}
	t->lost += lost_total(&s->lost);
	t->between += s->lost.between_requests;
	t->left_out += s->lost.left_out;
	for (int i = 0; i < LOST_NR; i++)
		t->by[i] += s->lost.n[i];
}
