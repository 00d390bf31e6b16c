# Test rig: included by the top-level Makefile.
#
#   .output/tokensim         token-streaming HTTP/1.1 server that writes its ground truth
#   .output/libtsengine.so   the engine markers as a shared library (tse_*), linked by tokensim
#   .output/tokenload        streaming load client that writes what it saw
#
# tokenload reuses tokensim's util/strbuf/json objects (clock, number parser,
# JSON scanner); nothing is shared with user/.  TOOLS_EXTRA adds flags to
# every compile and link, e.g. a sanitizer build:
#   make OUTPUT=.output-tsan TOOLS_EXTRA=-fsanitize=thread tools

TOOLS_EXTRA ?=
TOOLS_CFLAGS := -g -O2 -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread \
	-fno-omit-frame-pointer -MMD -MP $(TOOLS_EXTRA)
TOOLS_OUT := $(OUTPUT)/tools

TS_DIR := tools/tokensim
TL_DIR := tools/tokenload
TS_SRCS := $(filter-out $(TS_DIR)/engine_lib.c,$(wildcard $(TS_DIR)/*.c))
TS_OBJS := $(patsubst $(TS_DIR)/%.c,$(TOOLS_OUT)/ts_%.o,$(TS_SRCS))
TS_SHARED := $(addprefix $(TOOLS_OUT)/ts_,util.o strbuf.o json.o)
TL_OBJS := $(patsubst $(TL_DIR)/%.c,$(TOOLS_OUT)/tl_%.o,$(wildcard $(TL_DIR)/*.c)) $(TS_SHARED)

.PHONY: tools
tools: $(OUTPUT)/tokensim $(OUTPUT)/tokenload $(OUTPUT)/libtsengine.so

$(TOOLS_OUT):
	$(Q)mkdir -p $@

$(TOOLS_OUT)/ts_%.o: $(TS_DIR)/%.c | $(TOOLS_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TOOLS_CFLAGS) -c $< -o $@

$(TOOLS_OUT)/tl_%.o: $(TL_DIR)/%.c | $(TOOLS_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TOOLS_CFLAGS) -I$(TS_DIR) -c $< -o $@

$(OUTPUT)/libtsengine.so: $(TS_DIR)/engine_lib.c | $(OUTPUT)
	$(call msg,LIB,$@)
	$(Q)$(CC) $(TOOLS_CFLAGS) -fPIC -shared -Wl,-soname,libtsengine.so $< -o $@

# $ORIGIN: tokensim finds libtsengine.so next to itself, wherever .output/ is.
$(OUTPUT)/tokensim: $(TS_OBJS) $(OUTPUT)/libtsengine.so
	$(call msg,LINK,$@)
	$(Q)$(CC) $(TOOLS_CFLAGS) $(TS_OBJS) $(OUTPUT)/libtsengine.so -Wl,-rpath,'$$ORIGIN' -o $@

$(OUTPUT)/tokenload: $(TL_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(TOOLS_CFLAGS) $^ -o $@
