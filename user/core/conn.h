/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The correlator's insides, shared by its files and no one else (correlate.h is the API).
 * A record enters in correlate.c and goes, by what it is, to:
 *
 *   conn_table.c  connections by id, the least active first to go, their processes' names
 *   conn_role.c   who is the server: the first bytes of each direction, held until they say
 *   exchange.c    requests as they are read, and the response that answers each
 *   response.c    the response stream: its format, SSE or NDJSON events, chunks, aborts
 *   loss.c        records the kernel dropped or left out, and what they cost in flight
 *   tcp_state.c   closes and resets, retransmits, zero windows
 *   h2_exchange.c HTTP/2: a request per stream, the streams' ends, flow control (h2x.h)
 *   h2_body.c     ... each stream's response body: its format, gRPC messages, SSE, NDJSON
 *
 * Time rule: a callback of a parser runs inside the feed of one record, so "now" for it is
 * that record's timestamp (conn->ts). A content chunk is timestamped by the send in which its
 * event or line completed: that is when the whole of it had left the server.
 */
#ifndef TT_CONN_H
#define TT_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include "correlate.h"
#include "events.h"
#include "h2.h"
#include "http.h"
#include "ndjson.h"
#include "sse.h"
#include "vec.h"

#define DROP_WINDOWS	64
#define COMMS_MAX	256
/* Records of a connection whose role is still unknown before we stop looking at it. */
#define UNKNOWN_FEEDS_MAX	64
/* The longest start of a message a role decision waits for: "OPTIONS ", "CONNECT " */
#define ROLE_PREFIX_MAX	8

enum role {
	ROLE_UNKNOWN,
	ROLE_SERVER,	/* the target reads requests and writes responses */
	ROLE_CLIENT,	/* the target writes requests and reads responses: an outbound call */
	ROLE_IGNORED,	/* the bytes are not HTTP */
};

/* While the role is unknown (conn_role.c): the bytes that may begin a message, held. */
struct conn_sniff {
	uint32_t unknown_feeds;		/* records that did not say */
	uint8_t pre[ROLE_PREFIX_MAX];	/* a start line's first bytes, too few to decide */
	uint8_t npre;
	uint8_t pre_dir;		/* TT_DIR_* of pre */
	uint64_t pre_ts, pre_arrival;	/* of the record pre began in */
	/* the bytes said HTTP/2 (conn_role.c): how its parser starts */
	bool h2;
	enum h2_start h2_start;
};

/* Requests as the target reads them (a server) or writes them (a client): exchange.c */
struct conn_req {
	struct http_parser *p;
	struct tt_request *reading;	/* head seen, body not complete */
	uint64_t first_ts;		/* record in which the current request began */
	uint64_t arrival;		/* when its first bytes arrived (a server's socket) */
	struct buf body;		/* request body prefix, for model/stream */
	bool body_cut;
	uint64_t seq;
	/* read and not yet answered, oldest first */
	struct tt_request *pend_head, *pend_tail;
	/* "Upgrade: h2c" asked by the last request head, with its HTTP2-Settings */
	bool h2c_asked;
	char h2c_settings[HTTP_H2_SETTINGS_MAX];
};

/* correlator__arm_at()'s cache: a stream's stall threshold as of its chunk count */
struct arm_cache {
	uint64_t thr;
	uint32_t chunks;
};

/* The response being written (or read, by a client): response.c */
struct conn_resp {
	struct http_parser *p;
	bool active;			/* inside a response message */
	bool informational;		/* 1xx: answers nothing by itself */
	struct tt_request *r;		/* the request it answers; NULL if unmatched */
	enum body_format fmt;
	bool sniff;			/* decide SSE from the first body bytes */
	struct sse_parser *sse;
	struct ndjson_parser *nd;
	struct buf jbody;		/* non-streaming JSON body prefix, to classify */
	bool jbody_cut;
	uint64_t body_bytes;
	struct arm_cache arm;
};

/* The connection itself: tcp_state.c */
struct conn_tcp {
	uint64_t t_established;		/* handshake done, from the accept record */
	uint64_t t_accept_ns;
	/* the target accepted it, or it is of a target's listening port (found open) */
	bool accepted;
	bool conn_seen;			/* a connection record came */
	bool peer_closed;		/* the client sent its FIN (or reset) */
	bool we_closed;			/* the server closed its side first */
	/* why the connection is closing, while the parser is told of the EOF */
	enum abort_reason closing;
	/* TCP trouble: recent retransmits and the last zero-window spell */
	uint64_t retrans[16];
	uint32_t nretrans;
	uint64_t zw_from, zw_to;	/* zw_to 0: still zero */
};

/* What the records' continuity says: loss.c */
struct conn_loss {
	/*
	 * By direction (TT_DIR_*): the offset the next segment of the send or read in flight
	 * must have. HTTP/2 is full duplex: one thread's read of a connection comes between the
	 * segments of another's send (gRPC C-core reads and writes a socket at once).
	 */
	uint64_t seg_next[2];
	/*
	 * Records were dropped while requests waited: a response may be missing whole, and the
	 * next one would pair with the wrong request. Set by a loss, cleared once no request
	 * waits (in sync again); meanwhile every pairing is flagged lost.
	 */
	bool pairing_suspect;
};

struct conn {
	struct conn *lru_prev, *lru_next;	/* most recently active first */
	uint64_t last_ts;		/* the last record of the connection */
	struct correlator *c;
	uint64_t id;
	uint64_t sk;
	uint32_t pid;
	char comm[16];
	char addr[REQ_ADDR_MAX];
	bool unix_sk;			/* a Unix-domain socket */
	bool tls;			/* its data is TLS plaintext from OpenSSL's calls */
	enum role role;
	struct conn_sniff sniff;

	/* the record being fed: "now" for parser callbacks */
	uint64_t ts;
	uint32_t tid;

	struct conn_req rq;
	struct conn_resp rs;
	struct conn_tcp tcp;
	struct conn_loss loss;
	struct h2x *h2;			/* HTTP/2 (h2x.h): then rq.p and rs.p are not fed */
};

/* Connections by id, and the order they were last active in. */
struct conn_table {
	struct hmap *byid;
	struct conn *lru_head, *lru_tail;
	struct {
		uint32_t pid;
		char comm[16];
	} comms[COMMS_MAX];	/* process names; when full the oldest entry goes */
	size_t ncomms, comms_next;
};

/*
 * Records the kernel dropped, from the headers' running count: when the count moved, and
 * the windows in which it did (a stall spanning one was explained without them).
 */
struct drop_book {
	uint32_t seen;
	bool init;
	uint64_t last_rec_ts, last_drop_ts;
	struct {
		uint64_t from, to;
	} win[DROP_WINDOWS];
	uint32_t nwin;
};

struct correlator {
	struct corr_opts o;
	struct corr_stats st;
	struct attributor *attr;
	struct proxy *proxy;
	struct sched_book *sched;
	struct pysamples *py;		/* CPython stacks, with stalls and a py_name */
	struct conn_table tab;
	struct drop_book drops;
};

/* The direction requests go: read by a server, written by a client. */
static inline int req_dir(const struct conn *k)
{
	return k->role == ROLE_CLIENT ? TT_DIR_SEND : TT_DIR_RECV;
}

static inline bool role_known(const struct conn *k)
{
	return k->role == ROLE_SERVER || k->role == ROLE_CLIENT;
}

/* conn_table.c */
int conn_table__init(struct conn_table *t);
void conn_table__fini(struct conn_table *t);
struct conn *conn_find(struct correlator *c, uint64_t id);
struct conn *conn_new(struct correlator *c, uint64_t id, uint32_t pid);
void conn_touch(struct correlator *c, struct conn *k, uint64_t ts);
void conn_close(struct correlator *c, struct conn *k);	/* out of the table, freed */
/* Walk every connection: start with *iter 0; NULL at the end. None may go meanwhile. */
struct conn *conn_next(const struct correlator *c, size_t *iter);
const char *comm_of(struct correlator *c, uint32_t pid);
void conn_opened(struct correlator *c, const struct tt_conn_ev *e);

/* conn_role.c: false while the record does not make the role known */
bool role_classify(struct conn *k, const struct tt_data_ev *e);
void role_ignore(struct conn *k);
void role_restart(struct conn *k);
void tls_begins(struct correlator *c, struct conn *k, const struct tt_data_ev *e);

/* exchange.c */
extern const struct http_cb request_side_cb;
/* A request of k: its connection and process filled in, the next in k's order (seq). */
struct tt_request *exchange_request_new(struct conn *k);
void exchange_finish(struct conn *k, struct tt_request *r);
void exchange_push(struct conn *k, struct tt_request *r);
struct tt_request *exchange_pop(struct conn *k);
struct tt_request *exchange_pair(struct conn *k, const struct http_head *h);
int exchange_parsers_start(struct conn *k);
void exchange_parsers_restart(struct conn *k);
void exchange_free(struct conn *k);

/* response.c */
extern const struct http_cb response_side_cb;
void response_abort(struct conn *k, enum abort_reason why);
void response_sent(struct correlator *c, struct conn *k, const struct tt_data_ev *e);
void response_free(struct conn *k);
/* shared with HTTP/2's streams (h2_body.c): r is the request a chunk of k answers */
void response_add_sender(struct tt_request *r, uint32_t tid);
/* flow: the stream's HTTP/2 flow-control spells (stall_net.flow), or NULL */
void response_account(struct conn *k, struct tt_request *r, const struct chunk_info *ci,
		      const struct stall_flow *const *flow);
/* The body format a Content-Type says; sniff: decide from the first bytes (SSE or not). */
enum body_format response_format(const char *ctype, bool body, bool *sniff);
bool response_looks_like_sse(const uint8_t *d, size_t n);
/* A body in one piece (JSON, raw) is one unit, there when its last byte is. */
struct whole_body {
	enum body_format fmt;
	const struct buf *json;		/* FMT_JSON: the body's prefix */
	bool cut;
	uint64_t bytes;
};
void response_whole_body(struct conn *k, struct tt_request *r, const struct whole_body *b);
/* correlator__arm_at() for one stream r (with chunks) */
uint64_t response_arm_at(struct correlator *c, const struct tt_request *r, uint64_t now_ns,
			 uint64_t floor, struct arm_cache *ac);

/* loss.c */
void loss_note_drops(struct correlator *c, const struct tt_hdr *h);
void loss_conn(struct conn *k, uint32_t n, bool may_hide);
void loss_inflight(struct conn *k);
void loss_skipped(struct conn *k);

/* tcp_state.c */
void tcp_on_state(struct correlator *c, const struct tt_state_ev *e);
void tcp_on_event(struct correlator *c, const struct tt_tcp_ev *e);

#include "h2x.h"

#endif /* TT_CONN_H */
