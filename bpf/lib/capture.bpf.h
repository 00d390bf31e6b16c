/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Payload capture: the bytes a send or receive moved, from the syscall's own user buffers,
 * in records of at most TT_SEG_MAX bytes each (events.h).
 *
 * A contiguous buffer (write, send, sendto, read, recvfrom, and one-element iovecs) is
 * copied once, straight into ring-buffer records reserved in a few size classes. One that
 * fits a record (a token's event, ~150-300 bytes: nearly every send of a stream) is one
 * reservation, the header and one copy (cap_small()); the walks below are for the rest. An iovec
 * array (writev, sendmsg, readv, recvmsg: Node writes every event as four pieces and
 * coalesces a backlog into one writev of up to IOV_MAX) is gathered piece by piece into a
 * per-CPU scratch segment and sent from there. Both walks are bpf_loop() steps where the
 * kernel has it (5.17+), and a bounded loop of TT_STEPS_NOLOOP steps where it does not; a
 * walk that stops early is counted (TT_STAT_IOV_CUT) and the send flagged truncated.
 */

#ifndef TT_CAPTURE_BPF_H
#define TT_CAPTURE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "events.h"
#include "record.bpf.h"
#include "usrc.bpf.h"

const volatile __u32 cap_bytes = TT_CAP_DEFAULT;
const volatile bool have_loop = true;	/* bpf_loop() (Linux 5.17+) */

#define TT_IOV_MAX	1024		/* iovec entries walked per writev/sendmsg: IOV_MAX */

#define TT_SEG_MASK		(TT_SEG_MAX - 1)
/* bpf_loop steps: one per iovec entry read, one per piece copied, a few to spare */
#define TT_STEPS_MAX		(2 * TT_IOV_MAX + 2 * (TT_CAP_MAX / TT_SEG_MAX) + 8)
#define TT_STEPS_NOLOOP		48

/*
 * One slot per CPU, indexed by CPU number (a per-CPU array value may not exceed 32 KiB):
 * the state of a capture walk and the segment it gathers (struct scratch below).
 */
#define TT_CAP_STATE	256
#define TT_SCRATCH_SIZE	(TT_CAP_STATE + sizeof(struct tt_data_ev) + 2 * TT_SEG_MAX)
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);	/* the loader sets the number of possible CPUs */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, TT_SCRATCH_SIZE);
} scratch SEC(".maps");

/*
 * The state of one capture walk, on the BPF stack, handed to each step. The template's
 * empty payload array is not at the end: it has no size, only the header is kept.
 */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wgnu-variable-sized-type-not-at-end"
struct cap {
	struct tt_data_ev tmpl;	/* the fields every segment shares */
	__u64 ptr;		/* contig: the buffer; iov: the iovec array */
	__u64 niov;
	__u64 base;		/* iov: the piece being copied */
	__u64 rem;		/* ... bytes left in it */
	__u32 idx;		/* iov: the next entry to read */
	__u32 want;		/* bytes to capture in all */
	__u32 done;		/* bytes already in records */
	__u32 fill;		/* iov: bytes waiting in the scratch segment */
	__u8 fault;
	__u8 dropped;		/* a record did not fit in the ring: the rest is not sent */
	__u16 nrec;		/* records sent */
};

/*
 * The walk's state lives in the per-CPU scratch slot, not on the stack: the verifier tracks
 * stack values exactly and would explore every iteration of the loop with its own numbers;
 * map values it takes as unknown, so the loop body is checked once. raw holds the segment
 * being gathered from iovecs, twice the size a copy may reach, so every copy is provably in
 * bounds.
 */
struct scratch {
	union {
		struct cap cx;
		__u8 cx_room[TT_CAP_STATE];
	};
	__u8 raw[sizeof(struct tt_data_ev) + 2 * TT_SEG_MAX];
};
_Static_assert(sizeof(struct cap) <= TT_CAP_STATE, "TT_CAP_STATE too small");
_Static_assert(sizeof(struct scratch) == TT_SCRATCH_SIZE, "scratch map value size");
#pragma clang diagnostic pop

static __always_inline void seg_fill(struct tt_data_ev *ev, const struct cap *cx, __u32 off,
				     __u32 n, bool more)
{
	__builtin_memcpy(ev, &cx->tmpl, sizeof(*ev));
	ev->h.size = sizeof(*ev) + n;
	ev->off = off;
	ev->cap = n;
	if (more)
		ev->flags |= TT_DF_MORE;
	else if (off + n < cx->tmpl.ret && cx->tmpl.ret > 0)
		ev->flags |= TT_DF_TRUNC;
	if (cx->fault)
		ev->flags |= TT_DF_FAULT;
	/* the loss mark and count ride on the first record of the send only */
	if (off) {
		ev->flags &= ~(TT_DF_LOST | TT_DF_LOST_XDIR);
		ev->lost = 0;
	}
}

/*
 * Copy n bytes at src into a reserved record of size class SZ and submit it. The size is
 * a constant in each branch: a ring-buffer reservation must be.
 */
#define SEG_CLASS(SZ)								\
	do {									\
		ev = bpf_ringbuf_reserve(&events, sizeof(*ev) + (SZ), 0);	\
		if (!ev)							\
			break;							\
		n = clamp64(n, (SZ));						\
		if (bpf_probe_read_user(ev->data, n, (void *)src)) {		\
			cx->fault = 1;						\
			n = 0;							\
		}								\
	} while (0)

/*
 * Restate for the verifier a bound the code already guarantees: clang tends to compare a
 * zero-extended copy of a value and pass on the original, whose range the verifier then
 * does not know. The barriers make it compare and use the same 64-bit register.
 */
static __always_inline __u64 clamp64(__u64 v, __u64 max)
{
	barrier_var(v);
	if (v > max)
		v = max;
	barrier_var(v);
	return v;
}

static __always_inline struct scratch *scratch_slot(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&scratch, &cpu);
}

/*
 * Reserve a record of the size class of *np bytes (at most TT_SEG_MAX) and copy them from
 * src into its payload: a token's event is ~150-300 bytes, the classes keep its record to
 * what it needs. A fault sets cx->fault and *np to 0. NULL: the ring is full.
 */
static __always_inline struct tt_data_ev *seg_copy(struct cap *cx, __u64 src, __u64 *np)
{
	struct tt_data_ev *ev = NULL;
	__u64 n = *np;

	if (n <= 128)
		SEG_CLASS(128);
	else if (n <= 256)
		SEG_CLASS(256);
	else if (n <= 512)
		SEG_CLASS(512);
	else if (n <= 2048)
		SEG_CLASS(2048);
	else if (n <= 8192)
		SEG_CLASS(8192);
	else
		SEG_CLASS(TT_SEG_MAX);
	*np = n;
	return ev;
}

/* contig: one segment from the buffer; 1 when the walk is done */
static long cap_contig_step(__u32 i, void *data)
{
	struct scratch *s = scratch_slot();
	struct cap *cx = s ? &s->cx : NULL;
	struct tt_data_ev *ev;
	__u32 off;
	__u64 n;
	bool more;

	if (!cx || cx->done >= cx->want || cx->fault || cx->dropped)
		return 1;
	off = cx->done;
	n = cx->want - off;
	if (n > TT_SEG_MAX)
		n = TT_SEG_MAX;
	ev = seg_copy(cx, cx->ptr + off, &n);
	if (!ev) {
		cx->dropped = 1;
		rb_drop();
		return 1;
	}
	more = !cx->fault && off + n < cx->want;
	seg_fill(ev, cx, off, n, more);
	bpf_ringbuf_submit(ev, rb_flags());
	cx->done += n;
	cx->nrec++;
	return !more;
}

/* iov: send what the scratch segment holds */
static __always_inline void cap_flush(struct cap *cx, struct scratch *s, bool more)
{
	struct tt_data_ev *ev = (struct tt_data_ev *)s->raw;
	__u64 n = clamp64(cx->fill, TT_SEG_MAX);

	if (cx->dropped)
		return;
	seg_fill(ev, cx, cx->done, n, more);
	if (bpf_ringbuf_output(&events, ev, sizeof(*ev) + n, rb_flags())) {
		cx->dropped = 1;
		rb_drop();
		return;
	}
	cx->done += n;
	cx->fill = 0;
	cx->nrec++;
}

/* iov: read the next entry, or copy the next piece of the current one; 1 when done */
static long cap_iov_step(__u32 i, void *data)
{
	struct scratch *s = scratch_slot();
	struct cap *cx;
	__u64 n, fill, left;

	if (!s)
		return 1;
	cx = &s->cx;
	if (cx->dropped)
		return 1;
	left = cx->want - cx->done - cx->fill;
	if (!left || cx->fault) {
		cap_flush(cx, s, false);
		return 1;
	}
	if (!cx->rem) {
		struct iovec v;

		if (cx->idx >= cx->niov || cx->idx >= TT_IOV_MAX) {
			cap_flush(cx, s, false);
			return 1;
		}
		if (bpf_probe_read_user(&v, sizeof(v), (void *)(cx->ptr + cx->idx * sizeof(v)))) {
			cx->fault = 1;
			cap_flush(cx, s, false);
			return 1;
		}
		cx->idx++;
		cx->base = (__u64)v.iov_base;
		cx->rem = v.iov_len;
		return 0;
	}
	if (cx->fill >= TT_SEG_MAX) {
		cap_flush(cx, s, true);
		return 0;
	}
	fill = cx->fill & TT_SEG_MASK;
	n = cx->rem;
	if (n > left)
		n = left;
	if (n > TT_SEG_MAX - fill)
		n = TT_SEG_MAX - fill;
	n = clamp64(n, TT_SEG_MAX);
	if (bpf_probe_read_user(s->raw + sizeof(struct tt_data_ev) + fill, n, (void *)cx->base)) {
		cx->fault = 1;
		cap_flush(cx, s, false);
		return 1;
	}
	cx->fill += n;
	cx->base += n;
	cx->rem -= n;
	return 0;
}

/*
 * The last record of a send that carries no (more) payload: an error, a NOBUF send,
 * nothing to capture, or the end of a walk that ran out of steps.
 */
static __always_inline int cap_tail(struct cap *cx)
{
	struct tt_data_ev *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);

	if (!ev) {
		rb_drop();
		return -1;
	}
	seg_fill(ev, cx, cx->done, 0, false);
	bpf_ringbuf_submit(ev, rb_flags());
	return 0;
}

/*
 * A contiguous buffer of 1..TT_SMALL_MAX bytes: one segment, one record, no walk (the
 * walk's state but the fault flag is not used). Non-zero when it could not be sent.
 */
#define TT_SMALL_MAX	2048

static __always_inline int cap_small(struct cap *cx, __u64 ptr, __u32 want)
{
	struct tt_data_ev *ev;
	__u64 n = want;

	cx->fault = 0;
	ev = seg_copy(cx, ptr, &n);
	if (!ev) {
		rb_drop();
		return 1;
	}
	if (cx->fault)
		stat_inc(TT_STAT_FAULT);
	seg_fill(ev, cx, 0, n, false);
	bpf_ringbuf_submit(ev, rb_flags());
	return 0;
}

/*
 * Capture want bytes from u (0 for none) under the header template in the CPU's scratch
 * slot (s->cx.tmpl, filled by the caller; the walk's state after it is not). Returns
 * non-zero when records could not all be sent.
 */
static __always_inline int capture(struct scratch *s, const struct usrc *u, __u32 want)
{
	struct cap *cx = &s->cx;
	__u32 steps;

	if (want && want <= TT_SMALL_MAX && u->kind == USRC_CONTIG && want <= u->len)
		return cap_small(cx, u->ptr, want);
	/* the walk's state, after the template */
	__builtin_memset((void *)cx + sizeof(cx->tmpl), 0, sizeof(*cx) - sizeof(cx->tmpl));
	cx->want = want;
	if (!want || u->kind == USRC_NONE)
		return cap_tail(cx) ? 1 : 0;
	cx->ptr = u->ptr;
	if (u->kind == USRC_CONTIG) {
		if (cx->want > u->len)	/* cannot happen: the kernel moved ret bytes */
			cx->want = u->len;
		steps = cx->want / TT_SEG_MAX + 2;
		if (have_loop) {
			bpf_loop(steps < TT_STEPS_MAX ? steps : TT_STEPS_MAX, cap_contig_step, NULL, 0);
		} else {
			for (int i = 0; i < TT_STEPS_NOLOOP; i++)
				if (cap_contig_step(i, NULL))
					break;
		}
	} else {
		cx->niov = u->len;
		/* a read and a copy per entry, one more per segment, the last flush */
		steps = 2 * (u->len < TT_IOV_MAX ? u->len : TT_IOV_MAX) + 2 * (want / TT_SEG_MAX) + 4;
		if (have_loop) {
			bpf_loop(steps < TT_STEPS_MAX ? steps : TT_STEPS_MAX, cap_iov_step, NULL, 0);
		} else {
			for (int i = 0; i < TT_STEPS_NOLOOP; i++)
				if (cap_iov_step(i, NULL))
					break;
		}
	}
	if (cx->fault)
		stat_inc(TT_STAT_FAULT);
	if (cx->dropped)
		return 1;
	/* the walk ran out of steps: what was gathered still goes, flagged truncated */
	if (cx->done < cx->want && !cx->fault) {
		stat_inc(TT_STAT_IOV_CUT);
		if (cx->fill)
			cap_flush(cx, s, false);
		else
			cap_tail(cx);
	}
	return cx->dropped;
}

#endif /* TT_CAPTURE_BPF_H */
