// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sendbench: the cost of one send() on a loopback TCP connection, as a token-streaming server
 * pays it, with or without a tracer attached.
 *
 * The process is an HTTP/1.1 server with one client (a forked child, pinned to another CPU,
 * that sends a request and reads the whole response before sending the next). Each response
 * is a chunked SSE stream of --per-response events of exactly --size bytes each, one send()
 * per event, so a tracer that parses HTTP sees a real server connection and keeps capturing
 * it. Only the event sends are timed (clock read before the first and after the last send of
 * each response); request reads, headers and tails are not.
 *
 * Output, one JSON line: ns_per_send (mean over every timed send: tail costs such as a wakeup
 * storm count), ns_per_send_med (median of the per-response means), and the sending thread's
 * user/system CPU over the timed part.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bench_util.h"

static const char usage[] =
"Usage: sendbench [OPTIONS]\n"
"Time send() of SSE events on a loopback TCP connection (one JSON line on stdout).\n"
"\n"
"  --size N          bytes per send, chunk framing included (default 64, 56..16384)\n"
"  --sends N         timed sends (default 200000)\n"
"  --per-response E  sends per HTTP response (default 100)\n"
"  --warmup R        untimed responses first (default 20)\n"
"  --cpu C           pin the sender (default: not pinned)\n"
"  --reader-cpu C    pin the reading child (default: not pinned)\n"
"  --wake-per-send   the reader wakes at every send (default: once per response,\n"
"                    with SO_RCVLOWAT, as if the client were on another machine;\n"
"                    only up to 256 sends per response)\n"
"  --gap-us N        sleep N us after each send: a steady trickle of sends for tests\n"
"                    that need a probe to fire (timings are then meaningless)\n"
"  --wait            print 'pid PID' and wait for a line on stdin before sending\n"
"  -h, --help        this text\n";

#define BODY	"{\"model\":\"sendbench\",\"stream\":true," \
		"\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
#define HEADERS	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" \
		"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
#define DONE_DATA "data: [DONE]\n\n"
#define EV_PREFIX "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\""
#define EV_SUFFIX "\"}}]}\n\n"

static struct {
	uint64_t size, sends, per_resp, warmup;
	int cpu, reader_cpu;
	uint64_t gap_us;
	bool wait, lowat;
} o = { .size = 64, .sends = 200000, .per_resp = 100, .warmup = 20, .cpu = -1,
	.reader_cpu = -1, .lowat = true };

static size_t req_len(void)
{
	char buf[512];

	return snprintf(buf, sizeof(buf),
			"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
			"Content-Type: application/json\r\nX-Request-Id: sb-%08u\r\n"
			"Content-Length: %zu\r\n\r\n%s", 0u, strlen(BODY), BODY);
}

/*
 * One chunk of exactly size bytes: "<hex>\r\n" data "\r\n", data an SSE content event padded
 * with 'x'. The chunk size takes the fewest hex digits that fit, zero-padded where no width
 * fits exactly (RFC 9112 allows leading zeros).
 */
static void build_event(char *buf, size_t size)
{
	size_t fixed = strlen(EV_PREFIX) + strlen(EV_SUFFIX), data = 0, hex, n;
	char head[16];

	for (hex = 1; hex <= 5; hex++) {
		data = size - hex - 4;
		if (hex == 5 || (size_t)snprintf(head, sizeof(head), "%zx", data) == hex)
			break;
	}
	if (size < hex + 4 + fixed + 1)
		BU_DIE("sendbench: --size %zu is too small for an SSE chunk", size);
	n = sprintf(buf, "%0*zx\r\n", (int)hex, data);
	memcpy(buf + n, EV_PREFIX, strlen(EV_PREFIX));
	n += strlen(EV_PREFIX);
	memset(buf + n, 'x', data - fixed);
	n += data - fixed;
	n += sprintf(buf + n, "%s\r\n", EV_SUFFIX);
	if (n != size)
		BU_DIE("sendbench: internal error: event is %zu bytes, not %zu", n, size);
}

static void tail_chunk(char *buf, size_t sz)
{
	snprintf(buf, sz, "%zx\r\n%s\r\n0\r\n\r\n", strlen(DONE_DATA), DONE_DATA);
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, 0);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			BU_DIE("sendbench: send: %s", strerror(errno));
		}
		p += w;
		n -= w;
	}
}

static void read_exact(int fd, char *buf, size_t bufsz, size_t n)
{
	while (n) {
		ssize_t r = recv(fd, buf, n < bufsz ? n : bufsz, 0);

		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			BU_DIE("sendbench: recv: %s", r ? strerror(errno) : "connection closed");
		}
		n -= r;
	}
}

static void reader(uint16_t port, uint64_t responses, size_t resp_bytes)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	static char buf[1 << 16];
	char req[512];
	int fd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);	/* never outlive the sender */
	if (getppid() == 1)
		_exit(1);
	bu_pin(o.reader_cpu);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
		BU_DIE("sendbench: connect: %s", strerror(errno));
	/*
	 * Wake up once per response, not per send: the sender then pays for a send what it pays
	 * to a client on another machine, not for waking its loopback peer on another CPU (~5 us
	 * on these VMs, and most of the noise).
	 */
	if (o.lowat) {
		int lowat = resp_bytes;

		setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat));
	}
	for (uint64_t i = 0; i < responses; i++) {
		int n = snprintf(req, sizeof(req),
				 "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
				 "Content-Type: application/json\r\nX-Request-Id: sb-%08u\r\n"
				 "Content-Length: %zu\r\n\r\n%s", (unsigned)(i % 100000000), strlen(BODY),
				 BODY);

		write_all(fd, req, n);
		if (o.lowat) {
			/*
			 * poll() honours SO_RCVLOWAT as a whole; a recv() that already copied part of
			 * the response would wait for the low mark again and never wake up.
			 */
			struct pollfd pfd = { .fd = fd, .events = POLLIN };

			while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
				;
		}
		read_exact(fd, buf, sizeof(buf), resp_bytes);
	}
	close(fd);
	_exit(0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double tv_s(struct timeval tv)
{
	return tv.tv_sec + tv.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "sends", required_argument, NULL, 'n' },
		{ "per-response", required_argument, NULL, 'e' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "reader-cpu", required_argument, NULL, 'r' },
		{ "wait", no_argument, NULL, 'W' },
		{ "wake-per-send", no_argument, NULL, 'P' },
		{ "gap-us", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t slen = sizeof(sin);
	uint64_t v, responses, timed, total_ns = 0;
	size_t rlen = req_len(), resp_bytes;
	char *ev, tail[64], req[512], line[64];
	struct rusage ru0, ru1;
	double *per;
	int c, lfd, fd, one = 1, status;
	pid_t child;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (bu_parse_u64(optarg, 56, 16384, &o.size))
				BU_DIE("sendbench: bad --size '%s' (56..16384)", optarg);
			break;
		case 'n':
			if (bu_parse_u64(optarg, 1, 1ull << 32, &o.sends))
				BU_DIE("sendbench: bad --sends '%s'", optarg);
			break;
		case 'e':
			if (bu_parse_u64(optarg, 1, 100000, &o.per_resp))
				BU_DIE("sendbench: bad --per-response '%s'", optarg);
			break;
		case 'w':
			if (bu_parse_u64(optarg, 0, 100000, &o.warmup))
				BU_DIE("sendbench: bad --warmup '%s'", optarg);
			break;
		case 'c':
		case 'r':
			if (bu_parse_u64(optarg, 0, CPU_SETSIZE - 1, &v))
				BU_DIE("sendbench: bad CPU '%s'", optarg);
			*(c == 'c' ? &o.cpu : &o.reader_cpu) = v;
			break;
		case 'W':
			o.wait = true;
			break;
		case 'P':
			o.lowat = false;
			break;
		case 'g':
			if (bu_parse_u64(optarg, 0, 1000000, &o.gap_us))
				BU_DIE("sendbench: bad --gap-us '%s'", optarg);
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	/*
	 * Each small send is its own skb of ~1 KiB truesize: past a few hundred of them waiting
	 * for the low mark, the receive buffer is full before the mark is reached and both ends
	 * wait forever. Long responses wake the reader per send instead.
	 */
	if (o.per_resp > 256)
		o.lowat = false;
	timed = (o.sends + o.per_resp - 1) / o.per_resp;
	responses = o.warmup + timed;
	ev = malloc(o.size + 1);
	per = calloc(timed, sizeof(*per));
	if (!ev || !per)
		BU_DIE("sendbench: out of memory");
	build_event(ev, o.size);
	tail_chunk(tail, sizeof(tail));
	resp_bytes = strlen(HEADERS) + o.per_resp * o.size + strlen(tail);

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&sin, &slen))
		BU_DIE("sendbench: listen: %s", strerror(errno));
	child = fork();
	if (child < 0)
		BU_DIE("sendbench: fork: %s", strerror(errno));
	if (!child) {
		close(lfd);
		reader(ntohs(sin.sin_port), responses, resp_bytes);
	}
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		BU_DIE("sendbench: accept: %s", strerror(errno));
	close(lfd);
	/* a server streaming tokens sets TCP_NODELAY (tokensim's default): one send, one segment */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (bu_pin(o.cpu))
		BU_DIE("sendbench: cannot pin to CPU %d", o.cpu);
	if (o.wait) {
		printf("pid %d\n", getpid());
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			BU_DIE("sendbench: no go line on stdin");
	}

	for (uint64_t r = 0; r < responses; r++) {
		uint64_t t0, t1;

		read_exact(fd, req, sizeof(req), rlen);
		write_all(fd, HEADERS, strlen(HEADERS));
		if (r == o.warmup)
			getrusage(RUSAGE_THREAD, &ru0);
		t0 = bu_now_ns();
		for (uint64_t i = 0; i < o.per_resp; i++) {
			if (send(fd, ev, o.size, 0) != (ssize_t)o.size)
				write_all(fd, ev, o.size);	/* never seen; keeps the stream valid */
			if (o.gap_us)
				usleep(o.gap_us);
		}
		t1 = bu_now_ns();
		if (r >= o.warmup) {
			total_ns += t1 - t0;
			per[r - o.warmup] = (double)(t1 - t0) / o.per_resp;
		}
		write_all(fd, tail, strlen(tail));
	}
	getrusage(RUSAGE_THREAD, &ru1);
	waitpid(child, &status, 0);
	close(fd);
	qsort(per, timed, sizeof(*per), cmp_double);
	printf("{\"size\":%zu,\"sends\":%zu,\"per_response\":%zu,\"ns_per_send\":%.1f,"
	       "\"ns_per_send_med\":%.1f,\"timed_s\":%.4f,\"user_s\":%.4f,\"sys_s\":%.4f}\n",
	       (size_t)o.size, (size_t)(timed * o.per_resp), (size_t)o.per_resp,
	       (double)total_ns / (timed * o.per_resp), per[timed / 2], total_ns / 1e9,
	       tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime), tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime));
	free(per);
	free(ev);
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : 1;
}
