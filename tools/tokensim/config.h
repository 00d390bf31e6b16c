/* SPDX-License-Identifier: MIT */
/* tokensim's configuration: filled once by cli_parse(), read-only afterwards. */
#ifndef TS_CONFIG_H
#define TS_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

enum ts_format {
	FMT_AUTO,
	FMT_OPENAI_CHAT,
	FMT_OPENAI_COMPL,
	FMT_LLAMACPP,
	FMT_TGI,
	FMT_OLLAMA,
	FMT_ANTHROPIC,
	FMT_NONE, /* /health, 404s, malformed requests */
};

enum write_mode { WM_WRITE, WM_SEND, WM_WRITEV };
enum framing { FRAMING_CHUNKED, FRAMING_CLOSE };
enum end_style { END_DEFAULT, END_LLAMACPP };
enum stall_kind { STALL_SLEEP, STALL_SPIN, STALL_LOCK, STALL_CONTENTION };
enum stall_where { STALL_IN_FRONTEND, STALL_IN_ENGINE };

/* Bounds that size per-request arrays: a request asking for more gets a 400. */
#define TS_MAX_TOKENS 100000
#define TS_MAX_EVENTS_PER_SEND 128
#define TS_MAX_TOOL_FRAMES 1000

struct ts_config {
	const char *bind;
	unsigned port;
	uint64_t ttft_ns;
	uint64_t itl_ns;
	uint64_t jitter_ns;
	uint64_t seed;
	unsigned tokens;
	unsigned stall_every;
	uint64_t stall_ns;
	enum stall_kind stall_kind;
	enum stall_where stall_in;
	const char *truth;
	enum ts_format format;
	bool usage;
	unsigned tokens_per_event;
	unsigned events_per_send;
	enum write_mode write_mode;
	enum framing framing;
	bool crlf;
	bool role_separate;
	bool tail_with_last;
	enum end_style end_style;
	uint64_t end_gap_ns;
	uint64_t heartbeat_ns;
	unsigned tool_frames;
	unsigned event_pad;
	unsigned sndbuf;
	bool nodelay;
	unsigned error_every;
	unsigned error_status;
	unsigned max_batch;
	uint64_t accept_delay_ns;
	bool verbose;
};

extern struct ts_config cfg;

/* Parses argv into cfg; exits 2 on a bad flag, 0 after --help. */
void cli_parse(int argc, char **argv);

const char *format_name(enum ts_format f);
const char *write_mode_name(enum write_mode m);
const char *framing_name(enum framing f);
const char *end_style_name(enum end_style e);
const char *stall_kind_name(enum stall_kind k);
const char *stall_where_name(enum stall_where w);

#endif
