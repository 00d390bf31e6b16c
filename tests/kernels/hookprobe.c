// SPDX-License-Identifier: GPL-2.0
/*
 * hookprobe: what this kernel offers tokentrace for socket sends and receives. Each candidate
 * hook (hookprobe.bpf.c) is loaded and attached on its own, then the process moves bytes
 * through a loopback TCP connection with each family of calls (write/read, send/recv,
 * sendmsg/recvmsg, writev/readv, and write/read over IPv6) and reports, per hook, how many
 * calls it saw and how many bytes their results added up to. A hook that attaches but misses
 * a family is as useless as one that is absent, and only running the calls shows it.
 *
 * Output, one line per item, for tests/kernels/README.md:
 *   btf-func NAME yes|no            function in /sys/kernel/btf/vmlinux (fentry/fexit need it)
 *   btf-rawtp NAME args N|no        arguments of the raw tracepoint (btf_trace_NAME)
 *   helper NAME ok|ERRNO            a program calling the helper loads
 *   hook SEC load ok|ERR attach ok|ERR PHASE=CALLS/BYTES...
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "hookprobe.skel.h"

#define NHOOK 64
#define XFER 100	/* bytes per call */
#define CALLS 4		/* calls per phase */

enum { PH_SETUP, PH_WRITE, PH_SEND, PH_SENDMSG, PH_WRITEV, PH_WRITE6, PH_SLEEP, PH_CLOSE, NPH };
static const char *phase_name[NPH] = {
	"setup", "write", "send", "sendmsg", "writev", "write6", "sleep", "close",
};

struct hook {
	char *sec;
	char *name;
	int load_err;		/* 0, a -errno, or 1: not tried (no BTF target) */
	int attach_err;
	struct bpf_link *link;
	unsigned long long hits[NPH], bytes[NPH];
};

static struct hook hooks[NHOOK + 16];
static int nhooks;
static int verbose;

static int print_fn(enum libbpf_print_level level, const char *fmt, va_list args)
{
	/* the verifier's log of a refused program is long; -v shows it */
	if (!verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static const char *err_name(int err)
{
	static char buf[32];

	switch (-err) {
	case 0: return "ok";
	case ENOENT: return "ENOENT";
	case EINVAL: return "EINVAL";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case ESRCH: return "ESRCH";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case E2BIG: return "E2BIG";
	case EBUSY: return "EBUSY";
	}
	snprintf(buf, sizeof(buf), "E%d", -err);
	return buf;
}

/* the program's counter index and, for helper checks, the helper's name */
static int prog_id(const char *name, const char **helper)
{
	const char *u = strchr(name, '_');

	*helper = u ? u + 1 : NULL;
	return atoi(name + 1);
}

/* fentry/fexit/tp_btf need their target in the kernel's BTF, or the whole load fails */
static int btf_target_ok(const struct btf *vmlinux, const char *sec)
{
	char buf[128];
	const char *t;

	if (!vmlinux)
		return 1;
	if (!strncmp(sec, "fentry/", 7) || !strncmp(sec, "fexit/", 6)) {
		t = strchr(sec, '/') + 1;
		return btf__find_by_name_kind(vmlinux, t, BTF_KIND_FUNC) >= 0;
	}
	if (!strncmp(sec, "tp_btf/", 7)) {
		snprintf(buf, sizeof(buf), "btf_trace_%s", sec + 7);
		return btf__find_by_name_kind(vmlinux, buf, BTF_KIND_TYPEDEF) >= 0;
	}
	return 1;
}

/* open a skeleton with only the programs in want[] (by index into hooks) set to load */
static struct hookprobe_bpf *open_with(const int *want)
{
	struct hookprobe_bpf *skel = hookprobe_bpf__open();
	struct bpf_program *p;
	int i = 0;

	if (!skel)
		return NULL;
	skel->rodata->target_tgid = getpid();
	bpf_object__for_each_program(p, skel->obj)
		bpf_program__set_autoload(p, want[i++]);
	return skel;
}

static void report_btf(const struct btf *vmlinux)
{
	static const char *funcs[] = {
		"sock_sendmsg", "sock_recvmsg", "__sock_sendmsg", "sock_sendmsg_nosec",
		"sock_recvmsg_nosec", "sock_write_iter", "sock_read_iter", "inet_sendmsg",
		"inet_recvmsg", "inet6_sendmsg", "inet6_recvmsg", "tcp_sendmsg", "tcp_recvmsg",
		"security_socket_sendmsg", "security_socket_recvmsg", "__sys_sendto",
		"__sys_recvfrom", "____sys_sendmsg", "____sys_recvmsg", "tcp_retransmit_skb",
	};
	static const char *rawtps[] = {
		"sock_send_length", "sock_recv_length", "sk_data_ready", "inet_sock_set_state",
		"tcp_retransmit_skb", "sched_switch", "sched_wakeup", "sched_wakeup_new",
	};
	char buf[128];
	unsigned int i;

	for (i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++)
		printf("btf-func %s %s\n", funcs[i], vmlinux &&
		       btf__find_by_name_kind(vmlinux, funcs[i], BTF_KIND_FUNC) >= 0 ? "yes" : "no");
	for (i = 0; i < sizeof(rawtps) / sizeof(rawtps[0]); i++) {
		const struct btf_type *t;
		int id;

		snprintf(buf, sizeof(buf), "btf_trace_%s", rawtps[i]);
		id = vmlinux ? btf__find_by_name_kind(vmlinux, buf, BTF_KIND_TYPEDEF) : -1;
		if (id < 0) {
			printf("btf-rawtp %s no\n", rawtps[i]);
			continue;
		}
		/* typedef -> pointer -> func proto; the first argument is the tracepoint's data */
		t = btf__type_by_id(vmlinux, btf__resolve_type(vmlinux, id));
		if (t && btf_is_ptr(t))
			t = btf__type_by_id(vmlinux, t->type);
		if (!t || !btf_is_func_proto(t))
			printf("btf-rawtp %s unknown\n", rawtps[i]);
		else
			printf("btf-rawtp %s args %d\n", rawtps[i], btf_vlen(t) - 1);
	}
}

static int must(int rc, const char *what)
{
	if (rc < 0) {
		fprintf(stderr, "hookprobe: %s: %s\n", what, strerror(errno));
		exit(2);
	}
	return rc;
}

/* a connected loopback TCP pair */
static void tcp_pair(int family, int *cli, int *srv)
{
	struct sockaddr_storage ss = { .ss_family = family };
	socklen_t len = family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					     sizeof(struct sockaddr_in);
	int l = must(socket(family, SOCK_STREAM, 0), "socket");

	if (family == AF_INET6)
		((struct sockaddr_in6 *)&ss)->sin6_addr = in6addr_loopback;
	else
		((struct sockaddr_in *)&ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	must(bind(l, (struct sockaddr *)&ss, len), "bind");
	must(listen(l, 1), "listen");
	must(getsockname(l, (struct sockaddr *)&ss, &len), "getsockname");
	*cli = must(socket(family, SOCK_STREAM, 0), "socket");
	must(connect(*cli, (struct sockaddr *)&ss, len), "connect");
	*srv = must(accept(l, NULL, NULL), "accept");
	close(l);
}

static void xfer(int ph, int cli, int srv)
{
	char out[XFER], in[XFER];
	struct iovec iov[2];
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 1 };
	ssize_t n;
	int got;

	memset(out, 'x', sizeof(out));
	for (int c = 0; c < CALLS; c++) {
		switch (ph) {
		case PH_SEND:
			n = send(cli, out, XFER, 0);
			break;
		case PH_SENDMSG:
			iov[0] = (struct iovec){ out, XFER };
			n = sendmsg(cli, &mh, 0);
			break;
		case PH_WRITEV:
			iov[0] = (struct iovec){ out, XFER / 2 };
			iov[1] = (struct iovec){ out + XFER / 2, XFER - XFER / 2 };
			n = writev(cli, iov, 2);
			break;
		default:
			n = write(cli, out, XFER);
		}
		must(n == XFER ? 0 : -1, "send");
		for (got = 0; got < XFER; got += n) {
			switch (ph) {
			case PH_SEND:
				n = recv(srv, in, XFER - got, 0);
				break;
			case PH_SENDMSG:
				iov[0] = (struct iovec){ in, XFER - got };
				n = recvmsg(srv, &mh, 0);
				break;
			case PH_WRITEV:
				iov[0] = (struct iovec){ in, XFER / 2 };
				iov[1] = (struct iovec){ in + XFER / 2, XFER - got - XFER / 2 };
				n = readv(srv, iov, got ? 1 : 2);
				break;
			default:
				n = read(srv, in, XFER - got);
			}
			must(n > 0 ? 0 : -1, "receive");
		}
	}
}

static void snapshot(struct hookprobe_bpf *skel, unsigned long long *h, unsigned long long *b)
{
	memcpy(h, skel->bss->hits, sizeof(skel->bss->hits));
	memcpy(b, skel->bss->bytes, sizeof(skel->bss->bytes));
}

int main(int argc, char **argv)
{
	unsigned long long h0[NHOOK], b0[NHOOK], h1[NHOOK], b1[NHOOK];
	int want[NHOOK + 16] = {}, all[NHOOK + 16];
	struct hookprobe_bpf *skel;
	struct bpf_program *p;
	struct btf *vmlinux;
	int cli4, srv4, cli6, srv6, err, i;

	verbose = argc > 1 && !strcmp(argv[1], "-v");
	libbpf_set_print(print_fn);
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		printf("btf none: %s\n", strerror(errno));
	report_btf(vmlinux);

	skel = hookprobe_bpf__open();
	if (!skel) {
		fprintf(stderr, "hookprobe: opening the object failed: %s\n", strerror(errno));
		return 2;
	}
	bpf_object__for_each_program(p, skel->obj) {
		struct hook *hk = &hooks[nhooks];

		/* the names live as long as the object: this one is closed again below */
		hk->sec = strdup(bpf_program__section_name(p));
		hk->name = strdup(bpf_program__name(p));
		hk->load_err = btf_target_ok(vmlinux, hk->sec) ? 0 : 1;
		want[nhooks] = !hk->load_err;
		nhooks++;
	}
	hookprobe_bpf__destroy(skel);

	/* all that can load at once; else each alone, to name the ones the kernel refuses */
	skel = open_with(want);
	err = skel ? hookprobe_bpf__load(skel) : -errno;
	if (err) {
		hookprobe_bpf__destroy(skel);
		for (i = 0; i < nhooks; i++) {
			if (!want[i])
				continue;
			memset(all, 0, sizeof(all));
			all[i] = 1;
			skel = open_with(all);
			hooks[i].load_err = skel ? hookprobe_bpf__load(skel) : -errno;
			want[i] = !hooks[i].load_err;
			hookprobe_bpf__destroy(skel);
		}
		skel = open_with(want);
		err = skel ? hookprobe_bpf__load(skel) : -errno;
		if (err) {
			fprintf(stderr, "hookprobe: loading the loadable programs failed: %s\n",
				strerror(-err));
			return 2;
		}
	}

	i = 0;
	bpf_object__for_each_program(p, skel->obj) {
		struct hook *hk = &hooks[i++];
		const char *helper;

		prog_id(hk->name, &helper);
		if (!want[i - 1] || helper)
			continue;
		hk->link = bpf_program__attach(p);
		hk->attach_err = hk->link ? 0 : -errno;
	}

	for (int ph = 0; ph < NPH; ph++) {
		snapshot(skel, h0, b0);
		switch (ph) {
		case PH_SETUP:
			tcp_pair(AF_INET, &cli4, &srv4);
			tcp_pair(AF_INET6, &cli6, &srv6);
			break;
		case PH_WRITE6:
			xfer(PH_WRITE, cli6, srv6);
			break;
		case PH_SLEEP:
			for (int k = 0; k < CALLS; k++)
				usleep(10000);
			break;
		case PH_CLOSE:
			close(cli4);
			close(srv4);
			close(cli6);
			close(srv6);
			usleep(50000);	/* FIN/ACK run in softirq: let them finish */
			break;
		default:
			xfer(ph, cli4, srv4);
		}
		snapshot(skel, h1, b1);
		for (i = 0; i < nhooks; i++) {
			const char *helper;
			int id = prog_id(hooks[i].name, &helper);

			hooks[i].hits[ph] = h1[id] - h0[id];
			hooks[i].bytes[ph] = b1[id] - b0[id];
		}
	}

	/* in counter order, as hookprobe.bpf.c lists them, not in ELF section order */
	for (int k = 0; k < NHOOK; k++) {
		struct hook *hk = NULL;
		const char *helper;

		for (i = 0; i < nhooks; i++)
			if (prog_id(hooks[i].name, &helper) == k)
				hk = &hooks[i];
		if (!hk)
			continue;
		prog_id(hk->name, &helper);
		if (helper) {
			printf("helper %s %s\n", helper, hk->load_err == 1 ? "untried" :
			       err_name(hk->load_err));
			continue;
		}
		printf("hook %s load %s", hk->sec,
		       hk->load_err == 1 ? "no-btf-target" : err_name(hk->load_err));
		if (hk->load_err) {
			printf("\n");
			continue;
		}
		printf(" attach %s", err_name(hk->attach_err));
		if (!hk->attach_err)
			for (int ph = 0; ph < NPH; ph++)
				printf(" %s=%llu/%llu", phase_name[ph], hk->hits[ph], hk->bytes[ph]);
		printf("\n");
	}
	for (i = 0; i < nhooks; i++) {
		bpf_link__destroy(hooks[i].link);
		free(hooks[i].sec);
		free(hooks[i].name);
	}
	hookprobe_bpf__destroy(skel);
	btf__free(vmlinux);
	return 0;
}
