// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "env.h"
#include "events.h"
#include "util.h"

static const char usage[] =
"Usage: tokentrace -p PID[,PID...] [OPTIONS] [INTERVAL [COUNT]]\n"
"\n"
"Trace a running token-streaming server (vLLM, llama.cpp, Ollama, TGI, a FastAPI app...)\n"
"with eBPF, without restarting it, and report per streamed request: TTFT (time to first\n"
"token), ITL (gaps between tokens), TPOT (time per output token) and E2E.\n"
"\n"
"  -p, --pid PID[,PID...]   processes to trace (at most 16)\n"
"  -j, --json               one JSON object per line (request, summary, ready)\n"
"  -q, --quiet              summaries only, no line per request\n"
"      --port PORT          only connections on this local port\n"
"  -s, --capture-size N     payload bytes captured per send/receive (default 4096,\n"
"                           64..16384); longer sends are counted, flagged truncated\n"
"  -b, --buffer-mb N        ring buffer size in MiB, a power of two (default 4)\n"
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
"  -v, --verbose            libbpf's own log on stderr\n"
"  -h, --help               this help\n"
"  -V, --version            version\n"
"\n"
"  INTERVAL                 seconds between summaries (default 5; 0: only at exit)\n"
"  COUNT                    exit after this many summaries\n"
"\n"
"Ctrl-C or SIGTERM detaches, prints the final summary and exits 0. The trace also ends\n"
"when every traced process has exited. Payloads (prompts, answers) are never printed.\n"
"\n"
"EXAMPLES\n"
"  tokentrace -p $(pgrep -d, -f vllm)     trace vLLM's processes\n"
"  tokentrace -p 4242 --json 10           JSON lines, a summary every 10 s\n"
"  tokentrace -p 4242 -q 1 30             a summary a second for 30 s\n"
"  tokentrace -p 4242 --port 8000         only the API port\n"
"  tokentrace -p $(pidof tokensim) --usdt admit=tokensim:tokensim:admit,key=arg2:str \\\n"
"      --usdt token=tokensim:tokensim:token,key=arg2:str   TTFT breakdown\n";

enum {
	OPT_PORT = 256,
	OPT_UPROBE,
	OPT_URETPROBE,
	OPT_USDT,
};

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "json", no_argument, NULL, 'j' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "port", required_argument, NULL, OPT_PORT },
	{ "capture-size", required_argument, NULL, 's' },
	{ "buffer-mb", required_argument, NULL, 'b' },
	{ "uprobe", required_argument, NULL, OPT_UPROBE },
	{ "uretprobe", required_argument, NULL, OPT_URETPROBE },
	{ "usdt", required_argument, NULL, OPT_USDT },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static int bad(const char *what, const char *arg)
{
	fprintf(stderr, "tokentrace: invalid %s '%s' (see tokentrace --help)\n", what, arg);
	return ENV_USAGE;
}

static int parse_pids(struct env *e, const char *arg)
{
	char buf[256], *tok, *save = NULL;
	uint64_t v;

	if (strlen(arg) >= sizeof(buf))
		return bad("PID list", arg);
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (parse_uint(tok, 1, 0x3fffffff, &v))
			return bad("PID", tok);
		if (e->npids == ENV_PIDS_MAX) {
			fprintf(stderr, "tokentrace: at most %d PIDs\n", ENV_PIDS_MAX);
			return ENV_USAGE;
		}
		e->pids[e->npids++] = v;
	}
	if (!e->npids)
		return bad("PID list", arg);
	return ENV_OK;
}

enum env_result env__parse(struct env *e, int argc, char **argv)
{
	uint64_t v;
	int c, err;

	memset(e, 0, sizeof(*e));
	e->capture_bytes = TT_CAP_DEFAULT;
	e->ringbuf_bytes = 4 << 20;
	e->interval_s = 5;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:jqs:b:vhV", long_opts, NULL)) != -1) {
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
			break;
		case 's':
			if (parse_uint(optarg, 64, TT_CAP_MAX, &v))
				return bad("capture size (64..16384)", optarg);
			e->capture_bytes = v;
			break;
		case 'b':
			if (parse_uint(optarg, 1, 1024, &v) || (v & (v - 1)))
				return bad("ring buffer size (MiB, a power of two up to 1024)", optarg);
			e->ringbuf_bytes = v << 20;
			break;
		case OPT_UPROBE:
		case OPT_URETPROBE:
		case OPT_USDT:
			if (e->nmarkers == TT_MARKERS_MAX) {
				fprintf(stderr, "tokentrace: at most %d markers\n", TT_MARKERS_MAX);
				return ENV_USAGE;
			}
			if (marker__parse(optarg, c == OPT_UPROBE ? MP_UPROBE :
					  c == OPT_URETPROBE ? MP_URETPROBE : MP_USDT,
					  &e->markers[e->nmarkers]))
				return ENV_USAGE;
			e->nmarkers++;
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
				argv[optind - 1]);
			return ENV_USAGE;
		default:
			fprintf(stderr, "tokentrace: unknown option '%s' (see tokentrace --help)\n",
				argv[optind - 1]);
			return ENV_USAGE;
		}
	}
	if (optind < argc && parse_double(argv[optind++], 0, 86400, &e->interval_s))
		return bad("interval (seconds)", argv[optind - 1]);
	if (optind < argc && parse_uint(argv[optind++], 1, UINT32_MAX, &e->count))
		return bad("count", argv[optind - 1]);
	if (optind < argc)
		return bad("argument", argv[optind]);
	if (!e->npids) {
		fprintf(stderr, "tokentrace: which process? give -p PID (see tokentrace --help)\n");
		return ENV_USAGE;
	}
	if (e->count && !e->interval_s) {
		fprintf(stderr, "tokentrace: COUNT needs a non-zero INTERVAL\n");
		return ENV_USAGE;
	}
	return ENV_OK;
}
