// SPDX-License-Identifier: MIT
/*
 * tokensim: a token-streaming HTTP/1.1 server that behaves on the wire like
 * real LLM servers and writes down exactly what it did, for tokentrace's
 * tests to compare with.
 *
 * Threads: main (signals), ts-accept (accept loop), ts-front (one per
 * connection), ts-engine (the batch scheduler), and short-lived ts-lock /
 * ts-hog helpers for injected stalls.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "engine.h"
#include "server.h"
#include "truth.h"
#include "util.h"

const char *prog_name = "tokensim";

int main(int argc, char **argv)
{
	sigset_t set;
	int err, sig;

	cli_parse(argc, argv);
	/* A client that goes away must fail our write() with EPIPE, not kill us. */
	signal(SIGPIPE, SIG_IGN);
	/* Every thread inherits this mask: only sigwait() below sees the signals. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	err = truth_open(cfg.truth);
	if (err) {
		fprintf(stderr, "%s: --truth %s: %s\n", prog_name, cfg.truth, strerror(-err));
		return 1;
	}
	if (server_listen())
		return 1;
	err = engine_start();
	if (!err)
		err = server_start();
	if (err) {
		fprintf(stderr, "%s: cannot start threads: %s\n", prog_name, strerror(-err));
		return 1;
	}

	sigwait(&set, &sig);
	/* A second Ctrl-C while we drain kills the process the default way. */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);

	server_stop_accepting();
	engine_stop();
	server_close_conns();
	truth_close();
	return 0;
}
