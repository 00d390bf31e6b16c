// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * classify__chunk() and classify__req_info() on what real servers send: OpenAI/vLLM chat and
 * completions, the Responses API, llama.cpp, TGI, Ollama, Anthropic; cut chunks at every prefix.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "classify.h"

static const char *kind_name(enum chunk_kind k)
{
	switch (k) {
	case CHUNK_CONTENT: return "CONTENT";
	case CHUNK_EMPTY: return "EMPTY";
	case CHUNK_TOOL: return "TOOL";
	case CHUNK_DONE: return "DONE";
	case CHUNK_ERROR: return "ERROR";
	case CHUNK_UNKNOWN: return "UNKNOWN";
	}
	return "?";
}

struct want {
	const char *event;
	const char *text;
	enum chunk_kind kind;
	int64_t tokens;
	bool final;
	const char *model;
	const char *id;
};

static void check(const struct want *w)
{
	struct chunk_info ci;

	classify__chunk(w->text, strlen(w->text), false, w->event, &ci);
	if (ci.kind != w->kind)
		fail_msg("%s: kind %s, want %s", w->text, kind_name(ci.kind), kind_name(w->kind));
	if (ci.model_tokens != w->tokens)
		fail_msg("%s: model_tokens %lld, want %lld", w->text, (long long)ci.model_tokens,
			 (long long)w->tokens);
	if (ci.final != w->final)
		fail_msg("%s: final %d", w->text, ci.final);
	assert_string_equal(ci.model, w->model ? w->model : "");
	assert_string_equal(ci.id, w->id ? w->id : "");
	/* empty text is a value cut before it began */
	assert_int_equal(ci.cut, w->text[0] == '\0');
}

#define CHECK(...) check(&(struct want){ __VA_ARGS__ })

static void test_openai_chat(void **state)
{
	(void)state;
	/* the role-only first chunk: understood, carries no text */
	CHECK(.text = "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,"
		      "\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
		      "\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}",
	      .kind = CHUNK_EMPTY, .tokens = -1, .model = "m", .id = "chatcmpl-1");
	CHECK(.text = "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,"
		      "\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" the\"},"
		      "\"logprobs\":null,\"finish_reason\":null}]}",
	      .kind = CHUNK_CONTENT, .tokens = -1, .model = "m", .id = "chatcmpl-1");
	/* finish-only */
	CHECK(.text = "{\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},"
		      "\"logprobs\":null,\"finish_reason\":\"stop\"}]}",
	      .kind = CHUNK_EMPTY, .tokens = -1, .model = "m", .id = "c");
	/* usage-only, with stream_options.include_usage */
	CHECK(.text = "{\"id\":\"c\",\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,"
		      "\"completion_tokens\":17,\"total_tokens\":22}}",
	      .kind = CHUNK_EMPTY, .tokens = 17, .model = "m", .id = "c");
	/* vLLM continuous usage: content and a running count in one chunk */
	CHECK(.text = "{\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":"
		      "{\"content\":\"x\"},\"finish_reason\":null}],\"usage\":{\"prompt_tokens\":5,"
		      "\"completion_tokens\":3,\"total_tokens\":8}}",
	      .kind = CHUNK_CONTENT, .tokens = 3, .model = "m", .id = "c");
	/* tool-call frame: a string, but not content */
	CHECK(.text = "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
		      "\"function\":{\"arguments\":\"{\\\"a\\\"\"}}]}}]}",
	      .kind = CHUNK_TOOL, .tokens = -1);
	CHECK(.text = "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
		      "\"content\":null,"
		      "\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\","
		      "\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}}]}",
	      .kind = CHUNK_TOOL, .tokens = -1);
	/* reasoning models stream their thinking first: the user waits on it, it counts */
	CHECK(.text = "{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"hmm\"}}]}",
	      .kind = CHUNK_CONTENT, .tokens = -1);
	/* ...under its newer name too, and an empty one is no token */
	CHECK(.text = "{\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"hmm\"}}]}",
	      .kind = CHUNK_CONTENT, .tokens = -1);
	CHECK(.text = "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
		      "\"content\":\"\",\"reasoning\":\"\"}}]}",
	      .kind = CHUNK_EMPTY, .tokens = -1);
	CHECK(.text = "{\"choices\":[{\"index\":0,\"reasoning\":\"x\",\"delta\":{}}]}",
	      .kind = CHUNK_EMPTY, .tokens = -1);
	/* a token string under logprobs is not content */
	CHECK(.text = "{\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":{\"content\":"
		      "[{\"token\":\"x\",\"logprob\":-1,\"bytes\":[120],\"top_logprobs\":[]}]},"
		      "\"finish_reason\":null}]}",
	      .kind = CHUNK_EMPTY, .tokens = -1);
	CHECK(.text = "[DONE]", .kind = CHUNK_DONE, .tokens = -1, .final = true);
	CHECK(.text = " [DONE]\r\n", .kind = CHUNK_DONE, .tokens = -1, .final = true);
	/* escapes in model and id are decoded */
	CHECK(.text = "{\"id\":\"a\\u00e9\",\"model\":\"org\\/m\",\"choices\":[]}",
	      .kind = CHUNK_EMPTY, .tokens = -1, .model = "org/m", .id = "a\xc3\xa9");
	/* a content string made of an escape only is still text */
	CHECK(.text = "{\"choices\":[{\"delta\":{\"content\":\"\\n\"}}]}",
	      .kind = CHUNK_CONTENT, .tokens = -1);
	/* the second of two choices carries the text */
	CHECK(.text = "{\"choices\":[{\"index\":0,\"delta\":{}},{\"index\":1,\"delta\":"
		      "{\"content\":\"b\"}}]}",
	      .kind = CHUNK_CONTENT, .tokens = -1);
}

static void test_openai_completions(void **state)
{
	(void)state;
	CHECK(.text = "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,"
		      "\"model\":\"m\","
		      "\"choices\":[{\"index\":0,\"text\":\"tok\",\"logprobs\":null,"
		      "\"finish_reason\":null}]}",
	      .kind = CHUNK_CONTENT, .tokens = -1, .model = "m", .id = "cmpl-1");
	CHECK(.text = "{\"id\":\"cmpl-1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\"\","
		      "\"logprobs\":null,\"finish_reason\":\"length\"}]}",
	      .kind = CHUNK_EMPTY, .tokens = -1, .model = "m", .id = "cmpl-1");
}

static void test_llamacpp(void **state)
{
	(void)state;
	CHECK(.text = "{\"content\":\"tok\",\"stop\":false,\"id_slot\":0,\"multimodal\":false}",
	      .kind = CHUNK_CONTENT, .tokens = -1);
	CHECK(.text = "{\"content\":\"\",\"stop\":true,\"model\":\"q.gguf\","
		      "\"tokens_predicted\":12,"
		      "\"tokens_evaluated\":4,\"prompt\":\"the prompt is not content\","
		      "\"timings\":{\"prompt_n\":4,\"predicted_n\":12}}",
	      .kind = CHUNK_EMPTY, .tokens = 12, .final = true, .model = "q.gguf");
}

static void test_tgi(void **state)
{
	(void)state;
	CHECK(.text = "{\"index\":1,\"token\":{\"id\":5,\"text\":\"tok\",\"logprob\":-0.1,"
		      "\"special\":false},\"generated_text\":null,\"details\":null}",
	      .kind = CHUNK_CONTENT, .tokens = -1);
	/* the last event: a token, the whole answer again (not content), the count */
	CHECK(.text = "{\"index\":20,\"token\":{\"id\":2,\"text\":\"end\",\"logprob\":-0.2,"
		      "\"special\":false},\"generated_text\":\"whole answer\",\"details\":"
		      "{\"finish_reason\":\"length\",\"generated_tokens\":20,\"seed\":null}}",
	      .kind = CHUNK_CONTENT, .tokens = 20, .final = true);
	/* a last event whose token is empty: generated_text alone does not make it content */
	CHECK(.text = "{\"index\":3,\"token\":{\"id\":2,\"text\":\"\",\"special\":true},"
		      "\"generated_text\":\"whole answer\",\"details\":{\"generated_tokens\":3}}",
	      .kind = CHUNK_EMPTY, .tokens = 3, .final = true);
	CHECK(.text = "{\"error\":\"Input validation error\",\"error_type\":\"validation\"}",
	      .kind = CHUNK_ERROR, .tokens = -1);
}

static void test_ollama(void **state)
{
	(void)state;
	CHECK(.text = "{\"model\":\"llama3\",\"created_at\":\"2024-05-01T10:00:00.1Z\","
		      "\"response\":\"tok\",\"done\":false}",
	      .kind = CHUNK_CONTENT, .tokens = -1, .model = "llama3");
	CHECK(.text = "{\"model\":\"llama3\",\"created_at\":\"2024-05-01T10:00:00.1Z\","
		      "\"message\":{\"role\":\"assistant\",\"content\":\"tok\"},\"done\":false}",
	      .kind = CHUNK_CONTENT, .tokens = -1, .model = "llama3");
	CHECK(.text = "{\"model\":\"llama3\",\"created_at\":\"2024-05-01T10:00:01Z\","
		      "\"response\":\"\","
		      "\"done\":true,\"done_reason\":\"stop\",\"context\":[1,2,3],"
		      "\"total_duration\":5000000,\"prompt_eval_count\":7,\"eval_count\":42,"
		      "\"eval_duration\":4000000}",
	      .kind = CHUNK_EMPTY, .tokens = 42, .final = true, .model = "llama3");
	CHECK(.text = "{\"model\":\"llama3\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},"
		      "\"done\":true,\"eval_count\":9}",
	      .kind = CHUNK_EMPTY, .tokens = 9, .final = true, .model = "llama3");
	CHECK(.text = "{\"error\":\"model 'x' not found\"}", .kind = CHUNK_ERROR, .tokens = -1);
	/* "think": true streams the thinking first, beside an empty answer: it counts */
	CHECK(.text = "{\"model\":\"qwen3\",\"created_at\":\"2025-06-01T10:00:00.1Z\","
		      "\"message\":{\"role\":\"assistant\",\"content\":\"\",\"thinking\":\"Hm\"},"
		      "\"done\":false}",
	      .kind = CHUNK_CONTENT, .tokens = -1, .model = "qwen3");
	CHECK(.text = "{\"model\":\"qwen3\",\"created_at\":\"2025-06-01T10:00:00.1Z\","
		      "\"response\":\"\",\"thinking\":\"Hm\",\"done\":false}",
	      .kind = CHUNK_CONTENT, .tokens = -1, .model = "qwen3");
	/* empty thinking and empty answer: nothing */
	CHECK(.text = "{\"model\":\"qwen3\",\"message\":{\"role\":\"assistant\",\"content\":\"\","
		      "\"thinking\":\"\"},\"done\":false}",
	      .kind = CHUNK_EMPTY, .tokens = -1, .model = "qwen3");
	/* "thinking" elsewhere is no text: under options, or a request's flag */
	CHECK(.text = "{\"options\":{\"thinking\":\"x\"},\"message\":{\"x\":{\"thinking\":\"y\"}}}",
	      .kind = CHUNK_EMPTY, .tokens = -1);
}

static void test_anthropic(void **state)
{
	(void)state;
	CHECK(.event = "message_start",
	      .text = "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\","
		      "\"type\":\"message\","
		      "\"role\":\"assistant\",\"model\":\"claude\",\"content\":[],"
		      "\"stop_reason\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}",
	      .kind = CHUNK_EMPTY, .tokens = 1, .model = "claude", .id = "msg_1");
	CHECK(.event = "content_block_start",
	      .text = "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":"
		      "{\"type\":\"text\",\"text\":\"\"}}",
	      .kind = CHUNK_EMPTY, .tokens = -1);
	CHECK(.event = "ping", .text = "{\"type\": \"ping\"}", .kind = CHUNK_EMPTY, .tokens = -1);
	CHECK(.event = "content_block_delta",
	      .text = "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
		      "{\"type\":\"text_delta\",\"text\":\"Hi\"}}",
	      .kind = CHUNK_CONTENT, .tokens = -1);
	CHECK(.event = "content_block_delta",
	      .text = "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
		      "{\"type\":\"thinking_delta\",\"thinking\":\"Let me see\"}}",
	      .kind = CHUNK_CONTENT, .tokens = -1);
	CHECK(.event = "content_block_start",
	      .text = "{\"type\":\"content_block_start\",\"index\":1,\"content_block\":"
		      "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"f\",\"input\":{}}}",
	      .kind = CHUNK_TOOL, .tokens = -1);
	CHECK(.event = "content_block_delta",
	      .text = "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":"
		      "{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\"}}",
	      .kind = CHUNK_TOOL, .tokens = -1);
	CHECK(.event = "content_block_stop",
	      .text = "{\"type\":\"content_block_stop\",\"index\":0}",
	      .kind = CHUNK_EMPTY, .tokens = -1);
	CHECK(.event = "message_delta",
	      .text = "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\","
		      "\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}",
	      .kind = CHUNK_EMPTY, .tokens = 15);
	CHECK(.event = "message_stop", .text = "{\"type\":\"message_stop\"}",
	      .kind = CHUNK_EMPTY, .tokens = -1, .final = true);
	/* the event name alone is enough, and the data's "type" alone too */
	CHECK(.event = "message_stop", .text = "", .kind = CHUNK_EMPTY, .tokens = -1,
	      .final = true);
	CHECK(.text = "{\"type\":\"message_stop\"}", .kind = CHUNK_EMPTY, .tokens = -1,
	      .final = true);
	CHECK(.event = "error",
	      .text = "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
		      "\"message\":\"Overloaded\"}}",
	      .kind = CHUNK_ERROR, .tokens = -1);
	CHECK(.event = "error", .text = "not json", .kind = CHUNK_ERROR, .tokens = -1);
}

static void test_openai_responses(void **state)
{
	(void)state;
	/* lifecycle events: understood, no text; the model and id come from "response" */
	CHECK(.event = "response.created",
	      .text = "{\"type\":\"response.created\",\"sequence_number\":0,\"response\":"
		      "{\"id\":\"resp_1\",\"object\":\"response\",\"created_at\":1,\"model\":"
		      "\"gpt-oss\",\"output\":[],\"status\":\"in_progress\",\"usage\":null}}",
	      .kind = CHUNK_EMPTY, .tokens = -1, .model = "gpt-oss", .id = "resp_1");
	CHECK(.text = "{\"type\":\"response.content_part.added\",\"sequence_number\":3,"
		      "\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"part\":"
		      "{\"type\":\"output_text\",\"annotations\":[],\"text\":\"\"}}",
	      .kind = CHUNK_EMPTY, .tokens = -1);
	/* text deltas: the answer, the reasoning, a refusal */
	CHECK(.event = "response.output_text.delta",
	      .text = "{\"type\":\"response.output_text.delta\",\"sequence_number\":4,"
		      "\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,"
		      "\"delta\":\"Hi\",\"logprobs\":[]}",
	      .kind = CHUNK_CONTENT, .tokens = -1);
	CHECK(.text = "{\"type\":\"response.reasoning_text.delta\",\"delta\":\"Let\"}",
	      .kind = CHUNK_CONTENT, .tokens = -1);
	CHECK(.text = "{\"type\":\"response.reasoning_summary_text.delta\",\"delta\":\"S\"}",
	      .kind = CHUNK_CONTENT, .tokens = -1);
	CHECK(.text = "{\"type\":\"response.refusal.delta\",\"delta\":\"No\"}",
	      .kind = CHUNK_CONTENT, .tokens = -1);
	/* "delta" before "type" (llama.cpp's key order may differ): the same */
	CHECK(.text = "{\"delta\":\"Hi\",\"item_id\":\"m\","
		      "\"type\":\"response.output_text.delta\"}",
	      .kind = CHUNK_CONTENT, .tokens = -1);
	CHECK(.text = "{\"type\":\"response.output_text.delta\",\"delta\":\"\"}",
	      .kind = CHUNK_EMPTY, .tokens = -1);
	/* the whole text again at the end, and a delta of another event, are no tokens */
	CHECK(.text = "{\"type\":\"response.output_text.done\",\"item_id\":\"msg_1\","
		      "\"text\":\"Hi there\",\"logprobs\":[]}",
	      .kind = CHUNK_EMPTY, .tokens = -1);
	CHECK(.text = "{\"type\":\"response.audio.transcript.delta\",\"delta\":\"x\"}",
	      .kind = CHUNK_EMPTY, .tokens = -1);
	CHECK(.text = "{\"type\":\"response.output_text.delta.x\",\"delta\":\"x\"}",
	      .kind = CHUNK_EMPTY, .tokens = -1);
	/* function-call arguments: a tool frame */
	CHECK(.text = "{\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_1\","
		      "\"output_index\":1,\"delta\":\"{\\\"city\\\"\"}",
	      .kind = CHUNK_TOOL, .tokens = -1);
	/* the end: final, with the count; its output repeats the text, which is no token */
	CHECK(.event = "response.completed",
	      .text = "{\"type\":\"response.completed\",\"sequence_number\":9,\"response\":"
		      "{\"id\":\"resp_1\",\"model\":\"gpt-oss\",\"output\":[{\"type\":\"message\","
		      "\"content\":[{\"type\":\"output_text\",\"text\":\"Hi there\"}]}],"
		      "\"status\":\"completed\",\"usage\":{\"input_tokens\":9,"
		      "\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":3,"
		      "\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":12}}}",
	      .kind = CHUNK_EMPTY, .tokens = 3, .final = true, .model = "gpt-oss", .id = "resp_1");
	CHECK(.text = "{\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\","
		      "\"usage\":{\"output_tokens\":16}}}",
	      .kind = CHUNK_EMPTY, .tokens = 16, .final = true);
	CHECK(.text = "{\"type\":\"response.failed\",\"response\":{\"status\":\"failed\","
		      "\"error\":{\"code\":\"server_error\",\"message\":\"x\"}}}",
	      .kind = CHUNK_ERROR, .tokens = -1, .final = true);
	CHECK(.event = "error",
	      .text = "{\"type\":\"error\",\"code\":\"ERR\",\"message\":\"x\",\"param\":null}",
	      .kind = CHUNK_ERROR, .tokens = -1);
	/* a top-level model beats response.model */
	CHECK(.text = "{\"model\":\"top\",\"response\":{\"model\":\"inner\",\"id\":\"r\"}}",
	      .kind = CHUNK_EMPTY, .tokens = -1, .model = "top", .id = "r");
}

static void test_errors_and_unknown(void **state)
{
	(void)state;
	CHECK(.text = "{\"error\":{\"message\":\"x\"}}", .kind = CHUNK_ERROR, .tokens = -1);
	/* vLLM's streamed ErrorResponse */
	CHECK(.text = "{\"object\":\"error\",\"message\":\"bad\",\"type\":\"BadRequestError\","
		      "\"param\":null,\"code\":400}",
	      .kind = CHUNK_ERROR, .tokens = -1);
	/* "error": null is no error */
	CHECK(.text = "{\"error\":null,\"choices\":[{\"delta\":{\"content\":\"a\"}}]}",
	      .kind = CHUNK_CONTENT, .tokens = -1);
	CHECK(.text = "hello world", .kind = CHUNK_UNKNOWN, .tokens = -1);
	CHECK(.text = "", .kind = CHUNK_UNKNOWN, .tokens = -1);
	CHECK(.text = "42", .kind = CHUNK_UNKNOWN, .tokens = -1);
	CHECK(.text = "[1,2]", .kind = CHUNK_UNKNOWN, .tokens = -1);
	CHECK(.text = "{}", .kind = CHUNK_EMPTY, .tokens = -1);
	/* malformed: what it seemed to say is not trusted */
	CHECK(.text = "{\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":\"a\"}}]} trailing",
	      .kind = CHUNK_UNKNOWN, .tokens = -1);
	CHECK(.text = "{\"eval_count\":4,\"done\":true,}", .kind = CHUNK_UNKNOWN, .tokens = -1);
	/* a count that is no integer is ignored, not guessed */
	CHECK(.text = "{\"usage\":{\"completion_tokens\":1.5}}", .kind = CHUNK_EMPTY, .tokens = -1);
	CHECK(.text = "{\"usage\":{\"completion_tokens\":-3}}", .kind = CHUNK_EMPTY, .tokens = -1);
	/* content nested deeper than the known paths is not content */
	CHECK(.text = "{\"x\":{\"content\":\"a\"},\"delta\":{\"content\":\"b\"}}",
	      .kind = CHUNK_EMPTY, .tokens = -1);
	/* a content field that is not a string */
	CHECK(.text = "{\"content\":[{\"type\":\"text\",\"text\":\"a\"}]}",
	      .kind = CHUNK_EMPTY, .tokens = -1);
}

static void test_long_model_cut_to_fit(void **state)
{
	char text[512];
	struct chunk_info ci;

	(void)state;
	snprintf(text, sizeof(text), "{\"model\":\"%0300d\",\"response\":\"t\"}", 7);
	classify__chunk(text, strlen(text), false, NULL, &ci);
	assert_int_equal(ci.kind, CHUNK_CONTENT);
	assert_int_equal(strlen(ci.model), CLS_STR_MAX - 1);
	classify__chunk(NULL, 5, false, NULL, &ci);
	assert_int_equal(ci.kind, CHUNK_UNKNOWN);
}

static void test_cut_examples(void **state)
{
	struct chunk_info ci;
	const char *s;

	(void)state;
	/* a non-empty content string began before the cut: a token */
	s = "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"to";
	classify__chunk(s, strlen(s), true, NULL, &ci);
	assert_int_equal(ci.kind, CHUNK_CONTENT);
	assert_true(ci.cut);
	assert_string_equal(ci.id, "c");
	/* cut before any content field: we cannot tell, and say so */
	s = "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assis";
	classify__chunk(s, strlen(s), true, NULL, &ci);
	assert_int_equal(ci.kind, CHUNK_UNKNOWN);
	/* cut right at the opening quote: the string may be empty */
	s = "{\"choices\":[{\"delta\":{\"content\":\"";
	classify__chunk(s, strlen(s), true, NULL, &ci);
	assert_int_equal(ci.kind, CHUNK_UNKNOWN);
	/* cut past a complete empty content field: it said it has no text */
	s = "{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logpr";
	classify__chunk(s, strlen(s), true, NULL, &ci);
	assert_int_equal(ci.kind, CHUNK_EMPTY);
	/* a count the cut may have shortened is not taken */
	s = "{\"response\":\"\",\"done\":true,\"eval_count\":4";
	classify__chunk(s, strlen(s), true, NULL, &ci);
	assert_int_equal(ci.kind, CHUNK_EMPTY);
	assert_true(ci.final);
	assert_int_equal(ci.model_tokens, -1);
	/* the caller says cut but the text is whole: it is classified in full */
	s = "{\"usage\":{\"completion_tokens\":17}}";
	classify__chunk(s, strlen(s), true, NULL, &ci);
	assert_int_equal(ci.kind, CHUNK_EMPTY);
	assert_int_equal(ci.model_tokens, 17);
	assert_true(ci.cut);
	/* the caller did not say cut, but the text ended inside the value */
	s = "{\"choices\":[{\"delta\":{\"content\":\"x\"";
	classify__chunk(s, strlen(s), false, NULL, &ci);
	assert_int_equal(ci.kind, CHUNK_CONTENT);
	assert_true(ci.cut);
	s = "[DON";
	classify__chunk(s, strlen(s), true, NULL, &ci);
	assert_int_equal(ci.kind, CHUNK_UNKNOWN);
	assert_false(ci.final);
}

/*
 * Every prefix of real chunks, classified as cut: never a crash, and CONTENT exactly when
 * the prefix reaches past the first character of the chunk's content string.
 */
static void test_every_prefix(void **state)
{
	static const struct { const char *text; const char *content_at; } c[] = {
		{ "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,"
		  "\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" the\"},"
		  "\"logprobs\":{\"content\":[{\"token\":\" the\",\"logprob\":-0.5}]},"
		  "\"finish_reason\":null}]}", "\"content\":\" " },
		{ "{\"model\":\"llama3\",\"created_at\":\"2024-05-01T10:00:00.1Z\",\"message\":"
		  "{\"role\":\"assistant\",\"content\":\"\\u00e9t\\u00e9\"},\"done\":false}",
		  "\"content\":\"\\" },
		{ "{\"index\":1,\"token\":{\"id\":5,\"text\":\"tok\",\"logprob\":-0.1,"
		  "\"special\":false},\"generated_text\":null,\"details\":null}", "\"text\":\"t" },
		{ "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
		  "{\"type\":\"text_delta\","
		  "\"text\":\"Hi\"}}", "\"text\":\"H" },
		{ "{\"type\":\"response.output_text.delta\",\"sequence_number\":4,"
		  "\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,"
		  "\"delta\":\"Hi\",\"logprobs\":[]}", "\"delta\":\"H" },
		{ "{\"model\":\"qwen3\",\"message\":{\"role\":\"assistant\",\"content\":\"\","
		  "\"thinking\":\"Hm\"},\"done\":false}", "\"thinking\":\"H" },
		/* no content anywhere: never CONTENT */
		{ "{\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,"
		  "\"completion_tokens\":17,\"total_tokens\":22}}", NULL },
	};

	(void)state;
	for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		const char *t = c[k].text;
		size_t len = strlen(t), first = len + 1;

		if (c[k].content_at) {
			const char *at = strstr(t, c[k].content_at);

			assert_non_null(at);
			/* the offset just past the first character of the content string */
			first = (size_t)(at - t) + strlen(c[k].content_at);
		}
		for (size_t l = 0; l < len; l++) {
			struct chunk_info ci;
			char copy[512];

			/* a private copy: a read past the prefix would show under valgrind */
			memcpy(copy, t, l);
			classify__chunk(copy, l, true, NULL, &ci);
			assert_true(ci.cut);
			if ((ci.kind == CHUNK_CONTENT) != (l >= first))
				fail_msg("chunk %zu prefix %zu: %s", k, l, kind_name(ci.kind));
			assert_true(ci.kind != CHUNK_DONE && ci.kind != CHUNK_ERROR);
			assert_true(strlen(ci.model) < CLS_STR_MAX);
		}
	}
}

static void req(const char *text, bool cut, struct req_info *ri)
{
	classify__req_info(text, strlen(text), cut, ri);
}

static void test_request_bodies(void **state)
{
	struct req_info ri;

	(void)state;
	/* the OpenAI python client puts the long messages first */
	req("{\"messages\":[{\"role\":\"system\",\"content\":\"You are a model named \\\"x\\\"\"},"
	    "{\"role\":\"user\",\"content\":\"stream: false, model: no\"}],\"model\":\"m\","
	    "\"stream\":true,\"stream_options\":{\"include_usage\":true},\"max_tokens\":64}",
	    false, &ri);
	assert_string_equal(ri.model, "m");
	assert_int_equal(ri.stream, 1);
	assert_int_equal(ri.max_tokens, 64);
	assert_true(ri.include_usage);
	assert_false(ri.cut);

	/* Ollama: stream absent means the caller's default, not ours */
	req("{\"model\":\"llama3\",\"prompt\":\"hi\",\"options\":{\"num_predict\":20}}", false,
	    &ri);
	assert_string_equal(ri.model, "llama3");
	assert_int_equal(ri.stream, -1);
	assert_int_equal(ri.max_tokens, 20);
	assert_false(ri.include_usage);
	req("{\"model\":\"llama3\",\"messages\":[],\"stream\":false}", false, &ri);
	assert_int_equal(ri.stream, 0);
	assert_int_equal(ri.max_tokens, -1);

	/* TGI */
	req("{\"inputs\":\"hi\",\"parameters\":{\"max_new_tokens\":20,\"details\":true}}", false,
	    &ri);
	assert_string_equal(ri.model, "");
	assert_int_equal(ri.stream, -1);
	assert_int_equal(ri.max_tokens, 20);

	/* llama.cpp */
	req("{\"prompt\":\"hi\",\"n_predict\":20,\"stream\":true}", false, &ri);
	assert_int_equal(ri.stream, 1);
	assert_int_equal(ri.max_tokens, 20);

	/* OpenAI: max_completion_tokens replaces max_tokens, whatever the order */
	req("{\"model\":\"m\",\"max_completion_tokens\":100,\"max_tokens\":50}", false, &ri);
	assert_int_equal(ri.max_tokens, 100);
	req("{\"model\":\"m\",\"max_tokens\":50,\"max_completion_tokens\":100}", false, &ri);
	assert_int_equal(ri.max_tokens, 100);
	req("{\"stream_options\":{\"include_usage\":false},\"stream\":true}", false, &ri);
	assert_false(ri.include_usage);
	assert_int_equal(ri.stream, 1);
}

static void test_request_cut_and_junk(void **state)
{
	struct req_info ri;

	(void)state;
	/* cut inside the messages: what comes after them is unknown */
	req("{\"messages\":[{\"role\":\"user\",\"content\":\"a very long prom", true, &ri);
	assert_true(ri.cut);
	assert_string_equal(ri.model, "");
	assert_int_equal(ri.stream, -1);
	assert_int_equal(ri.max_tokens, -1);
	/* a number the cut may have shortened */
	req("{\"model\":\"m\",\"stream\":true,\"max_tokens\":6", true, &ri);
	assert_string_equal(ri.model, "m");
	assert_int_equal(ri.stream, 1);
	assert_int_equal(ri.max_tokens, -1);
	/* not JSON */
	req("model=m&stream=true", false, &ri);
	assert_string_equal(ri.model, "");
	assert_int_equal(ri.stream, -1);
	assert_int_equal(ri.max_tokens, -1);
	req("[\"model\"]", false, &ri);
	assert_string_equal(ri.model, "");
	classify__req_info(NULL, 3, false, &ri);
	assert_int_equal(ri.stream, -1);
	/* nested look-alikes are not the request's fields */
	req("{\"metadata\":{\"model\":\"x\",\"stream\":true,\"max_tokens\":3}}", false, &ri);
	assert_string_equal(ri.model, "");
	assert_int_equal(ri.stream, -1);
	assert_int_equal(ri.max_tokens, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openai_chat),
		cmocka_unit_test(test_openai_completions),
		cmocka_unit_test(test_llamacpp),
		cmocka_unit_test(test_tgi),
		cmocka_unit_test(test_ollama),
		cmocka_unit_test(test_anthropic),
		cmocka_unit_test(test_openai_responses),
		cmocka_unit_test(test_errors_and_unknown),
		cmocka_unit_test(test_long_model_cut_to_fit),
		cmocka_unit_test(test_cut_examples),
		cmocka_unit_test(test_every_prefix),
		cmocka_unit_test(test_request_bodies),
		cmocka_unit_test(test_request_cut_and_junk),
	};

	return cmocka_run_group_tests_name("classify", tests, NULL, NULL);
}
