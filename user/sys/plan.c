// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The plan: which programs carry the socket data (a hook family) and which variants of the
 * optional hooks this kernel takes. The families are tried in order, the first that loads
 * and attaches wins; what the others said is kept for -v and the ready line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "loader_int.h"
#include "procnet.h"
#include "util.h"

enum ready_variant {
	READY_TP,
	READY_FENTRY,
	READY_KPROBE,
	READY_NONE,
};

static const char *const ready_names[] = { "tp", "fentry", "kprobe", "none" };

/* One way of loading: the data family and the variants of the optional hooks. */
struct plan {
	enum hook_family data;
	enum ready_variant ready;
	bool nostate;	/* sched_switch without prev_state (before Linux 5.18) */
	bool sysfx;	/* accept, close and the late exits as trampolines (fx_exit_accept4) */
	bool quiet;	/* a failure's hint left out: another family is tried after it */
};

const char *hook_family_name(enum hook_family f)
{
	static const char *const names[HOOKS_NR] = { "auto", "tp", "fexit", "kprobe", "syscall" };

	return (unsigned int)f < HOOKS_NR ? names[f] : "?";
}

int hook_family_parse(const char *s, enum hook_family *f)
{
	for (int i = 0; i < HOOKS_NR; i++) {
		if (!strcmp(s, hook_family_name(i))) {
			*f = i;
			return 0;
		}
	}
	return -EINVAL;
}

static const char *load_hint(int err)
{
	switch (-err) {
	case EPERM:
	case EACCES:
		return " (refused: missing privileges, kernel lockdown, or "
		       "kernel.unprivileged_bpf_disabled; run as root)";
	case ENOMEM:
		return " (out of locked memory or map space; try a smaller -b)";
	case EINVAL:
	case ENOTSUP:
		return " (this kernel lacks a feature tokentrace needs: ring buffers, "
		       "raw tracepoints or BTF)";
	case ENOENT:
		return " (not in this kernel: try another --hooks family, see -v)";
	default:
		return "";
	}
}

/*
 * New connections of the targets' listening ports are followed from the handshake, so the
 * time a request waited in the accept backlog is known. The ports are constants of the
 * programs: found before load.
 */
static void set_listen_ports(struct tokentrace_bpf *sk, const struct loader_opts *o)
{
	struct tokentrace_bpf__rodata *ro = sk->rodata;
	uint16_t ports[64];
	__u32 n = 0;

	for (int i = 0; i < o->npids; i++) {
		int got = procnet__listen_ports(o->pids[i], ports, 64);

		for (int j = 0; j < got && n < ARRAY_SIZE(ro->lport_list); j++)
			ro->lport_list[n++] = ports[j];
	}
	ro->nlports = n;
}

static void set_family(struct tokentrace_bpf *sk, const struct plan *p)
{
	struct bpf_program *tp[] = { sk->progs.sock_send_length, sk->progs.sock_recv_length };
	struct bpf_program *fx[] = {
		sk->progs.fexit_inet_sendmsg, sk->progs.fexit_inet6_sendmsg,
		sk->progs.fexit_unix_sendmsg, sk->progs.fexit_inet_recvmsg,
		sk->progs.fexit_inet6_recvmsg, sk->progs.fexit_unix_recvmsg,
	};
	struct bpf_program *kp[] = {
		sk->progs.kp_inet_sendmsg, sk->progs.krp_inet_sendmsg,
		sk->progs.kp_inet6_sendmsg, sk->progs.krp_inet6_sendmsg,
		sk->progs.kp_unix_sendmsg, sk->progs.krp_unix_sendmsg,
		sk->progs.kp_inet_recvmsg, sk->progs.krp_inet_recvmsg,
		sk->progs.kp_inet6_recvmsg, sk->progs.krp_inet6_recvmsg,
		sk->progs.kp_unix_recvmsg, sk->progs.krp_unix_recvmsg,
	};
	struct bpf_program *sc[] = {
		sk->progs.sys_exit_write, sk->progs.sys_exit_writev, sk->progs.sys_exit_sendto,
		sk->progs.sys_exit_sendmsg, sk->progs.sys_exit_read, sk->progs.sys_exit_readv,
		sk->progs.sys_exit_recvfrom, sk->progs.sys_exit_recvmsg,
	};

	for (size_t i = 0; i < ARRAY_SIZE(tp); i++)
		bpf_program__set_autoload(tp[i], p->data == HOOKS_TP);
	for (size_t i = 0; i < ARRAY_SIZE(fx); i++)
		bpf_program__set_autoload(fx[i], p->data == HOOKS_FEXIT);
	for (size_t i = 0; i < ARRAY_SIZE(kp); i++)
		bpf_program__set_autoload(kp[i], p->data == HOOKS_KPROBE);
	for (size_t i = 0; i < ARRAY_SIZE(sc); i++)
		bpf_program__set_autoload(sc[i], p->data == HOOKS_SYSCALL);
	bpf_program__set_autoload(sk->progs.sys_exit_accept4, !p->sysfx);
	bpf_program__set_autoload(sk->progs.sys_exit_accept, !p->sysfx);
	bpf_program__set_autoload(sk->progs.sys_enter_close, !p->sysfx);
	bpf_program__set_autoload(sk->progs.fx_exit_accept4, p->sysfx);
	bpf_program__set_autoload(sk->progs.fx_exit_accept, p->sysfx);
	bpf_program__set_autoload(sk->progs.fx_enter_close, p->sysfx);
	bpf_program__set_autoload(sk->progs.sk_data_ready, p->ready == READY_TP);
	bpf_program__set_autoload(sk->progs.fentry_sock_def_readable, p->ready == READY_FENTRY);
	bpf_program__set_autoload(sk->progs.kp_sock_def_readable, p->ready == READY_KPROBE);
	/* kprobe family only: the socket from a call's entry to its return */
	if (p->data != HOOKS_KPROBE && p->ready != READY_KPROBE)
		bpf_map__set_max_entries(sk->maps.kstash, 1);
}

/* The read-only configuration and map sizes; each family of probes says what it loads. */
static void configure(struct loader *l, const struct loader_opts *o, const struct plan *p)
{
	struct tokentrace_bpf *sk = l->skel;
	int ncpu = libbpf_num_possible_cpus();

	sk->rodata->cap_bytes = o->capture_bytes;
	sk->rodata->targ_lport = o->port;
	sk->rodata->aggregate = o->aggregate;
	if (o->budget && !o->aggregate) {	/* --aggregate sends no records */
		/* a record's share of a second; spent up to a second ahead (a burst of N) */
		sk->rodata->budget_cost_ns = MAX(1000000000ull / o->budget, 1ull);
		sk->rodata->budget_burst_ns = 1000000000ull;
		sk->rodata->budget_ring_max = o->ringbuf_bytes / 2;
	}
	sk->rodata->have_loop = l->ft.loop;
	sk->rodata->stalls = o->stalls;
	sk->rodata->d_percpu = l->ft.percpu_lookup;
	sk->rodata->nr_cpus = ncpu > 0 ? ncpu : 1;
	sk->rodata->follow_forks = o->follow_forks;
	for (int i = 0; i < o->nfind_comms && i < (int)ARRAY_SIZE(sk->rodata->find_comm); i++)
		memcpy((char *)sk->rodata->find_comm[i], o->find_comms[i],
		       sizeof(sk->rodata->find_comm[i]));
	sk->rodata->nfind_comm = MIN(o->nfind_comms, (int)ARRAY_SIZE(sk->rodata->find_comm));
	sk->rodata->find_cgroup = o->find_cgroup;
	sk->rodata->find_port = o->find_port;
	if (o->span_floor_ns)
		sk->rodata->span_floor_ns = o->span_floor_ns;
	set_listen_ports(sk, o);
	/* wake the consumer only when a quarter of the ring is waiting; it polls otherwise */
	sk->rodata->wake_bytes = o->ringbuf_bytes / 4;
	bpf_map__set_max_entries(sk->maps.scratch, ncpu > 0 ? ncpu : 1);
	bpf_map__set_max_entries(sk->maps.events, o->ringbuf_bytes);
	set_family(sk, p);
	bpf_program__set_autoload(sk->progs.tcp_retransmit_skb, o->stalls);
	stall_hooks__configure(sk, o, p->sysfx, p->nostate);
	/* --aggregate copies no payload, TLS none either */
	tls_attach__configure(sk, o->tls && !o->aggregate);
	python_attach__configure(sk, o);
	markers_attach__configure(sk, o);
}

/* A program its family attaches itself (after the plan, or only when asked for). */
static bool attached_later(const struct tokentrace_bpf *sk, const struct bpf_program *p)
{
	return stall_hooks__owns(sk, p) || tls_attach__owns(sk, p) ||
	       python_attach__owns(sk, p) || markers_attach__owns(sk, p);
}

/*
 * TOKENTRACE_VERIFIER_STATS=1: the kernel verifier's statistics for each program it loads
 * (its time, the instructions it processed), a line each on stderr: what startup is made of
 * (BENCHMARKS.md, "Startup is the kernel's verifier"). Level 4 logs only those few lines;
 * a log that does not fit its buffer would fail the load (ENOSPC), hence the room.
 */
#define VSTATS_LEN	16384	/* a program with many subprograms lists each one's stack */

static char *vstats_arm(struct tokentrace_bpf *sk)
{
	struct bpf_program *prog;
	size_t n = 0;
	char *buf;

	if (!getenv("TOKENTRACE_VERIFIER_STATS"))
		return NULL;
	bpf_object__for_each_program(prog, sk->obj)
		n++;
	buf = calloc(n, VSTATS_LEN);
	if (!buf)
		return NULL;
	n = 0;
	bpf_object__for_each_program(prog, sk->obj) {
		bpf_program__set_log_buf(prog, buf + n++ * VSTATS_LEN, VSTATS_LEN);
		bpf_program__set_log_level(prog, 4);
	}
	return buf;
}

static void vstats_print(struct tokentrace_bpf *sk, char *buf)
{
	struct bpf_program *prog;
	size_t n = 0;

	if (!buf)
		return;
	bpf_object__for_each_program(prog, sk->obj) {
		char *log = buf + n++ * VSTATS_LEN;

		if (!bpf_program__autoload(prog))
			continue;
		fprintf(stderr, "tokentrace: verifier: %s:", bpf_program__name(prog));
		for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n"))
			fprintf(stderr, " %s;", line);
		fputc('\n', stderr);
	}
	free(buf);
}

/*
 * Load the skeleton the plan's way and attach its generic programs. On failure *why says
 * what failed and nothing stays loaded.
 */
static int try_plan(struct loader *l, const struct loader_opts *o, const struct plan *p,
		    char *why, size_t whysz)
{
	struct bpf_program *prog;
	__u8 what = TT_TGT_DATA | (o->stalls ? TT_TGT_SCHED : 0);
	char *vstats;
	int err;

	l->skel = tokentrace_bpf__open();
	if (!l->skel) {
		err = -errno;
		snprintf(why, whysz, "opening the BPF object failed: %s", strerror(-err));
		return err;
	}
	configure(l, o, p);
	vstats = vstats_arm(l->skel);
	err = tokentrace_bpf__load(l->skel);
	vstats_print(l->skel, vstats);
	if (err) {
		snprintf(why, whysz, "loading the BPF programs failed: %s%s", strerror(-err),
			 p->quiet ? "" : load_hint(err));
		goto fail;
	}
	l->skel->bss->t_loaded = now_mono_ns();
	for (int i = 0; i < o->npids; i++) {
		err = loader__add_target(l, o->pids[i], what);
		if (err && err != -EEXIST) {
			snprintf(why, whysz, "adding PID %u to the targets failed: %s", o->pids[i],
				 strerror(-err));
			goto fail;
		}
	}
	/* attach one by one to name the probe that fails */
	bpf_object__for_each_program(prog, l->skel->obj) {
		struct bpf_link *link;

		if (!bpf_program__autoload(prog) || attached_later(l->skel, prog))
			continue;
		link = bpf_program__attach(prog);
		if (!link) {
			err = -errno;
			snprintf(why, whysz, "attaching %s failed: %s%s",
				 bpf_program__section_name(prog), strerror(-err),
				 p->quiet ? "" : load_hint(err));
			goto fail;
		}
		err = linkset__keep(&l->links, link);
		if (err)
			goto fail;
		l->nprobes++;
	}
	return 0;
fail:
	linkset__clear(&l->links);
	l->nprobes = 0;
	tokentrace_bpf__destroy(l->skel);
	l->skel = NULL;
	return err ? err : -EINVAL;
}

static enum ready_variant ready_for(enum hook_family data)
{
	if (features__tracefs_has("events/sock/sk_data_ready"))
		return READY_TP;
	if (data == HOOKS_FEXIT)
		return READY_FENTRY;
	if (data == HOOKS_KPROBE)
		return READY_KPROBE;
	return READY_NONE;
}

/* A family and the variants it may need: 0 once one loads, else the last failure in why. */
static int try_family(struct loader *l, const struct loader_opts *o, struct plan *p,
		      char *why, size_t whysz)
{
	int err = try_plan(l, o, p, why, whysz);

	if (err && p->sysfx) {
		/* a trampoline the probe's did not foretell: the tracepoints, as before */
		p->sysfx = false;
		p->quiet = true;
		err = try_plan(l, o, p, why, whysz);
	}
	if (err && o->stalls) {
		/* before 5.18: the same with the scheduler hook of older kernels */
		p->nostate = true;
		p->quiet = true;
		if (!try_plan(l, o, p, why, whysz))
			err = 0;
	}
	return err;
}

/* A family this kernel is known to lack without trying: why, in tried; else false. */
static bool known_missing(enum hook_family f, char *tried, size_t *nt, size_t sz)
{
	const char *why = NULL;

	if (f == HOOKS_TP && !features__tracefs_has("events/sock/sock_send_length"))
		why = "tp: no sock:sock_send_length tracepoint (Linux 6.5+)";
	else if (f == HOOKS_KPROBE && !features__tracefs_has("kprobe_events"))
		why = "kprobe: kernel built without kprobes";
	if (!why)
		return false;
	if (*nt < sz)
		*nt += snprintf(tried + *nt, sz - *nt, "%s%s", *nt ? "; " : "", why);
	return true;
}

int plan__load(struct loader *l, const struct loader_opts *o)
{
	static const enum hook_family order[] = { HOOKS_TP, HOOKS_FEXIT, HOOKS_KPROBE,
						  HOOKS_SYSCALL };
	char why[256] = "", tried[256] = "";
	bool forced = o->hooks != HOOKS_AUTO;
	size_t nt = 0;
	int err = -ENOENT;

	for (size_t i = 0; i < ARRAY_SIZE(order); i++) {
		struct plan p = {
			.data = order[i],
			.sysfx = l->ft.sysfx,
			.ready = ready_for(order[i]),
			.quiet = !forced && i + 1 < ARRAY_SIZE(order),
		};

		if (forced && o->hooks != order[i])
			continue;
		if (!forced && known_missing(order[i], tried, &nt, sizeof(tried)))
			continue;
		err = try_family(l, o, &p, why, sizeof(why));
		if (!err) {
			l->choice.data = p.data;
			l->choice.ready = ready_names[p.ready];
			l->choice.sys = p.sysfx ? "fexit" : "tp";
			l->sysfx = p.sysfx;
			break;
		}
		if (nt < sizeof(tried))
			nt += snprintf(tried + nt, sizeof(tried) - nt, "%s%s: %s", nt ? "; " : "",
				       hook_family_name(p.data), why);
	}
	snprintf(l->choice.why, sizeof(l->choice.why), "%s", tried);
	if (err) {
		if (forced)
			fprintf(stderr, "tokentrace: --hooks %s: %s\n", hook_family_name(o->hooks),
				why);
		else
			fprintf(stderr, "tokentrace: no way to hook socket data in this kernel "
				"(%s)\n", tried);
		return err;
	}
	if (l->verbose && tried[0])
		fprintf(stderr, "tokentrace: hooks: %s chosen; before it: %s\n",
			hook_family_name(l->choice.data), tried);
	return 0;
}
