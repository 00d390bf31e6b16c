/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* One prepared record of ringfeed's script: shared by ringfeed.bpf.c and ringfeed.c. */
#ifndef TT_RINGFEED_H
#define TT_RINGFEED_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define RF_SLOT_DATA	1024	/* records of the script are shorter: a power of two */
#define RF_CONNS_MAX	4096	/* connections per loop of the script */

struct rf_slot {
	__u32 len;	/* record bytes in data */
	__u16 type;	/* enum tt_ev_type */
	__u16 pad;
	__u32 conn;	/* connection index within one loop of the script */
	__u32 pad2;
	__u8 data[RF_SLOT_DATA];
};

#endif /* TT_RINGFEED_H */
