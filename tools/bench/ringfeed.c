// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ringfeed: how many records per second tokentrace's consumer (one thread: decode, HTTP/SSE
 * parsing, correlation, JSON output) keeps up with, and what it reports past that.
 *
 * Real sends cannot produce 1M records/s on a 2-vCPU machine (a traced send costs ~5 us), so
 * records are synthesized: a script of the records tokentrace's kernel side writes for a
 * server streaming OpenAI chat completions (the bytes tokensim sends: connections accepted,
 * requests read, headers, one ~190-byte SSE chunk per token, finish/[DONE]/terminator,
 * closes) is replayed by a BPF program (ringfeed.bpf.c) into the ring buffer of a running
 * tokentrace, found through /proc/PID/fdinfo and reused by map id. tokentrace consumes them
 * exactly as it consumes its own. Offered rates are stepped; per step: records produced,
 * dropped (ring full), the consumer's CPU time, and forced wakeups.
 *
 * stdout: one JSON line per step, then a total line.
 */
#include <dirent.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bench_util.h"
#include "events.h"
#include "ringfeed.h"
#include "ringfeed.skel.h"

static const char usage[] =
"Usage: ringfeed --tt-pid PID --target-pid PID [OPTIONS]\n"
"Replay synthetic server records into a running tokentrace's ring buffer at set rates.\n"
"\n"
"  --tt-pid PID      the tokentrace process (its ring buffer and stats map are reused)\n"
"  --target-pid PID  the process tokentrace traces (records carry its pid)\n"
"  --rates R,R,...   offered records/s per step; 'max' = as fast as possible\n"
"                    (default 250000,500000,1000000,2000000,max)\n"
"  --step-s S        seconds per step (default 2)\n"
"  --conns N         concurrent streams in the script (default 32)\n"
"  --tokens N        tokens per response (default 64)\n"
"  --requests N      requests per connection before it closes (default 2)\n"
"  --cpu C           pin the producer\n"
"  --wake-bytes N    forced-wakeup threshold (default: a quarter of the ring, as tokentrace)\n"
"  --wake-once       tokentrace's wakeup policy (bpf/rbwake.bpf.h: the backlog looked at\n"
"                    once per quarter --wake-bytes produced, at most one forced wakeup per\n"
"                    --wake-bytes); default: one per record while the threshold is exceeded\n";

#define BATCH_MAX	512
#define DRAIN_MS	300	/* after each step: let the consumer empty the ring */

static struct {
	uint32_t tt_pid, target_pid;
	uint64_t rates[16];
	int nrates;
	uint64_t step_ms, conns, tokens, requests, wake;
	int cpu;
	bool wake_once;
} o = { .step_ms = 2000, .conns = 32, .tokens = 64, .requests = 2, .wake = UINT64_MAX,
	.cpu = -1 };

static struct rf_slot *slots;
static uint32_t nslots, nslots_max;

/* ------------------------------------------------------------------ the script */

static struct rf_slot *slot_new(uint16_t type, uint32_t conn)
{
	struct rf_slot *s;

	if (nslots == nslots_max) {
		nslots_max = nslots_max ? 2 * nslots_max : 1024;
		slots = realloc(slots, nslots_max * sizeof(*slots));
		if (!slots)
			BU_DIE("ringfeed: out of memory");
	}
	s = &slots[nslots++];
	memset(s, 0, sizeof(*s));
	s->type = type;
	s->conn = conn;
	return s;
}

static void hdr(struct tt_hdr *h, uint16_t type, uint16_t size)
{
	h->tgid = o.target_pid;
	h->tid = o.target_pid;
	h->type = type;
	h->size = size;
}

static void add_conn(uint32_t c)
{
	struct rf_slot *s = slot_new(TT_EV_CONN, c);
	struct tt_conn_ev *e = (struct tt_conn_ev *)s->data;
	uint32_t lo = htonl(INADDR_LOOPBACK);

	hdr(&e->h, TT_EV_CONN, sizeof(*e));
	e->sk = 0xffff888000000000ull + c * 4096;	/* never looked up: no ignore_conn */
	e->family = 2;	/* AF_INET */
	e->lport = 8000;
	e->rport = 40000 + c;
	e->flags = TT_CF_ACCEPTED;
	e->fd = 10 + c;
	memcpy(e->laddr, &lo, 4);
	memcpy(e->raddr, &lo, 4);
	snprintf(e->comm, sizeof(e->comm), "ringfeed-srv");
	s->len = sizeof(*e);
}

static void add_data(uint32_t c, uint8_t dir, const char *bytes, size_t n)
{
	struct rf_slot *s = slot_new(TT_EV_DATA, c);
	struct tt_data_ev *e = (struct tt_data_ev *)s->data;

	if (sizeof(*e) + n >= RF_SLOT_DATA)
		BU_DIE("ringfeed: record too large");
	hdr(&e->h, TT_EV_DATA, sizeof(*e) + n);
	e->ret = n;
	e->cap = n;
	e->dir = dir;
	e->sysnr = dir == TT_DIR_SEND ? 1 : 0;	/* write / read */
	memcpy(e->data, bytes, n);
	s->len = sizeof(*e) + n;
}

static void add_state(uint32_t c, int newstate)
{
	struct rf_slot *s = slot_new(TT_EV_STATE, c);
	struct tt_state_ev *e = (struct tt_state_ev *)s->data;

	hdr(&e->h, TT_EV_STATE, sizeof(*e));
	e->oldstate = 1;	/* TCP_ESTABLISHED */
	e->newstate = newstate;
	s->len = sizeof(*e);
}

/* an SSE event as one HTTP chunk, the bytes tokensim writes for openai-chat */
static size_t chunk(char *buf, size_t sz, const char *data)
{
	return snprintf(buf, sz, "%zx\r\n%s\r\n", strlen(data), data);
}

/*
 * One loop: every connection accepted; then, requests times: every connection reads a
 * request, sends headers, then the token chunks go out round-robin (a batch of streams
 * decoded together), then each sends its finish chunk, [DONE] and terminator; then all close.
 */
static uint64_t build_script(void)
{
	char body[256], req[1024], ev[512], data[400], buf[1024];
	size_t n;

	for (uint32_t c = 0; c < o.conns; c++)
		add_conn(c);
	for (uint32_t q = 0; q < o.requests; q++) {
		for (uint32_t c = 0; c < o.conns; c++) {
			snprintf(body, sizeof(body), "{\"model\":\"m\",\"stream\":true,\"max_tokens\":%llu,"
				 "\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}",
				 (unsigned long long)o.tokens);
			n = snprintf(req, sizeof(req), "POST /v1/chat/completions HTTP/1.1\r\n"
				     "Host: 127.0.0.1:8000\r\nContent-Type: application/json\r\n"
				     "X-Request-Id: rf-%u-%u\r\nContent-Length: %zu\r\n\r\n%s",
				     c, q, strlen(body), body);
			add_data(c, TT_DIR_RECV, req, n);
		}
		for (uint32_t c = 0; c < o.conns; c++) {
			n = snprintf(buf, sizeof(buf), "HTTP/1.1 200 OK\r\nserver: tokensim\r\n"
				     "content-type: text/event-stream; charset=utf-8\r\n"
				     "x-request-id: rf-%u-%u\r\ntransfer-encoding: chunked\r\n\r\n", c, q);
			add_data(c, TT_DIR_SEND, buf, n);
		}
		for (uint32_t t = 0; t < o.tokens; t++) {
			for (uint32_t c = 0; c < o.conns; c++) {
				snprintf(data, sizeof(data), "data: {\"id\":\"chatcmpl-rf-%u-%u\",\"object\":"
					 "\"chat.completion.chunk\",\"created\":1796230185,\"model\":\"m\","
					 "\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok%u\"},"
					 "\"logprobs\":null,\"finish_reason\":null}]}\n\n", c, q, t);
				n = chunk(ev, sizeof(ev), data);
				add_data(c, TT_DIR_SEND, ev, n);
			}
		}
		for (uint32_t c = 0; c < o.conns; c++) {
			snprintf(data, sizeof(data), "data: {\"id\":\"chatcmpl-rf-%u-%u\",\"object\":"
				 "\"chat.completion.chunk\",\"created\":1796230185,\"model\":\"m\","
				 "\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,"
				 "\"finish_reason\":\"stop\"}]}\n\n", c, q);
			n = chunk(buf, sizeof(buf), data);
			n += chunk(buf + n, sizeof(buf) - n, "data: [DONE]\n\n");
			n += snprintf(buf + n, sizeof(buf) - n, "0\r\n\r\n");
			add_data(c, TT_DIR_SEND, buf, n);
		}
	}
	for (uint32_t c = 0; c < o.conns; c++)
		add_state(c, 7);	/* TCP_CLOSE */
	return o.conns * o.requests;
}

/* ------------------------------------------------------------------ tokentrace's maps */

/* fd of tokentrace's map with this type and name, through /proc/PID/fdinfo and its id */
static int find_map(uint32_t pid, uint32_t type, const char *name, struct bpf_map_info *out)
{
	char path[320], line[256];
	struct dirent *de;
	DIR *d;
	int found = -1;

	snprintf(path, sizeof(path), "/proc/%u/fdinfo", pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while (found < 0 && (de = readdir(d))) {
		unsigned int id = 0, mtype = ~0u;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%u/fdinfo/%s", pid, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			sscanf(line, "map_type: %u", &mtype);
			sscanf(line, "map_id: %u", &id);
		}
		fclose(f);
		if (mtype == type && id) {
			struct bpf_map_info info = {};
			__u32 len = sizeof(info);
			int fd = bpf_map_get_fd_by_id(id);

			if (fd < 0)
				continue;
			if (!bpf_obj_get_info_by_fd(fd, &info, &len) && !strcmp(info.name, name)) {
				*out = info;
				found = fd;
			} else {
				close(fd);
			}
		}
	}
	closedir(d);
	return found;
}

static uint64_t task_cpu_ns(uint32_t pid)
{
	char path[320];
	struct dirent *de;
	uint64_t sum = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		unsigned long long ns;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%u/task/%s/schedstat", pid, de->d_name);
		f = fopen(path, "r");
		if (f && fscanf(f, "%llu", &ns) == 1)
			sum += ns;
		if (f)
			fclose(f);
	}
	closedir(d);
	return sum;
}

/* ------------------------------------------------------------------ producing */

static int prog_fd;
static uint64_t seq;

static void feed(uint64_t n)
{
	__u64 args[2] = { seq, n };
	LIBBPF_OPTS(bpf_test_run_opts, t, .ctx_in = args, .ctx_size_in = sizeof(args));
	int err = bpf_prog_test_run_opts(prog_fd, &t);

	if (err)
		BU_DIE("ringfeed: BPF_PROG_TEST_RUN failed: %s", strerror(-err));
	seq += n;
}

/* produce at rate (0: flat out) for dur_ns */
static void run_step(uint64_t rate, uint64_t dur_ns)
{
	uint64_t t0 = bu_now_ns(), start = seq, now;

	while ((now = bu_now_ns()) - t0 < dur_ns) {
		uint64_t due, n;

		if (!rate) {
			feed(BATCH_MAX);
			continue;
		}
		due = start + (uint64_t)((double)rate * (now - t0) / 1e9);
		if (due > seq) {
			n = due - seq;
			feed(n > BATCH_MAX ? BATCH_MAX : n);
			continue;
		}
		/* next batch of 64 is due at: */
		bu_sleep_until(t0 + (uint64_t)((seq + 64 - start) * 1e9 / rate));
	}
}

static int parse_rates(const char *arg)
{
	char buf[256], *save = NULL, *tok;
	uint64_t v;

	snprintf(buf, sizeof(buf), "%s", arg);
	o.nrates = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (o.nrates == 16)
			return -EINVAL;
		if (!strcmp(tok, "max"))
			v = 0;
		else if (bu_parse_u64(tok, 1, 100000000, &v))
			return -EINVAL;
		o.rates[o.nrates++] = v;
	}
	return o.nrates ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "tt-pid", required_argument, NULL, 'T' },
		{ "target-pid", required_argument, NULL, 't' },
		{ "rates", required_argument, NULL, 'r' },
		{ "step-s", required_argument, NULL, 's' },
		{ "conns", required_argument, NULL, 'c' },
		{ "tokens", required_argument, NULL, 'k' },
		{ "requests", required_argument, NULL, 'q' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "wake-bytes", required_argument, NULL, 'w' },
		{ "wake-once", no_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bpf_map_info rb_info = {}, st_info = {};
	struct ringfeed_bpf *skel;
	uint64_t v, reqs_per_loop, tot_prod = 0, tot_drop = 0;
	int c, rb_fd, st_fd, err;

	parse_rates("250000,500000,1000000,2000000,max");
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'T':
		case 't':
			if (bu_parse_u64(optarg, 1, 0x3fffffff, &v))
				BU_DIE("ringfeed: bad PID '%s'", optarg);
			*(c == 'T' ? &o.tt_pid : &o.target_pid) = v;
			break;
		case 'r':
			if (parse_rates(optarg))
				BU_DIE("ringfeed: bad --rates '%s'", optarg);
			break;
		case 's': {
			double s = atof(optarg);

			if (s <= 0 || s > 600)
				BU_DIE("ringfeed: bad --step-s '%s'", optarg);
			o.step_ms = s * 1000;
			break;
		}
		case 'c':
			if (bu_parse_u64(optarg, 1, RF_CONNS_MAX, &o.conns))
				BU_DIE("ringfeed: bad --conns '%s'", optarg);
			break;
		case 'k':
			if (bu_parse_u64(optarg, 1, 100000, &o.tokens))
				BU_DIE("ringfeed: bad --tokens '%s'", optarg);
			break;
		case 'q':
			if (bu_parse_u64(optarg, 1, 1000, &o.requests))
				BU_DIE("ringfeed: bad --requests '%s'", optarg);
			break;
		case 'C':
			if (bu_parse_u64(optarg, 0, CPU_SETSIZE - 1, &v))
				BU_DIE("ringfeed: bad --cpu '%s'", optarg);
			o.cpu = v;
			break;
		case 'w':
			if (bu_parse_u64(optarg, 0, 1ull << 40, &o.wake))
				BU_DIE("ringfeed: bad --wake-bytes '%s'", optarg);
			break;
		case 'O':
			o.wake_once = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (!o.tt_pid || !o.target_pid)
		BU_DIE("ringfeed: --tt-pid and --target-pid are required (see --help)");
	bu_pin(o.cpu);
	reqs_per_loop = build_script();

	rb_fd = find_map(o.tt_pid, BPF_MAP_TYPE_RINGBUF, "events", &rb_info);
	st_fd = find_map(o.tt_pid, BPF_MAP_TYPE_PERCPU_ARRAY, "stats", &st_info);
	if (rb_fd < 0 || st_fd < 0)
		BU_DIE("ringfeed: no ring buffer 'events' / per-CPU array 'stats' in PID %u's BPF maps",
		       o.tt_pid);
	if (st_info.max_entries < TT_STAT_NR)
		BU_DIE("ringfeed: PID %u's stats map has %u entries, events.h says %d", o.tt_pid,
		       st_info.max_entries, TT_STAT_NR);
	skel = ringfeed_bpf__open();
	if (!skel)
		BU_DIE("ringfeed: opening the BPF object failed: %s", strerror(errno));
	if ((err = bpf_map__reuse_fd(skel->maps.events, rb_fd)) ||
	    (err = bpf_map__reuse_fd(skel->maps.stats, st_fd)))
		BU_DIE("ringfeed: reusing tokentrace's maps failed: %s", strerror(-err));
	bpf_map__set_max_entries(skel->maps.script, nslots);
	skel->rodata->nslots = nslots;
	skel->rodata->nconns = o.conns;
	skel->rodata->wake_bytes = o.wake == UINT64_MAX ? rb_info.max_entries / 4 : o.wake;
	skel->rodata->wake_once = o.wake_once;
	err = ringfeed_bpf__load(skel);
	if (err)
		BU_DIE("ringfeed: loading failed: %s", strerror(-err));
	for (uint32_t i = 0; i < nslots; i++) {
		err = bpf_map__update_elem(skel->maps.script, &i, sizeof(i), &slots[i],
					   sizeof(slots[i]), BPF_ANY);
		if (err)
			BU_DIE("ringfeed: filling the script failed: %s", strerror(-err));
	}
	prog_fd = bpf_program__fd(skel->progs.feed);

	for (int i = 0; i < o.nrates; i++) {
		uint64_t p0 = skel->bss->produced, d0 = skel->bss->dropped, w0 = skel->bss->wakeups;
		uint64_t c0 = task_cpu_ns(o.tt_pid), t0 = bu_now_ns(), t1, prod, drop, cpu;

		run_step(o.rates[i], o.step_ms * 1000000ull);
		t1 = bu_now_ns();
		usleep(DRAIN_MS * 1000);
		prod = skel->bss->produced - p0;
		drop = skel->bss->dropped - d0;
		cpu = task_cpu_ns(o.tt_pid) - c0;
		tot_prod += prod;
		tot_drop += drop;
		printf("{\"type\":\"step\",\"rate\":%llu,\"seconds\":%.3f,\"offered_per_s\":%.0f,"
		       "\"produced\":%llu,\"dropped\":%llu,\"delivered_per_s\":%.0f,"
		       "\"consumer_cpu_s\":%.4f,\"consumer_ns_per_record\":%.1f,\"forced_wakeups\":%llu}\n",
		       (unsigned long long)o.rates[i], (t1 - t0) / 1e9,
		       (prod + drop) / ((t1 - t0) / 1e9), (unsigned long long)prod,
		       (unsigned long long)drop, prod / ((t1 - t0) / 1e9), cpu / 1e9,
		       prod ? (double)cpu / prod : 0.0,
		       (unsigned long long)(skel->bss->wakeups - w0));
		fflush(stdout);
	}
	/* finish the script's current loop slowly, so every started request can complete */
	{
		uint64_t p0 = skel->bss->produced, d0 = skel->bss->dropped;

		while (seq % nslots) {
			uint64_t n = nslots - seq % nslots;

			feed(n > 64 ? 64 : n);
			usleep(200);
		}
		usleep(DRAIN_MS * 1000);
		tot_prod += skel->bss->produced - p0;
		tot_drop += skel->bss->dropped - d0;
	}
	printf("{\"type\":\"total\",\"records\":%llu,\"produced\":%llu,\"dropped\":%llu,"
	       "\"script_records\":%u,\"loops\":%llu,\"requests\":%llu,\"tokens\":%llu}\n",
	       (unsigned long long)seq, (unsigned long long)tot_prod, (unsigned long long)tot_drop,
	       nslots, (unsigned long long)(seq / nslots),
	       (unsigned long long)(seq / nslots * reqs_per_loop),
	       (unsigned long long)(seq / nslots * reqs_per_loop * o.tokens));
	ringfeed_bpf__destroy(skel);
	free(slots);
	return 0;
}
