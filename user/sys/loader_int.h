/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The loader's parts, for one another (cli uses loader.h): the machine's features and the
 * plan that loads the skeleton (features.c, plan.c), then the probes attached per family
 * (attach_markers.c, attach_tls.c, attach_python.c) and the scheduler hooks with their thread
 * (stall_hooks.c). Each family owns its programs: it says which to load (its configure) and
 * attaches them itself, after the plan's generic attach of the rest.
 */
#ifndef TT_LOADER_INT_H
#define TT_LOADER_INT_H

#include <pthread.h>
#include <stdbool.h>
#include "loader.h"
#include "tokentrace.skel.h"

/* links kept in one set (markers, the plan's, a sampler per CPU); past it, said and refused */
#define LOADER_LINKS_MAX	65536

struct linkset {
	struct bpf_link **v;
	int n;
	size_t cap;
};

/* Room for n more links: 0, or -E2BIG past LOADER_LINKS_MAX (said), -ENOMEM. */
int linkset__room(struct linkset *s, int n);
/* Keep link (destroyed if there is no room): 0 or -errno. */
int linkset__keep(struct linkset *s, struct bpf_link *link);
/* Every link destroyed, the set empty (its array kept). */
void linkset__clear(struct linkset *s);

/* What the kernel offers, probed before any plan is tried. */
struct features {
	bool loop;		/* bpf_loop(): iovecs and segments walked in full */
	bool percpu_lookup;	/* bpf_map_lookup_percpu_elem() (5.19+) */
	bool sysfx;		/* trampolines on the syscalls' functions */
};

struct tls_attach;
struct stall_hooks;

struct loader {
	struct tokentrace_bpf *skel;
	struct linkset links;	/* the plan's programs, markers, the Python sampler */
	int nprobes;
	bool verbose;
	struct features ft;
	struct loader_choice choice;
	bool sysfx;		/* the plan loaded has the syscall hooks as trampolines */
	struct tls_attach *tls;
	struct stall_hooks *sh;
	/* libbpf attaches made at run time: the consumer's (TLS), the stall hooks' thread's */
	pthread_mutex_t attach_mu;
};

/* features.c */
/* Privileges, BTF and tracefs (mounted where it is missing): 0, or -errno said in one line. */
int features__check_access(void);
/* The helpers and map types every plan needs, refused in one line each; the optional ones. */
int features__probe(struct features *f);
/* tracefs (or debugfs's tracing) has this file: "events/sock/sock_send_length" */
bool features__tracefs_has(const char *rel);

/* plan.c: the skeleton loaded and its generic programs attached, over the hook families */
int plan__load(struct loader *l, const struct loader_opts *o);

/* attach_markers.c */
void markers_attach__configure(struct tokentrace_bpf *sk, const struct loader_opts *o);
bool markers_attach__owns(const struct tokentrace_bpf *sk, const struct bpf_program *p);
int markers_attach(struct loader *l, const struct loader_opts *o);

/* attach_python.c */
void python_attach__configure(struct tokentrace_bpf *sk, const struct loader_opts *o);
bool python_attach__owns(const struct tokentrace_bpf *sk, const struct bpf_program *p);
void python_attach(struct loader *l, unsigned int hz);

/* attach_tls.c: OpenSSL's functions probed per library file, for every process using it */
void tls_attach__configure(struct tokentrace_bpf *sk, bool on);
bool tls_attach__owns(const struct tokentrace_bpf *sk, const struct bpf_program *p);
int tls_attach__new(struct loader *l, struct tls_attach **out);
/* The OpenSSL copies pid maps (or will load), probed unless they are: links added. */
int tls_attach__process(struct tls_attach *t, uint32_t pid);
/* pid is gone: the copies no live target uses any more are let go (by its thread). */
void tls_attach__forget(struct tls_attach *t, uint32_t pid);
/* Links held now: entry and return probes of the files in use (or lingering). */
int tls_attach__nlinks(struct tls_attach *t);
void tls_attach__free(struct tls_attach *t);

/* stall_hooks.c: the scheduler hooks, attached throughout or lazily by a thread of theirs */
void stall_hooks__configure(struct tokentrace_bpf *sk, const struct loader_opts *o, bool sysfx,
			    bool nostate);
bool stall_hooks__owns(const struct tokentrace_bpf *sk, const struct bpf_program *p);
int stall_hooks__attach(struct loader *l, const struct loader_opts *o, struct stall_hooks **out);
int stall_hooks__want(struct stall_hooks *sh, bool on);
void stall_hooks__stats(struct stall_hooks *sh, struct stall_hook_stats *out);
void stall_hooks__free(struct stall_hooks *sh);

#endif /* TT_LOADER_INT_H */
