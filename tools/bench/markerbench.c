// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * markerbench: what a uprobe or USDT marker hit costs the traced thread.
 *
 * Every iteration of the timed loop passes three markers, like tokensim's markers_token():
 *   - USDT markerbench:token (a nop in place, arguments in registers),
 *   - mb_token(), a function with a real frame (push %rbp first: x86 uprobes emulate it),
 *     the shape of tokensim_token (same marker.h),
 *   - mb_token_ss(), whose first instruction is a mov: the uprobe must single-step it.
 * A harness attaches to one of them per run and compares ns per iteration with a run where
 * nothing is attached.
 */
#include <getopt.h>
#include <stdbool.h>
#include <unistd.h>
#include <sys/sdt.h>
#include "bench_util.h"
#include "marker.h"

static const char usage[] =
"Usage: markerbench [--count N] [--cpu C] [--wait]\n"
"Time a loop passing USDT markerbench:token, mb_token() and mb_token_ss() (one JSON line).\n"
"\n"
"  --count N   iterations (default 100000)\n"
"  --cpu C     pin the loop\n"
"  --wait      print 'pid PID' and wait for a line on stdin before the loop\n";

MARKER_FN void mb_token(uint64_t req_num, const char *request_id, uint32_t index)
{
	MARKER_BODY3(req_num, request_id, index);
}

/* starts with an instruction x86 uprobes cannot emulate: executed out of line, single-stepped */
void mb_token_ss(uint64_t req_num, const char *request_id, uint32_t index);
asm(".text\n"
    ".globl mb_token_ss\n"
    ".type mb_token_ss, @function\n"
    "mb_token_ss:\n"
    "	movq %rdi, %rax\n"
    "	ret\n"
    ".size mb_token_ss, .-mb_token_ss\n");

#define BATCH 1000

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "count", required_argument, NULL, 'n' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "wait", no_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t count = 100000, cpu = UINT64_MAX, total = 0, nb;
	const char *id = "mb-request-0001";
	bool wait = false;
	char line[64];
	double *per;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (bu_parse_u64(optarg, BATCH, 1ull << 32, &count))
				BU_DIE("markerbench: bad --count '%s' (>= %d)", optarg, BATCH);
			break;
		case 'c':
			if (bu_parse_u64(optarg, 0, CPU_SETSIZE - 1, &cpu))
				BU_DIE("markerbench: bad --cpu '%s'", optarg);
			break;
		case 'W':
			wait = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (cpu != UINT64_MAX && bu_pin(cpu))
		BU_DIE("markerbench: cannot pin to CPU %llu", (unsigned long long)cpu);
	nb = count / BATCH;
	per = calloc(nb, sizeof(*per));
	if (!per)
		BU_DIE("markerbench: out of memory");
	if (wait) {
		printf("pid %d\n", getpid());
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			BU_DIE("markerbench: no go line on stdin");
	}
	for (uint64_t b = 0; b < nb; b++) {
		uint64_t t0 = bu_now_ns(), t1;

		for (uint32_t i = 0; i < BATCH; i++) {
			uint64_t req = b * BATCH + i;

			STAP_PROBE3(markerbench, token, req, id, i);
			mb_token(req, id, i);
			mb_token_ss(req, id, i);
		}
		t1 = bu_now_ns();
		total += t1 - t0;
		per[b] = (double)(t1 - t0) / BATCH;
	}
	qsort(per, nb, sizeof(*per), cmp_double);
	printf("{\"count\":%llu,\"ns_per_iter\":%.1f,\"ns_per_iter_med\":%.1f}\n",
	       (unsigned long long)(nb * BATCH), (double)total / (nb * BATCH), per[nb / 2]);
	free(per);
	return 0;
}
