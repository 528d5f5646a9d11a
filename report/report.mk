# profreport: the offline reporter (report/main.c, inputs.c, and one folder per stage: read/, model/,
# symbols/, summarize/ (per-trace summaries), merge/, views/), linked with jansson, elfutils' libdw (symbols/), protobuf-c (the
# Perfetto export, whose C code protoc-c generates from
# report/views/perfetto/perfetto_trace.proto into $(BUILD)/gen/) and, for
# __cxa_demangle only, libstdc++.
#
#   $(PROFREPORT)            build/bin/profreport
#   REPORT_LIB_OBJS          every report object but main.o, for unit tests
#   $(BUILD)/libprofreport.a those objects as a library
#   report-fixtures          synthetic traces for the report tests, in $(BUILD)/test/traces/

REPORT_SRCS := $(wildcard report/*.c report/read/*.c report/model/*.c report/symbols/*.c \
	report/merge/*.c report/views/*.c report/summarize/*.c)
REPORT_GEN := $(BUILD)/gen
REPORT_PROTO := report/views/perfetto/perfetto_trace.proto
REPORT_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(REPORT_SRCS)) $(REPORT_GEN)/perfetto_trace.pb-c.o
REPORT_LIB_OBJS := $(filter-out $(BUILD)/report/main.o,$(REPORT_OBJS))
REPORT_LDLIBS := -ljansson -ldw -lelf -lprotobuf-c -lz -lstdc++
CFLAGS += -I$(REPORT_GEN)

$(REPORT_GEN)/perfetto_trace.pb-c.c $(REPORT_GEN)/perfetto_trace.pb-c.h: $(REPORT_PROTO)
	@mkdir -p $(REPORT_GEN)
	protoc-c --proto_path=$(dir $(REPORT_PROTO)) --c_out=$(REPORT_GEN) $(REPORT_PROTO)

# Generated code: our warnings are not its author's.
$(REPORT_GEN)/perfetto_trace.pb-c.o: $(REPORT_GEN)/perfetto_trace.pb-c.c
	$(CC) $(CFLAGS) -Wno-error -c $< -o $@

$(BUILD)/report/views/export_perfetto.o: $(REPORT_GEN)/perfetto_trace.pb-c.h

$(PROFREPORT): $(REPORT_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $^ -o $@ $(LDFLAGS_SAN) $(REPORT_LDLIBS)

$(BUILD)/libprofreport.a: $(REPORT_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

REPORT_FIXTURE_TOOL := $(BUILD)/test/make_traces
REPORT_FIXTURE_DIR := $(BUILD)/test/traces

$(REPORT_FIXTURE_TOOL): $(BUILD)/test/fixtures/traces/make_traces.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $^ -o $@ $(LDFLAGS_SAN)

.PHONY: report-fixtures
report-fixtures: $(REPORT_FIXTURE_TOOL)
	@rm -rf $(REPORT_FIXTURE_DIR)
	$(REPORT_FIXTURE_TOOL) $(REPORT_FIXTURE_DIR)
