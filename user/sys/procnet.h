/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The TCP ports a process listens on, from /proc/PID/fd and /proc/PID/net/tcp{,6}. */
#ifndef TT_PROCNET_H
#define TT_PROCNET_H

#include <stdint.h>

/* Fills up to max ports; returns how many, or -errno. */
int procnet__listen_ports(uint32_t pid, uint16_t *ports, int max);

#endif /* TT_PROCNET_H */
