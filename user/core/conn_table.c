// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The correlator's connections: by id, in the order they were last active (the least active
 * go first past the bound), and the names of their processes. See conn.h.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "conn.h"
#include "hmap.h"
#include "sched_book.h"
#include "util.h"

int conn_table__init(struct conn_table *t)
{
	memset(t, 0, sizeof(*t));
	t->byid = hmap__new(1024);
	return t->byid ? 0 : -1;
}

static void conn_free(struct conn *k)
{
	h2x_free(k);
	exchange_free(k);
	response_free(k);
	free(k);
}

void conn_table__fini(struct conn_table *t)
{
	size_t it = 0;
	void *k;

	if (!t->byid)
		return;
	while (hmap__next(t->byid, &it, NULL, &k))
		conn_free(k);
	hmap__free(t->byid);
	t->byid = NULL;
}

struct conn *conn_find(struct correlator *c, uint64_t id)
{
	return hmap__get(c->tab.byid, id);
}

struct conn *conn_next(const struct correlator *c, size_t *iter)
{
	void *k;

	return hmap__next(c->tab.byid, iter, NULL, &k) ? k : NULL;
}

static void lru_unlink(struct conn_table *t, struct conn *k)
{
	if (k->lru_prev)
		k->lru_prev->lru_next = k->lru_next;
	else if (t->lru_head == k)
		t->lru_head = k->lru_next;
	if (k->lru_next)
		k->lru_next->lru_prev = k->lru_prev;
	else if (t->lru_tail == k)
		t->lru_tail = k->lru_prev;
	k->lru_prev = k->lru_next = NULL;
}

/* A record of k arrived: it is the most recently active. */
void conn_touch(struct correlator *c, struct conn *k, uint64_t ts)
{
	struct conn_table *t = &c->tab;

	if (ts > k->last_ts)
		k->last_ts = ts;
	if (t->lru_head == k)
		return;
	lru_unlink(t, k);
	k->lru_next = t->lru_head;
	if (t->lru_head)
		t->lru_head->lru_prev = k;
	t->lru_head = k;
	if (!t->lru_tail)
		t->lru_tail = k;
}

const char *comm_of(struct correlator *c, uint32_t pid)
{
	for (size_t i = 0; i < c->tab.ncomms; i++)
		if (c->tab.comms[i].pid == pid)
			return c->tab.comms[i].comm;
	return NULL;
}

void correlator__set_comm(struct correlator *c, uint32_t pid, const char *comm)
{
	struct conn_table *t = &c->tab;
	size_t i;

	for (i = 0; i < t->ncomms; i++)
		if (t->comms[i].pid == pid)
			break;
	if (i == ARRAY_SIZE(t->comms))
		i = t->comms_next++ % ARRAY_SIZE(t->comms);
	else if (i == t->ncomms)
		t->ncomms++;
	t->comms[i].pid = pid;
	strlcpy_cut(t->comms[i].comm, sizeof(t->comms[i].comm), comm);
}

struct conn *conn_new(struct correlator *c, uint64_t id, uint32_t pid)
{
	struct conn *k = calloc(1, sizeof(*k));
	const char *comm;

	if (!k)
		return NULL;
	k->c = c;
	k->id = id;
	k->pid = pid;
	strcpy(k->addr, "?");
	comm = comm_of(c, pid);
	if (comm)
		strlcpy_cut(k->comm, sizeof(k->comm), comm);
	if (exchange_parsers_start(k) || hmap__put(c->tab.byid, id, k)) {
		conn_free(k);
		return NULL;
	}
	c->st.conns++;
	conn_touch(c, k, 0);
	return k;
}

void conn_close(struct correlator *c, struct conn *k)
{
	lru_unlink(&c->tab, k);
	hmap__del(c->tab.byid, k->id);
	conn_free(k);
}

static void fmt_addr(char *buf, size_t sz, const struct tt_conn_ev *e)
{
	char l[INET6_ADDRSTRLEN], r[INET6_ADDRSTRLEN], path[TT_UNIX_PATH + 1];
	int af = e->family == 10 ? AF_INET6 : AF_INET;

	if (e->flags & TT_CF_UNIX) {
		/* the socket's path (the listener's, for an accepted one) and the peer process */
		memcpy(path, e->path, TT_UNIX_PATH);
		path[TT_UNIX_PATH] = '\0';
		if (e->peer_pid)
			snprintf(buf, sz, "unix:%s-pid:%u", path[0] ? path : "?", e->peer_pid);
		else
			snprintf(buf, sz, "unix:%s", path[0] ? path : "?");
		return;
	}
	inet_ntop(af, e->laddr, l, sizeof(l));
	inet_ntop(af, e->raddr, r, sizeof(r));
	if (af == AF_INET6)
		snprintf(buf, sz, "[%s]:%u-[%s]:%u", l, e->lport, r, e->rport);
	else
		snprintf(buf, sz, "%s:%u-%s:%u", l, e->lport, r, e->rport);
}

/* A connection record: accepted or connected, its addresses and process. */
void conn_opened(struct correlator *c, const struct tt_conn_ev *e)
{
	struct conn *k = conn_find(c, e->conn_id);

	if (!k && !(k = conn_new(c, e->conn_id, e->h.tgid)))
		return;
	conn_touch(c, k, e->h.ts);
	k->sk = e->sk;
	k->unix_sk = e->flags & TT_CF_UNIX;
	fmt_addr(k->addr, sizeof(k->addr), e);
	if (!k->comm[0])
		strncpy_cut(k->comm, sizeof(k->comm), e->comm, strnlen(e->comm, TT_COMM_LEN));
	if (e->flags & TT_CF_ACCEPTED)
		k->tcp.t_accept_ns = e->h.ts;
	k->tcp.conn_seen = true;
	k->tcp.accepted = e->flags & (TT_CF_ACCEPTED | TT_CF_LISTENER);
	k->tcp.t_established = e->t_established;
}

/* k goes with whatever it had in flight: reported as lost, never as a client's abort. */
static void conn_evict(struct correlator *c, struct conn *k)
{
	loss_inflight(k);
	conn_close(c, k);
}

static bool conn_busy(const struct conn *k)
{
	return k->rs.r || k->rq.pend_head || k->rq.reading || h2x_busy(k);
}

void correlator__expire(struct correlator *c, uint64_t now_ns)
{
	struct conn *k, *prev;

	/* over the bound: the least recently active go first; a loss if they had work */
	while (hmap__count(c->tab.byid) > c->o.max_conns && (k = c->tab.lru_tail)) {
		if (conn_busy(k))
			c->st.conns_evicted++;
		conn_evict(c, k);
	}
	/*
	 * Its close may be among records the kernel dropped: a connection with work in flight,
	 * silent since before a drop and for idle_ns, is not coming back.
	 */
	for (k = c->tab.lru_tail; k && k->last_ts + c->o.idle_ns < now_ns; k = prev) {
		prev = k->lru_prev;
		if (conn_busy(k) && k->last_ts < c->drops.last_drop_ts) {
			c->st.conns_orphaned++;
			conn_evict(c, k);
		} else if (!conn_busy(k) && (k->id & TT_CONN_SSL)) {
			/* a memory BIO's connection has no socket, so no close to see: idle, gone */
			conn_evict(c, k);
		}
	}
	/* threads not heard of for the history kept: gone (a worker that exited), or idle */
	if (c->sched)
		c->st.threads_forgotten += sched_book__expire(c->sched, now_ns);
}
