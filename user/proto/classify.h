/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What an LLM server's stream chunk or request body says, whatever the server: OpenAI chat
 * and completions (vLLM, SGLang, TGI, llama.cpp's /v1 routes), the OpenAI Responses API,
 * llama.cpp's /completion, TGI's /generate_stream, Ollama's /api/generate and /api/chat,
 * Anthropic's messages. Detection is by content, never by a flag.
 *
 * A token, as the client sees it, is a chunk that carries generated content: a non-empty
 * string in a content field. Answers: choices[].delta.content, choices[].text, Ollama
 * "response" / message.content, llama.cpp "content", TGI token.text, Anthropic delta.text, and
 * the "delta" of a Responses API response.output_text.delta or response.refusal.delta event.
 * Reasoning, which the client sees stream first: choices[].delta.reasoning_content and its
 * newer name choices[].delta.reasoning, Anthropic delta.thinking, Ollama "thinking" /
 * message.thinking, the "delta" of response.reasoning_text.delta and
 * response.reasoning_summary_text.delta. Not tokens: role-only chunks, empty deltas,
 * finish-only chunks, usage-only chunks, pings, "[DONE]", the Responses API's lifecycle events
 * (response.created, *.added, *.done...), and tool-call frames without text (CHUNK_TOOL,
 * counted apart: delta.tool_calls, Anthropic tool_use / input_json_delta,
 * response.function_call_arguments.delta). Strings under logprobs, usage, timings, details and
 * tool_calls never count as content, nor do TGI's "generated_text" (the whole answer, repeated
 * at the end), "prompt", or the whole-text "text" of a *.done event.
 */
#ifndef TT_CLASSIFY_H
#define TT_CLASSIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CLS_STR_MAX	128

enum chunk_kind {
	CHUNK_CONTENT,	/* carries generated text */
	CHUNK_EMPTY,	/* understood, carries no text */
	CHUNK_TOOL,	/* tool / function call frame without text */
	CHUNK_DONE,	/* the "[DONE]" sentinel */
	CHUNK_ERROR,	/* an error object or an SSE "error" event */
	CHUNK_UNKNOWN,	/* not JSON, or cut before it could be told */
};

struct chunk_info {
	enum chunk_kind kind;
	/*
	 * The stream's own count of generated tokens, if this chunk carries one, else -1:
	 * usage.completion_tokens (OpenAI, with stream_options.include_usage; vLLM's continuous
	 * usage repeats it, the last one wins), usage.output_tokens (Anthropic message_delta),
	 * response.usage.output_tokens (Responses API response.completed),
	 * eval_count (Ollama's final line), details.generated_tokens (TGI's last event),
	 * tokens_predicted / timings.predicted_n (llama.cpp's final /completion event).
	 */
	int64_t model_tokens;
	bool final;		/* the stream says it ended: [DONE], Ollama "done":true,
				 * llama.cpp "stop":true, Anthropic message_stop,
				 * response.completed / incomplete / failed */
	char model[CLS_STR_MAX];	/* top-level, message.model, response.model; "" if absent */
	char id[CLS_STR_MAX];		/* top-level, message.id, response.id; "" if absent */
	bool cut;		/* the text was cut: fields past the cut are unknown */
};

/*
 * Classify one SSE event's data or one NDJSON line. event is the SSE event name ("" or NULL
 * for none): Anthropic names its events (message_stop, ping, error...).
 */
void classify__chunk(const char *text, size_t len, bool cut, const char *event,
		    struct chunk_info *out);

struct req_info {
	char model[CLS_STR_MAX];	/* "" if absent */
	int stream;		/* 1 / 0 as the body says, -1 if it does not say */
	int64_t max_tokens;	/* max_tokens, max_completion_tokens, n_predict,
				 * options.num_predict, parameters.max_new_tokens; -1 if absent */
	bool include_usage;	/* stream_options.include_usage */
	bool cut;
};

/* A request body (JSON); anything else leaves out's fields unknown. */
void classify__req_info(const char *text, size_t len, bool cut, struct req_info *out);

#endif /* TT_CLASSIFY_H */
