// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "aggregate.h"
#include "loader.h"
#include "procmaps.h"
#include "procnet.h"
#include "pysampler.h"
#include "tlsprobe.h"
#include "tokentrace.skel.h"
#include "util.h"

#define BTF_PATH	"/sys/kernel/btf/vmlinux"
#define TRACEFS		"/sys/kernel/tracing"


/* probes kept: markers, OpenSSL's per process, a sampler per CPU; past it, said and refused */
#define LOADER_LINKS_MAX	65536

/* an OpenSSL copy probed for a process: each is probed once, rescans add new ones */
struct tls_done {
	uint32_t pid;
	dev_t dev;
	ino_t ino;
};

struct loader {
	struct tokentrace_bpf *skel;
	int nprobes;
	struct bpf_link **links;	/* every probe, in attach order */
	int nlinks, links_cap;
	struct loader_choice choice;
	bool percpu_lookup;		/* bpf_map_lookup_percpu_elem() (5.19+) */
	bool tls;
	bool sysfx;	/* the plan loaded has the syscall hooks as trampolines */
	struct tls_done *tls_done;
	size_t ntls_done, tls_done_cap;
	/* --stall-hooks lazy: the scheduler hooks, attached only while asked */
	struct bpf_link *stall[4];	/* switch, waking, hrtimer in and out */
	int nstall;
	struct bpf_link *late[3];	/* the late exits (late_exits[]), NULL: not attached */
	struct bpf_link *seed;		/* the task iterator run at each attach */
	/*
	 * Attaching and detaching them is done by a thread of its own: a syscall tracepoint's
	 * detach waits for RCU grace periods (~70 ms each here), which the consumer must not.
	 * sh_mu guards what follows, and libbpf attaches made at run time (attach_mu).
	 */
	pthread_t sh_thread;
	bool sh_started;		/* lazy hooks: the thread runs */
	bool sh_want, sh_quit;
	int sh_err;			/* an attach that failed, not yet told */
	pthread_mutex_t sh_mu, attach_mu;
	pthread_cond_t sh_cv;
	struct stall_hook_stats sh;
	uint64_t sh_since;		/* attached since (CLOCK_MONOTONIC), 0 while off */
	/* after a failed attach, none tried again before sh_retry_at (doubling, up to 1 s) */
	uint64_t sh_retry_at, sh_backoff_ns;
};

#define SH_BACKOFF_MIN_NS	10000000ull
#define SH_BACKOFF_MAX_NS	1000000000ull

static bool tls_done_has(const struct loader *l, uint32_t pid, const struct stat *st)
{
	for (size_t i = 0; i < l->ntls_done; i++)
		if (l->tls_done[i].pid == pid && l->tls_done[i].dev == st->st_dev &&
		    l->tls_done[i].ino == st->st_ino)
			return true;
	return false;
}

static void tls_done_add(struct loader *l, uint32_t pid, const struct stat *st)
{
	if (l->ntls_done == l->tls_done_cap) {
		size_t cap = l->tls_done_cap ? l->tls_done_cap * 2 : 16;
		struct tls_done *v = realloc(l->tls_done, cap * sizeof(*v));

		if (!v)
			return;	/* probed again at the next rescan: a duplicate, not a miss */
		l->tls_done = v;
		l->tls_done_cap = cap;
	}
	l->tls_done[l->ntls_done++] = (struct tls_done){ pid, st->st_dev, st->st_ino };
}

void loader__forget_process(struct loader *l, uint32_t pid)
{
	size_t j = 0;

	for (size_t i = 0; i < l->ntls_done; i++)
		if (l->tls_done[i].pid != pid)
			l->tls_done[j++] = l->tls_done[i];
	l->ntls_done = j;
}

static bool verbose;

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG && !verbose)
		return 0;
	if (!verbose)
		return 0;	/* failures are explained by our own one-liners */
	return vfprintf(stderr, fmt, args);
}

static bool has_cap(int cap)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {};

	if (syscall(SYS_capget, &hdr, data))
		return false;
	return data[cap / 32].effective & (1u << (cap % 32));
}

static int check_privileges(void)
{
	if (geteuid() == 0 || has_cap(CAP_SYS_ADMIN))
		return 0;
	if (has_cap(CAP_BPF) && has_cap(CAP_PERFMON))
		return 0;
	fprintf(stderr, "tokentrace: need root (or CAP_BPF and CAP_PERFMON) to load BPF programs; "
		"run it with sudo\n");
	return -EPERM;
}

static int check_btf(void)
{
	struct stat st;

	if (stat(BTF_PATH, &st) || !st.st_size) {
		fprintf(stderr, "tokentrace: this kernel exposes no BTF (%s is missing): tokentrace "
			"needs a kernel built with CONFIG_DEBUG_INFO_BTF=y\n", BTF_PATH);
		return -ENOENT;
	}
	return 0;
}

/* The syscall tracepoints attach through tracefs: mount it where the system did not. */
static int ensure_tracefs(void)
{
	/* effective ids: with capabilities instead of root, access() would ask the real uid */
	if (!faccessat(AT_FDCWD, TRACEFS "/events", F_OK, AT_EACCESS) ||
	    !faccessat(AT_FDCWD, "/sys/kernel/debug/tracing/events", F_OK, AT_EACCESS))
		return 0;
	if (mount("tracefs", TRACEFS, "tracefs", 0, NULL) && errno != EBUSY) {
		fprintf(stderr, "tokentrace: tracefs is not mounted and mounting it on %s failed: "
			"%s\n", TRACEFS, strerror(errno));
		return -errno;
	}
	return 0;
}

/*
 * New connections of the targets' listening ports are followed from the handshake, so the
 * time a request waited in the accept backlog is known. The ports are constants of the
 * programs: found before load.
 */
static void set_listen_ports(struct loader *l, const struct loader_opts *o)
{
	struct tokentrace_bpf__rodata *ro = l->skel->rodata;
	uint16_t ports[64];
	__u32 n = 0;

	for (int i = 0; i < o->npids; i++) {
		int got = procnet__listen_ports(o->pids[i], ports, 64);

		for (int j = 0; j < got && n < ARRAY_SIZE(ro->lport_list); j++)
			ro->lport_list[n++] = ports[j];
	}
	ro->nlports = n;
}

/* Room for n more links: 0, or -E2BIG past LOADER_LINKS_MAX, -ENOMEM. */
static int links_room(struct loader *l, int n)
{
	struct bpf_link **v;
	int cap;

	if (l->nlinks + n <= l->links_cap)
		return 0;
	if (l->nlinks + n > LOADER_LINKS_MAX) {
		fprintf(stderr, "tokentrace: too many probes (%d)\n", LOADER_LINKS_MAX);
		return -E2BIG;
	}
	cap = MIN(MAX(l->links_cap * 2, l->nlinks + n + 64), LOADER_LINKS_MAX);
	v = realloc(l->links, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	l->links = v;
	l->links_cap = cap;
	return 0;
}

static int keep_link(struct loader *l, struct bpf_link *link)
{
	int err = links_room(l, 1);

	if (err) {
		bpf_link__destroy(link);
		return err;
	}
	l->links[l->nlinks++] = link;
	l->nprobes++;
	return 0;
}

static int attach_marker(struct loader *l, struct marker *m, int idx, uint32_t pid)
{
	__u64 cookie = TT_COOKIE(idx, m->key_arg, m->key_str);
	struct bpf_link *link;
	int err;

	if (m->probe == MP_USDT) {
		LIBBPF_OPTS(bpf_usdt_opts, uo, .usdt_cookie = cookie);

		link = bpf_program__attach_usdt(l->skel->progs.marker_usdt, pid, m->path,
						m->symbol, m->usdt_name, &uo);
	} else {
		LIBBPF_OPTS(bpf_uprobe_opts, po, .bpf_cookie = cookie,
			    .retprobe = m->probe == MP_URETPROBE);

		link = bpf_program__attach_uprobe_opts(m->probe == MP_URETPROBE ?
						       l->skel->progs.marker_uretprobe :
						       l->skel->progs.marker_uprobe,
						       pid, m->path, m->file_off, &po);
	}
	if (!link) {
		err = -errno;
		fprintf(stderr, "tokentrace: attaching %s in PID %u failed: %s\n", m->arg, pid,
			strerror(-err));
		return err;
	}
	return keep_link(l, link);
}

/*
 * Each marker in every target that maps its binary, whatever the order of the targets; an
 * error if none does, or if one that maps it lacks the probe.
 */
static int attach_markers(struct loader *l, const struct loader_opts *o)
{
	char path[PATH_MAX];
	int err;

	for (int i = 0; i < o->nmarkers; i++) {
		struct marker *m = &o->markers[i];
		int attached = 0, mapped = 0;

		for (int j = 0; j < o->npids; j++) {
			if (procmaps__find_binary(o->pids[j], m->binary, path, sizeof(path)) ==
			    -ENOENT)
				continue;
			mapped++;
			err = marker__resolve(m, o->pids[j]);
			if (err)
				return err;
			err = attach_marker(l, m, i, o->pids[j]);
			if (err)
				return err;
			attached++;
		}
		if (!mapped)	/* resolve says why, in the user's words */
			return marker__resolve(m, o->pids[0]) ?: -ENOENT;
	}
	return 0;
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

static bool tracefs_has(const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), TRACEFS "/%s", rel);
	if (!faccessat(AT_FDCWD, path, F_OK, AT_EACCESS))
		return true;
	snprintf(path, sizeof(path), "/sys/kernel/debug/tracing/%s", rel);
	return !faccessat(AT_FDCWD, path, F_OK, AT_EACCESS);
}

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
};

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
}

/*
 * The exits of the syscalls whose long blocks send their span from there, with the user
 * stack (late_bit() in tokentrace.bpf.c: the bit of each is its index here).
 */
static const char *const late_exits[] = { "futex", "nanosleep", "clock_nanosleep" };

/* the tracepoints' one program (late_exit_tp), or the trampoline of late exit i */
static struct bpf_program **late_prog(struct tokentrace_bpf *sk, size_t i, bool fx)
{
	struct bpf_program **tr[] = {
		&sk->progs.fx_late_exit_futex, &sk->progs.fx_late_exit_nanosleep,
		&sk->progs.fx_late_exit_clock_nanosleep,
	};

	_Static_assert(ARRAY_SIZE(tr) == ARRAY_SIZE(late_exits), "late exits");
	return fx ? tr[i] : &sk->progs.late_exit_tp;
}

/* late exit i attached: its trampoline, or the one tracepoint program on its tracepoint */
static struct bpf_link *late_attach(struct tokentrace_bpf *sk, size_t i, bool fx)
{
	char tp[64];

	if (fx)
		return bpf_program__attach(*late_prog(sk, i, true));
	snprintf(tp, sizeof(tp), "sys_exit_%s", late_exits[i]);
	return bpf_program__attach_tracepoint(sk->progs.late_exit_tp, "syscalls", tp);
}

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
	sk->rodata->have_loop = l->choice.loop;
	sk->rodata->stalls = o->stalls;
	sk->rodata->lazy_sched = o->stalls && o->lazy_stalls;
	sk->rodata->d_percpu = l->percpu_lookup;
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
	set_listen_ports(l, o);
	/* wake the consumer only when a quarter of the ring is waiting; it polls otherwise */
	sk->rodata->wake_bytes = o->ringbuf_bytes / 4;
	bpf_map__set_max_entries(sk->maps.scratch, ncpu > 0 ? ncpu : 1);
	bpf_map__set_max_entries(sk->maps.events, o->ringbuf_bytes);
	set_family(sk, p);
	/* kprobe family only: the socket from a call's entry to its return */
	if (p->data != HOOKS_KPROBE && p->ready != READY_KPROBE)
		bpf_map__set_max_entries(sk->maps.kstash, 1);
	/* stall attribution's hooks only when it is on: untraced processes pay nothing then */
	bpf_program__set_autoload(sk->progs.sched_switch, o->stalls && !p->nostate);
	bpf_program__set_autoload(sk->progs.sched_switch_nostate, o->stalls && p->nostate);
	bpf_program__set_autoload(sk->progs.sched_waking, o->stalls);
	bpf_program__set_autoload(sk->progs.irq_hrtimer_in, o->stalls);
	bpf_program__set_autoload(sk->progs.irq_hrtimer_out, o->stalls);
	for (size_t i = 0; i < ARRAY_SIZE(late_exits); i++) {
		/*
		 * Lazy hooks: the late exits are attached while threads already wait in those
		 * syscalls, and a trampoline only sees the calls that entered after it came (a
		 * return inside the function goes back the way it came in): the tracepoints,
		 * which see every exit (and tax every syscall only while they are attached)
		 */
		bool fx = p->sysfx && !o->lazy_stalls;

		bpf_program__set_autoload(*late_prog(sk, i, fx), o->stalls);
		bpf_program__set_autoload(*late_prog(sk, i, !fx), false);
	}
	/* OpenSSL's calls: plaintext of TLS connections (tls.bpf.h) */
	sk->rodata->tls_uprobes = o->tls;
	bpf_program__set_autoload(sk->progs.tls_write_enter, o->tls);
	bpf_program__set_autoload(sk->progs.tls_write_ex_enter, o->tls);
	bpf_program__set_autoload(sk->progs.tls_read_enter, o->tls);
	bpf_program__set_autoload(sk->progs.tls_read_ex_enter, o->tls);
	bpf_program__set_autoload(sk->progs.tls_handshake_enter, o->tls);
	bpf_program__set_autoload(sk->progs.tls_exit_prog, o->tls);
	bpf_program__set_autoload(sk->progs.tcp_retransmit_skb, o->stalls);
	bpf_program__set_autoload(sk->progs.sched_seed, o->stalls && o->lazy_stalls);
	/* CPython's stacks (python.bpf.h): the sampler, and its per-thread cache only then */
	bpf_program__set_autoload(sk->progs.py_sample, o->stalls && o->python_hz);
	if (!o->stalls || !o->python_hz)
		bpf_map__set_max_entries(sk->maps.py_tstates, 1);
	/* marker programs only when markers are asked for: less to load and verify */
	for (int i = 0; i < 3; i++) {
		static const enum marker_probe kinds[] = { MP_UPROBE, MP_URETPROBE, MP_USDT };
		struct bpf_program *prog = i == 0 ? sk->progs.marker_uprobe :
					   i == 1 ? sk->progs.marker_uretprobe :
						    sk->progs.marker_usdt;
		bool used = false;

		for (int j = 0; j < o->nmarkers; j++)
			used |= o->markers[j].probe == kinds[i];
		bpf_program__set_autoload(prog, used);
	}
}

static bool attached_later(const struct tokentrace_bpf *sk, const struct bpf_program *p)
{
	for (size_t i = 0; i < ARRAY_SIZE(late_exits); i++)
		if (p == *late_prog((struct tokentrace_bpf *)sk, i, false) ||
		    p == *late_prog((struct tokentrace_bpf *)sk, i, true))
			return true;
	return p == sk->progs.marker_uprobe || p == sk->progs.marker_uretprobe ||
	       p == sk->progs.marker_usdt || p == sk->progs.sched_switch ||
	       p == sk->progs.sched_switch_nostate || p == sk->progs.tls_write_enter ||
	       p == sk->progs.tls_write_ex_enter || p == sk->progs.tls_read_enter ||
	       p == sk->progs.tls_read_ex_enter || p == sk->progs.tls_handshake_enter ||
	       p == sk->progs.tls_exit_prog ||
	       p == sk->progs.py_sample || p == sk->progs.sched_seed ||
	       (sk->rodata->lazy_sched && (p == sk->progs.sched_waking ||
					   p == sk->progs.irq_hrtimer_in ||
					   p == sk->progs.irq_hrtimer_out));
}

/*
 * OpenSSL's calls in process pid: an entry probe and a return probe on each function of
 * each copy it has (or will load). Failing to probe one is said and skipped: the process is
 * still traced, without that copy's plaintext. Returns the probes attached.
 */
static int attach_tls(struct loader *l, uint32_t pid)
{
	struct tokentrace_bpf *sk = l->skel;
	struct bpf_program *enter[TLSF_NR] = {
		sk->progs.tls_write_enter, sk->progs.tls_write_ex_enter, sk->progs.tls_read_enter,
		sk->progs.tls_read_ex_enter, sk->progs.tls_handshake_enter,
	};
	struct tls_lib libs[TLS_LIBS_MAX];
	int n = tlsprobe__find(pid, libs, TLS_LIBS_MAX), got = 0;

	for (int i = 0; i < n; i++) {
		struct stat st;

		/* probed already (a rescan): the copies a process loaded since are new */
		if (stat(libs[i].path, &st) || tls_done_has(l, pid, &st))
			continue;
		tls_done_add(l, pid, &st);
		if (verbose)
			fprintf(stderr, "tokentrace: probing OpenSSL in %s (PID %u)\n", libs[i].path,
				pid);
		for (int f = 0; f < TLSF_NR; f++) {
			struct bpf_link *in, *out;
			LIBBPF_OPTS(bpf_uprobe_opts, ro, .retprobe = true);

			if (!libs[i].off[f])
				continue;
			in = bpf_program__attach_uprobe_opts(enter[f], pid, libs[i].path,
							      libs[i].off[f], NULL);
			out = in ? bpf_program__attach_uprobe_opts(sk->progs.tls_exit_prog, pid,
								   libs[i].path, libs[i].off[f],
								   &ro) : NULL;
			if (!in || !out) {
				if (verbose)
					fprintf(stderr, "tokentrace: probing %s in %s (PID %u) failed: "
						"%s\n", tls_func_name(f), libs[i].path, pid,
						strerror(errno));
				bpf_link__destroy(in);
				continue;
			}
			if (keep_link(l, in) || keep_link(l, out))
				return got;
			got += 2;
		}
	}
	l->choice.tls_probes += got;
	return got;
}

/*
 * The Python sampler: a cpu-clock event per CPU. Without it (no perf events for us) stalls
 * still name the Python frame a thread blocked in, only not what ran: said, not fatal.
 */
static void attach_python(struct loader *l, unsigned int hz)
{
	int ncpu = libbpf_num_possible_cpus(), n;
	char why[256];

	if (ncpu <= 0 || links_room(l, ncpu))
		return;
	n = pysampler__attach(l->skel->progs.py_sample, hz, &l->links[l->nlinks], ncpu, why,
			      sizeof(why));
	if (n < 0) {
		fprintf(stderr, "tokentrace: Python sampling is off: %s\n", why);
		return;
	}
	l->nlinks += n;
	l->choice.py_cpus = n;
}

int loader__py_add(struct loader *l, uint32_t pid, const struct tt_py_proc *p)
{
	return pysampler__add_proc(l->skel->maps.py_procs, &l->skel->bss->py_any, pid, p);
}

void loader__py_del(struct loader *l, uint32_t pid)
{
	pysampler__del_proc(l->skel->maps.py_procs, pid);
}

int loader__py_stats(const struct loader *l, uint64_t *out)
{
	return pysampler__read_stats(l->skel->maps.py_stats, out);
}

int loader__attach_process(struct loader *l, uint32_t pid)
{
	int n;

	if (!l->tls)
		return 0;
	pthread_mutex_lock(&l->attach_mu);
	n = attach_tls(l, pid);
	pthread_mutex_unlock(&l->attach_mu);
	return n;
}

/*
 * sched_switch's prev_state argument exists since Linux 5.18: the program reading it does
 * not load before (its typed context is too short), the one reading the task's state does.
 */
static struct bpf_program *switch_prog(struct tokentrace_bpf *sk)
{
	return bpf_program__autoload(sk->progs.sched_switch) ? sk->progs.sched_switch :
							       sk->progs.sched_switch_nostate;
}

static int attach_sched(struct loader *l)
{
	struct bpf_program *p = switch_prog(l->skel);
	struct bpf_link *link = bpf_program__attach(p);
	int err;

	l->choice.sched = p == l->skel->progs.sched_switch ? "tp" : "tp-nostate";
	/* a thread first seen at its wake has been blocked since at least now */
	l->skel->bss->t_attach = now_mono_ns();
	if (!link) {
		err = -errno;
		fprintf(stderr, "tokentrace: attaching tp_btf/sched_switch failed: %s "
			"(--no-stalls traces without it)\n", strerror(-err));
		return err;
	}
	err = keep_link(l, link);
	if (err)
		return err;
	/*
	 * Then the syscall exits: a syscall whose exit is not hooked (a kernel without its
	 * tracepoint) keeps taking the stack at every switch-out, as it must then.
	 */
	for (size_t i = 0; i < ARRAY_SIZE(late_exits); i++) {
		link = late_attach(l->skel, i, l->sysfx);
		if (!link) {
			if (verbose)
				fprintf(stderr, "tokentrace: %s's exit not hooked (%s): its blocks "
					"take their stack at every switch-out\n", late_exits[i],
					strerror(errno));
			continue;
		}
		err = keep_link(l, link);
		if (err)
			return err;
		l->skel->bss->late_mask |= 1u << i;
	}
	return 0;
}

/*
 * --stall-hooks lazy (sched_epoch in the kernel side): the scheduler hooks attached, and
 * every traced thread given its state as it is now by the task iterator. The hooks keep
 * nothing while the epoch is even; it turns odd once all are in (a send that made a
 * thread's state on CPU before sched_switch was in would miss its switch-out), and before
 * the iterator, so a hook that fires before the iterator reaches a thread makes that state
 * itself. Spans the late exits were waiting for belong to the epoch before (late_pending).
 */
static int stall_hooks_on(struct loader *l, bool late)
{
	struct tokentrace_bpf *sk = l->skel;
	struct bpf_program *core[] = {
		switch_prog(sk), sk->progs.sched_waking, sk->progs.irq_hrtimer_in,
		sk->progs.irq_hrtimer_out,
	};
	char buf[64];
	int fd, err = 0;

	sk->bss->late_pending = 0;
	sk->bss->late_mask = 0;
	for (size_t i = 0; i < ARRAY_SIZE(core); i++) {
		l->stall[l->nstall] = bpf_program__attach(core[i]);
		if (!l->stall[l->nstall])
			return -errno;
		l->nstall++;
	}
	/*
	 * A syscall whose exit is not hooked takes its stack at every switch-out instead. Ones
	 * still attached since the last time (they linger) are kept.
	 */
	for (size_t i = 0; late && i < ARRAY_SIZE(late_exits); i++) {
		if (!l->late[i])
			l->late[i] = late_attach(sk, i, false);
		if (l->late[i])
			sk->bss->late_mask |= 1u << i;
	}
	sk->bss->t_attach = now_mono_ns();
	__atomic_store_n(&sk->bss->sched_epoch, sk->bss->sched_epoch | 1, __ATOMIC_SEQ_CST);
	fd = bpf_iter_create(bpf_link__fd(l->seed));
	if (fd < 0)
		return -errno;
	/*
	 * A thread blocked before the hooks came is dated against this CPU's run-queue clock
	 * (blocked_since()), which moves only when the scheduler looks at this CPU: up to a tick
	 * stale after the attaches' syscalls (0-2.1 ms here, tools/bench/rqlag.bt). Reading this
	 * thread's own CPU time updates it (task_sched_runtime() does, for a running task)
	 * without giving up the CPU, as a yield would.
	 */
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &(struct timespec){ 0 });
	while ((err = read(fd, buf, sizeof(buf))) > 0)
		;
	err = err < 0 ? -errno : 0;
	close(fd);
	return err;
}

/*
 * The scheduler hooks detached (quick: raw tracepoints). The late exits stay a while
 * (stall_hooks_thread()): detaching a syscall tracepoint waits for RCU grace periods, ~70 ms
 * each here, and hooks that come back soon find them in place.
 */
static void stall_hooks_off(struct loader *l)
{
	/*
	 * Even again first: what a thread's state says from now is of an epoch gone, and the
	 * hooks, still in until their links go, keep nothing (a switch-out seen without its
	 * switch-in would leave a state to be taken for true)
	 */
	l->skel->bss->t_detach = now_mono_ns();
	__atomic_store_n(&l->skel->bss->sched_epoch, (l->skel->bss->sched_epoch | 1) + 1,
			 __ATOMIC_SEQ_CST);
	l->skel->bss->late_mask = 0;
	for (int i = 0; i < l->nstall; i++)
		bpf_link__destroy(l->stall[i]);
	l->nstall = 0;
}

#define LATE_LINGER_NS	5000000000ull

/*
 * A late exit attached while the hooks are off (since the kernel side's t_detach) to let go
 * now; -2 with *until (sh_cv's clock, CLOCK_MONOTONIC) when one is due later; -1: none.
 */
static int late_to_reap(const struct loader *l, uint64_t now, struct timespec *until)
{
	uint64_t at = l->skel->bss->t_detach + LATE_LINGER_NS;

	for (size_t i = 0; i < ARRAY_SIZE(l->late); i++) {
		if (!l->late[i])
			continue;
		if (now >= at)
			return i;
		until->tv_sec = at / 1000000000ull;
		until->tv_nsec = at % 1000000000ull;
		return -2;
	}
	return -1;
}

/*
 * The thread that attaches and detaches the lazy hooks as sh_want says, and lets the late
 * exits go once the hooks have been off for LATE_LINGER_NS (one at a time, looking at what
 * is asked between them).
 */
static void *stall_hooks_thread(void *arg)
{
	struct loader *l = arg;
	struct timespec until;
	struct bpf_link *link;
	bool on;
	int err, i;

	pthread_mutex_lock(&l->sh_mu);
	for (;;) {
		while (!l->sh_quit && l->sh_want == (l->sh_since != 0)) {
			i = l->sh_since ? -1 : late_to_reap(l, now_mono_ns(), &until);
			if (i >= 0) {
				link = l->late[i];
				l->late[i] = NULL;
				pthread_mutex_unlock(&l->sh_mu);
				pthread_mutex_lock(&l->attach_mu);
				bpf_link__destroy(link);
				pthread_mutex_unlock(&l->attach_mu);
				pthread_mutex_lock(&l->sh_mu);
			} else if (i == -2) {
				pthread_cond_timedwait(&l->sh_cv, &l->sh_mu, &until);
			} else {
				pthread_cond_wait(&l->sh_cv, &l->sh_mu);
			}
		}
		if (l->sh_quit)
			break;
		on = l->sh_want;
		pthread_mutex_unlock(&l->sh_mu);
		pthread_mutex_lock(&l->attach_mu);
		err = on ? stall_hooks_on(l, true) : 0;
		if (!on || err)
			stall_hooks_off(l);
		pthread_mutex_unlock(&l->attach_mu);
		pthread_mutex_lock(&l->sh_mu);
		if (!on) {
			l->sh.armed_ns += now_mono_ns() - l->sh_since;
			l->sh_since = 0;
		} else if (err) {
			/* asked again by a look at the streams, not before the backoff is over: an
			 * attach walks every task on the machine */
			l->sh.failed++;
			l->sh_err = err;
			l->sh_want = false;
			l->sh_backoff_ns = l->sh_backoff_ns ? l->sh_backoff_ns * 2 : SH_BACKOFF_MIN_NS;
			if (l->sh_backoff_ns > SH_BACKOFF_MAX_NS)
				l->sh_backoff_ns = SH_BACKOFF_MAX_NS;
			l->sh_retry_at = now_mono_ns() + l->sh_backoff_ns;
		} else {
			l->sh.attaches++;
			l->sh_since = now_mono_ns();
			l->sh_backoff_ns = 0;
		}
	}
	pthread_mutex_unlock(&l->sh_mu);
	return NULL;
}

int loader__stall_hooks(struct loader *l, bool on)
{
	int err;

	if (!l->sh_started)
		return 0;
	pthread_mutex_lock(&l->sh_mu);
	if (on && !l->sh_since && now_mono_ns() < l->sh_retry_at)
		on = false;	/* the last attach failed: not yet */
	if (l->sh_want != on) {
		l->sh_want = on;
		pthread_cond_signal(&l->sh_cv);
	}
	err = l->sh_err;
	l->sh_err = 0;
	pthread_mutex_unlock(&l->sh_mu);
	return err;
}

void loader__stall_hook_stats(struct loader *l, struct stall_hook_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!l->sh_started)
		return;
	pthread_mutex_lock(&l->sh_mu);
	*out = l->sh;
	out->lazy = true;
	if (l->sh_since)
		out->armed_ns += now_mono_ns() - l->sh_since;
	pthread_mutex_unlock(&l->sh_mu);
}

/*
 * Lazy: the iterator, and the scheduler hooks attached now, so what fails fails now; the
 * thread then detaches them (they are on until it has, and counted so).
 */
static int attach_sched_lazy(struct loader *l)
{
	int err;

	l->seed = bpf_program__attach_iter(l->skel->progs.sched_seed, NULL);
	if (!l->seed) {
		err = -errno;
		fprintf(stderr, "tokentrace: attaching the task iterator failed: %s "
			"(--stall-hooks always works without it)\n", strerror(-err));
		return err;
	}
	l->choice.sched = switch_prog(l->skel) == l->skel->progs.sched_switch ? "tp-lazy" :
										  "tp-nostate-lazy";
	/* the late exits come at the first real attach (and may fail then: not needed) */
	err = stall_hooks_on(l, false);
	l->nprobes += l->nstall + ARRAY_SIZE(l->late);
	if (err) {
		fprintf(stderr, "tokentrace: attaching the scheduler hooks failed: %s "
			"(--no-stalls traces without them)\n", strerror(-err));
		stall_hooks_off(l);
		return err;
	}
	l->sh.attaches = 1;
	l->sh_since = now_mono_ns();
	l->sh_want = false;
	err = pthread_create(&l->sh_thread, NULL, stall_hooks_thread, l);
	if (err) {
		stall_hooks_off(l);
		return -err;
	}
	l->sh_started = true;
	return 0;
}

/*
 * pid joins the targets with flags (TT_TGT_*): -EEXIST when it is one already. The bits
 * live in the kernel side's mapped .bss, which the kernel side changes too (a fork, an
 * exit): atomic, so neither loses the other's update of a neighbour in the same word.
 */
static int target_add(struct loader *l, uint32_t pid, uint8_t flags)
{
	uint64_t old;

	if (pid >= TT_TGT_PID_LIMIT)
		return -ERANGE;
	old = __atomic_fetch_or(&l->skel->bss->target_bits[TT_TGT_WORD(pid)],
				(uint64_t)flags << TT_TGT_SHIFT(pid), __ATOMIC_SEQ_CST);
	return (old >> TT_TGT_SHIFT(pid)) & 3 ? -EEXIST : 0;
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
 * Load the skeleton the plan's way and attach everything. On failure *why says what failed
 * and nothing stays loaded.
 */
static int try_plan(struct loader *l, const struct loader_opts *o, const struct plan *p,
		    char *why, size_t whysz, bool quiet)
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
			 quiet ? "" : load_hint(err));
		goto fail;
	}
	l->skel->bss->t_loaded = now_mono_ns();
	for (int i = 0; i < o->npids; i++) {
		err = target_add(l, o->pids[i], what);
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
				 quiet ? "" : load_hint(err));
			goto fail;
		}
		err = keep_link(l, link);
		if (err)
			goto fail;
	}
	return 0;
fail:
	for (int i = 0; i < l->nlinks; i++)
		bpf_link__destroy(l->links[i]);
	l->nlinks = l->nprobes = 0;
	tokentrace_bpf__destroy(l->skel);
	l->skel = NULL;
	return err ? err : -EINVAL;
}

/*
 * Can the syscall hooks be trampolines (fx_exit_accept4 in tokentrace.bpf.c) rather than
 * syscall tracepoints, which slow every syscall of the machine down while attached? An
 * empty fexit program on the last of the syscalls' functions, loaded and attached, then
 * dropped (x86-64 only, as bpf/sysnr.h is):
 * kernels without trampolines (or that refuse them, as some hardened ones do with EPERM)
 * say so here, before the real load. TOKENTRACE_SYSCALL_TP=1 keeps the tracepoints (tests).
 */
static bool syscall_trampolines(void)
{
	static const char *const funcs[] = {
		"__x64_sys_accept4", "__x64_sys_accept", "__x64_sys_close", "__x64_sys_futex",
		"__x64_sys_nanosleep", "__x64_sys_clock_nanosleep",
	};
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	struct btf *vmlinux;
	int id = -1, fd, link;

	if (getenv("TOKENTRACE_SYSCALL_TP"))
		return false;
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		return false;
	/* every function the programs name must be there, or the real load fails */
	for (size_t i = 0; i < ARRAY_SIZE(funcs); i++) {
		id = btf__find_by_name_kind(vmlinux, funcs[i], BTF_KIND_FUNC);
		if (id < 0)
			break;
	}
	btf__free(vmlinux);
	if (id < 0)
		return false;
	LIBBPF_OPTS(bpf_prog_load_opts, po, .expected_attach_type = BPF_TRACE_FEXIT,
		    .attach_btf_id = id);
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "tt_probe_fx", "GPL", insns,
			   ARRAY_SIZE(insns), &po);
	if (fd < 0)
		return false;
	link = bpf_link_create(fd, 0, BPF_TRACE_FEXIT, NULL);
	if (link >= 0)
		close(link);
	close(fd);
	return link >= 0;
}

static enum ready_variant ready_for(enum hook_family data)
{
	if (tracefs_has("events/sock/sk_data_ready"))
		return READY_TP;
	if (data == HOOKS_FEXIT)
		return READY_FENTRY;
	if (data == HOOKS_KPROBE)
		return READY_KPROBE;
	return READY_NONE;
}

/* The kernel helpers and map types every plan needs, each refused in one line. */
static int check_features(struct loader *l)
{
	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) != 1) {
		fprintf(stderr, "tokentrace: this kernel has no BPF ring buffer (Linux 5.8+ "
			"needed)\n");
		return -ENOTSUP;
	}
	if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT, BPF_FUNC_task_pt_regs, NULL) != 1) {
		fprintf(stderr, "tokentrace: this kernel lacks the bpf_task_pt_regs() helper "
			"(Linux 5.15+ needed): the user buffers of a send cannot be found\n");
		return -ENOTSUP;
	}
	l->choice.loop = libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT, BPF_FUNC_loop,
						 NULL) == 1;
	/* tests: the bounded walk of kernels without bpf_loop (5.15, 5.16), on any kernel */
	if (getenv("TOKENTRACE_NO_BPF_LOOP"))
		l->choice.loop = false;
	/* without it (before 5.19) a send keeps its counters in the thread's state, not in
	 * per-CPU slots (dlast) */
	l->percpu_lookup = libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT,
						   BPF_FUNC_map_lookup_percpu_elem, NULL) == 1 &&
			   !getenv("TOKENTRACE_NO_PERCPU_LOOKUP");
	return 0;
}

int loader__open(const struct loader_opts *o, struct loader **out)
{
	static const enum hook_family order[] = { HOOKS_TP, HOOKS_FEXIT, HOOKS_KPROBE,
						  HOOKS_SYSCALL };
	char why[256] = "", tried[256] = "";
	pthread_condattr_t ca;
	struct loader *l;
	size_t nt = 0;
	int err = -ENOENT;
	bool sysfx;

	verbose = o->verbose;
	libbpf_set_print(print_libbpf);
	if ((err = check_privileges()) || (err = check_btf()) || (err = ensure_tracefs()))
		return err;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	pthread_mutex_init(&l->sh_mu, NULL);
	pthread_mutex_init(&l->attach_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);	/* now_mono_ns()'s */
	pthread_cond_init(&l->sh_cv, &ca);
	pthread_condattr_destroy(&ca);
	if ((err = check_features(l)))
		goto fail;
	sysfx = syscall_trampolines();
	for (size_t i = 0; i < ARRAY_SIZE(order); i++) {
		struct plan p = { .data = order[i], .sysfx = sysfx };
		bool forced = o->hooks != HOOKS_AUTO;

		if (forced && o->hooks != order[i])
			continue;
		/* the tracepoints' absence is known without trying */
		if (!forced && order[i] == HOOKS_TP &&
		    !tracefs_has("events/sock/sock_send_length")) {
			nt += snprintf(tried + nt, sizeof(tried) - MIN(nt, sizeof(tried)),
				       "%stp: no sock:sock_send_length tracepoint (Linux 6.5+)",
				       nt ? "; " : "");
			continue;
		}
		if (!forced && order[i] == HOOKS_KPROBE && !tracefs_has("kprobe_events")) {
			nt += snprintf(tried + nt, sizeof(tried) - MIN(nt, sizeof(tried)),
				       "%skprobe: kernel built without kprobes", nt ? "; " : "");
			continue;
		}
		p.ready = ready_for(p.data);
		err = try_plan(l, o, &p, why, sizeof(why), !forced && i + 1 < ARRAY_SIZE(order));
		if (err && p.sysfx) {
			/* a trampoline the probe's did not foretell: the tracepoints, as before */
			p.sysfx = false;
			err = try_plan(l, o, &p, why, sizeof(why), true);
		}
		if (err && o->stalls) {
			/* before 5.18: the same with the scheduler hook of older kernels */
			p.nostate = true;
			if (!try_plan(l, o, &p, why, sizeof(why), true))
				err = 0;
		}
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
		if (o->hooks != HOOKS_AUTO)
			fprintf(stderr, "tokentrace: --hooks %s: %s\n", hook_family_name(o->hooks),
				why);
		else
			fprintf(stderr, "tokentrace: no way to hook socket data in this kernel "
				"(%s)\n", tried);
		goto fail;
	}
	if (verbose && tried[0])
		fprintf(stderr, "tokentrace: hooks: %s chosen; before it: %s\n",
			hook_family_name(l->choice.data), tried);
	l->choice.sched = "off";
	if (o->stalls && (err = o->lazy_stalls ? attach_sched_lazy(l) : attach_sched(l)))
		goto fail;
	err = attach_markers(l, o);
	if (err)
		goto fail;
	l->tls = o->tls;
	for (int i = 0; o->tls && i < o->npids; i++)
		attach_tls(l, o->pids[i]);
	if (o->stalls && o->python_hz)
		attach_python(l, o->python_hz);
	*out = l;
	return 0;
fail:
	loader__close(l);
	return err ? err : -EINVAL;
}

const struct loader_choice *loader__choice(const struct loader *l)
{
	return &l->choice;
}

void loader__close(struct loader *l)
{
	if (!l)
		return;
	if (l->sh_started) {
		pthread_mutex_lock(&l->sh_mu);
		l->sh_quit = true;
		pthread_cond_signal(&l->sh_cv);
		pthread_mutex_unlock(&l->sh_mu);
		pthread_join(l->sh_thread, NULL);
	}
	for (int i = 0; i < l->nlinks; i++)
		bpf_link__destroy(l->links[i]);
	for (int i = 0; i < l->nstall; i++)
		bpf_link__destroy(l->stall[i]);
	for (size_t i = 0; i < ARRAY_SIZE(l->late); i++)
		bpf_link__destroy(l->late[i]);
	bpf_link__destroy(l->seed);
	tokentrace_bpf__destroy(l->skel);
	pthread_mutex_destroy(&l->sh_mu);
	pthread_mutex_destroy(&l->attach_mu);
	pthread_cond_destroy(&l->sh_cv);
	free(l->links);
	free(l->tls_done);
	free(l);
}

int loader__ringbuf_fd(const struct loader *l)
{
	return bpf_map__fd(l->skel->maps.events);
}

int loader__nr_probes(const struct loader *l)
{
	return l->nprobes;
}

int loader__add_target(struct loader *l, uint32_t pid, uint8_t flags)
{
	return target_add(l, pid, flags);
}

int loader__ignore_conn(struct loader *l, uint64_t conn_id)
{
	__u8 one = 1;

	/* the kernel deletes it when the connection closes */
	int err = bpf_map__update_elem(l->skel->maps.ignored, &conn_id, sizeof(conn_id), &one,
				       sizeof(one), BPF_ANY);

	/* sends look at the map again from now on (a few sent before this are kept, as before) */
	if (!err)
		__atomic_fetch_add(&l->skel->bss->ignored_gen, 1, __ATOMIC_SEQ_CST);
	return err;
}

int loader__agg_read(const struct loader *l, struct agg_totals *out)
{
	int ncpu = libbpf_num_possible_cpus(), err;
	struct tt_agg *percpu;
	__u32 zero = 0;

	memset(out, 0, sizeof(*out));
	if (ncpu <= 0 || !(percpu = calloc(ncpu, sizeof(*percpu))))
		return -ENOMEM;
	/* global per-CPU histograms: nothing to race, every count read exactly once */
	err = bpf_map__lookup_elem(l->skel->maps.agg_hist, &zero, sizeof(zero), percpu,
				   ncpu * sizeof(*percpu), 0);
	for (int c = 0; !err && c < ncpu; c++)
		agg__add(out, &percpu[c]);
	free(percpu);
	return err;
}

int loader__read_stats(const struct loader *l, uint64_t out[TT_STAT_NR])
{
	struct bpf_program *prog;
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;
	int err = 0;

	if (ncpu <= 0)
		return -EINVAL;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (__u32 k = 0; k < TT_STAT_NR; k++) {
		out[k] = 0;
		err = bpf_map__lookup_elem(l->skel->maps.stats, &k, sizeof(k), vals,
					   ncpu * sizeof(*vals), 0);
		if (err)
			break;
		for (int c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	free(vals);
	/*
	 * A program the kernel did not run because one was already running on that CPU (an
	 * interrupt inside a probe): a record never made, counted by the kernel itself.
	 */
	out[TT_STAT_PROG_MISS] = 0;
	bpf_object__for_each_program(prog, l->skel->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			out[TT_STAT_PROG_MISS] += info.recursion_misses;
	}
	return err;
}
