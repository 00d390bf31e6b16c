// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "env.h"
#include "loader.h"
#include "events.h"
#include "outputs.h"
#include "pysampler.h"
#include "util.h"

static const char usage[] =
"Usage: tokentrace -p PID[,PID...] [OPTIONS] [INTERVAL [COUNT]]\n"
"       tokentrace --comm NAME | --cgroup PATH | --port PORT [OPTIONS] [INTERVAL [COUNT]]\n"
"       tokentrace -r FILE [OUTPUT OPTIONS]\n"
"\n"
"Trace a running token-streaming server (vLLM, llama.cpp, Ollama, TGI, a FastAPI app...)\n"
"with eBPF, without restarting it, and report per streamed request: TTFT (time to first\n"
"token), ITL (gaps between tokens), TPOT (time per output token) and E2E.\n"
"\n"
"  -p, --pid PID[,PID...]   processes to trace, and the children they fork from now on\n"
"      --comm NAME          every process of that name, now and later (repeatable)\n"
"      --cgroup PATH        every process of that cgroup (a container, a systemd\n"
"                           service: /sys/fs/cgroup/... or relative to it), now and later\n"
"      --port PORT          with no -p/--comm/--cgroup: every process serving that\n"
"                           local port; in any case only connections on it\n"
"      --no-follow          do not trace children forked after attach\n"
"      --no-tls             do not probe OpenSSL (SSL_write/SSL_read): TLS connections\n"
"                           are then not parsed (by default their plaintext is)\n"
"  -j, --json               one JSON object per line (request, summary, ready)\n"
"  -q, --quiet              summaries only, no line per request\n"
"      --top                full-screen live view: streams in flight, rolling\n"
"                           percentiles, tokens/s (keys: a t l c p sort, r reverse,\n"
"                           q quit); plain lines when stdout is not a terminal\n"
"      --metrics [ADDR:]PORT  serve Prometheus/OpenMetrics at http://ADDR:PORT/metrics\n"
"                           (ADDR defaults to 127.0.0.1; [::1]:PORT for IPv6)\n"
"      --perfetto FILE      write a timeline (Chrome Trace Event JSON) for the Perfetto\n"
"                           UI or chrome://tracing: a track per connection, a slice per\n"
"                           request, an instant per token, stalls\n"
"  -w, --write FILE         record the raw event stream to FILE (holds captured payload\n"
"                           bytes: created mode 0600)\n"
"  -r, --read FILE          replay a recording (- for stdin) through the same outputs,\n"
"                           instead of tracing: no -p, no root needed\n"

"  -s, --capture-size N     payload bytes captured per send/receive (default 262144,\n"
"                           64..4194304); longer sends are counted, flagged truncated\n"
"  -b, --buffer-mb N        ring buffer size in MiB, a power of two (default 4)\n"
"      --budget N           at most N data records a second on average (default 20000;\n"
"                           0: no bound): over it, or with the ring buffer half full,\n"
"                           whole requests are left out, never parts of one, and\n"
"                           counted (\"left out by the budget\")\n"
"      --aggregate          lowest cost: send gaps and time to first send kept as\n"
"                           histograms in the kernel, summaries only (no per-request\n"
"                           lines, no payload copied, no stalls; see the README)\n"
"\n"
"Stalls (a long gap between two tokens, explained: on CPU, waiting for a CPU, blocked\n"
"on a lock, I/O, a sleep, poll, a full socket buffer; with the stack of the longest block):\n"
"      --stall-ms N         a gap over N ms is a stall; default: over 5 x the stream's\n"
"                           running median gap (last 32) and over 50 ms\n"
"      --no-stalls          no stall attribution (the scheduler hooks stay unloaded)\n"
"      --stall-hooks MODE   lazy (default): the scheduler hooks attached only while a\n"
"                           stream has been quiet for a quarter of its stall threshold\n"
"                           (12.5 ms by default): a smooth stream pays none of them;\n"
"                           always: attached throughout, every switch of a traced\n"
"                           thread paid for (a stall's first quarter known in full)\n"
"      --python-hz N        CPython 3.11 processes: their Python functions named in\n"
"                           stalls, sampled N times a second of CPU (default 99,\n"
"                           1..1000) and read where a thread blocks; 0: off\n"
"\n"
"Markers inside the server (TTFT breakdown: admit, prefill, emit-to-wire):\n"
"      --uprobe NAME=BINARY:SYMBOL[+OFF][,key=argN[:str]]\n"
"      --uretprobe NAME=BINARY:SYMBOL[,key=ret[:str]]\n"
"      --usdt NAME=BINARY:PROVIDER:PROBE[,key=argN[:str]]\n"
"                           NAME: admit (request accepted by the scheduler), first or\n"
"                           token (a token produced), done. BINARY: the executable or a\n"
"                           shared library as mapped in the process (path or name).\n"
"                           key=argN: the request key is argument N (1-6), :str a\n"
"                           pointer to a string; it is matched with the X-Request-Id or\n"
"                           the stream's id. Without a key a marker goes to the one\n"
"                           request it can belong to (same thread, or the only one in\n"
"                           that phase); when several could, it is counted ambiguous.\n"
"\n"
"      --hooks FAMILY       how socket data is seen: auto (default: the first this\n"
"                           kernel has), tp (sock tracepoints, 6.5+), fexit, kprobe,\n"
"                           syscall (syscall tracepoints, any kernel)\n"
"\n"
"Safety (see the README's Security section):\n"
"      --show-query         keep query strings in the paths shown (they carry API keys\n"
"                           and tokens: dropped by default)\n"
"      --force              trace PID 1 or a kernel thread; let -w and --perfetto\n"
"                           replace a file or symbolic link that is not yours\n"
"\n"
"  -v, --verbose            libbpf's own log on stderr\n"
"  -h, --help               this help\n"
"  -V, --version            version\n"
"\n"
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

enum {
	OPT_PORT = 256,
	OPT_TOP,
	OPT_METRICS,
	OPT_PERFETTO,
	OPT_UPROBE,
	OPT_URETPROBE,
	OPT_USDT,
	OPT_STALL_MS,
	OPT_NO_STALLS,
	OPT_STALL_HOOKS,
	OPT_AGGREGATE,
	OPT_HOOKS,
	OPT_SHOW_QUERY,
	OPT_FORCE,
	OPT_COMM,
	OPT_CGROUP,
	OPT_NO_FOLLOW,
	OPT_NO_TLS,
	OPT_PYTHON_HZ,
	OPT_BUDGET,
};

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "json", no_argument, NULL, 'j' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "port", required_argument, NULL, OPT_PORT },
	{ "capture-size", required_argument, NULL, 's' },
	{ "buffer-mb", required_argument, NULL, 'b' },
	{ "top", no_argument, NULL, OPT_TOP },
	{ "metrics", required_argument, NULL, OPT_METRICS },
	{ "perfetto", required_argument, NULL, OPT_PERFETTO },
	{ "write", required_argument, NULL, 'w' },
	{ "read", required_argument, NULL, 'r' },
	{ "uprobe", required_argument, NULL, OPT_UPROBE },
	{ "uretprobe", required_argument, NULL, OPT_URETPROBE },
	{ "usdt", required_argument, NULL, OPT_USDT },
	{ "stall-ms", required_argument, NULL, OPT_STALL_MS },
	{ "no-stalls", no_argument, NULL, OPT_NO_STALLS },
	{ "stall-hooks", required_argument, NULL, OPT_STALL_HOOKS },
	{ "aggregate", no_argument, NULL, OPT_AGGREGATE },
	{ "hooks", required_argument, NULL, OPT_HOOKS },
	{ "show-query", no_argument, NULL, OPT_SHOW_QUERY },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "comm", required_argument, NULL, OPT_COMM },
	{ "cgroup", required_argument, NULL, OPT_CGROUP },
	{ "no-follow", no_argument, NULL, OPT_NO_FOLLOW },
	{ "no-tls", no_argument, NULL, OPT_NO_TLS },
	{ "python-hz", required_argument, NULL, OPT_PYTHON_HZ },
	{ "budget", required_argument, NULL, OPT_BUDGET },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* What the user typed, quoted in the error: cut and escaped (util.h arg_quote) */
static int bad(const char *what, const char *arg)
{
	char q[ARG_QUOTE_MAX];

	fprintf(stderr, "tokentrace: invalid %s '%s' (see tokentrace --help)\n", what,
		arg_quote(q, arg));
	return ENV_USAGE;
}

/* "PID[,PID...]": every element a PID, none empty, none twice (also across -p options) */
static int parse_pids(struct env *e, const char *arg)
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

enum env_result env__parse(struct env *e, int argc, char **argv)
{
	/* what a replay cannot honour: the kernel side's options, the live-only outputs */
	const char *live_only = NULL;
	struct sockaddr_storage ss;
	socklen_t sslen;
	char q[ARG_QUOTE_MAX];
	uint64_t v;
	int c, err;

	memset(e, 0, sizeof(*e));
	e->capture_bytes = TT_CAP_DEFAULT;
	e->python_hz = PYSAMPLER_HZ_DEFAULT;
	e->ringbuf_bytes = 4 << 20;
	e->budget = ENV_BUDGET_DEFAULT;
	e->interval_s = 5;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:jqs:b:vhVw:r:", long_opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if ((err = parse_pids(e, optarg)))
				return err;
			break;
		case 'j':
			e->json = true;
			break;
		case 'q':
			e->quiet = true;
			break;
		case OPT_PORT:
			if (parse_uint(optarg, 1, 65535, &v))
				return bad("port", optarg);
			e->port = v;
			live_only = "--port";
			break;
		case OPT_TOP:
			e->top = true;
			live_only = "--top";
			break;
		case OPT_METRICS:
			if (metrics__parse_addr(optarg, &ss, &sslen))
				return bad("--metrics address ([ADDR:]PORT)", optarg);
			e->metrics_addr = optarg;
			live_only = "--metrics";
			break;
		case OPT_PERFETTO:
			e->perfetto_path = optarg;
			break;
		case 'w':
			e->record_path = optarg;
			live_only = "-w";
			break;
		case 'r':
			e->replay_path = optarg;
			break;
		case 's':
			if (parse_uint(optarg, 64, TT_CAP_MAX, &v))
				return bad("capture size (64..4194304)", optarg);
			e->capture_bytes = v;
			live_only = "-s";
			break;
		case 'b':
			if (parse_uint(optarg, 1, 1024, &v) || (v & (v - 1)))
				return bad("ring buffer size (MiB, a power of two up to 1024)", optarg);
			e->ringbuf_bytes = v << 20;
			live_only = "-b";
			break;
		case OPT_UPROBE:
		case OPT_URETPROBE:
		case OPT_USDT:
			/* the parser quotes what it rejects: keep that to a line */
			if (strlen(optarg) >= sizeof(e->markers[0].arg))
				return bad("marker (too long)", optarg);
			for (const char *s = optarg; *s; s++)
				if ((unsigned char)*s < 0x20 || *s == 0x7f)
					return bad("marker (a control character)", optarg);
			if (e->nmarkers == TT_MARKERS_MAX) {
				fprintf(stderr, "tokentrace: at most %d markers\n", TT_MARKERS_MAX);
				return ENV_USAGE;
			}
			if (marker__parse(optarg, c == OPT_UPROBE ? MP_UPROBE :
					  c == OPT_URETPROBE ? MP_URETPROBE : MP_USDT,
					  &e->markers[e->nmarkers]))
				return ENV_USAGE;
			e->nmarkers++;
			live_only = "--uprobe/--uretprobe/--usdt";
			break;
		case OPT_STALL_MS: {
			double ms;

			if (parse_double(optarg, 0.001, 3600000, &ms))
				return bad("stall threshold (ms)", optarg);
			e->stall_ns = ms * 1e6;
			live_only = "--stall-ms";
			break;
		}
		case OPT_NO_STALLS:
			e->no_stalls = true;
			live_only = "--no-stalls";
			break;
		case OPT_STALL_HOOKS:
			if (strcmp(optarg, "lazy") && strcmp(optarg, "always"))
				return bad("--stall-hooks (lazy or always)", optarg);
			e->stall_hooks_always = !strcmp(optarg, "always");
			e->stall_hooks_set = true;
			live_only = "--stall-hooks";
			break;
		case OPT_AGGREGATE:
			e->aggregate = true;
			live_only = "--aggregate";
			break;
		case OPT_HOOKS: {
			enum hook_family f;

			if (hook_family_parse(optarg, &f))
				return bad("--hooks (auto, tp, fexit, kprobe or syscall)", optarg);
			e->hooks = f;
			live_only = "--hooks";
			break;
		}
		case OPT_SHOW_QUERY:
			e->show_query = true;
			break;
		case OPT_FORCE:
			e->force = true;
			break;
		case OPT_COMM:
			if (!optarg[0] || strlen(optarg) > 15 || strchr(optarg, '/'))
				return bad("process name for --comm (1 to 15 bytes, as in "
					   "/proc/PID/comm)", optarg);
			if (e->ncomms == ENV_COMMS_MAX) {
				fprintf(stderr, "tokentrace: at most %d --comm names\n",
					ENV_COMMS_MAX);
				return ENV_USAGE;
			}
			snprintf(e->comms[e->ncomms++], sizeof(e->comms[0]), "%s", optarg);
			live_only = "--comm";
			break;
		case OPT_CGROUP:
			e->cgroup = optarg;
			live_only = "--cgroup";
			break;
		case OPT_NO_FOLLOW:
			e->no_follow = true;
			live_only = "--no-follow";
			break;
		case OPT_NO_TLS:
			e->no_tls = true;
			live_only = "--no-tls";
			break;
		case OPT_PYTHON_HZ: {
			uint64_t v = 0;

			if (strcmp(optarg, "0") && parse_uint(optarg, 1, PYSAMPLER_HZ_MAX, &v))
				return bad("--python-hz (0 to 1000)", optarg);
			e->python_hz = strcmp(optarg, "0") ? v : 0;
			live_only = "--python-hz";
			break;
		}
		case OPT_BUDGET:
			if (parse_uint(optarg, 0, 100000000, &v))
				return bad("--budget (records a second, 0 to 100000000; 0: no bound)",
					   optarg);
			e->budget = v;
			live_only = "--budget";
			break;
		case 'v':
			e->verbose = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return ENV_EXIT_OK;
		case 'V':
			printf("tokentrace %s\n", TT_VERSION);
			return ENV_EXIT_OK;
		case ':':
			fprintf(stderr, "tokentrace: option '%s' needs a value (see tokentrace --help)\n",
				arg_quote(q, argv[optind - 1]));
			return ENV_USAGE;
		default:
			fprintf(stderr, "tokentrace: unknown option '%s' (see tokentrace --help)\n",
				arg_quote(q, argv[optind - 1]));
			return ENV_USAGE;
		}
	}
	if (e->replay_path) {
		if (e->npids) {
			fprintf(stderr, "tokentrace: -r replays a recording: no -p\n");
			return ENV_USAGE;
		}
		if (live_only) {
			fprintf(stderr, "tokentrace: %s does not apply to a replay (-r)\n",
				live_only);
			return ENV_USAGE;
		}
		if (optind < argc) {
			fprintf(stderr, "tokentrace: a replay prints the summaries that were "
				"recorded: no INTERVAL or COUNT\n");
			return ENV_USAGE;
		}
	}
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
