# Tests: included by the top-level Makefile.
#
#   tests/unit/ROLE/test_*.c  root-free cmocka programs, linked with their role's libraries
#   tests/fuzz/fuzz_*.c   libFuzzer targets, built apart with clang and ASan/UBSan
#   tests/e2e/*.sh        privileged end-to-end runs against tools/tokensim
#   tests/run.sh          runs them all, prints "N passed, N failed"

# A unit test's folder is the role it tests, and says what it may link: the core's tests
# link the core, the parsers and their libraries alone (libc, zlib, libnghttp2), so a
# dependency creeping into the core breaks their build.
UNIT_ROLES := base proto core sys report
UNIT_SRCS := $(foreach r,$(UNIT_ROLES),$(wildcard tests/unit/$(r)/test_*.c))
UNIT_BINS := $(foreach s,$(UNIT_SRCS),$(OUTPUT)/tests/$(basename $(notdir $(s))))
UNIT_LINK_base := $(LIB_base)
UNIT_LINK_proto := $(LIB_proto) $(LIB_base) $(PROTO_LIBS)
UNIT_LINK_core := $(LIB_core) $(LIB_proto) $(LIB_base) $(CORE_LIBS) $(PROTO_LIBS) -lm	# -lm: test_hist's own checks
UNIT_LINK_sys := $(LIB_sys) $(LIB_core) $(LIB_proto) $(LIB_base) $(SYS_LIBS) $(CORE_LIBS) $(PROTO_LIBS)
UNIT_LINK_report := $(LIB_report) $(LIB_core) $(LIB_proto) $(LIB_base) $(REPORT_LIBS) $(CORE_LIBS) $(PROTO_LIBS)
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(OUTPUT)/fuzz/%,$(FUZZ_SRCS))
FUZZ_CC ?= clang
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-std=gnu11 -D_GNU_SOURCE -Ibpf $(INC_report) -Itests/unit -DTT_VERSION=\"$(VERSION)\"
# the file outputs too (fuzz_record replays through them); not --top or --metrics; the
# encoders of --otlp and --report that take wire strings (fuzz_otlp), not their senders
FUZZ_LIBSRC := $(SRCS_base) $(SRCS_proto) $(SRCS_core) $(addprefix user/report/,json.c json_writer.c \
	perfetto.c text.c pbuf.c otlp_enc.c otlp_span.c otlp_config.c html_svg.c)

.PHONY: test-bins unit fuzz-bins

$(OUTPUT)/fuzz:
	$(Q)mkdir -p $@

define unit_rules
$(OUTPUT)/tests/%: tests/unit/$(1)/%.c $(filter %.a,$(UNIT_LINK_$(1))) | $(OUTPUT)/tests
	$$(call msg,TEST-CC,$$@)
	$$(Q)$$(CC) $$(TT_CFLAGS) $$(INC_$(1)) -Itests/unit $$< $$(UNIT_LINK_$(1)) -lcmocka -o $$@
endef
$(foreach r,$(UNIT_ROLES),$(eval $(call unit_rules,$(r))))

# test_pyoffsets compares pyinfo's offset table with the CPython 3.11 headers, when there are
# any (python3-dev: Debian's libpython3.11-dev ships Include/internal)
PY311_INC ?= /usr/include/python3.11
ifneq ($(wildcard $(PY311_INC)/internal/pycore_frame.h),)
$(OUTPUT)/tests/test_pyoffsets: TT_CFLAGS += -DTT_PY_HEADERS -I$(PY311_INC)
endif

# The parsers and the core are rebuilt inside each fuzzer with the sanitizers:
# instrumentation must cover them.
$(OUTPUT)/fuzz/%: tests/fuzz/%.c tests/fuzz/*.h $(FUZZ_LIBSRC) user/*/*.h \
		bpf/*.h | $(OUTPUT)/fuzz
	$(call msg,FUZZ-CC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(FUZZ_LIBSRC) $(CORE_LIBS) $(PROTO_LIBS) -o $@

# The wire corpus runner (tests/corpus/README.md): the core and the JSON output
$(OUTPUT)/tests/corpus: tests/corpus/runner.c $(LIB_report) $(LIB_core) $(LIB_proto) $(LIB_base) | $(OUTPUT)/tests
	$(call msg,TEST-CC,$@)
	$(Q)$(CC) $(TT_CFLAGS) $(INC_report) $< $(LIB_report) $(LIB_core) $(LIB_proto) $(LIB_base) \
		$(CORE_LIBS) $(PROTO_LIBS) -o $@

# The HTTP/2 wire corpus runner (tests/corpus/h2/README.md): the parsers alone
$(OUTPUT)/tests/h2wire: tests/corpus/h2/h2wire.c $(LIB_proto) $(LIB_base) | $(OUTPUT)/tests
	$(call msg,TEST-CC,$@)
	$(Q)$(CC) $(TT_CFLAGS) $(INC_proto) $< $(LIB_proto) $(LIB_base) $(PROTO_LIBS) -o $@

# tests/e2e/pystack.sh's loader: the Python-stack programs of the main object, alone
$(OUTPUT)/tests/pydriver: tests/tools/pydriver.c $(SKELS) $(LIB_sys) $(LIB_core) $(LIB_proto) $(LIB_base) \
		| $(OUTPUT)/tests
	$(call msg,TEST-CC,$@)
	$(Q)$(CC) $(TT_CFLAGS) $(INC_sys) $< $(LIB_sys) $(LIB_core) $(LIB_proto) $(LIB_base) $(SYS_LIBS) \
		$(CORE_LIBS) $(PROTO_LIBS) -o $@

unit: $(UNIT_BINS) $(OUTPUT)/tests/corpus $(OUTPUT)/tests/h2wire
fuzz-bins: $(FUZZ_BINS)
test-bins: all $(UNIT_BINS) $(OUTPUT)/tests/corpus $(OUTPUT)/tests/h2wire $(OUTPUT)/tests/pydriver \
	$(FUZZ_BINS)

test: deps
	$(Q)$(MAKE) --no-print-directory test-bins
	$(Q)tests/run.sh
