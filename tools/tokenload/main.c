// SPDX-License-Identifier: MIT
/*
 * tokenload: a streaming load client that records what it saw, for
 * comparison with tokensim's ground truth (and with tokentrace).
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <sys/un.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tokenload.h"
#include "util.h"

const char *prog_name = "tokenload";

struct tl_config cfg = {
	.path = "/v1/chat/completions",
	.requests = 10,
	.concurrency = 1,
	.max_tokens = -1,
	.stream = true,
	.model = "tokensim",
	.prompt_bytes = 64,
	.pipeline = 1,
	.abort_after = -1,
	.abort_every = 1,
	.timeout_ns = 60 * NSEC_PER_SEC,
	.keepalive = true,
};

static void usage(void)
{
	printf("Usage: tokenload (--port N | --url http://HOST:PORT/PATH | --unix PATH) [OPTIONS]\n"
"Streaming HTTP/1.1 load client; one JSON line per request with what it saw.\n"
"All times are CLOCK_MONOTONIC ns, comparable with tokensim's truth file.\n"
"\n"
"  --port N               server port on 127.0.0.1\n"
"  --url URL              http://HOST:PORT/PATH (HOST: IPv4, [IPv6] or localhost)\n"
"  --unix PATH            connect to a unix socket (Host: localhost)\n"
"  --path P               request path, picks the body format (default\n"
"                         /v1/chat/completions)\n"
"  --requests N           requests in all (default 10)\n"
"  --concurrency C        connections, one thread each, kept alive (default 1)\n"
"  --max-tokens M         token limit, in the field the path's API uses\n"
"                         (default: none, the server decides)\n"
"  --stream 0|1           ask for a stream (default 1)\n"
"  --include-usage        OpenAI: stream_options.include_usage\n"
"  --model NAME           model field (default tokensim)\n"
"  --prompt-bytes N       prompt text size (default 64)\n"
"  --pipeline N           send N requests back to back before reading (default 1,\n"
"                         max %d)\n"
"  --abort-after K        close the connection after K content chunks of every\n"
"  --abort-every J        J-th request (default J = 1)\n"
"  --pause-every K        slow reader: stop reading for S ms after every K chunks\n"
"  --pause-ms S\n"
"  --close-at-final       stop reading at the stream's own end ([DONE], an NDJSON\n"
"                         \"done\":true, message_stop, llama.cpp's \"stop\":true) and\n"
"                         close the connection with the rest unread, as the OpenAI\n"
"                         SDKs do: a complete response, not an abort\n"
"  --rcvbuf BYTES         SO_RCVBUF of the client sockets\n"
"  --mss BYTES            TCP_MAXSEG announced on connect (88..65535): a small MSS,\n"
"                         as a far client's, keeps the server's send buffer small so\n"
"                         a pause fills it (loopback's 64 KiB MSS gives it ~4 MiB)\n"
"  --id-prefix STR        X-Request-Id = STR + request number (default tl-PID-);\n"
"                         a request sent again on a new connection, because its\n"
"                         connection ended before its response, is STR<n>.<k>\n"
"  --out FILE             one JSON line per request\n"
"  --timeout-ms N         per request, from its send (default 60000)\n"
"  --no-keepalive         Connection: close, a new connection per request\n"
"  --no-chunk-times       leave t_chunk_ns out of --out (long loads: a saturating\n"
"                         one writes ~4 MB of it a second)\n"
"  -h, --help             this text\n"
"\n"
"Output line: {\"request_id\",\"status\",\"t_sent_ns\",\"ttft_ns\" (-1: no chunk),\n"
"\"t_chunk_ns\":[...],\"chunks\",\"tokens\" (-1: not in the stream),\"aborted\",\n"
"\"final\" (the stream's own end arrived; a whole JSON body is its own end),\n"
"\"error\" (null or a message),\"t_done_ns\",\"bytes\",\"t_connect_ns\",\"t_connected_ns\"\n"
"(around the connect() of a new connection its first request went on, else null)}.\n"
"Exit 0 when every request\n"
"got a whole response (or was aborted on purpose), else 1; 2 on a bad flag.\n",
	       TL_MAX_PIPELINE);
}

enum {
	OPT_PORT = 256,
	OPT_URL,
	OPT_PATH,
	OPT_REQUESTS,
	OPT_CONC,
	OPT_MAX_TOKENS,
	OPT_STREAM,
	OPT_USAGE,
	OPT_MODEL,
	OPT_PROMPT,
	OPT_PIPELINE,
	OPT_ABORT_AFTER,
	OPT_ABORT_EVERY,
	OPT_PAUSE_EVERY,
	OPT_PAUSE_MS,
	OPT_RCVBUF,
	OPT_MSS,
	OPT_ID_PREFIX,
	OPT_OUT,
	OPT_TIMEOUT,
	OPT_NO_KA,
	OPT_CLOSE_FINAL,
	OPT_UNIX,
	OPT_NO_CHUNK_TIMES,
};

static const struct option long_opts[] = {
	{ "port", required_argument, NULL, OPT_PORT },
	{ "url", required_argument, NULL, OPT_URL },
	{ "path", required_argument, NULL, OPT_PATH },
	{ "requests", required_argument, NULL, OPT_REQUESTS },
	{ "concurrency", required_argument, NULL, OPT_CONC },
	{ "max-tokens", required_argument, NULL, OPT_MAX_TOKENS },
	{ "stream", required_argument, NULL, OPT_STREAM },
	{ "include-usage", no_argument, NULL, OPT_USAGE },
	{ "model", required_argument, NULL, OPT_MODEL },
	{ "prompt-bytes", required_argument, NULL, OPT_PROMPT },
	{ "pipeline", required_argument, NULL, OPT_PIPELINE },
	{ "abort-after", required_argument, NULL, OPT_ABORT_AFTER },
	{ "abort-every", required_argument, NULL, OPT_ABORT_EVERY },
	{ "pause-every", required_argument, NULL, OPT_PAUSE_EVERY },
	{ "pause-ms", required_argument, NULL, OPT_PAUSE_MS },
	{ "rcvbuf", required_argument, NULL, OPT_RCVBUF },
	{ "mss", required_argument, NULL, OPT_MSS },
	{ "id-prefix", required_argument, NULL, OPT_ID_PREFIX },
	{ "out", required_argument, NULL, OPT_OUT },
	{ "timeout-ms", required_argument, NULL, OPT_TIMEOUT },
	{ "no-keepalive", no_argument, NULL, OPT_NO_KA },
	{ "close-at-final", no_argument, NULL, OPT_CLOSE_FINAL },
	{ "unix", required_argument, NULL, OPT_UNIX },
	{ "no-chunk-times", no_argument, NULL, OPT_NO_CHUNK_TIMES },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static double num(const char *opt, double min, double max)
{
	double v;

	if (!parse_num(prog_name, opt, optarg, min, max, true, &v))
		exit(2);
	return v;
}

static void set_addr(const char *host, unsigned port)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&cfg.addr;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&cfg.addr;

	memset(&cfg.addr, 0, sizeof(cfg.addr));
	if (!strcmp(host, "localhost"))
		host = "127.0.0.1";
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		cfg.addrlen = sizeof(*sin);
		snprintf(cfg.host, sizeof(cfg.host), "%s:%u", host, port);
	} else if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		cfg.addrlen = sizeof(*sin6);
		snprintf(cfg.host, sizeof(cfg.host), "[%s]:%u", host, port);
	} else {
		fprintf(stderr, "%s: --url: host '%s' is not an IP address or localhost\n",
			prog_name, host);
		exit(2);
	}
}

/* http://HOST:PORT/PATH; the path stays in *path unless --path overrides it. */
static void parse_url(const char *url, const char **path)
{
	static char host[64];
	const char *p = url, *h_end, *colon;
	double port;
	char portstr[8];

	if (strncmp(p, "http://", 7)) {
		fprintf(stderr, "%s: --url: '%s' must start with http://\n", prog_name, url);
		exit(2);
	}
	p += 7;
	if (*p == '[') {
		h_end = strchr(p, ']');
		colon = h_end ? h_end + 1 : NULL;
		p++;
	} else {
		h_end = colon = strchr(p, ':');
	}
	if (!h_end || !colon || *colon != ':' || (size_t)(h_end - p) >= sizeof(host)) {
		fprintf(stderr, "%s: --url: '%s' needs http://HOST:PORT\n", prog_name, url);
		exit(2);
	}
	memcpy(host, p, (size_t)(h_end - p));
	host[h_end - p] = '\0';
	p = colon + 1;
	size_t pl = strcspn(p, "/");
	if (!pl || pl >= sizeof(portstr)) {
		fprintf(stderr, "%s: --url: bad port in '%s'\n", prog_name, url);
		exit(2);
	}
	memcpy(portstr, p, pl);
	portstr[pl] = '\0';
	if (!parse_num(prog_name, "--url port", portstr, 1, 65535, true, &port))
		exit(2);
	set_addr(host, (unsigned)port);
	if (p[pl] == '/')
		*path = p + pl;
}

/* --unix PATH: the server's Unix socket */
static void set_unix(const char *path)
{
	struct sockaddr_un *sun = (struct sockaddr_un *)&cfg.addr;

	if (strlen(path) >= sizeof(sun->sun_path)) {
		fprintf(stderr, "%s: --unix: path longer than %zu bytes\n",
			prog_name, sizeof(sun->sun_path) - 1);
		exit(2);
	}
	memset(&cfg.addr, 0, sizeof(cfg.addr));
	sun->sun_family = AF_UNIX;
	strcpy(sun->sun_path, path);
	cfg.addrlen = sizeof(*sun);
	snprintf(cfg.host, sizeof(cfg.host), "localhost");
	cfg.unix_path = path;
}

/* How each connection behaves (pipelining, aborts, pauses, buffers, ids, output); false:
 * not one of these options. */
static bool behaviour_opt(int c)
{
	switch (c) {
	case OPT_PIPELINE:
		cfg.pipeline = (unsigned)num("--pipeline", 1, TL_MAX_PIPELINE);
		return true;
	case OPT_ABORT_AFTER:
		cfg.abort_after = (long)num("--abort-after", 0, 1e9);
		return true;
	case OPT_ABORT_EVERY:
		cfg.abort_every = (unsigned)num("--abort-every", 1, 1e9);
		return true;
	case OPT_PAUSE_EVERY:
		cfg.pause_every = (unsigned)num("--pause-every", 0, 1e9);
		return true;
	case OPT_PAUSE_MS:
		cfg.pause_ns = (uint64_t)num("--pause-ms", 0, 3600000) * NSEC_PER_MSEC;
		return true;
	case OPT_RCVBUF:
		cfg.rcvbuf = (unsigned)num("--rcvbuf", 0, 1 << 30);
		return true;
	case OPT_MSS:
		cfg.mss = (unsigned)num("--mss", 88, 65535);
		return true;
	case OPT_ID_PREFIX:
		if (strlen(optarg) > 40) {
			fprintf(stderr, "%s: --id-prefix: at most 40 characters\n",
				prog_name);
			exit(2);
		}
		snprintf(cfg.id_prefix, sizeof(cfg.id_prefix), "%s", optarg);
		return true;
	case OPT_OUT:
		cfg.out = optarg;
		return true;
	case OPT_TIMEOUT:
		cfg.timeout_ns = (uint64_t)num("--timeout-ms", 1, 86400000) * NSEC_PER_MSEC;
		return true;
	case OPT_NO_KA:
		cfg.keepalive = false;
		return true;
	case OPT_NO_CHUNK_TIMES:
		cfg.no_chunk_times = true;
		return true;
	case OPT_CLOSE_FINAL:
		cfg.close_at_final = true;
		return true;
	default:
		return false;
	}
}

static void parse_args(int argc, char **argv)
{
	const char *url_path = NULL, *path = NULL;
	bool have_target = false;
	int c;

	snprintf(cfg.id_prefix, sizeof(cfg.id_prefix), "tl-%d-", (int)getpid());
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_PORT:
			set_addr("127.0.0.1", (unsigned)num("--port", 1, 65535));
			have_target = true;
			break;
		case OPT_URL:
			parse_url(optarg, &url_path);
			have_target = true;
			break;
		case OPT_PATH:
			if (optarg[0] != '/') {
				fprintf(stderr, "%s: --path must start with /\n", prog_name);
				exit(2);
			}
			path = optarg;
			break;
		case OPT_REQUESTS:
			cfg.requests = (unsigned)num("--requests", 1, 1e9);
			break;
		case OPT_CONC:
			cfg.concurrency = (unsigned)num("--concurrency", 1, 10000);
			break;
		case OPT_MAX_TOKENS:
			cfg.max_tokens = (long)num("--max-tokens", 0, 1e9);
			break;
		case OPT_STREAM:
			cfg.stream = num("--stream", 0, 1) != 0;
			break;
		case OPT_USAGE:
			cfg.include_usage = true;
			break;
		case OPT_MODEL:
			cfg.model = optarg;
			break;
		case OPT_PROMPT:
			cfg.prompt_bytes = (unsigned)num("--prompt-bytes", 0, 32 << 20);
			break;
		case OPT_UNIX:
			set_unix(optarg);
			have_target = true;
			break;
		case 'h':
			usage();
			exit(0);
		case ':':
			fprintf(stderr, "%s: option '%s' needs a value (see --help)\n", prog_name,
				argv[optind - 1]);
			exit(2);
		default:
			if (behaviour_opt(c))
				break;
			fprintf(stderr, "%s: unknown option '%s' (see --help)\n", prog_name,
				argv[optind - 1]);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", prog_name,
			argv[optind]);
		exit(2);
	}
	if (!have_target) {
		fprintf(stderr,
			"%s: say where: --port N, --url http://HOST:PORT/PATH or --unix PATH\n",
			prog_name);
		exit(2);
	}
	if (path)
		cfg.path = path;
	else if (url_path)
		cfg.path = url_path;
	if (cfg.pause_every && !cfg.pause_ns) {
		fprintf(stderr, "%s: --pause-every needs --pause-ms\n", prog_name);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	pthread_t *th;
	uint64_t t0;
	unsigned n, i;

	parse_args(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	if (report_open(cfg.out)) {
		fprintf(stderr, "%s: --out %s: cannot open for writing\n", prog_name, cfg.out);
		return 1;
	}
	n = cfg.concurrency < cfg.requests ? cfg.concurrency : cfg.requests;
	th = xcalloc(n, sizeof(*th));
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		if (pthread_create(&th[i], NULL, client_main, NULL)) {
			fprintf(stderr, "%s: cannot start worker %u\n", prog_name, i);
			break;
		}
	}
	for (unsigned k = 0; k < i; k++)
		pthread_join(th[k], NULL);
	free(th);
	return report_close(now_ns() - t0);
}
