// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The command line, from one table: each option's names, its value, the field it sets (or
 * its own parser), whether it applies to a live trace only, and its --help text, which is
 * printed from the table in its sections. Every bad value is one line on stderr and exit 2.
 */
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "env.h"
#include "loader.h"
#include "events.h"
#include "outputs.h"
#include "pysampler.h"
#include "targets.h"
#include "util.h"

static const char usage_head[] =
"Usage: tokentrace -p PID[,PID...] [OPTIONS] [INTERVAL [COUNT]]\n"
"       tokentrace --comm NAME | --cgroup PATH | --port PORT [OPTIONS] [INTERVAL [COUNT]]\n"
"       tokentrace -r FILE [OUTPUT OPTIONS]\n"
"\n"
"Trace a running token-streaming server (vLLM, llama.cpp, Ollama, TGI, a FastAPI app...)\n"
"with eBPF, without restarting it, and report per streamed request: TTFT (time to first\n"
"token), ITL (gaps between tokens), TPOT (time per output token) and E2E.\n"
"\n";

static const char usage_tail[] =
"  INTERVAL                 seconds between summaries (default 5; 0: only at exit)\n"
"  COUNT                    exit after this many summaries\n"
"\n"
"Ctrl-C or SIGTERM detaches, prints the final summary and exits 0. The trace also ends\n"
"when every traced process has exited. Payloads (prompts, answers) are never printed.\n"
"Outputs combine: lines or --json (or --top) on stdout, with --metrics, --perfetto and\n"
"-w in the same run. A replay prints what the live run printed, byte for byte.\n"
"\n"
"EXAMPLES\n"
"  tokentrace -p $(pgrep -d, -f vllm)     trace vLLM's processes\n"
"  tokentrace -p 4242 --json 10           JSON lines, a summary every 10 s\n"
"  tokentrace -p 4242 -q 1 30             a summary a second for 30 s\n"
"  tokentrace -p 4242 --port 8000         only the API port\n"
"  tokentrace -p 4242 --top               watch the streams live\n"
"  tokentrace -p 4242 -q --metrics 9464   Prometheus scrapes 127.0.0.1:9464/metrics\n"
"  tokentrace -p 4242 -w run.ttr          record; later: tokentrace -r run.ttr --json\n"
"  tokentrace -r run.ttr --perfetto run.json   then open run.json in ui.perfetto.dev\n"
"  tokentrace -p $(pidof tokensim) --usdt admit=tokensim:tokensim:admit,key=arg2:str \\\n"
"      --usdt token=tokensim:tokensim:token,key=arg2:str   TTFT breakdown\n";

/* --help's sections, in order; a heading, or none (a blank line before each but the first) */
enum section {
	SEC_MAIN,
	SEC_STALLS,
	SEC_MARKERS,
	SEC_HOOKS,
	SEC_SAFETY,
	SEC_MISC,
	SEC_NR,
};

static const char *const headings[SEC_NR] = {
	[SEC_STALLS] = "Stalls (a long gap between two tokens, explained: on CPU, waiting for a "
		       "CPU, blocked\non a lock, I/O, a sleep, poll, a full socket buffer; with "
		       "the stack of the longest block):\n",
	[SEC_MARKERS] = "Markers inside the server (TTFT breakdown: admit, prefill, "
			"emit-to-wire):\n",
	[SEC_SAFETY] = "Safety (see the README's Security section):\n",
};

struct opt;
/* Sets the option's value: ENV_OK, or ENV_USAGE with one line said, or ENV_EXIT_OK. */
typedef enum env_result (*opt_set)(struct env *e, const struct opt *o, const char *arg);

struct opt {
	const char *name;	/* --name */
	char letter;		/* -x, or 0 */
	const char *meta;	/* the value's name in --help; NULL: takes none */
	opt_set set;
	size_t off;		/* the field the generic setters write (offsetof struct env) */
	unsigned char width;	/* opt_uint: its size in bytes */
	uint64_t min, max;	/* opt_uint: its range */
	const char *what;	/* a bad value's words: "invalid WHAT 'ARG'" */
	bool live;		/* only for a live trace: refused with -r */
	enum section sec;
	const char *help;	/* after the option, its lines joined by \n; NULL: the next's */
};

#define HELP_COL	27	/* where the help text of an option starts */

/* What the user typed, quoted in the error: cut and escaped (util.h arg_quote) */
static enum env_result bad(const char *what, const char *arg)
{
	char q[ARG_QUOTE_MAX];

	fprintf(stderr, "tokentrace: invalid %s '%s' (see tokentrace --help)\n", what,
		arg_quote(q, arg));
	return ENV_USAGE;
}

static void *field(struct env *e, const struct opt *o)
{
	return (char *)e + o->off;
}

static enum env_result opt_true(struct env *e, const struct opt *o, const char *arg)
{
	*(bool *)field(e, o) = true;
	return ENV_OK;
}

static enum env_result opt_str(struct env *e, const struct opt *o, const char *arg)
{
	*(const char **)field(e, o) = arg;
	return ENV_OK;
}

static enum env_result opt_uint(struct env *e, const struct opt *o, const char *arg)
{
	uint64_t v;

	if (parse_uint(arg, o->min, o->max, &v))
		return bad(o->what, arg);
	if (o->width == 2)
		*(uint16_t *)field(e, o) = v;
	else
		*(uint32_t *)field(e, o) = v;
	return ENV_OK;
}

/* "PID[,PID...]": every element a PID, none empty, none twice (also across -p options) */
static enum env_result opt_pids(struct env *e, const struct opt *o, const char *arg)
{
	const char *p = arg;
	char tok[16];
	uint64_t v;

	for (;;) {
		size_t n = strcspn(p, ",");

		if (!n)
			return bad("PID list (an empty element)", arg);
		if (n >= sizeof(tok))
			return bad("PID list", arg);
		memcpy(tok, p, n);
		tok[n] = '\0';
		if (parse_uint(tok, 1, 0x3fffffff, &v))
			return bad("PID", tok);
		for (int i = 0; i < e->npids; i++)
			if (e->pids[i] == v)
				return bad("PID list (PID given twice)", arg);
		if (e->npids == ENV_PIDS_MAX) {
			fprintf(stderr, "tokentrace: at most %d PIDs\n", ENV_PIDS_MAX);
			return ENV_USAGE;
		}
		e->pids[e->npids++] = v;
		if (!p[n])
			return ENV_OK;
		p += n + 1;
	}
}

static enum env_result opt_metrics(struct env *e, const struct opt *o, const char *arg)
{
	struct sockaddr_storage ss;
	socklen_t sslen;

	if (metrics__parse_addr(arg, &ss, &sslen))
		return bad(o->what, arg);
	e->metrics_addr = arg;
	return ENV_OK;
}

static enum env_result opt_buffer(struct env *e, const struct opt *o, const char *arg)
{
	uint64_t v;

	if (parse_uint(arg, 1, 1024, &v) || (v & (v - 1)))
		return bad(o->what, arg);
	e->ringbuf_bytes = v << 20;
	return ENV_OK;
}

static enum env_result opt_marker(struct env *e, const struct opt *o, const char *arg)
{
	enum marker_probe kind = !strcmp(o->name, "uretprobe") ? MP_URETPROBE :
				 !strcmp(o->name, "usdt") ? MP_USDT : MP_UPROBE;

	/* the parser quotes what it rejects: keep that to a line */
	if (strlen(arg) >= sizeof(e->markers[0].arg))
		return bad("marker (too long)", arg);
	for (const char *s = arg; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return bad("marker (a control character)", arg);
	if (e->nmarkers == TT_MARKERS_MAX) {
		fprintf(stderr, "tokentrace: at most %d markers\n", TT_MARKERS_MAX);
		return ENV_USAGE;
	}
	if (marker__parse(arg, kind, &e->markers[e->nmarkers]))
		return ENV_USAGE;
	e->nmarkers++;
	return ENV_OK;
}

static enum env_result opt_stall_ms(struct env *e, const struct opt *o, const char *arg)
{
	double ms;

	if (parse_double(arg, 0.001, 3600000, &ms))
		return bad(o->what, arg);
	e->stall_ns = ms * 1e6;
	return ENV_OK;
}

static enum env_result opt_stall_hooks(struct env *e, const struct opt *o, const char *arg)
{
	if (strcmp(arg, "lazy") && strcmp(arg, "always"))
		return bad(o->what, arg);
	e->stall_hooks_always = !strcmp(arg, "always");
	e->stall_hooks_set = true;
	return ENV_OK;
}

static enum env_result opt_hooks(struct env *e, const struct opt *o, const char *arg)
{
	enum hook_family f;

	if (hook_family_parse(arg, &f))
		return bad(o->what, arg);
	e->hooks = f;
	return ENV_OK;
}

static enum env_result opt_comm(struct env *e, const struct opt *o, const char *arg)
{
	if (!targets__comm_ok(arg))
		return bad(o->what, arg);
	if (e->ncomms == ENV_COMMS_MAX) {
		fprintf(stderr, "tokentrace: at most %d --comm names\n", ENV_COMMS_MAX);
		return ENV_USAGE;
	}
	snprintf(e->comms[e->ncomms++], sizeof(e->comms[0]), "%s", arg);
	return ENV_OK;
}

static enum env_result opt_python_hz(struct env *e, const struct opt *o, const char *arg)
{
	uint64_t v = 0;

	if (strcmp(arg, "0") && parse_uint(arg, 1, PYSAMPLER_HZ_MAX, &v))
		return bad(o->what, arg);
	e->python_hz = v;
	return ENV_OK;
}

static void help(void);

static enum env_result opt_help(struct env *e, const struct opt *o, const char *arg)
{
	help();
	return ENV_EXIT_OK;
}

static enum env_result opt_version(struct env *e, const struct opt *o, const char *arg)
{
	printf("tokentrace %s\n", TT_VERSION);
	return ENV_EXIT_OK;
}

#define F(x)	offsetof(struct env, x)

static const struct opt opts[] = {
	{ "pid", 'p', "PID[,PID...]", opt_pids, .help =
	  "processes to trace, and the children they fork from now on" },
	{ "comm", 0, "NAME", opt_comm, .live = true,
	  .what = "process name for --comm (1 to 15 bytes, as in /proc/PID/comm)", .help =
	  "every process of that name, now and later (repeatable)" },
	{ "cgroup", 0, "PATH", opt_str, F(cgroup), .live = true, .help =
	  "every process of that cgroup (a container, a systemd\n"
	  "service: /sys/fs/cgroup/... or relative to it), now and later" },
	{ "port", 0, "PORT", opt_uint, F(port), 2, 1, 65535, "port", true, .help =
	  "with no -p/--comm/--cgroup: every process serving that\n"
	  "local port; in any case only connections on it" },
	{ "no-follow", 0, NULL, opt_true, F(no_follow), .live = true, .help =
	  "do not trace children forked after attach" },
	{ "no-tls", 0, NULL, opt_true, F(no_tls), .live = true, .help =
	  "do not probe OpenSSL (SSL_write/SSL_read): TLS connections\n"
	  "are then not parsed (by default their plaintext is)" },
	{ "json", 'j', NULL, opt_true, F(json), .help =
	  "one JSON object per line (request, summary, ready)" },
	{ "quiet", 'q', NULL, opt_true, F(quiet), .help =
	  "summaries only, no line per request" },
	{ "top", 0, NULL, opt_true, F(top), .live = true, .help =
	  "full-screen live view: streams in flight, rolling\n"
	  "percentiles, tokens/s (keys: a t l c p sort, r reverse,\n"
	  "q quit); plain lines when stdout is not a terminal" },
	{ "metrics", 0, "[ADDR:]PORT", opt_metrics, .live = true,
	  .what = "--metrics address ([ADDR:]PORT)", .help =
	  "serve Prometheus/OpenMetrics at http://ADDR:PORT/metrics\n"
	  "(ADDR defaults to 127.0.0.1; [::1]:PORT for IPv6)" },
	{ "perfetto", 0, "FILE", opt_str, F(perfetto_path), .help =
	  "write a timeline (Chrome Trace Event JSON) for the Perfetto\n"
	  "UI or chrome://tracing: a track per connection, a slice per\n"
	  "request, an instant per token, stalls" },
	{ "write", 'w', "FILE", opt_str, F(record_path), .live = true, .help =
	  "record the raw event stream to FILE (holds captured payload\n"
	  "bytes: created mode 0600)" },
	{ "read", 'r', "FILE", opt_str, F(replay_path), .help =
	  "replay a recording (- for stdin) through the same outputs,\n"
	  "instead of tracing: no -p, no root needed" },
	{ "capture-size", 's', "N", opt_uint, F(capture_bytes), 4, 64, TT_CAP_MAX,
	  "capture size (64..4194304)", true, .help =
	  "payload bytes captured per send/receive (default 262144,\n"
	  "64..4194304); longer sends are counted, flagged truncated" },
	{ "buffer-mb", 'b', "N", opt_buffer, .live = true,
	  .what = "ring buffer size (MiB, a power of two up to 1024)", .help =
	  "ring buffer size in MiB, a power of two (default 4)" },
	{ "budget", 0, "N", opt_uint, F(budget), 4, 0, 100000000,
	  "--budget (records a second, 0 to 100000000; 0: no bound)", true, .help =
	  "at most N data records a second on average (default 20000;\n"
	  "0: no bound): over it, or with the ring buffer half full,\n"
	  "whole requests are left out, never parts of one, and\n"
	  "counted (\"left out by the budget\")" },
	{ "aggregate", 0, NULL, opt_true, F(aggregate), .live = true, .help =
	  "lowest cost: send gaps and time to first send kept as\n"
	  "histograms in the kernel, summaries only (no per-request\n"
	  "lines, no payload copied, no stalls; see the README)" },
	{ "stall-ms", 0, "N", opt_stall_ms, .live = true, .sec = SEC_STALLS,
	  .what = "stall threshold (ms)", .help =
	  "a gap over N ms is a stall; default: over 5 x the stream's\n"
	  "running median gap (last 32) and over 50 ms" },
	{ "no-stalls", 0, NULL, opt_true, F(no_stalls), .live = true, .sec = SEC_STALLS, .help =
	  "no stall attribution (the scheduler hooks stay unloaded)" },
	{ "stall-hooks", 0, "MODE", opt_stall_hooks, .live = true, .sec = SEC_STALLS,
	  .what = "--stall-hooks (lazy or always)", .help =
	  "lazy (default): the scheduler hooks attached only while a\n"
	  "stream has been quiet for a quarter of its stall threshold\n"
	  "(12.5 ms by default): a smooth stream pays none of them;\n"
	  "always: attached throughout, every switch of a traced\n"
	  "thread paid for (a stall's first quarter known in full)" },
	{ "python-hz", 0, "N", opt_python_hz, .live = true, .sec = SEC_STALLS,
	  .what = "--python-hz (0 to 1000)", .help =
	  "CPython 3.11 processes: their Python functions named in\n"
	  "stalls, sampled N times a second of CPU (default 99,\n"
	  "1..1000) and read where a thread blocks; 0: off" },
	{ "uprobe", 0, "NAME=BINARY:SYMBOL[+OFF][,key=argN[:str]]", opt_marker, .live = true,
	  .sec = SEC_MARKERS },
	{ "uretprobe", 0, "NAME=BINARY:SYMBOL[,key=ret[:str]]", opt_marker, .live = true,
	  .sec = SEC_MARKERS },
	{ "usdt", 0, "NAME=BINARY:PROVIDER:PROBE[,key=argN[:str]]", opt_marker, .live = true,
	  .sec = SEC_MARKERS, .help =
	  "NAME: admit (request accepted by the scheduler), first or\n"
	  "token (a token produced), done. BINARY: the executable or a\n"
	  "shared library as mapped in the process (path or name).\n"
	  "key=argN: the request key is argument N (1-6), :str a\n"
	  "pointer to a string; it is matched with the X-Request-Id or\n"
	  "the stream's id. Without a key a marker goes to the one\n"
	  "request it can belong to (same thread, or the only one in\n"
	  "that phase); when several could, it is counted ambiguous." },
	{ "hooks", 0, "FAMILY", opt_hooks, .live = true, .sec = SEC_HOOKS,
	  .what = "--hooks (auto, tp, fexit, kprobe or syscall)", .help =
	  "how socket data is seen: auto (default: the first this\n"
	  "kernel has), tp (sock tracepoints, 6.5+), fexit, kprobe,\n"
	  "syscall (syscall tracepoints, any kernel)" },
	{ "show-query", 0, NULL, opt_true, F(show_query), .sec = SEC_SAFETY, .help =
	  "keep query strings in the paths shown (they carry API keys\n"
	  "and tokens: dropped by default)" },
	{ "force", 0, NULL, opt_true, F(force), .sec = SEC_SAFETY, .help =
	  "trace PID 1 or a kernel thread; let -w and --perfetto\n"
	  "replace a file or symbolic link that is not yours" },
	{ "verbose", 'v', NULL, opt_true, F(verbose), .sec = SEC_MISC, .help =
	  "libbpf's own log on stderr" },
	{ "help", 'h', NULL, opt_help, .sec = SEC_MISC, .help = "this help" },
	{ "version", 'V', NULL, opt_version, .sec = SEC_MISC, .help = "version" },
};

/* "-s" or "--comm": as the option is named in messages */
static const char *opt_name(const struct opt *o, char *buf, size_t sz)
{
	if (o->letter)
		snprintf(buf, sz, "-%c", o->letter);
	else
		snprintf(buf, sz, "--%s", o->name);
	return buf;
}

static void help_option(const struct opt *o)
{
	char flags[128];
	const char *h = o->help, *nl;
	int n;

	if (o->letter)
		n = snprintf(flags, sizeof(flags), "  -%c, --%s", o->letter, o->name);
	else
		n = snprintf(flags, sizeof(flags), "      --%s", o->name);
	if (o->meta)
		n += snprintf(flags + n, sizeof(flags) - n, " %s", o->meta);
	fputs(flags, stdout);
	if (!h) {
		putchar('\n');
		return;
	}
	if (n + 2 > HELP_COL) {
		putchar('\n');
		n = 0;
	}
	for (;;) {
		nl = strchr(h, '\n');
		printf("%*s%.*s\n", HELP_COL - n, "", (int)(nl ? nl - h : (int)strlen(h)), h);
		if (!nl)
			break;
		h = nl + 1;
		n = 0;
	}
}

static void help(void)
{
	fputs(usage_head, stdout);
	for (enum section s = 0; s < SEC_NR; s++) {
		if (s)
			putchar('\n');
		if (headings[s])
			fputs(headings[s], stdout);
		for (size_t i = 0; i < ARRAY_SIZE(opts); i++)
			if (opts[i].sec == s)
				help_option(&opts[i]);
	}
	putchar('\n');
	fputs(usage_tail, stdout);
}

/* getopt_long's view of the table: long options, and the short ones' string */
static void getopt_table(struct option *lo, char *shorts, size_t sz)
{
	size_t n = 0;

	n += snprintf(shorts, sz, ":");	/* a missing value: ':', told apart from unknown */
	for (size_t i = 0; i < ARRAY_SIZE(opts); i++) {
		lo[i] = (struct option){ opts[i].name, opts[i].meta ? required_argument :
					 no_argument, NULL, 256 + (int)i };
		if (opts[i].letter && n < sz)
			n += snprintf(shorts + n, sz - n, "%c%s", opts[i].letter,
				      opts[i].meta ? ":" : "");
	}
	lo[ARRAY_SIZE(opts)] = (struct option){ NULL, 0, NULL, 0 };
}

static const struct opt *by_key(int c)
{
	if (c >= 256 && c < 256 + (int)ARRAY_SIZE(opts))
		return &opts[c - 256];
	for (size_t i = 0; c > 0 && i < ARRAY_SIZE(opts); i++)
		if (opts[i].letter == c)
			return &opts[i];
	return NULL;
}

/* The options, into e: ENV_OK with *live the last live-only one given (or NULL). */
static enum env_result parse_options(struct env *e, int argc, char **argv,
				     const struct opt **live)
{
	struct option lo[ARRAY_SIZE(opts) + 1];
	char shorts[64], q[ARG_QUOTE_MAX];
	const struct opt *o;
	enum env_result r;
	int c;

	getopt_table(lo, shorts, sizeof(shorts));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		if (c == ':') {
			fprintf(stderr, "tokentrace: option '%s' needs a value (see tokentrace --help)\n",
				arg_quote(q, argv[optind - 1]));
			return ENV_USAGE;
		}
		o = by_key(c);
		if (!o) {
			fprintf(stderr, "tokentrace: unknown option '%s' (see tokentrace --help)\n",
				arg_quote(q, argv[optind - 1]));
			return ENV_USAGE;
		}
		if ((r = o->set(e, o, optarg)))
			return r;
		if (o->live)
			*live = o;
	}
	return ENV_OK;
}

/* What a replay cannot honour: the kernel side's options, the live-only outputs. */
static enum env_result check_replay(const struct env *e, const struct opt *live, bool positional)
{
	char name[32];

	if (e->npids) {
		fprintf(stderr, "tokentrace: -r replays a recording: no -p\n");
		return ENV_USAGE;
	}
	if (live) {
		fprintf(stderr, "tokentrace: %s does not apply to a replay (-r)\n",
			opt_name(live, name, sizeof(name)));
		return ENV_USAGE;
	}
	if (positional) {
		fprintf(stderr, "tokentrace: a replay prints the summaries that were "
			"recorded: no INTERVAL or COUNT\n");
		return ENV_USAGE;
	}
	return ENV_OK;
}

/* Options that do not go together. */
static enum env_result check_combination(struct env *e)
{
	if (e->aggregate && (e->top || e->record_path || e->perfetto_path || e->nmarkers ||
			     e->stall_ns)) {
		fprintf(stderr, "tokentrace: --aggregate keeps histograms only: no --top, -w, "
			"--perfetto, markers or --stall-ms with it\n");
		return ENV_USAGE;
	}
	if (e->stall_hooks_set && (e->no_stalls || e->aggregate)) {
		fprintf(stderr, "tokentrace: --stall-hooks says when stalls are attributed: "
			"not with %s\n", e->aggregate ? "--aggregate" : "--no-stalls");
		return ENV_USAGE;
	}
	if (e->aggregate)
		e->no_stalls = true;
	if (e->top && e->json) {
		fprintf(stderr, "tokentrace: --top and --json both want stdout: pick one\n");
		return ENV_USAGE;
	}
	return ENV_OK;
}

/* INTERVAL [COUNT], and what is asked of the targets */
static enum env_result check_rest(struct env *e, int argc, char **argv)
{
	if (optind < argc && parse_double(argv[optind++], 0, 86400, &e->interval_s))
		return bad("interval (seconds)", argv[optind - 1]);
	if (optind < argc && parse_uint(argv[optind++], 1, UINT32_MAX, &e->count))
		return bad("count", argv[optind - 1]);
	if (optind < argc)
		return bad("argument", argv[optind]);
	/* without a PID list, processes are found: by name, cgroup, or the port they serve */
	e->find = e->ncomms || e->cgroup || (!e->npids && e->port);
	if (!e->npids && !e->find && !e->replay_path) {
		fprintf(stderr, "tokentrace: which process? give -p PID, --comm NAME, --cgroup PATH "
			"or --port PORT (see tokentrace --help)\n");
		return ENV_USAGE;
	}
	if (e->count && !e->interval_s) {
		fprintf(stderr, "tokentrace: COUNT needs a non-zero INTERVAL\n");
		return ENV_USAGE;
	}
	return ENV_OK;
}

enum env_result env__parse(struct env *e, int argc, char **argv)
{
	const struct opt *live = NULL;
	enum env_result r;

	memset(e, 0, sizeof(*e));
	e->capture_bytes = TT_CAP_DEFAULT;
	e->python_hz = PYSAMPLER_HZ_DEFAULT;
	e->ringbuf_bytes = 4 << 20;
	e->budget = ENV_BUDGET_DEFAULT;
	e->interval_s = 5;
	if ((r = parse_options(e, argc, argv, &live)))
		return r;
	if (e->replay_path && (r = check_replay(e, live, optind < argc)))
		return r;
	if ((r = check_combination(e)))
		return r;
	return check_rest(e, argc, argv);
}
