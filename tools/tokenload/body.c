// SPDX-License-Identifier: MIT
/*
 * Request bodies: each API puts the token limit, the prompt and the stream
 * switch in its own place; the path says which API.
 */
#include <stdio.h>
#include <string.h>

#include "strbuf.h"
#include "tokenload.h"

enum api {
	API_CHAT,
	API_COMPL,
	API_LLAMACPP,
	API_TGI,
	API_OLLAMA_GEN,
	API_OLLAMA_CHAT,
	API_ANTHROPIC,
};

static enum api api_for_path(const char *path)
{
	static const struct {
		const char *path;
		enum api api;
	} map[] = {
		{ "/v1/completions", API_COMPL },  { "/completion", API_LLAMACPP },
		{ "/generate_stream", API_TGI },   { "/generate", API_TGI },
		{ "/api/generate", API_OLLAMA_GEN }, { "/api/chat", API_OLLAMA_CHAT },
		{ "/v1/messages", API_ANTHROPIC },
	};
	size_t l = strcspn(path, "?");

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strlen(map[i].path) == l && !memcmp(path, map[i].path, l))
			return map[i].api;
	return API_CHAT;
}

static void add_prompt(struct strbuf *sb)
{
	static const char words[] = "the quick brown fox jumps over the lazy dog ";

	sb_addc(sb, '"');
	for (unsigned i = 0; i < cfg.prompt_bytes; i++)
		sb_addc(sb, words[i % (sizeof(words) - 1)]);
	sb_addc(sb, '"');
}

static void add_messages(struct strbuf *sb)
{
	sb_adds(sb, "\"messages\":[{\"role\":\"user\",\"content\":");
	add_prompt(sb);
	sb_adds(sb, "}]");
}

static void add_model(struct strbuf *sb)
{
	sb_adds(sb, "\"model\":");
	sb_add_json_str(sb, cfg.model, strlen(cfg.model));
	sb_addc(sb, ',');
}

static void add_stream(struct strbuf *sb)
{
	sb_addf(sb, ",\"stream\":%s", cfg.stream ? "true" : "false");
}

static void add_limit(struct strbuf *sb, const char *field)
{
	if (cfg.max_tokens >= 0)
		sb_addf(sb, ",\"%s\":%ld", field, cfg.max_tokens);
}

static void build_body(struct strbuf *sb)
{
	enum api api = api_for_path(cfg.path);

	sb_addc(sb, '{');
	switch (api) {
	case API_CHAT:
	case API_COMPL:
		add_model(sb);
		if (api == API_CHAT)
			add_messages(sb);
		else
			sb_adds(sb, "\"prompt\":"), add_prompt(sb);
		add_stream(sb);
		add_limit(sb, "max_tokens");
		if (cfg.include_usage && cfg.stream)
			sb_adds(sb, ",\"stream_options\":{\"include_usage\":true}");
		break;
	case API_LLAMACPP:
		sb_adds(sb, "\"prompt\":");
		add_prompt(sb);
		add_stream(sb);
		add_limit(sb, "n_predict");
		break;
	case API_TGI:
		sb_adds(sb, "\"inputs\":");
		add_prompt(sb);
		if (cfg.max_tokens >= 0)
			sb_addf(sb, ",\"parameters\":{\"max_new_tokens\":%ld}", cfg.max_tokens);
		break;
	case API_OLLAMA_GEN:
	case API_OLLAMA_CHAT:
		add_model(sb);
		if (api == API_OLLAMA_CHAT)
			add_messages(sb);
		else
			sb_adds(sb, "\"prompt\":"), add_prompt(sb);
		add_stream(sb);
		if (cfg.max_tokens >= 0)
			sb_addf(sb, ",\"options\":{\"num_predict\":%ld}", cfg.max_tokens);
		break;
	case API_ANTHROPIC:
		add_model(sb);
		add_messages(sb);
		add_stream(sb);
		add_limit(sb, "max_tokens");
		break;
	}
	sb_addc(sb, '}');
}

void build_request(struct strbuf *sb, const char *id, bool close)
{
	struct strbuf body = STRBUF_INIT;

	build_body(&body);
	sb_addf(sb, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
		    "Accept: */*\r\nX-Request-Id: %s\r\nContent-Length: %zu\r\n%s\r\n",
		cfg.path, cfg.host, id, body.len,
		close ? "Connection: close\r\n" : "");
	sb_add(sb, body.buf, body.len);
	sb_free(&body);
}
