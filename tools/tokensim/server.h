/* SPDX-License-Identifier: MIT */
/*
 * The listening socket, the acceptor thread (ts-accept) and the registry of
 * live connections, each served by its own front-end thread (ts-front).
 */
#ifndef TS_SERVER_H
#define TS_SERVER_H

#include <stdatomic.h>
#include <stdint.h>

struct conn {
	int fd;
	uint64_t conn_num; /* 1, 2, ... in accept order */
	uint64_t t_accept_call; /* CLOCK_MONOTONIC just before the accept() that returned it */
	uint64_t t_accept; /* CLOCK_MONOTONIC when accept() returned it */
	struct conn *prev, *next;
};

/* Set once the server is stopping: front ends take no new request. */
extern atomic_bool ts_exiting;

/* Binds and listens; prints "listening on ADDR:PORT". Returns -errno. */
int server_listen(void);
int server_start(void);
/* Stops accepting and joins the acceptor. */
void server_stop_accepting(void);
/* Shuts every live connection down and waits (bounded) for its thread. */
void server_close_conns(void);

/* Called by a front end when it is done with c, before closing c->fd. */
void server_conn_done(struct conn *c);

#endif
