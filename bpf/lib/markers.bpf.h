/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Markers inside the server: uprobes, uretprobes and USDT probes the user names, each hit a
 * TT_EV_MARKER record with the request key the attach cookie says where to find.
 */

#ifndef TT_MARKERS_BPF_H
#define TT_MARKERS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "events.h"
#include "record.bpf.h"

static __always_inline int emit_marker(struct pt_regs *ctx, __u64 cookie, long key, bool have_key)
{
	struct tt_marker_ev e;

	__builtin_memset(&e, 0, sizeof(e));
	fill_hdr(&e.h, TT_EV_MARKER, sizeof(e));
	e.marker = TT_COOKIE_MARKER(cookie);
	if (have_key) {
		if (TT_COOKIE_KEYSTR(cookie)) {
			if (bpf_probe_read_user_str(e.key_str, sizeof(e.key_str), (void *)key) > 0)
				e.key_kind = TT_KEY_STR;
		} else {
			e.key = key;
			e.key_kind = TT_KEY_INT;
		}
	}
	rb_output(&e, sizeof(e));
	return 0;
}

static __always_inline long reg_arg(struct pt_regs *ctx, unsigned int n)
{
	switch (n) {
	case 1: return PT_REGS_PARM1(ctx);
	case 2: return PT_REGS_PARM2(ctx);
	case 3: return PT_REGS_PARM3(ctx);
	case 4: return PT_REGS_PARM4(ctx);
	case 5: return PT_REGS_PARM5(ctx);
#ifdef PT_REGS_PARM6
	case 6: return PT_REGS_PARM6(ctx);
#else	/* libbpf before 1.2 stops at 5; x86-64 passes the 6th in r9 */
	case 6: return BPF_CORE_READ(ctx, r9);
#endif
	default: return 0;
	}
}

#endif /* TT_MARKERS_BPF_H */
