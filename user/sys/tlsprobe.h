/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where a process's OpenSSL is: the libssl.so files it maps, its executable when that carries
 * OpenSSL with exported symbols (Node), and the system's libssl.so.3 when it has not loaded
 * one yet (Python's ssl is loaded at its first import: a uprobe placed on the file for the
 * process takes effect when the process maps it). For each, the file offsets of SSL_write,
 * SSL_write_ex, SSL_read, SSL_read_ex and SSL_do_handshake, from the file's own symbols.
 */
#ifndef TT_TLSPROBE_H
#define TT_TLSPROBE_H

#include <limits.h>
#include <stdint.h>

enum tls_func {
	TLSF_WRITE,
	TLSF_WRITE_EX,
	TLSF_READ,
	TLSF_READ_EX,
	TLSF_HANDSHAKE,	/* SSL_do_handshake: ties the SSL object to its socket early */
	TLSF_NR,
};

struct tls_lib {
	char path[PATH_MAX + 32];	/* /proc/PID/root/<file> */
	uint64_t off[TLSF_NR];		/* file offsets, 0: the function is not there */
	bool mapped;			/* mapped now (else: the system's, for a later load) */
};

#define TLS_LIBS_MAX	4

/* The OpenSSL copies of pid: how many (0 none), up to TLS_LIBS_MAX. */
int tlsprobe__find(uint32_t pid, struct tls_lib *libs, int max);

const char *tls_func_name(enum tls_func f);

#endif /* TT_TLSPROBE_H */
