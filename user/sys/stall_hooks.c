// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The scheduler hooks of stall attribution: sched_switch, sched_waking, the hrtimer
 * interrupts, and the exits of the syscalls whose long blocks send their span from there
 * (the late exits). --stall-hooks always attaches them once; lazy (the default) attaches
 * them only while a stream has been quiet, from a thread of their own: a syscall
 * tracepoint's detach waits for RCU grace periods (~70 ms each here), which the consumer
 * must not.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "loader_int.h"
#include "util.h"

/*
 * The exits of the syscalls whose long blocks send their span from there, with the user
 * stack (late_bit() in tokentrace.bpf.c: the bit of each is its index here).
 */
static const char *const late_exits[] = { "futex", "nanosleep", "clock_nanosleep" };
#define LATE_NR		ARRAY_SIZE(late_exits)

#define SH_BACKOFF_MIN_NS	10000000ull
#define SH_BACKOFF_MAX_NS	1000000000ull
#define LATE_LINGER_NS		5000000000ull

struct stall_hooks {
	struct loader *l;
	struct tokentrace_bpf *sk;
	/* --stall-hooks always: sched_switch and the late exits, attached once */
	struct bpf_link *always[1 + 3];
	int nalways;
	/* lazy: the scheduler hooks, attached only while asked */
	struct bpf_link *stall[4];	/* switch, waking, hrtimer in and out */
	int nstall;
	struct bpf_link *late[3];	/* the late exits, NULL: not attached */
	struct bpf_link *seed;		/* the task iterator run at each attach */
	/* the thread that attaches and detaches them; mu guards what follows */
	pthread_t thread;
	bool started;
	bool want, quit;
	int err;			/* an attach that failed, not yet told */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct stall_hook_stats st;
	uint64_t since;			/* attached since (CLOCK_MONOTONIC), 0 while off */
	/* after a failed attach, none tried again before retry_at (doubling, up to 1 s) */
	uint64_t retry_at, backoff_ns;
};

_Static_assert(ARRAY_SIZE(((struct stall_hooks *)0)->late) == LATE_NR, "late exits");

/* the tracepoints' one program (late_exit_tp), or the trampoline of late exit i */
static struct bpf_program **late_prog(struct tokentrace_bpf *sk, size_t i, bool fx)
{
	struct bpf_program **tr[] = {
		&sk->progs.fx_late_exit_futex, &sk->progs.fx_late_exit_nanosleep,
		&sk->progs.fx_late_exit_clock_nanosleep,
	};

	_Static_assert(ARRAY_SIZE(tr) == LATE_NR, "late exits");
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

/*
 * sched_switch's prev_state argument exists since Linux 5.18: the program reading it does
 * not load before (its typed context is too short), the one reading the task's state does.
 */
static struct bpf_program *switch_prog(struct tokentrace_bpf *sk)
{
	return bpf_program__autoload(sk->progs.sched_switch) ? sk->progs.sched_switch :
							       sk->progs.sched_switch_nostate;
}

void stall_hooks__configure(struct tokentrace_bpf *sk, const struct loader_opts *o, bool sysfx,
			    bool nostate)
{
	sk->rodata->lazy_sched = o->stalls && o->lazy_stalls;
	/* stall attribution's hooks only when it is on: untraced processes pay nothing then */
	bpf_program__set_autoload(sk->progs.sched_switch, o->stalls && !nostate);
	bpf_program__set_autoload(sk->progs.sched_switch_nostate, o->stalls && nostate);
	bpf_program__set_autoload(sk->progs.sched_waking, o->stalls);
	bpf_program__set_autoload(sk->progs.irq_hrtimer_in, o->stalls);
	bpf_program__set_autoload(sk->progs.irq_hrtimer_out, o->stalls);
	for (size_t i = 0; i < LATE_NR; i++) {
		/*
		 * Lazy hooks: the late exits are attached while threads already wait in those
		 * syscalls, and a trampoline only sees the calls that entered after it came (a
		 * return inside the function goes back the way it came in): the tracepoints,
		 * which see every exit (and tax every syscall only while they are attached)
		 */
		bool fx = sysfx && !o->lazy_stalls;

		bpf_program__set_autoload(*late_prog(sk, i, fx), o->stalls);
		bpf_program__set_autoload(*late_prog(sk, i, !fx), false);
	}
	bpf_program__set_autoload(sk->progs.sched_seed, o->stalls && o->lazy_stalls);
}

bool stall_hooks__owns(const struct tokentrace_bpf *csk, const struct bpf_program *p)
{
	struct tokentrace_bpf *sk = (struct tokentrace_bpf *)csk;

	for (size_t i = 0; i < LATE_NR; i++)
		if (p == *late_prog(sk, i, false) || p == *late_prog(sk, i, true))
			return true;
	return p == sk->progs.sched_switch || p == sk->progs.sched_switch_nostate ||
	       p == sk->progs.sched_seed ||
	       (sk->rodata->lazy_sched && (p == sk->progs.sched_waking ||
					   p == sk->progs.irq_hrtimer_in ||
					   p == sk->progs.irq_hrtimer_out));
}

/* --stall-hooks always: sched_switch, then the late exits the kernel has (waking and the
 * hrtimer hooks are the plan's: attached with the rest) */
static int attach_always(struct stall_hooks *sh)
{
	struct tokentrace_bpf *sk = sh->sk;
	struct bpf_program *p = switch_prog(sk);
	struct bpf_link *link = bpf_program__attach(p);
	int err;

	sh->l->choice.sched = p == sk->progs.sched_switch ? "tp" : "tp-nostate";
	/* a thread first seen at its wake has been blocked since at least now */
	sk->bss->t_attach = now_mono_ns();
	if (!link) {
		err = -errno;
		fprintf(stderr, "tokentrace: attaching tp_btf/sched_switch failed: %s "
			"(--no-stalls traces without it)\n", strerror(-err));
		return err;
	}
	sh->always[sh->nalways++] = link;
	/*
	 * A syscall whose exit is not hooked (a kernel without its tracepoint) keeps taking
	 * the stack at every switch-out, as it must then.
	 */
	for (size_t i = 0; i < LATE_NR; i++) {
		link = late_attach(sk, i, sh->l->sysfx);
		if (!link) {
			if (sh->l->verbose)
				fprintf(stderr, "tokentrace: %s's exit not hooked (%s): its blocks "
					"take their stack at every switch-out\n", late_exits[i],
					strerror(errno));
			continue;
		}
		sh->always[sh->nalways++] = link;
		sk->bss->late_mask |= 1u << i;
	}
	sh->l->nprobes += sh->nalways;
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
static int hooks_on(struct stall_hooks *sh, bool late)
{
	struct tokentrace_bpf *sk = sh->sk;
	struct bpf_program *core[] = {
		switch_prog(sk), sk->progs.sched_waking, sk->progs.irq_hrtimer_in,
		sk->progs.irq_hrtimer_out,
	};
	char buf[64];
	int fd, err = 0;

	sk->bss->late_pending = 0;
	sk->bss->late_mask = 0;
	for (size_t i = 0; i < ARRAY_SIZE(core); i++) {
		sh->stall[sh->nstall] = bpf_program__attach(core[i]);
		if (!sh->stall[sh->nstall])
			return -errno;
		sh->nstall++;
	}
	sk->bss->t_attach = now_mono_ns();
	__atomic_store_n(&sk->bss->sched_epoch, sk->bss->sched_epoch | 1, __ATOMIC_SEQ_CST);
	fd = bpf_iter_create(bpf_link__fd(sh->seed));
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
	/*
	 * The late exits last, once the hooks keep what they see: a first syscall tracepoint's
	 * attach took 10-50 ms here, time a short stall's start would otherwise go unseen. A
	 * syscall whose exit is not hooked (yet) takes its stack at every switch-out instead;
	 * ones still attached since the last time (they linger) are kept.
	 */
	for (size_t i = 0; late && !err && i < LATE_NR; i++) {
		if (!sh->late[i])
			sh->late[i] = late_attach(sk, i, false);
		if (sh->late[i])
			__atomic_or_fetch(&sk->bss->late_mask, 1u << i, __ATOMIC_SEQ_CST);
	}
	return err;
}

/*
 * The scheduler hooks detached (quick: raw tracepoints). The late exits stay a while
 * (hooks_thread()): detaching a syscall tracepoint waits for RCU grace periods, ~70 ms
 * each here, and hooks that come back soon find them in place.
 */
static void hooks_off(struct stall_hooks *sh)
{
	struct tokentrace_bpf *sk = sh->sk;

	/*
	 * Even again first: what a thread's state says from now is of an epoch gone, and the
	 * hooks, still in until their links go, keep nothing (a switch-out seen without its
	 * switch-in would leave a state to be taken for true)
	 */
	sk->bss->t_detach = now_mono_ns();
	__atomic_store_n(&sk->bss->sched_epoch, (sk->bss->sched_epoch | 1) + 1, __ATOMIC_SEQ_CST);
	sk->bss->late_mask = 0;
	for (int i = 0; i < sh->nstall; i++)
		bpf_link__destroy(sh->stall[i]);
	sh->nstall = 0;
}

/*
 * A late exit attached while the hooks are off (since the kernel side's t_detach) to let go
 * now; -2 with *until (cv's clock, CLOCK_MONOTONIC) when one is due later; -1: none.
 */
static int late_to_reap(const struct stall_hooks *sh, uint64_t now, struct timespec *until)
{
	uint64_t at = sh->sk->bss->t_detach + LATE_LINGER_NS;

	for (size_t i = 0; i < LATE_NR; i++) {
		if (!sh->late[i])
			continue;
		if (now >= at)
			return i;
		until->tv_sec = at / 1000000000ull;
		until->tv_nsec = at % 1000000000ull;
		return -2;
	}
	return -1;
}

/* Waits (mu held) until the hooks are asked to change or to quit, reaping late exits. */
static void wait_asked(struct stall_hooks *sh)
{
	struct timespec until;
	struct bpf_link *link;
	int i;

	while (!sh->quit && sh->want == (sh->since != 0)) {
		i = sh->since ? -1 : late_to_reap(sh, now_mono_ns(), &until);
		if (i >= 0) {
			link = sh->late[i];
			sh->late[i] = NULL;
			/* the slow part (RCU), with no lock held */
			pthread_mutex_unlock(&sh->mu);
			bpf_link__destroy(link);
			pthread_mutex_lock(&sh->mu);
		} else if (i == -2) {
			pthread_cond_timedwait(&sh->cv, &sh->mu, &until);
		} else {
			pthread_cond_wait(&sh->cv, &sh->mu);
		}
	}
}

/* What an attach (on) or a detach did, told (mu held). */
static void account(struct stall_hooks *sh, bool on, int err)
{
	if (!on) {
		sh->st.armed_ns += now_mono_ns() - sh->since;
		sh->since = 0;
	} else if (err) {
		/* asked again by a look at the streams, not before the backoff is over: an
		 * attach walks every task on the machine */
		sh->st.failed++;
		sh->err = err;
		sh->want = false;
		sh->backoff_ns = sh->backoff_ns ? sh->backoff_ns * 2 : SH_BACKOFF_MIN_NS;
		if (sh->backoff_ns > SH_BACKOFF_MAX_NS)
			sh->backoff_ns = SH_BACKOFF_MAX_NS;
		sh->retry_at = now_mono_ns() + sh->backoff_ns;
	} else {
		sh->st.attaches++;
		sh->since = now_mono_ns();
		sh->backoff_ns = 0;
	}
}

/*
 * The thread that attaches and detaches the lazy hooks as want says, and lets the late
 * exits go once the hooks have been off for LATE_LINGER_NS (one at a time, looking at what
 * is asked between them).
 */
static void *hooks_thread(void *arg)
{
	struct stall_hooks *sh = arg;
	bool on;
	int err;

	pthread_mutex_lock(&sh->mu);
	for (;;) {
		wait_asked(sh);
		if (sh->quit)
			break;
		on = sh->want;
		pthread_mutex_unlock(&sh->mu);
		pthread_mutex_lock(&sh->l->attach_mu);
		err = on ? hooks_on(sh, true) : 0;
		if (!on || err)
			hooks_off(sh);
		pthread_mutex_unlock(&sh->l->attach_mu);
		pthread_mutex_lock(&sh->mu);
		account(sh, on, err);
	}
	pthread_mutex_unlock(&sh->mu);
	return NULL;
}

/*
 * Lazy: the iterator, and the scheduler hooks attached now, so what fails fails now; the
 * thread then detaches them (they are on until it has, and counted so).
 */
static int attach_lazy(struct stall_hooks *sh)
{
	struct tokentrace_bpf *sk = sh->sk;
	int err;

	sh->seed = bpf_program__attach_iter(sk->progs.sched_seed, NULL);
	if (!sh->seed) {
		err = -errno;
		fprintf(stderr, "tokentrace: attaching the task iterator failed: %s "
			"(--stall-hooks always works without it)\n", strerror(-err));
		return err;
	}
	sh->l->choice.sched = switch_prog(sk) == sk->progs.sched_switch ? "tp-lazy" :
									   "tp-nostate-lazy";
	/* the late exits come at the first real attach (and may fail then: not needed) */
	err = hooks_on(sh, false);
	sh->l->nprobes += sh->nstall + LATE_NR;
	if (err) {
		fprintf(stderr, "tokentrace: attaching the scheduler hooks failed: %s "
			"(--no-stalls traces without them)\n", strerror(-err));
		hooks_off(sh);
		return err;
	}
	sh->st.attaches = 1;
	sh->since = now_mono_ns();
	sh->want = false;
	err = pthread_create(&sh->thread, NULL, hooks_thread, sh);
	if (err) {
		hooks_off(sh);
		return -err;
	}
	sh->started = true;
	return 0;
}

int stall_hooks__attach(struct loader *l, const struct loader_opts *o, struct stall_hooks **out)
{
	struct stall_hooks *sh;
	pthread_condattr_t ca;
	int err;

	*out = NULL;
	l->choice.sched = "off";
	if (!o->stalls)
		return 0;
	sh = calloc(1, sizeof(*sh));
	if (!sh)
		return -ENOMEM;
	sh->l = l;
	sh->sk = l->skel;
	pthread_mutex_init(&sh->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);	/* now_mono_ns()'s */
	pthread_cond_init(&sh->cv, &ca);
	pthread_condattr_destroy(&ca);
	err = o->lazy_stalls ? attach_lazy(sh) : attach_always(sh);
	if (err) {
		stall_hooks__free(sh);
		return err;
	}
	*out = sh;
	return 0;
}

int stall_hooks__want(struct stall_hooks *sh, bool on)
{
	int err;

	if (!sh || !sh->started)
		return 0;
	pthread_mutex_lock(&sh->mu);
	if (on && !sh->since && now_mono_ns() < sh->retry_at)
		on = false;	/* the last attach failed: not yet */
	if (sh->want != on) {
		sh->want = on;
		pthread_cond_signal(&sh->cv);
	}
	err = sh->err;
	sh->err = 0;
	pthread_mutex_unlock(&sh->mu);
	return err;
}

void stall_hooks__stats(struct stall_hooks *sh, struct stall_hook_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!sh || !sh->started)
		return;
	pthread_mutex_lock(&sh->mu);
	*out = sh->st;
	out->lazy = true;
	if (sh->since)
		out->armed_ns += now_mono_ns() - sh->since;
	pthread_mutex_unlock(&sh->mu);
}

void stall_hooks__free(struct stall_hooks *sh)
{
	if (!sh)
		return;
	if (sh->started) {
		pthread_mutex_lock(&sh->mu);
		sh->quit = true;
		pthread_cond_signal(&sh->cv);
		pthread_mutex_unlock(&sh->mu);
		pthread_join(sh->thread, NULL);
	}
	for (int i = 0; i < sh->nalways; i++)
		bpf_link__destroy(sh->always[i]);
	for (int i = 0; i < sh->nstall; i++)
		bpf_link__destroy(sh->stall[i]);
	for (size_t i = 0; i < LATE_NR; i++)
		bpf_link__destroy(sh->late[i]);
	bpf_link__destroy(sh->seed);
	pthread_mutex_destroy(&sh->mu);
	pthread_cond_destroy(&sh->cv);
	free(sh);
}
