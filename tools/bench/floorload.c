// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * floorload: load one program of floor.bpf.c, attach it, and consume its ring buffer the way
 * tokentrace does (epoll on the ring with a 20 ms timeout, then drain), until SIGINT/SIGTERM.
 *
 * stdout: {"type":"ready","t_ns":...} once attached (CLOCK_MONOTONIC, comparable with the
 * harness's exec time: a bare libbpf skeleton's startup), and at exit
 * {"type":"done","records":N,"drops":N,"hits":N}.
 */
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bench_util.h"
#include "events.h"
#include "floor.skel.h"

#define POLL_MS 20	/* tokentrace's */

static const char usage[] =
"Usage: floorload --prog PROG [OPTIONS]\n"
"Attach one floor program and consume its ring buffer like tokentrace, until SIGINT.\n"
"\n"
"  --prog P          filter | rb | copy (raw_tp/sock_send_length), sched (sched_switch\n"
"                    and sched_wakeup filters), uprobe_empty |\n"
"                    uprobe_rb (--binary, --symbol), usdt_empty | usdt_rb (--binary, --usdt)\n"
"  --pid PID[,PID]   target processes (the filter's bitmap; uprobes: the first one)\n"
"  --size N          bytes per traced send: records are header + min(N, capture)\n"
"                    (default 64)\n"
"  --capture N       capture size, as tokentrace's -s (default 4096)\n"
"  --ringbuf-mb N    ring buffer MiB (default 4)\n"
"  --wake-bytes N    force a wakeup when N bytes wait (default: a quarter of the ring,\n"
"                    as tokentrace; 0: default wakeup per record)\n"
"  --binary PATH     uprobe/USDT binary\n"
"  --symbol SYM      uprobe function\n"
"  --usdt PROV:NAME  USDT probe\n"
"  -v                libbpf's log\n";

static volatile sig_atomic_t exiting;
static bool verbose;
static uint64_t records, bytes;

static void on_signal(int sig)
{
	exiting = sig;
}

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list args)
{
	return verbose ? vfprintf(stderr, fmt, args) : 0;
}

static int on_record(void *ctx, void *data, size_t size)
{
	/* touch the record the way a decoder would: read its header */
	bytes += ((const struct tt_hdr *)data)->size;
	records++;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "prog", required_argument, NULL, 'P' },
		{ "pid", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 's' },
		{ "capture", required_argument, NULL, 'c' },
		{ "ringbuf-mb", required_argument, NULL, 'b' },
		{ "wake-bytes", required_argument, NULL, 'w' },
		{ "binary", required_argument, NULL, 'B' },
		{ "symbol", required_argument, NULL, 'S' },
		{ "usdt", required_argument, NULL, 'U' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *progname = NULL, *binary = NULL, *symbol = NULL, *usdt = NULL;
	uint64_t size = 64, capture = TT_CAP_DEFAULT, rb_mb = 4, wake = UINT64_MAX, v;
	uint32_t pids[16];
	int npids = 0, c, err = 0, epfd = -1;
	struct floor_bpf *skel = NULL;
	struct ring_buffer *rb = NULL;
	struct bpf_program *prog;
	struct bpf_link *link = NULL;
	struct epoll_event ev = { .events = EPOLLIN }, evs[1];
	char provider[64] = "", name[64] = "";
	uint64_t t_ready;
	struct bpf_link *link2 = NULL;
	char full[32];
	bool marker, sched;

	while ((c = getopt_long(argc, argv, "hv", opts, NULL)) != -1) {
		switch (c) {
		case 'P':
			progname = optarg;
			break;
		case 'p': {
			char *save = NULL, *tok, buf[256];

			snprintf(buf, sizeof(buf), "%s", optarg);
			for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				if (npids == 16 || bu_parse_u64(tok, 1, 0x3fffffff, &v))
					BU_DIE("floorload: bad --pid '%s'", optarg);
				pids[npids++] = v;
			}
			break;
		}
		case 's':
			if (bu_parse_u64(optarg, 1, 1 << 30, &size))
				BU_DIE("floorload: bad --size '%s'", optarg);
			break;
		case 'c':
			if (bu_parse_u64(optarg, 1, TT_CAP_MAX, &capture))
				BU_DIE("floorload: bad --capture '%s'", optarg);
			break;
		case 'b':
			if (bu_parse_u64(optarg, 1, 1024, &rb_mb) || (rb_mb & (rb_mb - 1)))
				BU_DIE("floorload: bad --ringbuf-mb '%s'", optarg);
			break;
		case 'w':
			if (bu_parse_u64(optarg, 0, 1ull << 40, &wake))
				BU_DIE("floorload: bad --wake-bytes '%s'", optarg);
			break;
		case 'B':
			binary = optarg;
			break;
		case 'S':
			symbol = optarg;
			break;
		case 'U':
			usdt = optarg;
			if (sscanf(optarg, "%63[^:]:%63s", provider, name) != 2)
				BU_DIE("floorload: --usdt wants PROVIDER:NAME");
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (!progname)
		BU_DIE("floorload: which --prog? (see --help)");
	if (wake == UINT64_MAX)
		wake = (rb_mb << 20) / 4;
	libbpf_set_print(print_libbpf);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	skel = floor_bpf__open();
	if (!skel)
		BU_DIE("floorload: opening the BPF object failed: %s", strerror(errno));
	marker = !strncmp(progname, "uprobe", 6) || !strncmp(progname, "usdt", 4);
	sched = !strcmp(progname, "sched");
	snprintf(full, sizeof(full), "%s%s", marker ? "" : "floor_", sched ? "switch" : progname);
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog, false);
	prog = bpf_object__find_program_by_name(skel->obj, full);
	if (!prog)
		BU_DIE("floorload: no program '%s' (see --help)", progname);
	if (sched)
		bpf_program__set_autoload(skel->progs.floor_wakeup, true);
	bpf_program__set_autoload(prog, true);
	if (marker) {
#ifdef TT_KEY_MAX
		skel->rodata->rec_size = sizeof(struct tt_marker_ev);
#else
		skel->rodata->rec_size = 112;	/* tokentrace's marker record */
#endif
	} else {
		v = size < capture ? size : capture;
		skel->rodata->rec_size = sizeof(struct tt_data_ev) + v;
		skel->rodata->copy_bytes = v;
	}
	skel->rodata->wake_bytes = wake;
	bpf_map__set_max_entries(skel->maps.events, rb_mb << 20);
	err = floor_bpf__load(skel);
	if (err)
		BU_DIE("floorload: loading failed: %s", strerror(-err));
	for (int i = 0; i < npids; i++)
		if (pids[i] < TT_TGT_PID_LIMIT)
			skel->bss->target_bits[TT_TGT_WORD(pids[i])] |=
				(uint64_t)TT_TGT_DATA << TT_TGT_SHIFT(pids[i]);
	if (!strncmp(progname, "uprobe", 6)) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = symbol);

		if (!binary || !symbol)
			BU_DIE("floorload: uprobes need --binary and --symbol");
		link = bpf_program__attach_uprobe_opts(prog, npids ? (pid_t)pids[0] : -1, binary, 0,
						       &uo);
	} else if (!strncmp(progname, "usdt", 4)) {
		if (!binary || !usdt)
			BU_DIE("floorload: USDT needs --binary and --usdt");
		link = bpf_program__attach_usdt(prog, npids ? (pid_t)pids[0] : -1, binary, provider,
						name, NULL);
	} else {
		link = bpf_program__attach(prog);
		if (link && sched && !(link2 = bpf_program__attach(skel->progs.floor_wakeup)))
			link = NULL;
	}
	if (!link)
		BU_DIE("floorload: attaching %s failed: %s", progname, strerror(errno));

	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_record, NULL, NULL);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!rb || epfd < 0)
		BU_DIE("floorload: ring buffer: %s", strerror(errno));
	ev.data.fd = ring_buffer__epoll_fd(rb);
	epoll_ctl(epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	t_ready = bu_now_ns();
	printf("{\"type\":\"ready\",\"t_ns\":%llu,\"prog\":\"%s\",\"rec_size\":%u}\n",
	       (unsigned long long)t_ready, progname, skel->rodata->rec_size);
	fflush(stdout);

	while (!exiting) {
		if (epoll_wait(epfd, evs, 1, POLL_MS) < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		ring_buffer__consume(rb);
	}
	ring_buffer__consume(rb);
	printf("{\"type\":\"done\",\"records\":%llu,\"bytes\":%llu,\"drops\":%llu,\"hits\":%llu}\n",
	       (unsigned long long)records, (unsigned long long)bytes,
	       (unsigned long long)skel->bss->drops,
	       (unsigned long long)skel->bss->hits);
	fflush(stdout);
	close(epfd);
	ring_buffer__free(rb);
	bpf_link__destroy(link2);
	bpf_link__destroy(link);
	floor_bpf__destroy(skel);
	return err ? 1 : 0;
}
