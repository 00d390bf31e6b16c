// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "frontend.h"
#include "server.h"
#include "util.h"

/* How long shutdown waits for front ends to notice their sockets closed. */
#define DRAIN_NS (5 * NSEC_PER_SEC)

atomic_bool ts_exiting;

static int listen_fd = -1;
static int wake_pipe[2] = { -1, -1 };
static pthread_t accept_th;
static bool accept_running;

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct conn *head;
	unsigned count;
} reg = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

int server_listen(void)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	int one = 1, err;
	bool v6 = strchr(cfg.bind, ':') != NULL;

	if (v6) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)cfg.port);
		err = inet_pton(AF_INET6, cfg.bind, &sin6->sin6_addr);
		len = sizeof(*sin6);
	} else {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)cfg.port);
		err = inet_pton(AF_INET, cfg.bind, &sin->sin_addr);
		len = sizeof(*sin);
	}
	if (err != 1) {
		fprintf(stderr, "%s: --bind: '%s' is not an IPv4 or IPv6 address\n", prog_name,
			cfg.bind);
		return -EINVAL;
	}
	listen_fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (listen_fd < 0)
		return -errno;
	setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(listen_fd, (struct sockaddr *)&ss, len) || listen(listen_fd, 1024)) {
		err = -errno;
		fprintf(stderr, "%s: cannot listen on %s:%u: %s\n", prog_name, cfg.bind, cfg.port,
			strerror(errno));
		return err;
	}
	getsockname(listen_fd, (struct sockaddr *)&ss, &len);
	printf(v6 ? "listening on [%s]:%u\n" : "listening on %s:%u\n", cfg.bind,
	       ntohs(v6 ? sin6->sin6_port : sin->sin_port));
	fflush(stdout);
	if (pipe2(wake_pipe, O_CLOEXEC))
		return -errno;
	return 0;
}

static void reg_add(struct conn *c)
{
	pthread_mutex_lock(&reg.mu);
	c->prev = NULL;
	c->next = reg.head;
	if (reg.head)
		reg.head->prev = c;
	reg.head = c;
	reg.count++;
	pthread_mutex_unlock(&reg.mu);
}

void server_conn_done(struct conn *c)
{
	pthread_mutex_lock(&reg.mu);
	if (c->prev)
		c->prev->next = c->next;
	else
		reg.head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	reg.count--;
	pthread_cond_broadcast(&reg.cv);
	pthread_mutex_unlock(&reg.mu);
}

static void tune_socket(int fd)
{
	int v = cfg.nodelay;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v)))
		fprintf(stderr, "%s: TCP_NODELAY: %s\n", prog_name, strerror(errno));
	if (cfg.sndbuf) {
		v = (int)cfg.sndbuf;
		if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)))
			fprintf(stderr, "%s: SO_SNDBUF: %s\n", prog_name, strerror(errno));
	}
}

/* Waits for a pending connection or the wake pipe, at most until deadline (0: forever). */
static bool wait_listen(uint64_t deadline, bool *woken)
{
	struct pollfd p[2] = {
		{ .fd = listen_fd, .events = POLLIN },
		{ .fd = wake_pipe[0], .events = POLLIN },
	};
	struct timespec ts, *tsp = NULL;
	int n;

	if (deadline) {
		uint64_t now = now_ns(), d = deadline > now ? deadline - now : 0;

		ts.tv_sec = (time_t)(d / NSEC_PER_SEC);
		ts.tv_nsec = (long)(d % NSEC_PER_SEC);
		tsp = &ts;
		p[0].fd = -1; /* only the wake pipe: this is the accept delay */
	}
	n = ppoll(p, 2, tsp, NULL);
	*woken = n > 0 && p[1].revents;
	return n > 0 && p[0].revents;
}

static void *accept_main(void *arg)
{
	uint64_t conn_counter = 0;
	bool woken;

	(void)arg;
	set_thread_name("ts-accept");
	for (;;) {
		struct conn *c;
		pthread_attr_t attr;
		pthread_t th;
		uint64_t t0, t;
		int fd;

		wait_listen(0, &woken);
		if (woken)
			break;
		/* The connection and its request wait in the kernel meanwhile. */
		if (cfg.accept_delay_ns) {
			wait_listen(now_ns() + cfg.accept_delay_ns, &woken);
			if (woken)
				break;
		}
		t0 = now_ns();
		fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		t = now_ns();
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOMEM) {
				fprintf(stderr, "%s: accept: %s\n", prog_name, strerror(errno));
				sleep_until_ns(now_ns() + 10 * NSEC_PER_MSEC);
			}
			continue;
		}
		tune_socket(fd);
		c = xcalloc(1, sizeof(*c));
		c->fd = fd;
		c->conn_num = ++conn_counter;
		c->t_accept_call = t0;
		c->t_accept = t;
		reg_add(c);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&th, &attr, frontend_main, c)) {
			fprintf(stderr, "%s: no thread for a connection, dropped\n", prog_name);
			server_conn_done(c);
			close(fd);
			free(c);
		}
		pthread_attr_destroy(&attr);
	}
	return NULL;
}

int server_start(void)
{
	int err = pthread_create(&accept_th, NULL, accept_main, NULL);

	if (!err)
		accept_running = true;
	return -err;
}

void server_stop_accepting(void)
{
	atomic_store(&ts_exiting, true);
	if (accept_running) {
		if (write(wake_pipe[1], "x", 1) < 0)
			fprintf(stderr, "%s: cannot wake the acceptor: %s\n", prog_name,
				strerror(errno));
		pthread_join(accept_th, NULL);
		accept_running = false;
	}
	if (listen_fd >= 0)
		close(listen_fd);
	listen_fd = -1;
}

void server_close_conns(void)
{
	uint64_t deadline = now_ns() + DRAIN_NS;
	struct timespec ts = { (time_t)(deadline / NSEC_PER_SEC), (long)(deadline % NSEC_PER_SEC) };

	pthread_mutex_lock(&reg.mu);
	/* Wakes threads blocked in read() or send(); they close and unregister. */
	for (struct conn *c = reg.head; c; c = c->next)
		shutdown(c->fd, SHUT_RDWR);
	while (reg.count) {
		/* reg.cv uses CLOCK_REALTIME: convert the deadline each time. */
		struct timespec now_rt;
		uint64_t now = now_ns();

		if (now >= deadline)
			break;
		clock_gettime(CLOCK_REALTIME, &now_rt);
		ts.tv_sec = now_rt.tv_sec + (time_t)((deadline - now) / NSEC_PER_SEC);
		ts.tv_nsec = now_rt.tv_nsec + (long)((deadline - now) % NSEC_PER_SEC);
		if (ts.tv_nsec >= (long)NSEC_PER_SEC) {
			ts.tv_sec++;
			ts.tv_nsec -= (long)NSEC_PER_SEC;
		}
		pthread_cond_timedwait(&reg.cv, &reg.mu, &ts);
	}
	if (reg.count)
		fprintf(stderr, "%s: %u connection(s) still busy at exit\n", prog_name, reg.count);
	pthread_mutex_unlock(&reg.mu);
	for (int i = 0; i < 2; i++)
		if (wake_pipe[i] >= 0)
			close(wake_pipe[i]);
}
