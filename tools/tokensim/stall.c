// SPDX-License-Identifier: MIT
/*
 * The four stall kinds.  Each helper thread lives for one stall and is
 * joined before stall_run() returns, so nothing outlives the stall.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "stall.h"
#include "util.h"

static void spin_until(uint64_t deadline)
{
	while (now_ns() < deadline)
		__builtin_ia32_pause();
}

/* lock: ts-lock takes the mutex and holds it until the deadline. */
struct lock_stall {
	pthread_mutex_t victim; /* what the stalled thread blocks on */
	pthread_mutex_t mu;	/* protects held */
	pthread_cond_t cv;
	bool held;
	uint64_t deadline;
};

static void *lock_holder(void *arg)
{
	struct lock_stall *ls = arg;

	set_thread_name("ts-lock");
	pthread_mutex_lock(&ls->victim);
	pthread_mutex_lock(&ls->mu);
	ls->held = true;
	pthread_cond_signal(&ls->cv);
	pthread_mutex_unlock(&ls->mu);
	sleep_until_ns(ls->deadline);
	pthread_mutex_unlock(&ls->victim);
	return NULL;
}

static void stall_lock(uint64_t deadline)
{
	struct lock_stall ls = { .deadline = deadline };
	pthread_t th;

	/* A normal (non-adaptive) mutex: the waiter goes straight to futex_wait. */
	pthread_mutex_init(&ls.victim, NULL);
	pthread_mutex_init(&ls.mu, NULL);
	pthread_cond_init(&ls.cv, NULL);
	if (pthread_create(&th, NULL, lock_holder, &ls)) {
		fprintf(stderr, "%s: cannot start ts-lock thread, sleeping instead\n", prog_name);
		sleep_until_ns(deadline);
		goto out;
	}
	pthread_mutex_lock(&ls.mu);
	while (!ls.held)
		pthread_cond_wait(&ls.cv, &ls.mu);
	pthread_mutex_unlock(&ls.mu);
	pthread_mutex_lock(&ls.victim);
	pthread_mutex_unlock(&ls.victim);
	pthread_join(th, NULL);
out:
	pthread_cond_destroy(&ls.cv);
	pthread_mutex_destroy(&ls.mu);
	pthread_mutex_destroy(&ls.victim);
}

/* contention: ts-hog, SCHED_FIFO on our CPU, spins while we stay runnable. */
struct hog {
	uint64_t deadline;
	atomic_bool done;
};

static void *hog_main(void *arg)
{
	struct hog *h = arg;

	set_thread_name("ts-hog");
	spin_until(h->deadline);
	atomic_store(&h->done, true);
	return NULL;
}

static atomic_bool fifo_warned;

static int start_hog(pthread_t *th, struct hog *h, int cpu)
{
	struct sched_param sp = { .sched_priority = 1 };
	pthread_attr_t attr;
	cpu_set_t set;
	int err;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_attr_init(&attr);
	pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
	pthread_attr_setschedparam(&attr, &sp);
	err = pthread_create(th, &attr, hog_main, h);
	if (err == EPERM) {
		if (!atomic_exchange(&fifo_warned, true))
			fprintf(stderr,
				"%s: SCHED_FIFO refused for ts-hog (%s): contention stalls use "
				"SCHED_OTHER, the stalled thread will share the CPU\n",
				prog_name, strerror(err));
		pthread_attr_setinheritsched(&attr, PTHREAD_INHERIT_SCHED);
		err = pthread_create(th, &attr, hog_main, h);
	}
	pthread_attr_destroy(&attr);
	return err;
}

static void stall_contention(uint64_t deadline)
{
	struct hog h = { .deadline = deadline };
	cpu_set_t saved, one;
	pthread_t th;
	int cpu = sched_getcpu();

	pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved);
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
	if (start_hog(&th, &h, cpu)) {
		fprintf(stderr, "%s: cannot start ts-hog thread, spinning instead\n", prog_name);
		spin_until(deadline);
	} else {
		/*
		 * Stay runnable: the hog preempts us as soon as it is woken on
		 * this CPU, and we only get the CPU back when it is done.
		 */
		while (!atomic_load(&h.done))
			__builtin_ia32_pause();
		pthread_join(th, NULL);
	}
	pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
}

/*
 * spin: pure computation. Raised to SCHED_FIFO for the spin so that other load on the machine
 * cannot turn part of it into runqueue time: the injected cause stays one cause.
 */
static void stall_spin(uint64_t deadline)
{
	struct sched_param fifo = { .sched_priority = 1 }, saved_param;
	int saved_policy, raised;

	pthread_getschedparam(pthread_self(), &saved_policy, &saved_param);
	raised = !pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo);
	spin_until(deadline);
	if (raised)
		pthread_setschedparam(pthread_self(), saved_policy, &saved_param);
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void stall_run(enum stall_kind kind, uint64_t dur_ns, uint64_t *t0, uint64_t *t1,
	       uint64_t *cpu)
{
	uint64_t cpu0 = thread_cpu_ns(), start = now_ns(), deadline = start + dur_ns;

	*t0 = start;
	switch (kind) {
	case STALL_SLEEP:
		sleep_until_ns(deadline);
		break;
	case STALL_SPIN:
		stall_spin(deadline);
		break;
	case STALL_LOCK:
		stall_lock(deadline);
		break;
	case STALL_CONTENTION:
		stall_contention(deadline);
		break;
	}
	*t1 = now_ns();
	*cpu = thread_cpu_ns() - cpu0;
}
