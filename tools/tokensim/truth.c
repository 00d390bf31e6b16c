// SPDX-License-Identifier: MIT
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "strbuf.h"
#include "truth.h"

static FILE *truth_f;
static pthread_mutex_t truth_mu = PTHREAD_MUTEX_INITIALIZER;

int truth_open(const char *path)
{
	if (!path)
		return 0;
	truth_f = fopen(path, "we");
	return truth_f ? 0 : -errno;
}

static void add_str(struct strbuf *sb, const char *key, const char *v)
{
	sb_addf(sb, ",\"%s\":", key);
	sb_add_json_str(sb, v ? v : "", v ? strlen(v) : 0);
}

static void add_arr(struct strbuf *sb, const char *key, const uint64_t *v, uint32_t n)
{
	sb_addf(sb, ",\"%s\":[", key);
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			sb_addc(sb, ',');
		sb_add_u64(sb, v[i]);
	}
	sb_addc(sb, ']');
}

static void add_stalls(struct strbuf *sb, const struct stall_rec *s, uint32_t n)
{
	sb_adds(sb, ",\"stalls\":[");
	for (uint32_t i = 0; i < n; i++)
		sb_addf(sb, "%s{\"before_chunk\":%u,\"kind\":\"%s\",\"where\":\"%s\","
			    "\"t_start_ns\":%llu,\"t_end_ns\":%llu,\"cause_req_num\":%llu,"
			    "\"thread_cpu_ns\":%llu}",
			i ? "," : "", s[i].before_chunk, stall_kind_name(s[i].kind),
			stall_where_name(s[i].where), (unsigned long long)s[i].t_start_ns,
			(unsigned long long)s[i].t_end_ns, (unsigned long long)s[i].cause_req_num,
			(unsigned long long)s[i].thread_cpu_ns);
	sb_addc(sb, ']');
}

void truth_write(const struct truth *t)
{
	struct strbuf sb = STRBUF_INIT;

	if (!truth_f && !cfg.verbose)
		return;
	sb_adds(&sb, "{\"request_id\":");
	sb_add_json_str(&sb, t->request_id, strlen(t->request_id));
	sb_addf(&sb, ",\"req_num\":%llu,\"conn_num\":%llu", (unsigned long long)t->req_num,
		(unsigned long long)t->conn_num);
	add_str(&sb, "method", t->method);
	add_str(&sb, "path", t->path);
	add_str(&sb, "format", t->format);
	sb_addf(&sb, ",\"stream\":%s,\"status\":%u", t->stream ? "true" : "false", t->status);
	add_str(&sb, "model", t->model);
	sb_addf(&sb, ",\"t_accept_call_ns\":%llu", (unsigned long long)t->t_accept_call_ns);
	sb_addf(&sb, ",\"t_accept_ns\":%llu,\"t_start_ns\":%llu,\"t_headers_ns\":%llu,"
		     "\"t_admit_ns\":%llu,\"t_admit_end_ns\":%llu,\"t_first_end_ns\":%llu",
		(unsigned long long)t->t_accept_ns, (unsigned long long)t->t_start_ns,
		(unsigned long long)t->t_headers_ns, (unsigned long long)t->t_admit_ns,
		(unsigned long long)t->t_admit_end_ns, (unsigned long long)t->t_first_end_ns);
	add_arr(&sb, "t_produced_ns", t->t_produced_ns, t->n_produced);
	add_arr(&sb, "t_token_ns", t->t_token_ns, t->chunks);
	add_arr(&sb, "t_token_end_ns", t->t_token_end_ns, t->chunks);
	sb_addf(&sb, ",\"t_end_ns\":%llu,\"chunks\":%u,\"tokens\":%u,\"tool_frames\":%u,"
		     "\"prompt_tokens\":%u,\"heartbeats\":%u,\"count_on_wire\":%s,\"aborted\":%s",
		(unsigned long long)t->t_end_ns, t->chunks, t->tokens, t->tool_frames,
		t->prompt_tokens, t->heartbeats, t->count_on_wire ? "true" : "false",
		t->aborted ? "true" : "false");
	add_stalls(&sb, t->stalls, t->nstalls);
	add_str(&sb, "write_mode", write_mode_name(cfg.write_mode));
	sb_addf(&sb, ",\"events_per_send\":%u,\"tokens_per_event\":%u", cfg.events_per_send,
		cfg.tokens_per_event);
	add_str(&sb, "framing", framing_name(cfg.framing));
	add_str(&sb, "end_style", end_style_name(cfg.end_style));
	sb_adds(&sb, "}\n");

	pthread_mutex_lock(&truth_mu);
	if (truth_f) {
		fwrite(sb.buf, 1, sb.len, truth_f);
		fflush(truth_f);
	}
	if (cfg.verbose) {
		printf("%s %s %u %s chunks=%u tokens=%u%s\n", t->method, t->path, t->status,
		       t->request_id, t->chunks, t->tokens, t->aborted ? " aborted" : "");
		fflush(stdout);
	}
	pthread_mutex_unlock(&truth_mu);
	sb_free(&sb);
}

void truth_close(void)
{
	pthread_mutex_lock(&truth_mu);
	if (truth_f)
		fclose(truth_f);
	truth_f = NULL;
	pthread_mutex_unlock(&truth_mu);
}
