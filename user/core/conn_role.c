// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Who is the server on a connection? The first bytes say: a request line read by the target
 * makes it the server; a request line it writes makes it a client (of another server: an
 * outbound stream). A status line says the same the other way round. A connection joined
 * mid-exchange shows neither at first; it keeps being looked at until a message starts, for a
 * bounded number of records.
 *
 * A start line may come in pieces: a client is free to write "P" and then "OST /v1/...", and
 * a server to read it so. The bytes that may still begin one are held (conn_sniff) until
 * there are enough to decide, then handed to the parser ahead of the record that decided:
 * no byte of a first request is lost and none is parsed out of place. What cannot begin a
 * message is refused at its first byte that says so.
 *
 * HTTP/2 says itself too: the client's connection preface (prior knowledge, TLS with ALPN h2),
 * or a server that speaks first with its SETTINGS (gRPC C-core, nghttpd); on a connection
 * joined mid-way, frames whose headers hold together (h2__sniff()), their sender told by a
 * header block or, when none says, by the socket: the target's accepted connections (and
 * those of its listening ports found open) are its server side.
 */
#include <stdio.h>
#include <string.h>
#include "conn.h"
#include "util.h"

/* The methods that start a request on a connection whose role is not known yet (RFC 9110 9,
 * RFC 5789). Any capitals followed by a space would take the tail of a split "POST" ("ST /")
 * or a joined connection's mid-line bytes for a request. */
static const char *const methods[] = {
	"GET ", "HEAD ", "POST ", "PUT ", "DELETE ", "CONNECT ", "OPTIONS ", "TRACE ", "PATCH ",
};

static const char status_start[] = "HTTP/1.";

enum start {
	START_NO,	/* cannot begin a start line */
	START_MORE,	/* may: too few bytes to say */
	START_REQUEST,
	START_STATUS,
	START_H2,	/* HTTP/2's connection preface */
};

/* How d[0..n) compares with the start want: equal (its whole length), a prefix of it, or no. */
static enum start match(const uint8_t *d, size_t n, const char *want, enum start yes)
{
	size_t l = strlen(want);

	if (memcmp(d, want, n < l ? n : l))
		return START_NO;
	return n >= l ? yes : START_MORE;
}

/* The preface, once ROLE_PREFIX_MAX of it came: no HTTP/1.1 start begins "PRI * HT" */
static enum start h2_preface(const uint8_t *d, size_t n)
{
	if (!h2__is_preface(d, n))
		return START_NO;
	return n >= ROLE_PREFIX_MAX ? START_H2 : START_MORE;
}

static enum start start_of(const uint8_t *d, size_t n)
{
	enum start s = match(d, n, status_start, START_STATUS);
	enum start h2 = h2_preface(d, n);

	if (h2 > s)
		s = h2;
	for (size_t i = 0; i < ARRAY_SIZE(methods) && s != START_REQUEST; i++) {
		enum start m = match(d, n, methods[i], START_REQUEST);

		if (m > s)
			s = m;
	}
	return s;
}

/* TLS record header: handshake or application data, version 3.x */
static bool is_tls(const uint8_t *d, size_t n)
{
	return n >= 3 && (d[0] == 0x16 || d[0] == 0x17) && d[1] == 0x03 && d[2] <= 0x04;
}

/*
 * HTTP/1.x is text from its first byte, and so is any part of a body this tool parses
 * (chunk sizes, SSE, NDJSON, JSON). A first byte that is a control or not ASCII is another
 * protocol (ZMQ, gRPC, msgpack, a database's): no need to wait for more of it.
 */
static bool is_binary(const uint8_t *d, size_t n)
{
	return n && (d[0] >= 0x80 || (d[0] < 0x20 && d[0] != '\t' && d[0] != '\r' &&
				      d[0] != '\n'));
}

void role_ignore(struct conn *k)
{
	k->role = ROLE_IGNORED;
	k->sniff.npre = 0;
	k->c->st.conns_ignored++;
	if (k->c->o.ignore_conn)
		k->c->o.ignore_conn(k->c->o.ignore_ud, k->id);
}

/* What was held does not begin a message after all, or is no longer followed by its rest. */
void role_restart(struct conn *k)
{
	k->sniff.npre = 0;
}

/*
 * The held bytes and this record's, as one start (as many bytes as a decision can use):
 * START_NO lets the record be looked at alone, since servers begin messages with a syscall.
 */
static enum start start_with_held(const struct conn_sniff *s, const struct tt_data_ev *e)
{
	uint8_t d[2 * ROLE_PREFIX_MAX];
	size_t more = e->cap < ROLE_PREFIX_MAX ? e->cap : ROLE_PREFIX_MAX;

	memcpy(d, s->pre, s->npre);
	memcpy(d + s->npre, e->data, more);
	return start_of(d, s->npre + more);
}

/* Too few bytes to say: hold them, unless nothing of the same run can follow them. */
static void hold(struct conn *k, const struct tt_data_ev *e, bool with_held)
{
	struct conn_sniff *s = &k->sniff;

	if ((e->flags & TT_DF_MORE) || (uint64_t)e->ret > e->cap ||
	    (with_held ? s->npre : 0) + e->cap > ROLE_PREFIX_MAX) {
		s->npre = 0;	/* the next bytes were not captured: no start to complete */
		return;
	}
	if (!with_held) {
		s->npre = 0;
		s->pre_dir = e->dir;
		s->pre_ts = k->ts;
		s->pre_arrival = e->arrival;
	}
	memcpy(s->pre + s->npre, e->data, e->cap);
	s->npre += e->cap;
}

/* The side that sent a record: the server or the client. */
static enum role role_if_sent_by(const struct tt_data_ev *e, bool server)
{
	return (e->dir == TT_DIR_SEND) == server ? ROLE_SERVER : ROLE_CLIENT;
}

/*
 * HTTP/2 without a preface in sight: a server's SETTINGS first, or frames of a connection
 * open before the tracer came. True once it says who is the server.
 */
static bool h2_begins(struct conn *k, const struct tt_data_ev *e)
{
	enum h2_sender who;

	if (!k->sniff.unknown_feeds && h2__is_settings(e->data, e->cap)) {
		k->role = role_if_sent_by(e, true);
		k->sniff.h2_start = H2_START_PREFACE;
	} else if (h2__sniff(e->data, e->cap, &who)) {
		if (who != H2_SENDER_UNKNOWN)
			k->role = role_if_sent_by(e, who == H2_SENDER_SERVER);
		else if (k->tcp.accepted)
			k->role = ROLE_SERVER;
		else if (k->tcp.conn_seen && !k->unix_sk)
			k->role = ROLE_CLIENT;	/* TCP the target neither accepted nor listens on */
		else
			return false;
		k->sniff.h2_start = H2_START_JOINED;
	} else {
		return false;
	}
	k->sniff.h2 = true;
	k->sniff.npre = 0;
	return true;
}

bool role_classify(struct conn *k, const struct tt_data_ev *e)
{
	struct conn_sniff *s = &k->sniff;
	const uint8_t *d = e->data;
	size_t n = e->cap;
	bool with_held = s->npre && s->pre_dir == e->dir;
	enum start st = START_NO;

	/*
	 * Unix sockets carry the servers' own plumbing (ZMQ, gRPC) far more than HTTP: binary
	 * there is never worth waiting for; over TCP a client may still follow garbage with a
	 * request, so only the bounded wait gives up on it. HTTP/2 (gRPC over a Unix socket)
	 * is binary too, and says so first.
	 */
	if (n && !with_held && h2_begins(k, e))
		return true;
	if (is_tls(d, n) || (k->unix_sk && is_binary(d, n))) {
		role_ignore(k);
		return false;
	}
	/* an empty read (an end of file) says nothing, and leaves what is held as it was */
	if (with_held && n)
		st = start_with_held(s, e);
	if (st == START_NO && n) {
		with_held = false;
		s->npre = 0;
		st = start_of(d, n);
	}
	switch (st) {
	case START_REQUEST:
		k->role = e->dir == TT_DIR_RECV ? ROLE_SERVER : ROLE_CLIENT;
		return true;
	case START_STATUS:
		k->role = e->dir == TT_DIR_SEND ? ROLE_SERVER : ROLE_CLIENT;
		return true;
	case START_H2:
		/* the client sends the preface */
		k->role = e->dir == TT_DIR_RECV ? ROLE_SERVER : ROLE_CLIENT;
		k->sniff.h2 = true;
		k->sniff.h2_start = H2_START_PREFACE;
		return true;
	case START_MORE:
		hold(k, e, with_held);
		s->unknown_feeds++;
		return false;
	case START_NO:
		break;
	}
	if (++s->unknown_feeds > UNKNOWN_FEEDS_MAX)
		role_ignore(k);
	return false;
}

/*
 * The first TLS plaintext of a connection: it was ignored while only its ciphertext showed
 * (a handshake); from now on its plaintext is parsed, its ciphertext is not.
 */
void tls_begins(struct correlator *c, struct conn *k, const struct tt_data_ev *e)
{
	k->tls = true;
	c->st.conns_tls++;
	if (e->conn_id & TT_CONN_SSL)
		snprintf(k->addr, sizeof(k->addr), "tls:memory-bio");
	if (k->role != ROLE_IGNORED)
		return;
	c->st.conns_ignored--;
	k->role = ROLE_UNKNOWN;
	k->sniff.unknown_feeds = 0;
	k->sniff.npre = 0;
	k->loss.seg_next[0] = k->loss.seg_next[1] = 0;
	exchange_parsers_restart(k);
}
