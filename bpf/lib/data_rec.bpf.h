/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A data record (TT_EV_DATA), whoever makes it: a send or read on a socket (data.bpf.h) or the
 * plaintext of an SSL call (tls.bpf.h). Its header template is built in the CPU's scratch slot
 * (capture.bpf.h), the payload captured under it, and the outcome goes on the connection's
 * books: a loss its next record tells, or the losses told and the record owed to the budget.
 */

#ifndef TT_DATA_REC_BPF_H
#define TT_DATA_REC_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "events.h"
#include "record.bpf.h"
#include "conn_map.bpf.h"
#include "budget.bpf.h"
#include "capture.bpf.h"

/* The CPU's scratch slot with a data record's template begun: header, connection, result */
static __always_inline struct scratch *data_rec_start(__u64 conn_id, int ret)
{
	struct scratch *s = scratch_slot();
	struct cap *cx;

	if (!s)
		return NULL;
	cx = &s->cx;
	__builtin_memset(&cx->tmpl, 0, sizeof(cx->tmpl));
	fill_hdr(&cx->tmpl.h, TT_EV_DATA, sizeof(cx->tmpl));
	cx->tmpl.conn_id = conn_id;
	cx->tmpl.ret = ret;
	return s;
}

/* What the record says of c's books: the records lost before it, the exchanges left out */
static __always_inline void data_rec_books(struct tt_data_ev *t, const struct tt_conn *c)
{
	if (c->lost) {
		t->flags |= conn_lost_flags(c);
		t->lost = c->lost;
	}
	t->skipped = c->skipped;
}

/* How many of the moved bytes are captured: up to the capture bound, a cut counted */
static __always_inline __u32 data_rec_want(__u32 moved)
{
	if (moved > cap_bytes) {
		stat_inc(TT_STAT_TRUNC);
		return cap_bytes;
	}
	return moved;
}

/* c's record in direction dir went out (lost false) or did not fit in the ring */
static __always_inline void data_rec_done(struct tt_conn *c, __u8 dir, bool lost)
{
	if (lost) {
		conn_lose(c, 1 << dir);
	} else {
		conn_told(c);
		if (budget_cost_ns)
			budget_pay(c);
	}
}

#endif /* TT_DATA_REC_BPF_H */
