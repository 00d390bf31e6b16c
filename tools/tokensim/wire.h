/* SPDX-License-Identifier: MIT */
/*
 * Wire formats: how each real server's request body is read and how its
 * stream looks, event by event (vLLM's OpenAI chat and completions,
 * llama.cpp, TGI, Ollama, Anthropic).  Renderers append one whole event (an
 * SSE event with its blank line, or an NDJSON line) to a strbuf; HTTP
 * framing is tx.c's business.
 */
#ifndef TS_WIRE_H
#define TS_WIRE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "config.h"
#include "engine.h"
#include "strbuf.h"

#define TS_MODEL_MAX 128

/* One request as the engine and the renderers see it. */
struct gen {
	enum ts_format fmt;
	bool stream;
	bool usage;	  /* openai: send the usage chunk */
	bool ollama_chat; /* /api/chat shape */
	bool limited;	  /* the request set a token limit: finish "length", not "stop" */
	uint32_t max_tokens;
	uint32_t prompt_tokens;
	char model[TS_MODEL_MAX + 1];
	const char *rid;
	time_t created;
	/* Filled by the front end before the tail or body is rendered. */
	uint64_t t_start, t_admit, t_first, t_last;
};

/* True if the request target's path (query ignored) is p. */
bool wire_path_is(const char *target, const char *p);

/* Format served at path (query ignored); FMT_NONE if no endpoint is there. */
enum ts_format wire_format_for_path(const char *path);

/*
 * Reads a request body into g (fmt and rid already set).  Returns 0, or an
 * HTTP status (400) with a message in err.
 */
int wire_parse_body(struct gen *g, const char *path, const char *body, size_t n, char *err,
		    size_t errsz);

const char *wire_content_type(const struct gen *g);
bool wire_is_sse(enum ts_format fmt);

/* Events before the first content: role chunk, Anthropic's message_start... */
bool wire_preamble(const struct gen *g, unsigned i, struct strbuf *sb);
void wire_tool(const struct gen *g, unsigned i, struct strbuf *sb);
void wire_content(const struct gen *g, const struct ts_event *e, bool last, struct strbuf *sb);
/* Events after the last content: finish, usage, [DONE]... false when none left. */
bool wire_tail(const struct gen *g, unsigned i, struct strbuf *sb);
/* SSE comment sent by --heartbeat-ms. */
void wire_ping(struct strbuf *sb);

/* Whole non-streaming response body. */
void wire_body(const struct gen *g, struct strbuf *sb);
void wire_error_body(unsigned status, const char *msg, struct strbuf *sb);
const char *http_reason(unsigned status);

#endif
