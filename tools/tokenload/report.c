// SPDX-License-Identifier: MIT
/* One JSON line per request (--out) and the summary line on stderr. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "tokenload.h"
#include "util.h"

static struct {
	pthread_mutex_t mu;
	FILE *out;
	unsigned long requests, errors, aborted, non2xx, chunks;
	uint64_t *ttft; /* of requests with a chunk, for percentiles */
	size_t nttft, cap;
} rep = { .mu = PTHREAD_MUTEX_INITIALIZER };

int report_open(const char *path)
{
	if (!path)
		return 0;
	rep.out = fopen(path, "we");
	return rep.out ? 0 : -1;
}

void report_result(const struct tl_result *r)
{
	struct strbuf sb = STRBUF_INIT;
	long long ttft = r->chunks ? (long long)(r->t_chunk_ns[0] - r->t_sent_ns) : -1;

	sb_adds(&sb, "{\"request_id\":");
	sb_add_json_str(&sb, r->request_id, strlen(r->request_id));
	sb_addf(&sb, ",\"status\":%d,\"t_sent_ns\":%llu,\"ttft_ns\":%lld",
		r->status, (unsigned long long)r->t_sent_ns, ttft);
	if (!cfg.no_chunk_times) {
		sb_adds(&sb, ",\"t_chunk_ns\":[");
		for (uint32_t i = 0; i < r->chunks; i++) {
			if (i)
				sb_addc(&sb, ',');
			sb_add_u64(&sb, r->t_chunk_ns[i]);
		}
		sb_addc(&sb, ']');
	}
	sb_addf(&sb, ",\"chunks\":%u,\"tokens\":%lld,\"aborted\":%s,\"final\":%s,\"error\":",
		r->chunks, r->tokens, r->aborted ? "true" : "false", r->final ? "true" : "false");
	if (r->error)
		sb_add_json_str(&sb, r->error, strlen(r->error));
	else
		sb_adds(&sb, "null");
	sb_addf(&sb, ",\"t_done_ns\":%llu,\"bytes\":%llu", (unsigned long long)r->t_done_ns,
		(unsigned long long)r->bytes);
	if (r->t_connect_ns)
		sb_addf(&sb, ",\"t_connect_ns\":%llu,\"t_connected_ns\":%llu}\n",
			(unsigned long long)r->t_connect_ns, (unsigned long long)r->t_connected_ns);
	else
		sb_adds(&sb, ",\"t_connect_ns\":null,\"t_connected_ns\":null}\n");

	pthread_mutex_lock(&rep.mu);
	rep.requests++;
	rep.errors += r->error != NULL;
	rep.aborted += r->aborted;
	rep.non2xx += !r->error && (r->status < 200 || r->status > 299);
	rep.chunks += r->chunks;
	if (ttft >= 0) {
		if (rep.nttft == rep.cap) {
			rep.cap = rep.cap ? 2 * rep.cap : 256;
			rep.ttft = xrealloc(rep.ttft, rep.cap * sizeof(*rep.ttft));
		}
		rep.ttft[rep.nttft++] = (uint64_t)ttft;
	}
	if (rep.out)
		fwrite(sb.buf, 1, sb.len, rep.out);
	pthread_mutex_unlock(&rep.mu);
	sb_free(&sb);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double pct_ms(double q)
{
	if (!rep.nttft)
		return 0;
	return (double)rep.ttft[(size_t)(q * (double)(rep.nttft - 1) + 0.5)] / 1e6;
}

int report_close(uint64_t elapsed_ns)
{
	double secs = (double)elapsed_ns / 1e9;
	bool out_ok = true;

	if (rep.out)
		out_ok = fclose(rep.out) == 0;
	qsort(rep.ttft, rep.nttft, sizeof(*rep.ttft), cmp_u64);
	fprintf(stderr,
		"%s: %lu requests, %lu errors, %lu aborted, %lu non-2xx, %lu chunks in %.3f s "
		"(%.1f chunks/s), ttft p50 %.2f ms p99 %.2f ms\n",
		prog_name, rep.requests, rep.errors, rep.aborted, rep.non2xx, rep.chunks, secs,
		secs > 0 ? (double)rep.chunks / secs : 0, pct_ms(0.5), pct_ms(0.99));
	free(rep.ttft);
	if (!out_ok)
		fprintf(stderr, "%s: --out: write failed\n", prog_name);
	return rep.errors || rep.requests < cfg.requests || !out_ok ? 1 : 0;
}
