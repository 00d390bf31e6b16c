/* SPDX-License-Identifier: MIT */
/*
 * A front-end thread serves one connection, like one API-server worker:
 * reads requests (pipelined ones in order), sends the response headers,
 * submits to the engine, then formats and sends each event it hands over.
 */
#ifndef TS_FRONTEND_H
#define TS_FRONTEND_H

#include "server.h"

/* pthread start routine; owns c and frees it. */
void *frontend_main(void *c);

#endif
