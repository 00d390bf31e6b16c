/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The connection table: what the kernel side keeps per connection (struct tt_conn, its own:
 * userspace never reads it), the maps it lives in, and the connections of the targets'
 * listening ports that are not accepted yet.
 */

#ifndef TT_CONN_MAP_BPF_H
#define TT_CONN_MAP_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "events.h"

enum tt_conn_mode {
	TT_MODE_CAPTURE = 0,	/* emit records with payload */
	TT_MODE_IGNORE = 1,	/* not of interest (--port, not HTTP): emit nothing */
	TT_MODE_TLS = 2,	/* TLS: the ciphertext is not sent, the plaintext comes from
				 * the SSL calls; state changes still are */
};

/*
 * Value of the conns map (key: struct sock address), written by the kernel side only.
 * Userspace says "stop capturing this one" in the ignored map (key: conn id), never here.
 */
struct tt_conn {
	__u64 id;
	__u32 lost;	/* records dropped since the last one that got through */
	__u16 mode;	/* enum tt_conn_mode, decided by the kernel side */
	__u8 unix_sk;	/* a Unix-domain socket: no TCP state changes, EOF and close() end it */
	__u8 user_ignored;	/* in the ignored map as of ignored_gen == ign_gen */
	__u64 t_data;	/* first data ready since the last read, or 0 */
	/* TCP, at the end of the last send: what was sent, what was written (ready_time()) */
	__u32 snd_nxt;
	__u32 write_seq;
	/* --aggregate: the last send that looked like a token (0 after a read), the last read */
	__u64 agg_last_send;
	__u64 agg_last_recv;
	__u32 ign_gen;	/* the ignored map's generation user_ignored was read at */
	/*
	 * A record of this connection did not fit in the ring: the rest of that direction's
	 * run (the response's remaining events) is not sent either, up to the first record the
	 * other way (the next request). Userspace drops the response at the loss anyway.
	 */
	__u8 shed;
	__u8 shed_dir;
	/* the directions (1 << dir; 3 for a state record) of the records lost since the last
	 * one that got through: both say the loss crossed between a request and its answer */
	__u8 lost_dirs;
	/*
	 * --budget: the direction of the last send or read and the one requests go (1 + dir;
	 * 0: none yet, not known), whether the exchange the last belongs to is left out, how
	 * many were since the last record sent, and the records sent not yet paid for
	 */
	__u8 run;
	__u8 req_run;
	__u8 skip;
	__u16 skipped;
	__u32 recs;
};

/* a connection of a target's listening port before accept(): its backlog wait */
struct tt_early {
	__u64 t_established;
	__u64 t_data;
};

/* not preallocated: 64k entries made at startup cost more than an allocation per connection */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);	/* struct sock * */
	__type(value, struct tt_conn);
} conns SEC(".maps");

/*
 * Connections userspace has no use for (not HTTP, a client's): it writes them here, by id,
 * and the kernel stops sending their records. The kernel owns struct tt_conn alone.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);	/* conn id */
	__type(value, __u8);
} ignored SEC(".maps");
/*
 * Bumped by userspace after each entry it writes (0: none yet, a send does not look there).
 * A connection is ignored for good once it is (ids never repeat, entries go at its close):
 * a send looks its connection up here only when the count moved since the last look, and
 * keeps the answer in struct tt_conn (ign_gen, user_ignored). A server whose Unix sockets to
 * its engine are ignored would otherwise pay a second hash lookup at every send.
 */
__u32 ignored_gen = 0;

/* is connection c one userspace has no use for (the ignored map), asked once per change */
static __always_inline bool user_ignored(struct tt_conn *c)
{
	__u32 gen = ignored_gen;	/* read before the lookup: an entry precedes its bump */
	__u64 id;

	if (gen != c->ign_gen) {
		id = c->id;
		c->user_ignored = bpf_map_lookup_elem(&ignored, &id) != NULL;
		c->ign_gen = gen;
	}
	return c->user_ignored;
}

/*
 * Connections of a listening port not accepted yet. A plain hash, not an LRU: a full map is
 * counted (TT_STAT_EARLY_FULL) instead of evicting silently; entries go at accept or close.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);	/* struct sock * */
	__type(value, struct tt_early);
} early SEC(".maps");

/*
 * The targets' listening ports, found before load: their new connections are followed from
 * the handshake. Constants compared inline: every segment received on the machine passes the
 * test, a map lookup there would cost every process.
 */
#define TT_LPORTS_MAX	8
const volatile __u16 lport_list[TT_LPORTS_MAX] = {};
const volatile __u32 nlports = 0;

static __always_inline bool is_lport(__u16 port)
{
	for (int i = 0; i < TT_LPORTS_MAX; i++)
		if (i < nlports && lport_list[i] == port)
			return true;
	return false;
}

/*
 * The local ports that have had a connection in conns (a Unix socket's is 0), a bit each: 8
 * KiB that stay in cache. Data-ready runs for every socket of the machine, and for the
 * sockets of untraced processes (a loopback client's, every one of another program's) the
 * answer is no: one bit says so where a miss in conns' 64k buckets was a cache miss. A bit
 * is never cleared (a port may have another traced connection, or have one again), so a
 * traced client's many ephemeral ports only bring back the lookup for theirs.
 */
__u64 conn_ports[65536 / 64];

static __always_inline void conn_port_add(__u16 port)
{
	__u64 bit = 1ull << (port & 63);

	if (!(conn_ports[port >> 6] & bit))
		__sync_fetch_and_or(&conn_ports[port >> 6], bit);
}

static __always_inline bool conn_port_maybe(__u16 port)
{
	return conn_ports[port >> 6] & (1ull << (port & 63));
}

/* A record of c was lost; dirbit 1 << its direction, or 3 for a state change. */
static __always_inline void conn_lose(struct tt_conn *c, __u8 dirbit)
{
	c->lost++;
	c->lost_dirs |= dirbit;
}

/* A record of c got through: it told the losses before it. */
static __always_inline void conn_told(struct tt_conn *c)
{
	c->lost = 0;
	c->lost_dirs = 0;
}

/* The loss flags of c's next record, with c->lost set */
static __always_inline __u8 conn_lost_flags(const struct tt_conn *c)
{
	return c->lost_dirs == 3 ? TT_DF_LOST | TT_DF_LOST_XDIR : TT_DF_LOST;
}

#endif /* TT_CONN_MAP_BPF_H */
