/* SPDX-License-Identifier: MIT */
/* tokenload's configuration and per-request record, shared by its modules. */
#ifndef TL_TOKENLOAD_H
#define TL_TOKENLOAD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#define TL_MAX_PIPELINE 64

struct tl_config {
	struct sockaddr_storage addr;
	socklen_t addrlen;
	char host[64]; /* Host header */
	const char *path;
	unsigned requests;
	unsigned concurrency;
	long max_tokens; /* -1: leave it to the server */
	bool stream;
	bool include_usage;
	const char *model;
	unsigned prompt_bytes;
	unsigned pipeline;
	long abort_after; /* -1: never */
	unsigned abort_every;
	unsigned pause_every;
	uint64_t pause_ns;
	unsigned rcvbuf;
	unsigned mss; /* TCP_MAXSEG announced on connect, 0: the kernel's */
	char id_prefix[64];
	const char *out;
	uint64_t timeout_ns;
	bool keepalive;
	bool close_at_final; /* stop reading at the stream's own end and close */
	bool no_chunk_times; /* leave t_chunk_ns out of the output lines */
	const char *unix_path; /* connect to this unix socket instead */
};

extern struct tl_config cfg;

/* What tokenload saw of one request. */
struct tl_result {
	char request_id[96];
	int status;	  /* 0: no response */
	uint64_t t_sent_ns; /* just before the send of the request */
	/* the first request of a new connection: around its connect(), else 0 */
	uint64_t t_connect_ns, t_connected_ns;
	uint64_t *t_chunk_ns;
	uint32_t chunks;
	uint32_t chunk_cap;
	long long tokens; /* model tokens the stream announced, -1 if none */
	bool aborted;
	bool final; /* the stream's own end arrived ([DONE], "done":true, message_stop...) */
	const char *error; /* static string, NULL when fine */
	uint64_t t_done_ns;
	uint64_t bytes;	   /* response bytes, headers included */
};

/* report.c: output lines and the summary. */
int report_open(const char *path);
void report_result(const struct tl_result *r);
/* Prints the summary on stderr; returns the exit code. */
int report_close(uint64_t elapsed_ns);

/* client.c: one connection's worker thread. */
void *client_main(void *arg);

/* body.c: a request with X-Request-Id id. */
struct strbuf;
void build_request(struct strbuf *sb, const char *id, bool close);

#endif
