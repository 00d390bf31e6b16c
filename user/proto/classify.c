// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Stream chunk and request body classification. Every field is matched on its full path
 * from the top of the object, so strings under logprobs, usage, timings, details, tool_calls,
 * generated_text or prompt can never be mistaken for content: no pattern reaches them.
 */
#include <string.h>

#include "classify.h"
#include "jscan.h"

struct cls_state {
	struct chunk_info *out;
	bool content;		/* a non-empty content string, or one begun before the cut */
	bool content_empty;	/* a content field that was complete and empty */
	bool tool;
	bool error;
	bool top_object;	/* the top-level value is an object */
	bool top_model;		/* model / id came from the top level: they beat message.* */
	bool top_id;
	/* OpenAI Responses API: the event's "type" and its "delta" string, in either order */
	bool resp_text;		/* "type" names an event whose "delta" is text */
	bool delta_text;	/* a non-empty top-level "delta" string (or begun before the cut) */
	bool delta_empty;	/* a complete, empty one */
};

/*
 * jscan__key_is() for this file's literal keys: inlined, the strlen() folds to a constant and
 * most keys are ruled out by their length alone, which matters at a dozen keys per value.
 */
static inline __attribute__((always_inline)) bool key_is(const struct jscan_path *p,
							  const char *key)
{
	const struct jscan_step *st = &p->step[p->depth - 1];
	size_t l = strlen(key);

	return st->key && st->key_len == l && memcmp(st->key, key, l) == 0;
}

static bool str_is(const struct jscan_value *v, const char *s)
{
	size_t l = strlen(s);

	return v->type == JS_STRING && !v->cut && v->raw_len == l && memcmp(v->raw, s, l) == 0;
}

static void set_count(int64_t *dst, const struct jscan_value *v)
{
	long long n;

	/* a number the cut may have shortened (4 of 42) is worse than none */
	if (v->cut || !jscan__int(v, &n) || n < 0)
		return;
	*dst = n;
}

static void content_string(struct cls_state *cs, const struct jscan_value *v)
{
	if (v->type != JS_STRING)
		return;
	/* raw_len > 0 means at least one character, escaped or not, whether or not cut */
	if (v->raw_len > 0)
		cs->content = true;
	else if (!v->cut)
		cs->content_empty = true;
}

/*
 * OpenAI Responses API events name themselves in "type" (also the SSE event name, which not
 * every server sends). Text deltas: the answer, the reasoning and its summary, a refusal; all
 * are text the client sees, as reasoning_content is. Function-call arguments are a tool frame.
 */
static void responses_type(struct cls_state *cs, const struct jscan_value *v)
{
	static const char *const text[] = {
		"response.output_text.delta", "response.reasoning_text.delta",
		"response.reasoning_summary_text.delta", "response.refusal.delta",
	};

	if (v->type != JS_STRING || v->cut || v->raw_len < 9 || memcmp(v->raw, "response.", 9))
		return;
	for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++) {
		if (str_is(v, text[i])) {
			cs->resp_text = true;
			return;
		}
	}
	if (str_is(v, "response.function_call_arguments.delta")) {
		cs->tool = true;
	} else if (str_is(v, "response.completed") || str_is(v, "response.incomplete")) {
		cs->out->final = true;
	} else if (str_is(v, "response.failed")) {
		cs->error = true;
		cs->out->final = true;
	}
}

/*
 * Dispatch on the last key first: most values of a chunk are on no path we care about, and
 * a memcmp or two rules them out where a full path match would cost far more per token.
 */
/* The fields generated text lives in, server by server: true if p is one, matched or not. */
static bool content_field(struct cls_state *cs, const struct jscan_path *p,
			  const struct jscan_value *v)
{
	if (key_is(p, "content")) {
		if (jscan__path_match(p, "choices", "*", "delta", "content", NULL) ||
		    jscan__path_match(p, "message", "content", NULL) ||	/* Ollama chat */
		    p->depth == 1)					/* llama.cpp */
			content_string(cs, v);
	} else if (key_is(p, "text")) {
		if (jscan__path_match(p, "choices", "*", "text", NULL) ||	/* completions */
		    jscan__path_match(p, "token", "text", NULL) ||		/* TGI */
		    jscan__path_match(p, "delta", "text", NULL))		/* Anthropic */
			content_string(cs, v);
	} else if (key_is(p, "reasoning_content")) {
		if (jscan__path_match(p, "choices", "*", "delta", "reasoning_content", NULL))
			content_string(cs, v);
	} else if (key_is(p, "reasoning")) {
		/* reasoning_content's newer name (vLLM >= 0.11, OpenRouter, Ollama's /v1) */
		if (jscan__path_match(p, "choices", "*", "delta", "reasoning", NULL))
			content_string(cs, v);
	} else if (key_is(p, "thinking")) {
		if (jscan__path_match(p, "delta", "thinking", NULL) ||	/* Anthropic */
		    jscan__path_match(p, "message", "thinking", NULL) ||	/* Ollama chat */
		    p->depth == 1)					/* Ollama generate */
			content_string(cs, v);
	} else if (key_is(p, "response")) {
		if (p->depth == 1)					/* Ollama generate */
			content_string(cs, v);
	} else {
		return false;
	}
	return true;
}

/* A field of the top-level object. */
static void top_field(struct cls_state *cs, const struct jscan_path *p,
		      const struct jscan_value *v)
{
	struct chunk_info *out = cs->out;

	if (key_is(p, "error")) {
		/* {"error":null} is a success in some servers' schemas */
		if (v->type != JS_NULL && v->type != JS_FALSE)
			cs->error = true;
	} else if (key_is(p, "object") || key_is(p, "type")) {
		/* vLLM's streamed ErrorResponse says "object":"error"; Anthropic "type" */
		if (str_is(v, "error"))
			cs->error = true;
		else if (str_is(v, "message_stop"))
			out->final = true;
		else if (key_is(p, "type"))
			responses_type(cs, v);
	} else if (key_is(p, "delta")) {
		/* Responses API text: "type", before or after it, says if it counts */
		if (v->type == JS_STRING) {
			if (v->raw_len > 0)
				cs->delta_text = true;
			else if (!v->cut)
				cs->delta_empty = true;
		}
	} else if (key_is(p, "model")) {
		if (v->type == JS_STRING) {
			jscan__string(v, out->model, sizeof(out->model));
			cs->top_model = true;
		}
	} else if (key_is(p, "id")) {
		if (v->type == JS_STRING) {
			jscan__string(v, out->id, sizeof(out->id));
			cs->top_id = true;
		}
	} else if (key_is(p, "done") || key_is(p, "stop")) {
		/* Ollama "done", llama.cpp "stop" */
		if (v->type == JS_TRUE)
			out->final = true;
	} else if (key_is(p, "eval_count") || key_is(p, "tokens_predicted")) {
		set_count(&out->model_tokens, v);
	} else if (key_is(p, "generated_text")) {
		/* TGI repeats the whole answer only in its last event */
		if (v->type == JS_STRING)
			out->final = true;
	}
}

/* A field deeper down: counts, tool calls, the model and id of nested objects. */
static void nested_field(struct cls_state *cs, const struct jscan_path *p,
			 const struct jscan_value *v)
{
	struct chunk_info *out = cs->out;

	if (key_is(p, "completion_tokens")) {
		if (jscan__path_match(p, "usage", "completion_tokens", NULL))
			set_count(&out->model_tokens, v);
	} else if (key_is(p, "output_tokens")) {
		/* message_delta's count; message_start's comes first and is overwritten later */
		if (jscan__path_match(p, "usage", "output_tokens", NULL) ||
		    jscan__path_match(p, "message", "usage", "output_tokens", NULL) ||
		    jscan__path_match(p, "response", "usage", "output_tokens", NULL))
			set_count(&out->model_tokens, v);
	} else if (key_is(p, "generated_tokens")) {
		if (jscan__path_match(p, "details", "generated_tokens", NULL))
			set_count(&out->model_tokens, v);
	} else if (key_is(p, "predicted_n")) {
		if (jscan__path_match(p, "timings", "predicted_n", NULL))
			set_count(&out->model_tokens, v);
	} else if (key_is(p, "function_call")) {
		if (v->type == JS_OBJECT &&
		    jscan__path_match(p, "choices", "*", "delta", "function_call", NULL))
			cs->tool = true;
	} else if (key_is(p, "partial_json")) {
		if (jscan__path_match(p, "delta", "partial_json", NULL))
			cs->tool = true;	/* Anthropic input_json_delta */
	} else if (key_is(p, "type")) {
		if (jscan__path_match(p, "delta", "type", NULL) && str_is(v, "input_json_delta"))
			cs->tool = true;
		else if (jscan__path_match(p, "content_block", "type", NULL) &&
			 (str_is(v, "tool_use") || str_is(v, "server_tool_use")))
			cs->tool = true;
	} else if (key_is(p, "model")) {
		/* Anthropic's message_start, the Responses API's response.* events */
		if (v->type == JS_STRING && !cs->top_model &&
		    (jscan__path_match(p, "message", "model", NULL) ||
		     jscan__path_match(p, "response", "model", NULL)))
			jscan__string(v, out->model, sizeof(out->model));
	} else if (key_is(p, "id")) {
		if (v->type == JS_STRING && !cs->top_id &&
		    (jscan__path_match(p, "message", "id", NULL) ||
		     jscan__path_match(p, "response", "id", NULL)))
			jscan__string(v, out->id, sizeof(out->id));
	} else if (!p->step[p->depth - 1].key && v->type == JS_OBJECT) {
		/* a tool-call list element: OpenAI delta.tool_calls, Ollama message.tool_calls */
		if (jscan__path_match(p, "choices", "*", "delta", "tool_calls", "*", NULL) ||
		    jscan__path_match(p, "message", "tool_calls", "*", NULL))
			cs->tool = true;
	}
}

static int chunk_visit(void *ud, const struct jscan_path *p, const struct jscan_value *v)
{
	struct cls_state *cs = ud;

	if (p->depth == 0) {
		cs->top_object = v->type == JS_OBJECT;
		return 0;
	}
	if (!cs->top_object)
		return 0;
	/* content fields first, wherever they are: the others by depth */
	if (content_field(cs, p, v))
		return 0;
	if (p->depth == 1)
		top_field(cs, p, v);
	else
		nested_field(cs, p, v);
	return 0;
}

/* "[DONE]", whitespace around it allowed */
static bool is_done(const char *s, size_t n)
{
	while (n && (s[0] == ' ' || s[0] == '\t' || s[0] == '\r' || s[0] == '\n')) {
		s++;
		n--;
	}
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
		n--;
	return n == 6 && memcmp(s, "[DONE]", 6) == 0;
}

void classify__chunk(const char *text, size_t len, bool cut, const char *event,
		    struct chunk_info *out)
{
	struct cls_state cs = { .out = out };
	enum jscan_result r;

	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	out->kind = CHUNK_UNKNOWN;
	out->model_tokens = -1;
	out->cut = cut;
	if (!text)
		len = 0;
	if (is_done(text, len)) {
		out->kind = CHUNK_DONE;
		out->final = true;
		return;
	}

	r = jscan__walk(text, len, chunk_visit, &cs);
	if (r == JSCAN_CUT)
		out->cut = true;
	if (cs.resp_text) {
		cs.content |= cs.delta_text;
		cs.content_empty |= cs.delta_empty;
	}

	if (r == JSCAN_ERROR) {
		/* malformed: nothing it seemed to say can be trusted */
		memset(out->model, 0, sizeof(out->model));
		memset(out->id, 0, sizeof(out->id));
		out->model_tokens = -1;
		out->final = false;
	} else if (cs.error) {
		out->kind = CHUNK_ERROR;
	} else if (cs.content) {
		out->kind = CHUNK_CONTENT;
	} else if (cs.tool) {
		out->kind = CHUNK_TOOL;
	} else if (r == JSCAN_OK) {
		out->kind = cs.top_object ? CHUNK_EMPTY : CHUNK_UNKNOWN;
	} else if (cs.content_empty) {
		/* cut, but past a complete empty content field: the chunk said it has no text */
		out->kind = CHUNK_EMPTY;
	}

	/* Anthropic names its events: the name is enough whatever the data */
	if (event && event[0]) {
		if (strcmp(event, "error") == 0) {
			out->kind = CHUNK_ERROR;
		} else if (strcmp(event, "ping") == 0) {
			out->kind = CHUNK_EMPTY;
		} else if (strcmp(event, "message_stop") == 0) {
			out->kind = CHUNK_EMPTY;
			out->final = true;
		}
	}
}

struct req_state {
	struct req_info *out;
	int max_rank;		/* which max-tokens field set out->max_tokens */
	bool top_object;
};

static int req_visit(void *ud, const struct jscan_path *p, const struct jscan_value *v)
{
	struct req_state *rs = ud;
	struct req_info *out = rs->out;
	int rank = 0;
	long long n;

	if (p->depth == 0) {
		rs->top_object = v->type == JS_OBJECT;
		return 0;
	}
	if (!rs->top_object)
		return 0;

	if (p->depth == 1) {
		if (key_is(p, "model")) {
			if (v->type == JS_STRING)
				jscan__string(v, out->model, sizeof(out->model));
			return 0;
		}
		if (key_is(p, "stream")) {
			if (v->type == JS_TRUE)
				out->stream = 1;
			else if (v->type == JS_FALSE)
				out->stream = 0;
			return 0;
		}
		/* OpenAI: max_completion_tokens replaces the deprecated max_tokens */
		if (key_is(p, "max_completion_tokens"))
			rank = 3;
		else if (key_is(p, "max_tokens"))
			rank = 2;
		else if (key_is(p, "n_predict"))
			rank = 1;
	} else if (jscan__path_match(p, "stream_options", "include_usage", NULL)) {
		out->include_usage = v->type == JS_TRUE;
		return 0;
	} else if (jscan__path_match(p, "options", "num_predict", NULL) ||
		   jscan__path_match(p, "parameters", "max_new_tokens", NULL)) {
		rank = 1;
	}
	if (rank && rank >= rs->max_rank && !v->cut && jscan__int(v, &n)) {
		out->max_tokens = n;
		rs->max_rank = rank;
	}
	return 0;
}

void classify__req_info(const char *text, size_t len, bool cut, struct req_info *out)
{
	struct req_state rs = { .out = out };

	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	out->stream = -1;
	out->max_tokens = -1;
	out->cut = cut;
	if (!text)
		len = 0;
	switch (jscan__walk(text, len, req_visit, &rs)) {
	case JSCAN_CUT:
		out->cut = true;
		break;
	case JSCAN_ERROR:
		/* not JSON after all (a form, garbage): what it seemed to say is unknown */
		memset(out, 0, sizeof(*out));
		out->stream = -1;
		out->max_tokens = -1;
		out->cut = cut;
		break;
	default:
		break;
	}
}
