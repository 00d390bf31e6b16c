/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Recordings (-w FILE) and their replay (-r FILE): the session's inputs in order (the ready
 * announcement, every ring-buffer record as received, every summary tick with the kernel
 * counters it used), so that a replay feeds the same inputs and the outputs print the same
 * bytes as the live run.
 *
 * Format, version 1 (integers little-endian):
 *
 *   header   magic "\x89TTREC\r\n", u16 version, u16 header length (all of it, CRC included),
 *            u32 flags, i64 wall-clock offset (REALTIME - MONOTONIC ns), u64 start (MONOTONIC
 *            ns), u32 capture bytes, u32 ring bytes, u16 port filter, u16 number of PIDs,
 *            16 x u32 PIDs, u32 event layout (sizes of the structs below, so a recording is
 *            never read with another layout), the session's options (u32 flags: 1 stalls
 *            explained; u64 --stall-ms in ns), then length-prefixed strings (u16 + bytes):
 *            kernel release, machine, tokentrace version, command line; u32 CRC-32 of all
 *            the header before it.
 *   entries  u8 type, u8 flags, u16 0, u32 payload length, u32 CRC-32 of these 8 bytes and
 *            the payload, then the payload:
 *              READY   u32 size, struct ready_info as it is in memory (one, first)
 *              RECORD  a ring-buffer record, byte for byte as the kernel wrote it
 *              TICK    u64 time, u8 final, u8 n, u16 0, n x u64 kernel counters: the
 *                      TT_STAT_NR of events.h, then (when n is REC_TICK_HOOKS more) the
 *                      lazy scheduler hooks' lazy flag, attaches, failed attaches and ns on
 *              END     u64 entries, u64 records before it (last: a recording without it was
 *                      cut short)
 *
 * The records are the kernel's structs in the host's byte order (events.h): a recording is
 * read by a tokentrace with the same event layout on a little-endian machine.
 */
#ifndef TT_RECORD_H
#define TT_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "events.h"
#include "output.h"

#define REC_VERSION		1
#define REC_RECORD_MAX		(1u << 20)	/* the largest ring-buffer record accepted */
#define REC_KSTATS_MAX		64
#define REC_CMDLINE_MAX		1024

struct rec_header {
	uint16_t version;
	int64_t wall_offset_ns;
	uint64_t t_begin_ns;
	uint32_t capture_bytes;
	uint32_t ringbuf_bytes;
	uint16_t port;
	uint32_t pids[READY_PIDS_MAX];
	int npids;
	uint32_t layout;
	/* the session's options: a replay runs with the recorded ones */
	bool stalls;
	uint64_t stall_ns;
	char kernel[65];
	char machine[65];
	char tt_version[33];
	char cmdline[REC_CMDLINE_MAX + 1];
};

/* This build's event layout (written to, and checked against, every header). */
uint32_t rec__layout(void);

/* ------------------------------------------------------------------ writer */

struct recorder;

/*
 * Create path (util.h's safe_create(): mode 0600, records hold payload bytes; no symlink
 * followed, nobody else's file reused unless REC_FORCE) and write the header. h->version,
 * layout, kernel, machine and tt_version are filled in here; wall_offset_ns is taken from
 * util.h's wall_offset(), which also fixes it for the rest of this run. 0, or -errno with a
 * one-line reason in why.
 */
#define REC_FORCE	0x1	/* --force: replace a file or link that is not the caller's */
int recorder__open(const char *path, unsigned int flags, struct rec_header *h,
		   struct recorder **out, char *why, size_t whysz);
void recorder__ready(struct recorder *w, const struct ready_info *ri);
void recorder__record(struct recorder *w, const void *data, size_t size);
void recorder__tick(struct recorder *w, uint64_t now_ns, const uint64_t kstats[TT_STAT_NR],
		    const struct stall_hook_stats *hooks, bool final);
/* Write out what is buffered. -errno once a write has failed (nothing more is written). */
int recorder__flush(struct recorder *w);
/* Write the end mark and close. 0, or -errno of the first failed write. */
int recorder__close(struct recorder *w);
/* Close and delete the file: the run ended before anything worth keeping. */
void recorder__discard(struct recorder *w);

/* ------------------------------------------------------------------ reader */

enum rec_entry_type {
	REC_READY = 1,
	REC_RECORD = 2,
	REC_TICK = 3,
	REC_END = 4,
};

struct rec_entry {
	enum rec_entry_type type;
	uint64_t offset;			/* of the entry in the file */
	struct ready_info ready;		/* REC_READY (replay set) */
	const void *data;			/* REC_RECORD: valid until the next call */
	size_t size;
	uint64_t now_ns;			/* REC_TICK */
	uint64_t kstats[TT_STAT_NR];
	bool final;
	struct stall_hook_stats hooks;		/* REC_TICK: all zero when not recorded */
};

#define REC_TICK_HOOKS	4

/* reader flags */
#define REC_NO_CRC	0x1	/* skip checksums (fuzzing: reach what lies behind them) */
#define REC_ANY_LAYOUT	0x2	/* read records of another event layout (fuzzing with old seeds) */

struct rec_reader;

/*
 * Open a recording and check its header. On failure *out is NULL and err holds a one-line
 * reason ("not a tokentrace recording", "truncated recording at byte 12", ...); -errno or
 * -EINVAL.
 */
int rec_reader__open(const char *path, struct rec_reader **out, char *err, size_t errsz);
int rec_reader__open_mem(const void *buf, size_t len, unsigned int flags,
			 struct rec_reader **out, char *err, size_t errsz);
const struct rec_header *rec_reader__header(const struct rec_reader *r);
/*
 * The next entry: 1, or 0 after END (and nothing after it), or -EINVAL with a one-line reason
 * in rec_reader__error() (truncated, corrupt). Entries come in the order the format requires:
 * READY first and once, END last.
 */
int rec_reader__next(struct rec_reader *r, struct rec_entry *e);
const char *rec_reader__error(const struct rec_reader *r);
void rec_reader__free(struct rec_reader *r);

#endif /* TT_RECORD_H */
