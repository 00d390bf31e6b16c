// SPDX-License-Identifier: MIT
/*
 * Engine scheduler.  Each running request has its own deadline schedule
 * (admission + TTFT, then + ITL +- jitter per event, deadline to deadline so
 * the cadence does not drift).  The loop produces whichever event is due
 * first and sleeps toward the next deadline with clock_nanosleep(ABSTIME).
 *
 * New requests are taken between events, as vLLM adds requests between
 * steps.  While slots are free the engine sleeps in slices of at most
 * ADMIT_SLICE_NS so that a new request waits at most that long for
 * admission; when the batch is full nothing can be admitted, and it sleeps
 * up to FULL_SLICE_NS (bounding how long a cancelled request keeps its slot
 * and how long shutdown takes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "markers.h"
#include "util.h"

#define ADMIT_SLICE_NS (1 * NSEC_PER_MSEC)
#define FULL_SLICE_NS (50 * NSEC_PER_MSEC)

struct slot {
	struct ts_req *r;
	uint64_t deadline; /* of ev[next] */
	uint32_t next;
	bool stalled; /* the engine stall before ev[next] is done */
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct ts_req *head, *tail;
	bool stop;
	bool running;
	pthread_t th;
	uint64_t rng;
} eng = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
};

struct ts_req *req_new(uint64_t req_num, const char *rid, uint32_t max_tokens, uint32_t n_tool)
{
	struct ts_req *r = xcalloc(1, sizeof(*r));
	uint32_t tpe = cfg.tokens_per_event, i, tok = 0;
	pthread_condattr_t ca;

	r->req_num = req_num;
	snprintf(r->rid, sizeof(r->rid), "%s", rid);
	r->max_tokens = max_tokens;
	r->n_tool = n_tool;
	r->n_content = (max_tokens + tpe - 1) / tpe;
	r->ev = xcalloc(r->n_tool + r->n_content, sizeof(*r->ev));
	for (i = 0; i < r->n_tool; i++)
		r->ev[i] = (struct ts_event){ .kind = EV_TOOL, .index = i };
	for (i = 0; i < r->n_content; i++) {
		uint32_t n = max_tokens - tok < tpe ? max_tokens - tok : tpe;

		r->ev[r->n_tool + i] = (struct ts_event){
			.kind = EV_CONTENT, .index = i, .first_tok = tok, .ntok = n,
		};
		tok += n;
	}
	pthread_mutex_init(&r->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cv, &ca);
	pthread_condattr_destroy(&ca);
	atomic_init(&r->refs, 1);
	return r;
}

void req_put(struct ts_req *r)
{
	if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
		return;
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r->stalls);
	free(r->ev);
	free(r);
}

void req_add_stall(struct ts_req *r, const struct stall_rec *s)
{
	pthread_mutex_lock(&r->mu);
	/* Grow by doubling: nstalls is a power of two exactly when full. */
	if (!r->nstalls || !(r->nstalls & (r->nstalls - 1)))
		r->stalls = xrealloc(r->stalls, 2 * (r->nstalls ? r->nstalls : 1) *
							sizeof(*r->stalls));
	r->stalls[r->nstalls++] = *s;
	pthread_mutex_unlock(&r->mu);
}

/* Marks r finished for the front end and drops the engine's reference. */
static void release(struct ts_req *r, bool dropped)
{
	pthread_mutex_lock(&r->mu);
	r->done = true;
	r->dropped = dropped;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	req_put(r);
}

/* xorshift64*: reproducible jitter for a given --seed. */
static uint64_t rng_next(void)
{
	uint64_t x = eng.rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	eng.rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static uint64_t next_itl(void)
{
	double u, itl;

	if (!cfg.jitter_ns)
		return cfg.itl_ns;
	u = (double)(rng_next() >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
	itl = (double)cfg.itl_ns + (2 * u - 1) * (double)cfg.jitter_ns;
	return itl > 0 ? (uint64_t)itl : 0;
}

static void admit(struct slot *s, struct ts_req *r)
{
	uint64_t t = now_ns(), te;

	markers_admit(r->req_num, r->rid);
	te = now_ns();
	pthread_mutex_lock(&r->mu);
	r->t_admit = t;
	r->t_admit_end = te;
	pthread_mutex_unlock(&r->mu);
	*s = (struct slot){ .r = r, .deadline = t + cfg.ttft_ns };
}

static void finish(struct slot *s, bool dropped)
{
	markers_done(s->r->req_num, s->r->rid);
	release(s->r, dropped);
	s->r = NULL;
}

/* Content index the next event of s delays (tool frames come first). */
static uint32_t next_content(const struct slot *s)
{
	return s->next < s->r->n_tool ? 0 : s->next - s->r->n_tool;
}

/*
 * An engine stall blocks the engine thread, so every running request loses
 * that time: shift all schedules by it and record it in each of them.
 */
static void engine_stall(struct slot *slots, unsigned n, struct slot *cause)
{
	struct stall_rec rec = {
		.kind = cfg.stall_kind,
		.where = STALL_IN_ENGINE,
		.cause_req_num = cause->r->req_num,
	};
	uint64_t t0, t1;

	stall_run(cfg.stall_kind, cfg.stall_ns, &t0, &t1, &rec.thread_cpu_ns);
	rec.t_start_ns = t0;
	rec.t_end_ns = t1;
	for (unsigned i = 0; i < n; i++) {
		slots[i].deadline += t1 - t0;
		rec.before_chunk = next_content(&slots[i]);
		req_add_stall(slots[i].r, &rec);
	}
	cause->stalled = true;
}

static void produce(struct slot *s)
{
	struct ts_req *r = s->r;
	struct ts_event *e = &r->ev[s->next];
	uint64_t t = now_ns(), te = 0;

	if (e->kind == EV_CONTENT) {
		markers_token(r->req_num, r->rid, e->index);
		if (e->index == 0)
			te = now_ns();
	}
	pthread_mutex_lock(&r->mu);
	e->t_produced = t;
	if (te)
		r->t_first_end = te;
	r->produced++;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	s->next++;
	s->stalled = false;
	if (s->next == r->n_tool + r->n_content)
		finish(s, false);
	else
		s->deadline += next_itl();
}

static void *engine_main(void *arg)
{
	struct slot *slots = xcalloc(cfg.max_batch, sizeof(*slots));
	unsigned n = 0, i, best;
	uint64_t now, wake;

	(void)arg;
	set_thread_name("ts-engine");
	for (;;) {
		pthread_mutex_lock(&eng.mu);
		while (!eng.stop && !n && !eng.head)
			pthread_cond_wait(&eng.cv, &eng.mu);
		if (eng.stop) {
			pthread_mutex_unlock(&eng.mu);
			break;
		}
		while (eng.head && n < cfg.max_batch) {
			struct ts_req *r = eng.head;

			eng.head = r->next;
			if (!eng.head)
				eng.tail = NULL;
			r->next = NULL;
			if (atomic_load(&r->cancelled)) {
				release(r, true);
				continue;
			}
			admit(&slots[n++], r);
		}
		pthread_mutex_unlock(&eng.mu);

		/* Free the slots of requests whose client went away. */
		for (i = 0; i < n;) {
			if (atomic_load(&slots[i].r->cancelled)) {
				finish(&slots[i], true);
				slots[i] = slots[--n];
			} else {
				i++;
			}
		}
		if (!n)
			continue;

		best = 0;
		for (i = 1; i < n; i++)
			if (slots[i].deadline < slots[best].deadline)
				best = i;
		now = now_ns();
		if (slots[best].deadline > now) {
			wake = now + (n < cfg.max_batch ? ADMIT_SLICE_NS : FULL_SLICE_NS);
			sleep_until_ns(slots[best].deadline < wake ? slots[best].deadline : wake);
			continue;
		}

		struct slot *s = &slots[best];
		struct ts_event *e = &s->r->ev[s->next];

		if (cfg.stall_in == STALL_IN_ENGINE && e->kind == EV_CONTENT && !s->stalled &&
		    stall_due(e->index)) {
			engine_stall(slots, n, s);
			continue; /* its deadline moved with the others: re-pick */
		}
		produce(s);
		if (!s->r)
			slots[best] = slots[--n];
	}

	/* Shutdown: drop what is running, then what waits. */
	for (i = 0; i < n; i++)
		finish(&slots[i], true);
	pthread_mutex_lock(&eng.mu);
	while (eng.head) {
		struct ts_req *r = eng.head;

		eng.head = r->next;
		release(r, true);
	}
	eng.tail = NULL;
	pthread_mutex_unlock(&eng.mu);
	free(slots);
	return NULL;
}

int engine_start(void)
{
	int err;

	eng.rng = cfg.seed ^ 0x9e3779b97f4a7c15ULL;
	if (!eng.rng)
		eng.rng = 1;
	err = pthread_create(&eng.th, NULL, engine_main, NULL);
	if (!err)
		eng.running = true;
	return -err;
}

void engine_submit(struct ts_req *r)
{
	atomic_fetch_add(&r->refs, 1);
	pthread_mutex_lock(&eng.mu);
	if (eng.stop) {
		pthread_mutex_unlock(&eng.mu);
		release(r, true);
		return;
	}
	if (eng.tail)
		eng.tail->next = r;
	else
		eng.head = r;
	eng.tail = r;
	pthread_cond_signal(&eng.cv);
	pthread_mutex_unlock(&eng.mu);
}

void engine_stop(void)
{
	pthread_mutex_lock(&eng.mu);
	eng.stop = true;
	pthread_cond_signal(&eng.cv);
	pthread_mutex_unlock(&eng.mu);
	if (eng.running)
		pthread_join(eng.th, NULL);
	eng.running = false;
}
