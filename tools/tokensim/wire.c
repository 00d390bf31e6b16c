// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "util.h"
#include "wire.h"

static const struct {
	const char *path;
	enum ts_format fmt;
} routes[] = {
	{ "/v1/chat/completions", FMT_OPENAI_CHAT },
	{ "/v1/completions", FMT_OPENAI_COMPL },
	{ "/completion", FMT_LLAMACPP },
	{ "/generate_stream", FMT_TGI },
	{ "/generate", FMT_TGI },
	{ "/api/generate", FMT_OLLAMA },
	{ "/api/chat", FMT_OLLAMA },
	{ "/v1/messages", FMT_ANTHROPIC },
};

static size_t path_len(const char *path)
{
	return strcspn(path, "?#");
}

bool wire_path_is(const char *path, const char *p)
{
	size_t l = path_len(path);

	return l == strlen(p) && !memcmp(path, p, l);
}

enum ts_format wire_format_for_path(const char *path)
{
	for (size_t i = 0; i < ARRAY_SIZE(routes); i++)
		if (wire_path_is(path, routes[i].path))
			return routes[i].fmt;
	return FMT_NONE;
}

/* Token limit fields of all the formats, the first one present wins. */
static const char *const limit_fields[] = {
	"max_completion_tokens", "max_tokens", "n_predict", "options.num_predict",
	"parameters.max_new_tokens",
};

/* The prompt's rough token count: ~4 bytes a token, as tokenizers average. */
static uint32_t prompt_tokens(const char *body, size_t n)
{
	static const char *const fields[] = { "messages", "prompt", "inputs" };
	struct json_val v;

	for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
		if (json_get(body, n, fields[i], &v))
			return v.n / 4 ? (uint32_t)(v.n / 4) : 1;
	return 1;
}

int wire_parse_body(struct gen *g, const char *path, const char *body, size_t n, char *err,
		    size_t errsz)
{
	struct json_val v;
	long long ll;
	bool b;
	size_t i = 0;

	while (i < n && strchr(" \t\r\n", body[i]))
		i++;
	if (i == n || body[i] != '{' || !json_valid(body, n)) {
		snprintf(err, errsz, "request body is not a JSON object");
		return 400;
	}

	snprintf(g->model, sizeof(g->model), "tokensim");
	if (json_get(body, n, "model", &v)) {
		if (v.type != JSON_STR) {
			snprintf(err, errsz, "model must be a string");
			return 400;
		}
		json_unescape(&v, g->model, sizeof(g->model));
	}

	/* Ollama streams unless told not to; the others only when asked; TGI by path. */
	g->stream = g->fmt == FMT_OLLAMA;
	if (g->fmt == FMT_TGI)
		g->stream = !wire_path_is(path, "/generate");
	if (json_get(body, n, "stream", &v)) {
		if (!json_get_bool(body, n, "stream", &b)) {
			snprintf(err, errsz, "stream must be a boolean");
			return 400;
		}
		g->stream = b;
	}

	g->max_tokens = cfg.tokens;
	g->limited = false;
	for (i = 0; i < ARRAY_SIZE(limit_fields); i++) {
		if (!json_get(body, n, limit_fields[i], &v) || v.type == JSON_NULL)
			continue;
		if (!json_get_int(body, n, limit_fields[i], &ll)) {
			snprintf(err, errsz, "%s must be an integer", limit_fields[i]);
			return 400;
		}
		/* llama.cpp's n_predict and Ollama's num_predict use -1 for "no limit". */
		if (ll == -1 && strstr(limit_fields[i], "predict"))
			break;
		if (ll < 1 || ll > TS_MAX_TOKENS) {
			snprintf(err, errsz, "%s must be between 1 and %d", limit_fields[i],
				 TS_MAX_TOKENS);
			return 400;
		}
		g->max_tokens = (uint32_t)ll;
		g->limited = true;
		break;
	}

	g->usage = cfg.usage;
	if (json_get_bool(body, n, "stream_options.include_usage", &b) && b)
		g->usage = true;
	g->ollama_chat = g->fmt == FMT_OLLAMA &&
			 (wire_path_is(path, "/api/chat") || json_get(body, n, "messages", &v));
	g->prompt_tokens = prompt_tokens(body, n);
	return 0;
}

bool wire_is_sse(enum ts_format fmt)
{
	return fmt != FMT_OLLAMA && fmt != FMT_NONE;
}

const char *wire_content_type(const struct gen *g)
{
	if (!g->stream)
		return "application/json";
	switch (g->fmt) {
	case FMT_OLLAMA:
		return "application/x-ndjson";
	case FMT_LLAMACPP:
	case FMT_TGI:
		return "text/event-stream";
	default:
		return "text/event-stream; charset=utf-8";
	}
}

static const char *eol(void)
{
	return cfg.crlf ? "\r\n" : "\n";
}

/* "data: " and the JSON object that follows open every SSE event we send. */
static void sse_open(struct strbuf *sb, const char *event)
{
	if (event)
		sb_addf(sb, "event: %s%s", event, eol());
	sb_adds(sb, "data: ");
}

static void sse_close(struct strbuf *sb)
{
	sb_adds(sb, eol());
	sb_adds(sb, eol());
}

static void add_id(struct strbuf *sb, const char *prefix, const char *rid)
{
	char id[TS_RID_MAX + 16];
	int n = snprintf(id, sizeof(id), "%s%s", prefix, rid);

	sb_add_json_str(sb, id, (size_t)n);
}

static void add_model(struct strbuf *sb, const struct gen *g)
{
	sb_add_json_str(sb, g->model, strlen(g->model));
}

/* The generated text of tokens [first, first + n): " tok<k>" each. */
static void add_text(struct strbuf *sb, uint32_t first, uint32_t n)
{
	sb_addc(sb, '"');
	for (uint32_t k = first; k < first + n; k++) {
		sb_adds(sb, " tok");
		sb_add_u64(sb, k);
	}
	sb_addc(sb, '"');
}

static void add_pad(struct strbuf *sb)
{
	if (!cfg.event_pad)
		return;
	sb_adds(sb, ",\"pad\":\"");
	sb_fill(sb, 'x', cfg.event_pad);
	sb_addc(sb, '"');
}

static const char *finish_reason(const struct gen *g)
{
	return g->limited ? "length" : "stop";
}

/* {"id":...,"object":...,"created":...,"model":..., without the closing brace. */
static void openai_head(const struct gen *g, struct strbuf *sb)
{
	bool chat = g->fmt == FMT_OPENAI_CHAT;

	sb_adds(sb, "{\"id\":");
	add_id(sb, chat ? "chatcmpl-" : "cmpl-", g->rid);
	sb_addf(sb, ",\"object\":\"%s\",\"created\":%lld,\"model\":",
		chat ? "chat.completion.chunk" : "text_completion", (long long)g->created);
	add_model(sb, g);
}

static void add_usage(const struct gen *g, struct strbuf *sb)
{
	sb_addf(sb, "\"usage\":{\"prompt_tokens\":%u,\"completion_tokens\":%u,\"total_tokens\":%u}",
		g->prompt_tokens, g->max_tokens, g->prompt_tokens + g->max_tokens);
}

static void ollama_head(const struct gen *g, struct strbuf *sb)
{
	struct utc_time u;

	utc_now(&u);
	sb_adds(sb, "{\"model\":");
	add_model(sb, g);
	sb_addf(sb, ",\"created_at\":\"%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ\",", u.year, u.mon + 1,
		u.mday, u.hour, u.min, u.sec, u.usec);
}

static void anthropic_message_start(const struct gen *g, struct strbuf *sb)
{
	sse_open(sb, "message_start");
	sb_adds(sb, "{\"type\":\"message_start\",\"message\":{\"id\":");
	add_id(sb, "msg_", g->rid);
	sb_adds(sb, ",\"type\":\"message\",\"role\":\"assistant\",\"model\":");
	add_model(sb, g);
	sb_addf(sb, ",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,"
		    "\"usage\":{\"input_tokens\":%u,\"output_tokens\":1}}}",
		g->prompt_tokens);
	sse_close(sb);
}

bool wire_preamble(const struct gen *g, unsigned i, struct strbuf *sb)
{
	switch (g->fmt) {
	case FMT_OPENAI_CHAT:
		if (i > 0)
			return false;
		sse_open(sb, NULL);
		openai_head(g, sb);
		sb_adds(sb, ",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
			    "\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}");
		sse_close(sb);
		return true;
	case FMT_ANTHROPIC:
		if (i == 0) {
			anthropic_message_start(g, sb);
		} else if (i == 1) {
			sse_open(sb, "content_block_start");
			sb_adds(sb, "{\"type\":\"content_block_start\",\"index\":0,"
				    "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}");
			sse_close(sb);
		} else if (i == 2) {
			sse_open(sb, "ping");
			sb_adds(sb, "{\"type\": \"ping\"}");
			sse_close(sb);
		} else {
			return false;
		}
		return true;
	default:
		return false;
	}
}

void wire_tool(const struct gen *g, unsigned i, struct strbuf *sb)
{
	sse_open(sb, NULL);
	openai_head(g, sb);
	sb_addf(sb, ",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
		    "\"id\":\"call_%u\",\"type\":\"function\",\"function\":{\"name\":\"f\","
		    "\"arguments\":\"{\\\"a\\\":1}\"}}]},",
		i + 1);
	sb_adds(sb, "\"logprobs\":null,\"finish_reason\":null}]}");
	sse_close(sb);
}

void wire_content(const struct gen *g, const struct ts_event *e, bool last, struct strbuf *sb)
{
	switch (g->fmt) {
	case FMT_OPENAI_CHAT:
	case FMT_OPENAI_COMPL:
		sse_open(sb, NULL);
		openai_head(g, sb);
		if (g->fmt == FMT_OPENAI_CHAT)
			sb_adds(sb, ",\"choices\":[{\"index\":0,\"delta\":{\"content\":");
		else
			sb_adds(sb, ",\"choices\":[{\"index\":0,\"text\":");
		add_text(sb, e->first_tok, e->ntok);
		if (g->fmt == FMT_OPENAI_CHAT)
			sb_addc(sb, '}');
		sb_adds(sb, ",\"logprobs\":null,\"finish_reason\":null}]");
		add_pad(sb);
		sb_addc(sb, '}');
		sse_close(sb);
		break;
	case FMT_LLAMACPP:
		sse_open(sb, NULL);
		sb_adds(sb, "{\"content\":");
		add_text(sb, e->first_tok, e->ntok);
		sb_adds(sb, ",\"stop\":false,\"id_slot\":0,\"multimodal\":false,\"index\":0");
		add_pad(sb);
		sb_addc(sb, '}');
		sse_close(sb);
		break;
	case FMT_TGI:
		/* TGI writes "data:" with no space. */
		sb_addf(sb, "data:{\"index\":%u,\"token\":{\"id\":%u,\"text\":", e->index + 1,
			e->first_tok);
		add_text(sb, e->first_tok, e->ntok);
		sb_adds(sb, ",\"logprob\":-0.5,\"special\":false},\"generated_text\":");
		if (last) {
			add_text(sb, 0, g->max_tokens);
			sb_addf(sb, ",\"details\":{\"finish_reason\":\"%s\","
				    "\"generated_tokens\":%u,\"seed\":null}",
				g->limited ? "length" : "eos_token", g->max_tokens);
		} else {
			sb_adds(sb, "null,\"details\":null");
		}
		add_pad(sb);
		sb_addc(sb, '}');
		sse_close(sb);
		break;
	case FMT_OLLAMA:
		ollama_head(g, sb);
		if (g->ollama_chat) {
			sb_adds(sb, "\"message\":{\"role\":\"assistant\",\"content\":");
			add_text(sb, e->first_tok, e->ntok);
			sb_addc(sb, '}');
		} else {
			sb_adds(sb, "\"response\":");
			add_text(sb, e->first_tok, e->ntok);
		}
		sb_adds(sb, ",\"done\":false");
		add_pad(sb);
		sb_adds(sb, "}\n");
		break;
	case FMT_ANTHROPIC:
		sse_open(sb, "content_block_delta");
		sb_adds(sb, "{\"type\":\"content_block_delta\",\"index\":0,"
			    "\"delta\":{\"type\":\"text_delta\",\"text\":");
		add_text(sb, e->first_tok, e->ntok);
		sb_addc(sb, '}');
		add_pad(sb);
		sb_addc(sb, '}');
		sse_close(sb);
		break;
	default:
		break;
	}
}

static double ms_between(uint64_t a, uint64_t b)
{
	return b > a ? (double)(b - a) / 1e6 : 0;
}

static uint64_t ns_between(uint64_t a, uint64_t b)
{
	return b > a ? b - a : 0;
}

static void ollama_final(const struct gen *g, struct strbuf *sb)
{
	ollama_head(g, sb);
	if (g->ollama_chat)
		sb_adds(sb, "\"message\":{\"role\":\"assistant\",\"content\":\"\"}");
	else
		sb_adds(sb, "\"response\":\"\"");
	sb_addf(sb, ",\"done\":true,\"done_reason\":\"%s\",\"total_duration\":%llu,"
		    "\"load_duration\":0,\"prompt_eval_count\":%u,\"prompt_eval_duration\":%llu,"
		    "\"eval_count\":%u,\"eval_duration\":%llu}\n",
		finish_reason(g), (unsigned long long)ns_between(g->t_start, g->t_last),
		g->prompt_tokens, (unsigned long long)ns_between(g->t_admit, g->t_first),
		g->max_tokens, (unsigned long long)ns_between(g->t_first, g->t_last));
}

static void llamacpp_final(const struct gen *g, struct strbuf *sb, bool stream)
{
	sb_adds(sb, "{\"content\":");
	if (stream)
		sb_adds(sb, "\"\"");
	else
		add_text(sb, 0, g->max_tokens);
	sb_adds(sb, ",\"stop\":true,\"id_slot\":0,\"model\":");
	add_model(sb, g);
	sb_addf(sb, ",\"tokens_predicted\":%u,\"tokens_evaluated\":%u,\"stop_type\":\"%s\","
		    "\"timings\":{\"prompt_n\":%u,\"prompt_ms\":%.3f,\"predicted_n\":%u,"
		    "\"predicted_ms\":%.3f}}",
		g->max_tokens, g->prompt_tokens, g->limited ? "limit" : "eos", g->prompt_tokens,
		ms_between(g->t_admit, g->t_first), g->max_tokens,
		ms_between(g->t_first, g->t_last));
}

bool wire_tail(const struct gen *g, unsigned i, struct strbuf *sb)
{
	switch (g->fmt) {
	case FMT_OPENAI_CHAT:
	case FMT_OPENAI_COMPL:
		if (i == 1 && !g->usage)
			i++;
		if (i == 0) {
			sse_open(sb, NULL);
			openai_head(g, sb);
			if (g->fmt == FMT_OPENAI_CHAT)
				sb_adds(sb, ",\"choices\":[{\"index\":0,\"delta\":{},");
			else
				sb_adds(sb, ",\"choices\":[{\"index\":0,\"text\":\"\",");
			sb_addf(sb, "\"logprobs\":null,\"finish_reason\":\"%s\"}]}",
				finish_reason(g));
			sse_close(sb);
		} else if (i == 1) {
			sse_open(sb, NULL);
			openai_head(g, sb);
			sb_adds(sb, ",\"choices\":[],");
			add_usage(g, sb);
			sb_addc(sb, '}');
			sse_close(sb);
		} else if (i == 2) {
			sse_open(sb, NULL);
			sb_adds(sb, "[DONE]");
			sse_close(sb);
		} else {
			return false;
		}
		return true;
	case FMT_LLAMACPP:
		if (i > 0)
			return false;
		sse_open(sb, NULL);
		llamacpp_final(g, sb, true);
		sse_close(sb);
		return true;
	case FMT_OLLAMA:
		if (i > 0)
			return false;
		ollama_final(g, sb);
		return true;
	case FMT_ANTHROPIC:
		if (i == 0) {
			sse_open(sb, "content_block_stop");
			sb_adds(sb, "{\"type\":\"content_block_stop\",\"index\":0}");
		} else if (i == 1) {
			sse_open(sb, "message_delta");
			sb_addf(sb, "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"%s\","
				    "\"stop_sequence\":null},\"usage\":{\"output_tokens\":%u}}",
				g->limited ? "max_tokens" : "end_turn", g->max_tokens);
		} else if (i == 2) {
			sse_open(sb, "message_stop");
			sb_adds(sb, "{\"type\":\"message_stop\"}");
		} else {
			return false;
		}
		sse_close(sb);
		return true;
	default:
		/* TGI: the last content event carries generated_text and details. */
		return false;
	}
}

void wire_ping(struct strbuf *sb)
{
	sb_adds(sb, ": ping");
	sse_close(sb);
}

void wire_body(const struct gen *g, struct strbuf *sb)
{
	switch (g->fmt) {
	case FMT_OPENAI_CHAT:
	case FMT_OPENAI_COMPL:
		sb_adds(sb, "{\"id\":");
		add_id(sb, g->fmt == FMT_OPENAI_CHAT ? "chatcmpl-" : "cmpl-", g->rid);
		sb_addf(sb, ",\"object\":\"%s\",\"created\":%lld,\"model\":",
			g->fmt == FMT_OPENAI_CHAT ? "chat.completion" : "text_completion",
			(long long)g->created);
		add_model(sb, g);
		if (g->fmt == FMT_OPENAI_CHAT) {
			sb_adds(sb, ",\"choices\":[{\"index\":0,"
				    "\"message\":{\"role\":\"assistant\",\"content\":");
			add_text(sb, 0, g->max_tokens);
			sb_addc(sb, '}');
		} else {
			sb_adds(sb, ",\"choices\":[{\"index\":0,\"text\":");
			add_text(sb, 0, g->max_tokens);
		}
		sb_addf(sb, ",\"logprobs\":null,\"finish_reason\":\"%s\"}],", finish_reason(g));
		add_usage(g, sb);
		sb_addc(sb, '}');
		break;
	case FMT_LLAMACPP:
		llamacpp_final(g, sb, false);
		break;
	case FMT_TGI:
		sb_adds(sb, "{\"generated_text\":");
		add_text(sb, 0, g->max_tokens);
		sb_addf(sb, ",\"details\":{\"finish_reason\":\"%s\",\"generated_tokens\":%u,"
			    "\"seed\":null}}",
			g->limited ? "length" : "eos_token", g->max_tokens);
		break;
	case FMT_OLLAMA:
		ollama_head(g, sb);
		if (g->ollama_chat) {
			sb_adds(sb, "\"message\":{\"role\":\"assistant\",\"content\":");
			add_text(sb, 0, g->max_tokens);
			sb_addc(sb, '}');
		} else {
			sb_adds(sb, "\"response\":");
			add_text(sb, 0, g->max_tokens);
		}
		sb_addf(sb, ",\"done\":true,\"done_reason\":\"%s\",\"total_duration\":%llu,"
			    "\"prompt_eval_count\":%u,\"eval_count\":%u,\"eval_duration\":%llu}",
			finish_reason(g), (unsigned long long)ns_between(g->t_start, g->t_last),
			g->prompt_tokens, g->max_tokens,
			(unsigned long long)ns_between(g->t_first, g->t_last));
		break;
	case FMT_ANTHROPIC:
		sb_adds(sb, "{\"id\":");
		add_id(sb, "msg_", g->rid);
		sb_adds(sb, ",\"type\":\"message\",\"role\":\"assistant\",\"model\":");
		add_model(sb, g);
		sb_adds(sb, ",\"content\":[{\"type\":\"text\",\"text\":");
		add_text(sb, 0, g->max_tokens);
		sb_addf(sb, "}],\"stop_reason\":\"%s\",\"stop_sequence\":null,"
			    "\"usage\":{\"input_tokens\":%u,\"output_tokens\":%u}}",
			g->limited ? "max_tokens" : "end_turn", g->prompt_tokens, g->max_tokens);
		break;
	default:
		break;
	}
}

const char *http_reason(unsigned status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 413: return "Payload Too Large";
	case 414: return "URI Too Long";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 505: return "HTTP Version Not Supported";
	default: return status < 500 ? "Client Error" : "Server Error";
	}
}

static const char *error_type(unsigned status)
{
	switch (status) {
	case 400: return "invalid_request_error";
	case 404: return "not_found_error";
	case 405: return "method_not_allowed";
	case 413: return "request_too_large";
	case 429: return "rate_limit_error";
	case 503: return "overloaded_error";
	default: return status < 500 ? "invalid_request_error" : "server_error";
	}
}

void wire_error_body(unsigned status, const char *msg, struct strbuf *sb)
{
	sb_adds(sb, "{\"error\":{\"message\":");
	sb_add_json_str(sb, msg, strlen(msg));
	sb_addf(sb, ",\"type\":\"%s\",\"code\":%u}}", error_type(status), status);
}
