# tokentrace: eBPF latency tracer for token-streaming servers.
#
#   make            build ./tokentrace and the test rig (tools/)
#   make test       install what is missing, build, run every test
#   make demo       install what is missing, build, trace tokensim under load
#   make bench      overhead benchmarks (see BENCHMARKS.md)
#   make vmlinux    regenerate vmlinux/x86/vmlinux.h from the running kernel
#   make install    PREFIX=/usr/local DESTDIR=
#   V=1             show commands

OUTPUT := .output
ARCH := x86
CLANG ?= clang
BPFTOOL ?= bpftool
CC ?= gcc
PREFIX ?= /usr/local
VERSION := 0.1.0

LIBBPF_A ?= $(firstword $(wildcard /usr/lib/$(shell $(CC) -dumpmachine)/libbpf.a /usr/lib64/libbpf.a /usr/lib/libbpf.a))

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: all clean test unit demo bench vmlinux install deps fuzz e2e

CFLAGS ?= -g -O2
TT_CFLAGS := $(CFLAGS) -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter \
	-I$(OUTPUT) -Ibpf -Iuser -DTT_VERSION=\"$(VERSION)\" -MMD -MP
# usdt.bpf.h includes <linux/errno.h>, whose <asm/...> lives in the multiarch include dir
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror -Ivmlinux/$(ARCH) -Ibpf \
	-idirafter /usr/include/$(shell $(CC) -dumpmachine)

# Userspace that touches libbpf (loader, main) is apart from the core: parsers, correlation,
# stats and outputs run unchanged in unit tests, fuzzers and replay.
USER_MAIN := user/tokentrace.c user/loader.c
USER_CORE := $(filter-out $(USER_MAIN),$(wildcard user/*.c))
CORE_OBJS := $(patsubst user/%.c,$(OUTPUT)/core/%.o,$(USER_CORE))
MAIN_OBJS := $(patsubst user/%.c,$(OUTPUT)/%.o,$(USER_MAIN))
# --metrics serves with libmicrohttpd, --top draws with ncursesw, recordings use zlib's CRC-32
CORE_LIBS := -lm -lelf -lz -lpthread $(shell pkg-config --libs ncursesw libmicrohttpd 2>/dev/null || \
	echo -lncursesw -ltinfo -lmicrohttpd)
LDLIBS := $(LIBBPF_A) -lelf -lz $(CORE_LIBS)

BPF_SRCS := $(wildcard bpf/*.bpf.c)
SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))

all: tokentrace tools

$(OUTPUT) $(OUTPUT)/core $(OUTPUT)/tests:
	$(Q)mkdir -p $@

$(OUTPUT)/%.bpf.o: bpf/%.bpf.c bpf/*.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp
	$(Q)rm -f $@.tmp

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(OUTPUT)/core/%.o: user/%.c | $(OUTPUT)/core
	$(call msg,CC,$@)
	$(Q)$(CC) $(TT_CFLAGS) -c $< -o $@

$(MAIN_OBJS): $(SKELS)
$(OUTPUT)/%.o: user/%.c | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TT_CFLAGS) -c $< -o $@

$(OUTPUT)/libttcore.a: $(CORE_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

tokentrace: $(MAIN_OBJS) $(OUTPUT)/libttcore.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(TT_CFLAGS) $^ $(LDLIBS) -o $@

vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/$(ARCH)/vmlinux.h

include tools/tools.mk
include tests/tests.mk
include tools/bench/bench.mk

deps:
	$(Q)tools/install-deps.sh

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tools/demo.sh

bench: deps
	$(Q)$(MAKE) --no-print-directory all bench-bins
	$(Q)python3 tools/bench/bench.py --build-dir $(OUTPUT) $(BENCH_ARGS)

install: tokentrace
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 0755 tokentrace $(DESTDIR)$(PREFIX)/sbin/tokentrace
	install -m 0644 docs/tokentrace.8 $(DESTDIR)$(PREFIX)/share/man/man8/tokentrace.8

clean:
	rm -rf $(OUTPUT) tokentrace

-include $(wildcard $(OUTPUT)/*.d $(OUTPUT)/*/*.d)
