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

# The multiarch triplet names Debian's library and include dirs (x86_64-linux-gnu). Ask the
# compiler for it: clang's -dumpmachine says x86_64-pc-linux-gnu, a directory that does not
# exist, where -print-multiarch (gcc and clang alike) gives the Debian name.
ifndef MULTIARCH
MULTIARCH := $(or $(shell $(CC) -print-multiarch 2>/dev/null),$(shell $(CLANG) -print-multiarch \
	2>/dev/null),$(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null),$(shell uname -m)-linux-gnu)
endif
LIBBPF_A ?= $(firstword $(wildcard /usr/lib/$(MULTIARCH)/libbpf.a /usr/lib64/libbpf.a /usr/lib/libbpf.a))

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
	-DTT_VERSION=\"$(VERSION)\" -MMD -MP
# usdt.bpf.h includes <linux/errno.h>, whose <asm/...> lives in the multiarch include dir
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror -Ivmlinux/$(ARCH) -Ibpf \
	-idirafter /usr/include/$(MULTIARCH)

# userspace, by role (docs/data-flow.md). Each role sees only the headers it may use, so the
# compiler enforces the layering:
#   base/   the hash table and the growable array    libc
#   proto/  protocol parsers                         base, libc, libnghttp2 (HPACK)
#   core/   correlation, stats, session, recordings  proto, base, libc, zlib
#   sys/    readers of the system, the BPF loader    core, proto, libbpf, libelf, /proc
#   report/ outputs                                  core, proto, ncurses, libmicrohttpd, libcurl
#   cli/    the command line and the main loop      everything
ROLES := base proto core sys report cli
INC_base := -Iuser/base
INC_proto := -Iuser/base -Iuser/proto
INC_core := -Iuser/base -Iuser/proto -Iuser/core -Ibpf
INC_sys := -Iuser/base -Iuser/proto -Iuser/core -Iuser/sys -Ibpf -I$(OUTPUT)
INC_report := -Iuser/base -Iuser/proto -Iuser/core -Iuser/report -Ibpf
INC_cli := -Iuser/base -Iuser/proto -Iuser/core -Iuser/sys -Iuser/report -Iuser/cli -Ibpf -I$(OUTPUT)
$(foreach r,$(ROLES),$(eval SRCS_$(r) := $(wildcard user/$(r)/*.c)))
$(foreach r,$(ROLES),$(eval OBJS_$(r) := $(patsubst user/$(r)/%.c,$(OUTPUT)/$(r)/%.o,$(SRCS_$(r)))))

# the parsers link with libc and libnghttp2 alone (its HPACK inflater: hpack.h), statically
# where Debian's libnghttp2-dev ships libnghttp2.a, as libbpf is
NGHTTP2_A ?= $(firstword $(wildcard /usr/lib/$(MULTIARCH)/libnghttp2.a /usr/lib64/libnghttp2.a \
	/usr/lib/libnghttp2.a))
PROTO_LIBS := $(or $(NGHTTP2_A),-lnghttp2)
# the correlation core links with libc and zlib (CRC-32 of recordings) alone
CORE_LIBS := -lz
SYS_LIBS := $(LIBBPF_A) -lelf -lz
# --metrics serves with libmicrohttpd, --top draws with ncursesw, --otlp posts with libcurl
# (and gzips with zlib)
REPORT_LIBS := -lpthread $(shell pkg-config --libs ncursesw libmicrohttpd libcurl 2>/dev/null || \
	echo -lncursesw -ltinfo -lmicrohttpd -lcurl) -lz
LDLIBS := $(SYS_LIBS) $(REPORT_LIBS) $(CORE_LIBS) $(PROTO_LIBS)
LIB_base := $(OUTPUT)/libttbase.a
LIB_proto := $(OUTPUT)/libttproto.a
LIB_core := $(OUTPUT)/libttcore.a
LIB_sys := $(OUTPUT)/libttsys.a
LIB_report := $(OUTPUT)/libttreport.a

BPF_SRCS := $(wildcard bpf/*.bpf.c)
SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))

all: tokentrace tools

$(OUTPUT) $(OUTPUT)/tests $(addprefix $(OUTPUT)/,$(ROLES)):
	$(Q)mkdir -p $@

$(OUTPUT)/%.bpf.o: bpf/%.bpf.c bpf/*.h bpf/lib/*.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp
	$(Q)rm -f $@.tmp

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

define role_rules
$(OUTPUT)/$(1)/%.o: user/$(1)/%.c | $(OUTPUT)/$(1)
	$$(call msg,CC,$$@)
	$$(Q)$$(CC) $$(TT_CFLAGS) $$(INC_$(1)) -c $$< -o $$@
endef
$(foreach r,$(ROLES),$(eval $(call role_rules,$(r))))

# the loader and the main loop include the skeleton
$(OBJS_sys) $(OBJS_cli): $(SKELS)

$(OUTPUT)/libtt%.a:
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^
$(LIB_base): $(OBJS_base)
$(LIB_proto): $(OBJS_proto)
$(LIB_core): $(OBJS_core)
$(LIB_sys): $(OBJS_sys)
$(LIB_report): $(OBJS_report)

tokentrace: $(OBJS_cli) $(LIB_report) $(LIB_sys) $(LIB_core) $(LIB_proto) $(LIB_base)
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
