// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Pairing a proxy's downstream requests with its upstream calls. See proxy.h. */
#include <stdlib.h>
#include <string.h>
#include "proxy.h"
#include "util.h"

#define TOKENS_MAX	4096	/* token times kept of one upstream call: the per-token delays are of the first ones */

struct up {
	bool used;
	uint32_t pid;
	char conn[REQ_ADDR_MAX];
	uint32_t stream;		/* HTTP/2: the call is this stream of conn (0: HTTP/1.1) */
	char request_id[HTTP_REQID_MAX];
	char resp_id[CLS_STR_MAX];
	uint64_t t_start_ns, ttft_ns;
	uint64_t *tok;
	uint32_t ntok;
};

struct proxy {
	struct up *v;
	unsigned keep, next;
};

const char *pair_by_name(enum pair_by b)
{
	switch (b) {
	case PAIR_STREAM_ID: return "stream_id";
	case PAIR_REQUEST_ID: return "request_id";
	case PAIR_TIMING: return "timing";
	default: return NULL;
	}
}

struct proxy *proxy__new(unsigned keep)
{
	struct proxy *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->keep = keep ? keep : 1;
	p->v = calloc(p->keep, sizeof(*p->v));
	if (!p->v) {
		free(p);
		return NULL;
	}
	return p;
}

void proxy__free(struct proxy *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->keep; i++)
		free(p->v[i].tok);
	free(p->v);
	free(p);
}

void proxy__upstream(struct proxy *p, const struct tt_request *r)
{
	struct up *u = &p->v[p->next++ % p->keep];
	uint32_t n = MIN(r->chunks, TOKENS_MAX);

	free(u->tok);
	memset(u, 0, sizeof(*u));
	if (!r->chunks || !r->t_start_ns)
		return;	/* nothing to pair a stream with */
	u->tok = malloc(n * sizeof(*u->tok));
	if (!u->tok)
		return;
	memcpy(u->tok, r->tok_ns, n * sizeof(*u->tok));
	u->ntok = n;
	u->used = true;
	u->pid = r->pid;
	u->t_start_ns = r->t_start_ns;
	u->ttft_ns = r->ttft_ns;
	memcpy(u->conn, r->conn, sizeof(u->conn));
	u->stream = r->h2 ? r->h2_stream : 0;
	memcpy(u->request_id, r->request_id, sizeof(u->request_id));
	memcpy(u->resp_id, r->resp_id, sizeof(u->resp_id));
}

static struct up *find(struct proxy *p, const struct tt_request *r, enum pair_by *by)
{
	struct up *timing = NULL;
	int ntiming = 0;

	for (unsigned i = 0; i < p->keep; i++) {
		struct up *u = &p->v[i];

		if (!u->used || u->pid != r->pid)
			continue;
		if (r->resp_id[0] && !strcmp(u->resp_id, r->resp_id)) {
			*by = PAIR_STREAM_ID;
			return u;
		}
		if (r->request_id[0] && !strcmp(u->request_id, r->request_id)) {
			*by = PAIR_REQUEST_ID;
			return u;
		}
		/* sent after the downstream request came, streaming before it did */
		if (u->t_start_ns >= r->t_start_ns && u->t_start_ns <= r->tok_ns[0] &&
		    u->tok[0] <= r->tok_ns[0]) {
			timing = u;
			ntiming++;
		}
	}
	if (ntiming == 1) {
		*by = PAIR_TIMING;
		return timing;
	}
	return NULL;
}

void proxy__pair(struct proxy *p, struct tt_request *r)
{
	enum pair_by by = PAIR_NONE;
	uint64_t *d;
	struct up *u;
	uint32_t n;

	if (r->client || !r->chunks || !r->t_start_ns || !(u = find(p, r, &by)))
		return;
	r->up.paired = true;
	r->up.by = by;
	memcpy(r->up.conn, u->conn, sizeof(r->up.conn));
	r->up.stream_id = u->stream;
	memcpy(r->up.request_id, u->request_id, sizeof(r->up.request_id));
	r->up.ttft_ns = u->ttft_ns;
	r->up.request_delay_ns = (int64_t)(u->t_start_ns - r->t_start_ns);
	r->up.first_token_delay_ns = (int64_t)(r->tok_ns[0] - u->tok[0]);
	/* per token: from the upstream read to the downstream send of the same event */
	n = MIN(r->chunks, u->ntok);
	d = malloc(n * sizeof(*d));
	if (d) {
		uint32_t k = 0;

		for (uint32_t i = 0; i < n; i++)
			if (r->tok_ns[i] >= u->tok[i])
				d[k++] = r->tok_ns[i] - u->tok[i];
		if (k) {
			qsort(d, k, sizeof(*d), cmp_u64);
			r->up.token_delay_p50_ns = d[(k - 1) / 2];
			r->up.token_delay_p99_ns = d[(uint64_t)(k - 1) * 99 / 100];
			r->up.token_delay_max_ns = d[k - 1];
		}
		r->up.ntoken_delays = k;
		free(d);
	}
	u->used = false;	/* one upstream call, one downstream request */
}
