# Tests: included by the top-level Makefile.
#
#   tests/unit/test_*.c   root-free cmocka programs linked against the core library
#   tests/fuzz/fuzz_*.c   libFuzzer targets, built apart with clang and ASan/UBSan
#   tests/e2e/*.sh        privileged end-to-end runs against tools/tokensim
#   tests/run.sh          runs them all, prints "N passed, N failed"

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/%,$(UNIT_SRCS))
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(OUTPUT)/fuzz/%,$(FUZZ_SRCS))
FUZZ_CC ?= clang
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-std=gnu11 -D_GNU_SOURCE -Ibpf -Iuser -Itests/unit -DTT_VERSION=\"$(VERSION)\"

.PHONY: test-bins unit fuzz-bins

$(OUTPUT)/fuzz:
	$(Q)mkdir -p $@

$(OUTPUT)/tests/%: tests/unit/%.c $(OUTPUT)/libttcore.a | $(OUTPUT)/tests
	$(call msg,TEST-CC,$@)
	$(Q)$(CC) $(TT_CFLAGS) -Itests/unit $< $(OUTPUT)/libttcore.a -lcmocka $(CORE_LIBS) -o $@

# The core is rebuilt inside each fuzzer with the sanitizers: instrumentation must cover it.
$(OUTPUT)/fuzz/%: tests/fuzz/%.c tests/fuzz/*.h $(USER_CORE) user/*.h bpf/*.h | $(OUTPUT)/fuzz
	$(call msg,FUZZ-CC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(USER_CORE) $(CORE_LIBS) -o $@

# The wire corpus runner (tests/corpus/README.md)
$(OUTPUT)/tests/corpus: tests/corpus/runner.c $(OUTPUT)/libttcore.a | $(OUTPUT)/tests
	$(call msg,TEST-CC,$@)
	$(Q)$(CC) $(TT_CFLAGS) $< $(OUTPUT)/libttcore.a $(CORE_LIBS) -o $@

unit: $(UNIT_BINS) $(OUTPUT)/tests/corpus
fuzz-bins: $(FUZZ_BINS)
test-bins: all $(UNIT_BINS) $(OUTPUT)/tests/corpus $(FUZZ_BINS)

test: deps
	$(Q)$(MAKE) --no-print-directory test-bins
	$(Q)tests/run.sh
