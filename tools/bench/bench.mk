# Benchmarks: included by the top-level Makefile (make bench; method and results in
# BENCHMARKS.md).
#
#   .output/bench/sendbench     ns per send() of SSE events on a loopback TCP connection
#   .output/bench/floorload     floor programs (filter, reserve+submit, direct copy, marker
#                               probes) with their own libbpf loader and ring consumer
#   .output/bench/ringfeed      synthetic records into tokentrace's own ring buffer, at a set
#                               rate: the consumer-capacity bench
#   .output/bench/markerbench   a loop calling a marker function and a USDT probe
#   .output/bench/ctxbench      pipe ping-pong on one CPU: the price of a context switch;
#                               --syscall: getppid(2) in a loop, the price of a syscall
#   tools/bench/bench.py        the driver: A/B interleaved runs, medians, ratios, table
#   tools/bench/bpfprof.py      where a loaded BPF program's time goes, by source line (perf
#                               samples mapped through the kernel's JIT line table)
#
# BENCH_ARGS passes options to the driver, e.g. make bench BENCH_ARGS="--reps 3 --only send".

BENCH_OUT := $(OUTPUT)/bench
BENCH_DIR := tools/bench
BENCH_CFLAGS := -g -O2 -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter \
	-I$(BENCH_OUT) -Ibpf -I$(BENCH_DIR) -MMD -MP
# static libbpf as tokentrace links it, nothing else of tokentrace's
BENCH_LDLIBS := $(LIBBPF_A) -lelf -lz
BENCH_BINS := $(addprefix $(BENCH_OUT)/,sendbench floorload ringfeed markerbench ctxbench)
BENCH_ARGS ?=

.PHONY: bench-bins

bench-bins: $(BENCH_BINS)

$(BENCH_OUT):
	$(Q)mkdir -p $@

$(BENCH_OUT)/%.bpf.o: $(BENCH_DIR)/%.bpf.c bpf/events.h bpf/lib/ring.bpf.h bpf/lib/targets.bpf.h $(BENCH_DIR)/ringfeed.h | $(BENCH_OUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp
	$(Q)rm -f $@.tmp

$(BENCH_OUT)/%.skel.h: $(BENCH_OUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(BENCH_OUT)/sendbench $(BENCH_OUT)/ctxbench: $(BENCH_OUT)/%: $(BENCH_DIR)/%.c \
		$(BENCH_DIR)/bench_util.h | $(BENCH_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(BENCH_CFLAGS) $< -o $@

# the marker functions must look like tokensim's (a real frame): same marker.h
$(BENCH_OUT)/markerbench: $(BENCH_DIR)/markerbench.c $(BENCH_DIR)/bench_util.h | $(BENCH_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(BENCH_CFLAGS) -fno-omit-frame-pointer -I$(TS_DIR) $< -o $@

$(BENCH_OUT)/floorload: $(BENCH_DIR)/floorload.c $(BENCH_OUT)/floor.skel.h $(BENCH_DIR)/bench_util.h
	$(call msg,CC,$@)
	$(Q)$(CC) $(BENCH_CFLAGS) $< $(BENCH_LDLIBS) -o $@

$(BENCH_OUT)/ringfeed: $(BENCH_DIR)/ringfeed.c $(BENCH_DIR)/ringfeed.h $(BENCH_OUT)/ringfeed.skel.h \
		$(BENCH_DIR)/bench_util.h
	$(call msg,CC,$@)
	$(Q)$(CC) $(BENCH_CFLAGS) $< $(BENCH_LDLIBS) -o $@

# header dependencies: the top-level Makefile includes $(OUTPUT)/*/*.d
