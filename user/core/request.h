/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One request/response exchange as the correlator saw it on the wire, and the latencies
 * derived from it (docs/time.md: TTFT, ITL, TPOT, E2E). All times are
 * CLOCK_MONOTONIC ns.
 */
#ifndef TT_REQUEST_H
#define TT_REQUEST_H

#include <stdbool.h>
#include <stdint.h>
#include "http.h"
#include "classify.h"
#include "stack.h"

enum body_format {
	FMT_NONE,	/* no body (HEAD, 204, 304) or none seen */
	FMT_SSE,	/* text/event-stream: one data event = one chunk */
	FMT_NDJSON,	/* application/x-ndjson (Ollama): one line = one chunk */
	FMT_JSON,	/* one JSON document: a non-streaming answer */
	FMT_RAW,	/* anything else: the whole body is one unit */
	FMT_GRPC,	/* application/grpc over HTTP/2: one length-prefixed message = one chunk */
};

const char *body_format_name(enum body_format f);

enum abort_reason {
	ABORT_NONE,
	ABORT_CLIENT,		/* the client closed or reset mid-response */
	ABORT_SERVER,		/* the server closed before the response ended */
	ABORT_LOST,		/* records were dropped: the rest of the response is unknown */
	ABORT_DESYNC,		/* the response stopped parsing as HTTP */
};

const char *abort_reason_name(enum abort_reason r);

#define REQ_ADDR_MAX	160
#define REQ_GRPC_MSG_MAX	128

/* Fields of a request record that an HTTP/2 stream may not know (tt_request.unknown). */
enum req_field {
	RF_METHOD,
	RF_PATH,
	RF_STATUS,
	RF_HOST,
	RF_CONTENT_TYPE,
	RF_REQUEST_ID,
	RF_TRACEPARENT,
	RF_GRPC_STATUS,
	RF_NR,
};

/* its name in JSON ("method", "path", ...) */
const char *req_field_name(enum req_field f);

/* Which HTTP/2 window a flow-control stall waited for (tt_stall.flow_window). */
enum stall_flow_window {
	FLOW_WINDOW_NONE,
	FLOW_WINDOW_STREAM,		/* the stream's own */
	FLOW_WINDOW_CONN,		/* the connection's */
};

const char *stall_flow_window_name(enum stall_flow_window w);

/* Why a stall took its time (issue: stall attribution); parts of a gap, by cause. */
enum stall_cause {
	STALL_ONCPU,		/* the serving thread(s) ran: computing */
	STALL_RUNQ,		/* runnable, waiting for a CPU */
	STALL_LOCK,		/* blocked on a futex: a lock or a condition */
	STALL_IO,		/* blocked on disk or other I/O */
	STALL_SLEEP,		/* an explicit sleep */
	STALL_POLL,		/* waiting in poll/epoll/select */
	STALL_BLOCKED,		/* off CPU for another reason */
	STALL_SEND,		/* inside the send: the socket buffer was full (slow reader) */
	STALL_STEAL,		/* on CPU, but the hypervisor ran something else (steal) */
	/* the kernel sums the causes above (bpf/events.h enum tt_time, same order) */
	STALL_GIL,		/* waiting for CPython's GIL, held by another thread */
	STALL_IDLE,		/* idle in the event loop until a timer, the network, or a
				 * process not traced woke it: waiting for that */
	STALL_FLOW,		/* HTTP/2: the client's flow-control window was used up, no
				 * WINDOW_UPDATE yet: the server could not send */
	STALL_UNKNOWN,		/* no scheduler data for that time */
	STALL_NR,
};

/* What ended a thread's wait (from the waker's kernel stack). */
enum wake_kind {
	WAKE_NONE,		/* not known, or not woken (preempted) */
	WAKE_TIMER,		/* a timer: the server slept or timed out */
	WAKE_FUTEX,		/* a futex wake from another thread (a lock, a condition) */
	WAKE_UNIX,		/* data on a Unix socket */
	WAKE_PIPE,		/* data on a pipe */
	WAKE_EVENTFD,		/* an eventfd */
	WAKE_NET,		/* data from the network */
	WAKE_TCP_LOCAL,		/* data on a loopback TCP connection, from the thread that sent it */
	WAKE_SIGNAL,		/* a signal */
	WAKE_CREATED,		/* not woken: made then, by the next hop (a new thread) */
	WAKE_OTHER,
	WAKE_NR,
};

const char *wake_kind_name(enum wake_kind k);

/*
 * One thread's part in a stall's explanation: the one that waited, who woke it, ... An
 * SGLang-shaped server's scheduler stall is six: the API server's loop, its ZMQ I/O thread,
 * the detokenizer's, the scheduler's, its main thread, its forward thread; seven to a lock's
 * holder. A chain cut here says so (tt_stall.hops_cut).
 */
#define STALL_HOPS_MAX	8
struct stall_hop {
	uint32_t pid, tid;
	char comm[16];
	enum stall_cause cause;		/* what this thread did in the window, mostly */
	uint64_t ns;			/* ... for how long */
	enum wake_kind woken_by;	/* how its wait ended (WAKE_NONE: it did not wait) */
	char wake_stack[160];		/* the waker's kernel stack, "fn <- fn", or "" */
	char func[160];			/* Python function (file:line) it ran or blocked in, or "" */
	uint64_t w0, w1;		/* the window it was accounted over: the gap up to when
					 * it woke the hop before */
};

const char *stall_cause_name(enum stall_cause c);

#define STALL_STACK_MAX	256
/* room for stall__describe()'s line: every hop with its names and function, the stack, Python */
#define STALL_LINE_MAX	(STALL_HOPS_MAX * 320 + STALL_STACK_MAX + 512)

struct tt_stall {
	uint32_t after_chunk;		/* the gap between chunk after_chunk and the next (0-based) */
	uint64_t t_begin_ns, t_end_ns;	/* the gap: two sends */
	uint64_t part_ns[STALL_NR];	/* time by cause; their sum is the gap */
	enum stall_cause cause;		/* the largest part */
	uint32_t retransmits;		/* TCP retransmits of the connection inside the gap */
	bool zero_window;		/* the peer advertised a zero window inside the gap */
	uint8_t flow_window;		/* STALL_FLOW's window: enum stall_flow_window */
	bool lost;			/* records were dropped during the gap: parts may be wrong */
	int engine_late;		/* with markers: 1 the token was made late, 0 it was made
					 * on time and sent late, -1 unknown */
	char stack[STALL_STACK_MAX];	/* longest block's stack, "fn <- fn <- ...", or "" */
	/* in Python terms: what ran on the chain's threads, where the longest block was and
	 * for a GIL wait who held it ("ran: f (a.py:3) 80%; thread T blocked in ..."), or "" */
	char python[384];
	/*
	 * The chain: hop 0 is the thread the stream waited for; when it sat idle (in the
	 * event loop, on a lock) and another traced thread woke it, hop 1 is that one and
	 * what it did meanwhile; hop 2 the one that woke hop 1 late in the gap.
	 */
	struct stall_hop hop[STALL_HOPS_MAX];
	uint32_t nhops;
	bool hops_cut;			/* the last hop had a waker past STALL_HOPS_MAX: not told */
	/* the stack's addresses, until its text is known */
	struct stack_ips stack_ips;
	bool stack_pending;		/* addresses known, text not yet: the session resolves it */
};

struct tt_request {
	/* where */
	uint32_t pid;
	uint32_t tid;			/* thread of the last send of the response */
	char comm[16];
	uint64_t conn_id;
	char conn[REQ_ADDR_MAX];	/* "laddr:lport-raddr:rport" */
	uint64_t seq;			/* 1 for the first request of the connection */
	bool tls;			/* over TLS: its plaintext came from OpenSSL's calls */
	bool client;			/* the traced process made the request (an outbound call):
					 * times are when it sent and received */
	/*
	 * HTTP/2: the request is one stream of the connection. joined: it began before the
	 * tracer saw its connection, so its start and headers were not seen; unknown: the
	 * fields that could not be decoded (bit per enum req_field), sent or not.
	 */
	bool h2;
	uint32_t h2_stream;
	bool joined;
	uint16_t unknown;

	/* what */
	char method[HTTP_METHOD_MAX];
	char path[HTTP_PATH_MAX];
	char request_id[HTTP_REQID_MAX];	/* X-Request-Id of the request, else the response's */
	char host[HTTP_HOST_MAX];	/* the request's Host: which API a client called */
	char traceparent[HTTP_TRACEPARENT_MAX];	/* the request's W3C traceparent, unchecked */
	char model[CLS_STR_MAX];		/* request body's "model", else the stream's */
	char resp_id[CLS_STR_MAX];		/* the stream's own id (chatcmpl-…, msg_…) */
	int status;
	int grpc_status;		/* gRPC: the trailers' grpc-status, -1 when none came */
	char grpc_message[REQ_GRPC_MSG_MAX];	/* ...and grpc-message, as sent */
	enum body_format format;
	int stream;			/* 1 streamed, 0 not, -1 unknown */
	int64_t max_tokens;		/* asked for, -1 if not said */

	/* when */
	uint64_t t_recv_ns;		/* read of the request's first byte */
	uint64_t t_start_ns;		/* read of its last byte: TTFT starts here */
	uint64_t t_head_ns;		/* send of the response head */
	uint64_t t_end_ns;		/* last send of the response */
	uint64_t queue_ns;		/* the request's first bytes waited this long in the socket
					 * before the server read them (accept backlog included) */
	bool queue_known;
	uint64_t accept_wait_ns;	/* first request of a connection: handshake to accept() */
	bool accept_wait_known;

	/* the stream */
	uint64_t *tok_ns;		/* send time of each content chunk */
	uint32_t chunks;
	size_t tok_cap;			/* vec.h */
	int64_t model_tokens;		/* the stream's own count, -1 if it gave none */
	uint32_t tool_frames;
	uint32_t empty_events;		/* parsed events without content */
	uint32_t unknown_events;	/* events that could not be told (cut, not JSON) */
	uint32_t comments;		/* SSE comments (heartbeats) */
	bool saw_final;			/* [DONE] / done:true / message_stop */
	uint64_t lost_records;

	/* inside the server (uprobe / USDT markers); 0 = not seen */
	uint64_t t_admit_ns;		/* admitted by the scheduler */
	uint64_t t_made_first_ns;	/* first token produced */
	uint64_t t_made_done_ns;	/* generation done */
	uint64_t *made_ns;		/* produced time of each chunk's token, by order; NULL */
	uint32_t nmade;
	size_t made_cap;
	uint32_t markers_ambiguous;	/* unkeyed marker hits it might have owned, not given */
	uint32_t io_tid;		/* thread that read the request */
	uint32_t senders[4];		/* threads that sent the response (the first four) */
	uint32_t nsenders;
	uint32_t made_tid;		/* thread that fired the token markers */

	/* stalls: gaps that count as stalls, with where the time went */
	struct tt_stall *stalls;
	uint32_t nstalls;
	size_t stalls_cap;

	/* flags */
	bool stream_error;		/* an error event inside a 2xx stream */
	bool complete;			/* the response ended as its framing says */
	bool truncated;			/* some bytes were not captured: counts may be low */
	bool lost;			/* ring-buffer records of this exchange were dropped */
	enum abort_reason abort;

	/* derived by request__finish() */
	uint64_t tokens;		/* model_tokens if known, else chunks */
	uint64_t ttft_ns;		/* 0 when no token */
	uint64_t tpot_ns;
	uint64_t e2e_ns;
	uint64_t itl_p50_ns, itl_p90_ns, itl_p99_ns, itl_max_ns;
	/* TTFT breakdown from markers: admit + prefill + emit_to_wire = ttft when all known */
	int64_t admit_ns, prefill_ns, emit_to_wire_ns;
	bool admit_known, prefill_known, emit_known;
	/* per token: send time - produced time */
	uint64_t emit_p50_ns, emit_p99_ns, emit_max_ns;
	uint32_t nemit;			/* tokens with both times */

	/*
	 * A proxy's downstream request paired with the upstream call it made for it (proxy.h):
	 * TTFT = request_delay + the upstream's TTFT + first_token_delay.
	 */
	struct {
		bool paired;
		uint8_t by;			/* enum pair_by */
		char conn[REQ_ADDR_MAX];
		uint32_t stream_id;		/* an HTTP/2 upstream call: its stream (else 0) */
		char request_id[HTTP_REQID_MAX];
		uint64_t ttft_ns;		/* the upstream's, as the proxy received it */
		int64_t request_delay_ns;	/* downstream request read -> upstream request sent */
		int64_t first_token_delay_ns;	/* upstream first token read -> sent downstream */
		uint64_t token_delay_p50_ns, token_delay_p99_ns, token_delay_max_ns;
		uint32_t ntoken_delays;
	} up;

	struct tt_request *next;	/* pending queue of its connection */
};

struct tt_request *request__new(void);
void request__free(struct tt_request *r);
/* A deep copy (its arrays too), not on any queue. NULL when out of memory. */
struct tt_request *request__dup(const struct tt_request *r);
/* Record one content chunk sent at ts. -ENOMEM leaves the request flagged truncated. */
int request__add_chunk(struct tt_request *r, uint64_t ts);
/* Record the production (marker) time of the next token. */
int request__add_made(struct tt_request *r, uint64_t ts);
/* Compute the derived fields. */
void request__finish(struct tt_request *r);
/* Gap i (0-based) between chunks i and i+1. */
static inline uint64_t request__itl(const struct tt_request *r, uint32_t i)
{
	return r->tok_ns[i + 1] - r->tok_ns[i];
}
/*
 * 4xx/5xx, a gRPC status other than OK, or a stream that failed midway: counted apart, out of
 * the latency statistics
 */
static inline bool request__is_error(const struct tt_request *r)
{
	return r->status >= 400 || r->grpc_status > 0 || r->stream_error;
}

#endif /* TT_REQUEST_H */
