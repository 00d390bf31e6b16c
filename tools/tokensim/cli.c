// SPDX-License-Identifier: MIT
/* tokensim command line: every option, its range and its documentation. */
#include <arpa/inet.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "util.h"

struct ts_config cfg = {
	.bind = "127.0.0.1",
	.port = 8000,
	.ttft_ns = 50 * NSEC_PER_MSEC,
	.itl_ns = 20 * NSEC_PER_MSEC,
	.seed = 1,
	.tokens = 32,
	.stall_kind = STALL_SLEEP,
	.stall_in = STALL_IN_FRONTEND,
	.format = FMT_AUTO,
	.tokens_per_event = 1,
	.events_per_send = 1,
	.write_mode = WM_WRITE,
	.framing = FRAMING_CHUNKED,
	.nodelay = true,
	.error_status = 500,
	.max_batch = 8,
};

static const char *const format_names[] = {
	[FMT_AUTO] = "auto",		   [FMT_OPENAI_CHAT] = "openai-chat",
	[FMT_OPENAI_COMPL] = "openai-completions", [FMT_LLAMACPP] = "llamacpp",
	[FMT_TGI] = "tgi",		   [FMT_OLLAMA] = "ollama",
	[FMT_ANTHROPIC] = "anthropic",	   [FMT_NONE] = "none",
};
static const char *const write_mode_names[] = { "write", "send", "writev" };
static const char *const framing_names[] = { "chunked", "close" };
static const char *const end_style_names[] = { "default", "llamacpp" };
static const char *const stall_kind_names[] = { "sleep", "spin", "lock", "contention" };
static const char *const stall_where_names[] = { "frontend", "engine" };

const char *format_name(enum ts_format f)
{
	return format_names[f];
}

const char *write_mode_name(enum write_mode m)
{
	return write_mode_names[m];
}

const char *framing_name(enum framing f)
{
	return framing_names[f];
}

const char *end_style_name(enum end_style e)
{
	return end_style_names[e];
}

const char *stall_kind_name(enum stall_kind k)
{
	return stall_kind_names[k];
}

const char *stall_where_name(enum stall_where w)
{
	return stall_where_names[w];
}

static void usage(void)
{
	printf("Usage: tokensim [OPTIONS]\n"
"A token-streaming HTTP/1.1 server that records the ground truth of what it did.\n"
"The first stdout line is 'listening on ADDR:PORT'. All times are CLOCK_MONOTONIC ns.\n"
"\n"
"Listening:\n"
"  --port N                 TCP port, 0 = ephemeral (default 8000)\n"
"  --bind ADDR              IPv4 or IPv6 address to bind (default 127.0.0.1)\n"
"  --accept-delay-ms N      wait N ms before each accept(): connections and their\n"
"                           request bytes wait in the kernel backlog (default 0)\n"
"  --sndbuf BYTES           SO_SNDBUF of accepted sockets (default: kernel's)\n"
"  --nodelay 0|1            TCP_NODELAY on accepted sockets (default 1)\n"
"\n"
"Engine (one scheduler thread, like vLLM's engine core):\n"
"  --max-batch N            engine slots; more requests wait in a FIFO (default 8)\n"
"  --ttft-ms F              prefill time after admission (default 50)\n"
"  --itl-ms F               time between content events, 0 = flat out (default 20)\n"
"  --jitter-ms F            uniform +-F on each inter-event time, clamped at 0 (default 0)\n"
"  --seed N                 jitter random seed (default 1)\n"
"  --tokens N               tokens when the request sets no limit (default 32)\n"
"  --tokens-per-event T     model tokens per content event; the last may hold fewer\n"
"                           (default 1)\n"
"  --tool-frames N          openai-chat: N tool-call delta frames (no content) before\n"
"                           the first content event (default 0)\n"
"\n"
"Stalls (before content events K, 2K, 3K... of each response, counting from 1):\n"
"  --stall-every K          0 = no stalls (default 0)\n"
"  --stall-ms S             length of each stall (required with --stall-every)\n"
"  --stall-kind KIND        sleep (clock_nanosleep), spin (busy on CPU), lock (blocked\n"
"                           on a mutex that thread ts-lock holds), contention (runnable\n"
"                           but preempted by SCHED_FIFO thread ts-hog on the same CPU)\n"
"                           (default sleep)\n"
"  --stall-in WHERE         frontend (the connection's thread, before the send) or\n"
"                           engine (the scheduler, before producing: the whole batch\n"
"                           is delayed) (default frontend)\n"
"\n"
"Wire:\n"
"  --format FMT             auto|openai-chat|openai-completions|llamacpp|tgi|ollama|\n"
"                           anthropic; auto picks by path (default auto):\n"
"                             /v1/chat/completions openai-chat, /v1/completions\n"
"                             openai-completions, /completion llamacpp, /generate_stream\n"
"                             and /generate tgi, /api/generate and /api/chat ollama,\n"
"                             /v1/messages anthropic; GET /health answers \"ok\"\n"
"  --usage                  always send the usage record (OpenAI formats)\n"
"  --events-per-send B      content events per send; a send goes out when B events\n"
"                           are ready or the stream ends (default 1, max %d)\n"
"  --write-mode MODE        write (write(2)), send (send(2)), writev (Node style: each\n"
"                           HTTP chunk as 4 iovecs: size, CRLF, data, CRLF) (default write)\n"
"  --framing F              chunked, or close (no Transfer-Encoding, Connection: close,\n"
"                           body ends when the socket closes) (default chunked)\n"
"  --crlf                   SSE lines end with \\r\\n (events with \\r\\n\\r\\n)\n"
"  --role-separate          send the role-only chunk (openai-chat) or the message_start\n"
"                           block (anthropic) alone right after the headers, before\n"
"                           prefill; default: it shares the first event's send\n"
"  --tail-with-last         finish/usage/[DONE]/terminator share the last content\n"
"                           event's send; default: one separate send after it\n"
"  --end-style S            default, or llamacpp (cpp-httplib's chunked sink, as\n"
"                           llama.cpp's server ends a stream): each tail event ([DONE]\n"
"                           last) in its own send, then '0\\r\\n', then the final '\\r\\n',\n"
"                           each in its own send; a client leaving after the tail is\n"
"                           no abort (the OpenAI SDKs close at [DONE])\n"
"  --end-gap-ms N           llamacpp end style: N ms between the last tail event and\n"
"                           '0\\r\\n', as when the server's thread is descheduled there; a\n"
"                           client that closes at [DONE] is then gone before the framing\n"
"  --heartbeat-ms N         SSE formats: ': ping' comment after N ms without a send\n"
"  --event-pad N            add a \"pad\" string of N bytes to each content event\n"
"  --error-every K          answer every K-th generation request with an error\n"
"  --error-status S         status of those errors (default 500)\n"
"\n"
"Output:\n"
"  --truth FILE             one JSON line per finished response, flushed when it ends:\n"
"                           request_id req_num conn_num method path format stream status\n"
"                           model t_accept_call_ns t_accept_ns (around the accept())\n"
"                           t_start_ns (after the read that returned\n"
"                           the request's last byte) t_headers_ns t_admit_ns (0: never)\n"
"                           t_admit_end_ns t_first_end_ns (after the admit and the first\n"
"                           token marker calls) t_produced_ns[] t_token_ns[] (just\n"
"                           before the syscall that\n"
"                           sent each content event; batched events share it) t_end_ns\n"
"                           chunks tokens tool_frames prompt_tokens heartbeats\n"
"                           count_on_wire aborted stalls[{before_chunk kind where\n"
"                           t_start_ns t_end_ns cause_req_num}] write_mode\n"
"                           events_per_send tokens_per_event framing end_style\n"
"  -v, --verbose            one line per response on stdout\n"
"  -h, --help               this text\n",
	       TS_MAX_EVENTS_PER_SEND);
}

enum {
	OPT_PORT = 256,
	OPT_BIND,
	OPT_TTFT,
	OPT_ITL,
	OPT_JITTER,
	OPT_SEED,
	OPT_TOKENS,
	OPT_STALL_EVERY,
	OPT_STALL_MS,
	OPT_STALL_KIND,
	OPT_STALL_IN,
	OPT_TRUTH,
	OPT_FORMAT,
	OPT_USAGE,
	OPT_TPE,
	OPT_EPS,
	OPT_WRITE_MODE,
	OPT_FRAMING,
	OPT_CRLF,
	OPT_ROLE_SEP,
	OPT_TAIL_LAST,
	OPT_END_STYLE,
	OPT_END_GAP,
	OPT_HEARTBEAT,
	OPT_TOOL_FRAMES,
	OPT_EVENT_PAD,
	OPT_SNDBUF,
	OPT_NODELAY,
	OPT_ERROR_EVERY,
	OPT_ERROR_STATUS,
	OPT_MAX_BATCH,
	OPT_ACCEPT_DELAY,
};

static const struct option long_opts[] = {
	{ "port", required_argument, NULL, OPT_PORT },
	{ "bind", required_argument, NULL, OPT_BIND },
	{ "ttft-ms", required_argument, NULL, OPT_TTFT },
	{ "itl-ms", required_argument, NULL, OPT_ITL },
	{ "jitter-ms", required_argument, NULL, OPT_JITTER },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "tokens", required_argument, NULL, OPT_TOKENS },
	{ "stall-every", required_argument, NULL, OPT_STALL_EVERY },
	{ "stall-ms", required_argument, NULL, OPT_STALL_MS },
	{ "stall-kind", required_argument, NULL, OPT_STALL_KIND },
	{ "stall-in", required_argument, NULL, OPT_STALL_IN },
	{ "truth", required_argument, NULL, OPT_TRUTH },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "usage", no_argument, NULL, OPT_USAGE },
	{ "tokens-per-event", required_argument, NULL, OPT_TPE },
	{ "events-per-send", required_argument, NULL, OPT_EPS },
	{ "write-mode", required_argument, NULL, OPT_WRITE_MODE },
	{ "framing", required_argument, NULL, OPT_FRAMING },
	{ "crlf", no_argument, NULL, OPT_CRLF },
	{ "role-separate", no_argument, NULL, OPT_ROLE_SEP },
	{ "tail-with-last", no_argument, NULL, OPT_TAIL_LAST },
	{ "end-style", required_argument, NULL, OPT_END_STYLE },
	{ "end-gap-ms", required_argument, NULL, OPT_END_GAP },
	{ "heartbeat-ms", required_argument, NULL, OPT_HEARTBEAT },
	{ "tool-frames", required_argument, NULL, OPT_TOOL_FRAMES },
	{ "event-pad", required_argument, NULL, OPT_EVENT_PAD },
	{ "sndbuf", required_argument, NULL, OPT_SNDBUF },
	{ "nodelay", required_argument, NULL, OPT_NODELAY },
	{ "error-every", required_argument, NULL, OPT_ERROR_EVERY },
	{ "error-status", required_argument, NULL, OPT_ERROR_STATUS },
	{ "max-batch", required_argument, NULL, OPT_MAX_BATCH },
	{ "accept-delay-ms", required_argument, NULL, OPT_ACCEPT_DELAY },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void bad(void)
{
	exit(2);
}

/* Index of arg in names[n], or exit 2 with the list of choices. */
static int parse_choice(const char *opt, const char *arg, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(arg, names[i]))
			return i;
	fprintf(stderr, "%s: %s: unknown value '%s' (one of:", prog_name, opt, arg);
	for (int i = 0; i < n; i++)
		fprintf(stderr, " %s", names[i]);
	fprintf(stderr, ")\n");
	bad();
	return 0;
}

static double num(const char *opt, double min, double max, bool integer)
{
	double v;

	if (!parse_num(prog_name, opt, optarg, min, max, integer, &v))
		bad();
	return v;
}

#define MS_MAX 3600000.0 /* an hour: anything longer is a typo */

/* The options that shape the stream on the wire; false: not one of them. */
static bool stream_opt(int c)
{
	switch (c) {
	case OPT_TPE:
		cfg.tokens_per_event =
			(unsigned)num("--tokens-per-event", 1, TS_MAX_TOKENS, true);
		return true;
	case OPT_EPS:
		cfg.events_per_send =
			(unsigned)num("--events-per-send", 1, TS_MAX_EVENTS_PER_SEND, true);
		return true;
	case OPT_WRITE_MODE:
		cfg.write_mode = parse_choice("--write-mode", optarg, write_mode_names,
					      ARRAY_SIZE(write_mode_names));
		return true;
	case OPT_FRAMING:
		cfg.framing = parse_choice("--framing", optarg, framing_names,
					   ARRAY_SIZE(framing_names));
		return true;
	case OPT_CRLF:
		cfg.crlf = true;
		return true;
	case OPT_ROLE_SEP:
		cfg.role_separate = true;
		return true;
	case OPT_TAIL_LAST:
		cfg.tail_with_last = true;
		return true;
	case OPT_END_STYLE:
		cfg.end_style = parse_choice("--end-style", optarg, end_style_names,
					     ARRAY_SIZE(end_style_names));
		return true;
	case OPT_END_GAP:
		cfg.end_gap_ns = ms_to_ns(num("--end-gap-ms", 0, MS_MAX, false));
		return true;
	case OPT_HEARTBEAT:
		cfg.heartbeat_ns = ms_to_ns(num("--heartbeat-ms", 0, MS_MAX, true));
		return true;
	case OPT_TOOL_FRAMES:
		cfg.tool_frames =
			(unsigned)num("--tool-frames", 0, TS_MAX_TOOL_FRAMES, true);
		return true;
	case OPT_EVENT_PAD:
		cfg.event_pad = (unsigned)num("--event-pad", 0, 16 << 20, true);
		return true;
	case OPT_SNDBUF:
		cfg.sndbuf = (unsigned)num("--sndbuf", 0, 1 << 30, true);
		return true;
	case OPT_NODELAY:
		cfg.nodelay = num("--nodelay", 0, 1, true) != 0;
		return true;
	default:
		return false;
	}
}

/* Options that do not go together. */
static void check_combination(bool stall_ms_set)
{
	if (cfg.end_style == END_LLAMACPP && cfg.tail_with_last) {
		fprintf(stderr, "%s: --end-style llamacpp sends the tail apart: not with "
			"--tail-with-last\n", prog_name);
		bad();
	}
	if (cfg.end_gap_ns && cfg.end_style != END_LLAMACPP) {
		fprintf(stderr, "%s: --end-gap-ms needs --end-style llamacpp\n", prog_name);
		bad();
	}
	if (cfg.stall_every && !stall_ms_set) {
		fprintf(stderr, "%s: --stall-every needs --stall-ms\n", prog_name);
		bad();
	}
}

void cli_parse(int argc, char **argv)
{
	bool stall_ms_set = false;
	int c;

	opterr = 0; /* our own one-line errors */
	while ((c = getopt_long(argc, argv, ":vh", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_PORT:
			cfg.port = (unsigned)num("--port", 0, 65535, true);
			break;
		case OPT_BIND: {
			unsigned char a[16];

			if (inet_pton(strchr(optarg, ':') ? AF_INET6 : AF_INET, optarg, a) != 1) {
				fprintf(stderr, "%s: --bind: '%s' is not an IPv4 or IPv6 address\n",
					prog_name, optarg);
				bad();
			}
			cfg.bind = optarg;
			break;
		}
		case OPT_TTFT:
			cfg.ttft_ns = ms_to_ns(num("--ttft-ms", 0, MS_MAX, false));
			break;
		case OPT_ITL:
			cfg.itl_ns = ms_to_ns(num("--itl-ms", 0, MS_MAX, false));
			break;
		case OPT_JITTER:
			cfg.jitter_ns = ms_to_ns(num("--jitter-ms", 0, MS_MAX, false));
			break;
		case OPT_SEED:
			cfg.seed = (uint64_t)num("--seed", 0, 9007199254740992.0, true);
			break;
		case OPT_TOKENS:
			cfg.tokens = (unsigned)num("--tokens", 1, TS_MAX_TOKENS, true);
			break;
		case OPT_STALL_EVERY:
			cfg.stall_every = (unsigned)num("--stall-every", 0, TS_MAX_TOKENS, true);
			break;
		case OPT_STALL_MS:
			cfg.stall_ns = ms_to_ns(num("--stall-ms", 0, MS_MAX, false));
			stall_ms_set = true;
			break;
		case OPT_STALL_KIND:
			cfg.stall_kind = parse_choice("--stall-kind", optarg, stall_kind_names,
						      ARRAY_SIZE(stall_kind_names));
			break;
		case OPT_STALL_IN:
			cfg.stall_in = parse_choice("--stall-in", optarg, stall_where_names,
						    ARRAY_SIZE(stall_where_names));
			break;
		case OPT_TRUTH:
			cfg.truth = optarg;
			break;
		case OPT_FORMAT:
			cfg.format = parse_choice("--format", optarg, format_names, FMT_NONE);
			break;
		case OPT_USAGE:
			cfg.usage = true;
			break;
		case OPT_ERROR_EVERY:
			cfg.error_every = (unsigned)num("--error-every", 0, 1e9, true);
			break;
		case OPT_ERROR_STATUS:
			cfg.error_status = (unsigned)num("--error-status", 400, 599, true);
			break;
		case OPT_MAX_BATCH:
			cfg.max_batch = (unsigned)num("--max-batch", 1, 4096, true);
			break;
		case OPT_ACCEPT_DELAY:
			cfg.accept_delay_ns =
				ms_to_ns(num("--accept-delay-ms", 0, MS_MAX, true));
			break;
		case 'v':
			cfg.verbose = true;
			break;
		case 'h':
			usage();
			exit(0);
		case ':':
			fprintf(stderr, "%s: option '%s' needs a value (see --help)\n", prog_name,
				argv[optind - 1]);
			bad();
			break;
		default:
			if (stream_opt(c))
				break;
			fprintf(stderr, "%s: unknown option '%s' (see --help)\n", prog_name,
				argv[optind - 1]);
			bad();
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", prog_name,
			argv[optind]);
		bad();
	}
	check_combination(stall_ms_set);
}
