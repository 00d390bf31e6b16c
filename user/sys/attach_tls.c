// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * OpenSSL's calls probed once per library file, for every process that maps it (uprobes
 * with pid -1), the kernel side keeping the targets' calls only (tls_enter() asks the
 * target bitmap). A probe per process would cost a link per function and process, and
 * letting one go takes the kernel ~70 ms here, serialized machine-wide (perf_uprobe_destroy()
 * runs under event_mutex and waits for RCU): worker recycling would pile links up faster
 * than they can go, every SSL call of a target would run past all of them, and exit would
 * take minutes. A file is probed while a live target uses it (maps it, or will load it:
 * the system's libssl) and TLS_LINGER_NS after the last one went, so processes that come
 * one after another find their probes in place; then a thread of this module lets it go.
 * BENCHMARKS.md ("TLS probes") has the costs, for the targets and for the processes that
 * are not traced and map the same file.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <bpf/libbpf.h>
#include "hmap.h"
#include "loader_int.h"
#include "tlsprobe.h"
#include "util.h"
#include "vec.h"

/* an unused file's probes kept this long: the next process to use it finds them in place */
#define TLS_LINGER_NS	2000000000ull
/* the users are looked at this often: one whose exit was never told (a lost record) goes */
#define TLS_SWEEP_NS	2000000000ull

struct file_id {
	dev_t dev;
	ino_t ino;
};

/* an OpenSSL copy probed for every process */
struct tls_file {
	struct file_id id;
	struct bpf_link *links[2 * TLSF_NR];	/* entry and return of each function found */
	int nlinks;
	int users;		/* live targets counted for it */
	uint64_t idle_since;	/* the last user went then (CLOCK_MONOTONIC); 0: in use */
};

/* a live target and the files it is counted for */
struct tls_user {
	uint32_t pid;
	int nfiles;
	struct file_id files[TLS_LIBS_MAX];
};

struct tls_attach {
	struct loader *l;
	/* files and users: the consumer adds and forgets, the thread lets files go */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	bool started, quit;
	struct tls_file *files;	/* a few: a system's libssl, an app's own copy */
	size_t nfiles, files_cap;
	struct hmap *users;	/* pid -> struct tls_user */
	int nlinks;		/* over the files */
};

void tls_attach__configure(struct tokentrace_bpf *sk, bool on)
{
	sk->rodata->tls_uprobes = on;
	bpf_program__set_autoload(sk->progs.tls_write_enter, on);
	bpf_program__set_autoload(sk->progs.tls_write_ex_enter, on);
	bpf_program__set_autoload(sk->progs.tls_read_enter, on);
	bpf_program__set_autoload(sk->progs.tls_read_ex_enter, on);
	bpf_program__set_autoload(sk->progs.tls_handshake_enter, on);
	bpf_program__set_autoload(sk->progs.tls_exit_prog, on);
}

bool tls_attach__owns(const struct tokentrace_bpf *sk, const struct bpf_program *p)
{
	return p == sk->progs.tls_write_enter || p == sk->progs.tls_write_ex_enter ||
	       p == sk->progs.tls_read_enter || p == sk->progs.tls_read_ex_enter ||
	       p == sk->progs.tls_handshake_enter || p == sk->progs.tls_exit_prog;
}

static bool same(const struct file_id *a, const struct file_id *b)
{
	return a->dev == b->dev && a->ino == b->ino;
}

static struct tls_file *file_find(struct tls_attach *t, const struct file_id *id)
{
	for (size_t i = 0; i < t->nfiles; i++)
		if (same(&t->files[i].id, id))
			return &t->files[i];
	return NULL;
}


/*
 * The entry and return probes of lib's functions, for every process (pid -1), into f.
 * One that fails is said (-v) and skipped: the processes are still traced, without its
 * plaintext. The links attached.
 */
static int attach_file(struct tls_attach *t, const struct tls_lib *lib, struct tls_file *f)
{
	struct tokentrace_bpf *sk = t->l->skel;
	struct bpf_program *enter[TLSF_NR] = {
		sk->progs.tls_write_enter, sk->progs.tls_write_ex_enter, sk->progs.tls_read_enter,
		sk->progs.tls_read_ex_enter, sk->progs.tls_handshake_enter,
	};

	if (t->l->verbose)
		fprintf(stderr, "tokentrace: probing OpenSSL in %s, for every process using it\n",
			lib->path);
	pthread_mutex_lock(&t->l->attach_mu);
	for (int i = 0; i < TLSF_NR; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, ro, .retprobe = true);
		struct bpf_link *in, *out;

		if (!lib->off[i])
			continue;
		in = bpf_program__attach_uprobe_opts(enter[i], -1, lib->path, lib->off[i], NULL);
		out = in ? bpf_program__attach_uprobe_opts(sk->progs.tls_exit_prog, -1, lib->path,
							   lib->off[i], &ro) : NULL;
		if (!in || !out) {
			if (t->l->verbose)
				fprintf(stderr, "tokentrace: probing %s in %s failed: %s\n",
					tls_func_name(i), lib->path, strerror(errno));
			bpf_link__destroy(in);
			continue;
		}
		f->links[f->nlinks++] = in;
		f->links[f->nlinks++] = out;
	}
	pthread_mutex_unlock(&t->l->attach_mu);
	return f->nlinks;
}

/* pid's entry (mu held), made if it has none: NULL out of memory */
static struct tls_user *user_get(struct tls_attach *t, uint32_t pid)
{
	struct tls_user *u = hmap__get(t->users, pid);

	if (u || !(u = calloc(1, sizeof(*u))))
		return u;
	u->pid = pid;
	if (hmap__put(t->users, pid, u)) {
		free(u);
		return NULL;
	}
	return u;
}

/* lib's file probed, and kept (mu held, let go while probing): NULL out of memory */
static struct tls_file *file_add(struct tls_attach *t, const struct tls_lib *lib,
				 const struct file_id *id)
{
	struct tls_file nf = { .id = *id };

	/* only the consumer adds files: probed without the lock, the reaper goes on */
	pthread_mutex_unlock(&t->mu);
	attach_file(t, lib, &nf);
	pthread_mutex_lock(&t->mu);
	if (VEC_RESERVE(t->files, &t->files_cap, t->nfiles + 1, SIZE_MAX)) {
		for (int i = 0; i < nf.nlinks; i++)
			bpf_link__destroy(nf.links[i]);
		return NULL;	/* tried again at the next rescan */
	}
	/* no user yet: one that went meanwhile leaves it to linger, as any other */
	nf.idle_since = now_mono_ns();
	t->files[t->nfiles] = nf;
	t->nlinks += nf.nlinks;
	return &t->files[t->nfiles++];
}

/* pid counted for lib's file, probed first when no one uses it yet: links added */
static int use_file(struct tls_attach *t, uint32_t pid, const struct tls_lib *lib,
		    const struct file_id *id)
{
	struct tls_user *u;
	struct tls_file *f;
	int got = 0;

	pthread_mutex_lock(&t->mu);
	u = user_get(t, pid);
	for (int j = 0; u && j < u->nfiles; j++)
		if (same(&u->files[j], id))
			goto out;	/* counted already (a rescan) */
	if (!u || u->nfiles == TLS_LIBS_MAX)
		goto out;
	f = file_find(t, id);
	if (!f) {
		f = file_add(t, lib, id);
		if (!f)
			goto out;
		got = f->nlinks;
		/* the reaper's sweep may have dropped pid meanwhile (it died): counted again */
		if (!(u = user_get(t, pid)))
			goto out;
	}
	f->users++;
	f->idle_since = 0;
	u->files[u->nfiles++] = *id;
out:
	pthread_mutex_unlock(&t->mu);
	return got;
}

int tls_attach__process(struct tls_attach *t, uint32_t pid)
{
	struct tls_lib libs[TLS_LIBS_MAX];
	int n = tlsprobe__find(pid, libs, TLS_LIBS_MAX), got = 0;

	/* the copies a process loaded since its last look are new */
	for (int i = 0; i < n; i++) {
		struct stat st;

		if (!stat(libs[i].path, &st))
			got += use_file(t, pid, &libs[i],
					&(struct file_id){ st.st_dev, st.st_ino });
	}
	return got;
}

/* pid's files lose a user (mu held); pid is dropped */
static void drop_user(struct tls_attach *t, uint32_t pid, uint64_t now)
{
	struct tls_user *u = hmap__del(t->users, pid);

	for (int i = 0; u && i < u->nfiles; i++) {
		struct tls_file *f = file_find(t, &u->files[i]);

		if (f && --f->users == 0)
			f->idle_since = now;
	}
	free(u);
	pthread_cond_signal(&t->cv);
}

void tls_attach__forget(struct tls_attach *t, uint32_t pid)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->mu);
	drop_user(t, pid, now_mono_ns());
	pthread_mutex_unlock(&t->mu);
}

/* Users whose process is gone without its exit told (mu held). */
static void sweep(struct tls_attach *t, uint64_t now)
{
	uint32_t *gone = NULL;
	size_t n = 0, cap = 0, it = 0;
	struct tls_user *u;

	/* found first, dropped after: the table does not change while it is walked */
	while (hmap__next(t->users, &it, NULL, (void **)&u))
		if (kill(u->pid, 0) && errno == ESRCH && !VEC_RESERVE(gone, &cap, n + 1, SIZE_MAX))
			gone[n++] = u->pid;
	for (size_t i = 0; i < n; i++)
		drop_user(t, gone[i], now);
	free(gone);
}

/* The next file unused past its linger (mu held): its index, or -1 with *at the next due */
static int idle_file(const struct tls_attach *t, uint64_t now, uint64_t *at)
{
	for (size_t i = 0; i < t->nfiles; i++) {
		const struct tls_file *f = &t->files[i];

		if (f->users || !f->idle_since)
			continue;
		if (now >= f->idle_since + TLS_LINGER_NS)
			return i;
		*at = MIN(*at, f->idle_since + TLS_LINGER_NS);
	}
	return -1;
}

/* The thread that lets unused files go: their links destroyed with no lock held. */
static void *reaper(void *arg)
{
	struct tls_attach *t = arg;
	uint64_t next_sweep = now_mono_ns() + TLS_SWEEP_NS;

	pthread_mutex_lock(&t->mu);
	while (!t->quit) {
		uint64_t now = now_mono_ns(), at = next_sweep;
		struct tls_file f;
		int i;

		if (now >= next_sweep) {
			sweep(t, now);
			next_sweep = now + TLS_SWEEP_NS;
			at = next_sweep;
		}
		i = idle_file(t, now, &at);
		if (i < 0) {
			struct timespec ts = { at / 1000000000ull, at % 1000000000ull };

			pthread_cond_timedwait(&t->cv, &t->mu, &ts);
			continue;
		}
		f = t->files[i];
		t->files[i] = t->files[--t->nfiles];
		t->nlinks -= f.nlinks;
		pthread_mutex_unlock(&t->mu);
		for (int j = 0; j < f.nlinks; j++)
			bpf_link__destroy(f.links[j]);
		pthread_mutex_lock(&t->mu);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

int tls_attach__new(struct loader *l, struct tls_attach **out)
{
	struct tls_attach *t = calloc(1, sizeof(*t));
	pthread_condattr_t ca;
	int err;

	if (!t)
		return -ENOMEM;
	t->l = l;
	t->users = hmap__new(0);
	if (!t->users) {
		free(t);
		return -ENOMEM;
	}
	pthread_mutex_init(&t->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);	/* now_mono_ns()'s */
	pthread_cond_init(&t->cv, &ca);
	pthread_condattr_destroy(&ca);
	err = pthread_create(&t->thread, NULL, reaper, t);
	if (err) {
		tls_attach__free(t);
		return -err;
	}
	t->started = true;
	*out = t;
	return 0;
}

int tls_attach__nlinks(struct tls_attach *t)
{
	int n;

	if (!t)
		return 0;
	pthread_mutex_lock(&t->mu);
	n = t->nlinks;
	pthread_mutex_unlock(&t->mu);
	return n;
}

void tls_attach__free(struct tls_attach *t)
{
	void *u;

	if (!t)
		return;
	if (t->started) {
		pthread_mutex_lock(&t->mu);
		t->quit = true;
		pthread_cond_signal(&t->cv);
		pthread_mutex_unlock(&t->mu);
		pthread_join(t->thread, NULL);
	}
	for (size_t i = 0; i < t->nfiles; i++)
		for (int j = 0; j < t->files[i].nlinks; j++)
			bpf_link__destroy(t->files[i].links[j]);
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->cv);
	for (size_t it = 0; hmap__next(t->users, &it, NULL, &u);)
		free(u);
	hmap__free(t->users);
	free(t->files);
	free(t);
}
