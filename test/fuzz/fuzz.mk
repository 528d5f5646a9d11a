# The reader fuzzer (libFuzzer, clang): arbitrary bytes as a trace file through the reader,
# the model, the merge, every view and every writer (test/fuzz/fuzz_input.c).
#
#   make fuzz                 builds $(FUZZ_BIN), then fuzzes until stopped (Ctrl-C); new
#                             inputs go to $(FUZZ_BUILD)/corpus, crashes to
#                             $(FUZZ_BUILD)/artifacts/
#   make fuzz-ci              replays every saved input, then fuzzes for FUZZ_CI_RUNS inputs
#                             or FUZZ_CI_SECONDS, whichever ends first, on FUZZ_CI_JOBS
#                             processes (`make check` runs it)
#
# Saved inputs, kept in the tree: test/fuzz/corpus/ (seeds: the synthetic traces of
# test/fixtures/traces/make_traces.c, small real traces; see its README) and
# test/fuzz/crashes/ (every input that once found a defect, named after it). The unit
# test test_fuzz_inputs replays both through the same path in the plain and the
# sanitized builds.

FUZZ_CC ?= clang
FUZZ_BUILD := build-fuzz
FUZZ_BIN := $(FUZZ_BUILD)/fuzz_reader
FUZZ_CI_RUNS ?= 1000000
# 1 M executions take about 230 s on two idle cores of the development VM (2 200 per
# CPU-second) and took 876 s there while six other engineers shared it: the limit is a
# safety net above both.
FUZZ_CI_SECONDS ?= 900
FUZZ_CI_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
FUZZ_SAN := -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all
FUZZ_CFLAGS := $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(CFLAGS_BASE)) -Itest/fuzz \
	-I$(REPORT_GEN) $(FUZZ_SAN)
FUZZ_REPORT_OBJS := $(patsubst $(BUILD)/%,$(FUZZ_BUILD)/%,$(REPORT_LIB_OBJS))
FUZZ_OBJS := $(FUZZ_REPORT_OBJS) $(FUZZ_BUILD)/test/fuzz/fuzz_input.o \
	$(FUZZ_BUILD)/test/fuzz/fuzz_reader.o
FUZZ_OPTS := -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
	-artifact_prefix=$(FUZZ_BUILD)/artifacts/ -print_final_stats=1
FUZZ_SAVED := test/fuzz/corpus test/fuzz/crashes

# The objects under test carry the coverage instrumentation; only the harness's entry
# file is linked with libFuzzer's main.
$(FUZZ_BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

# The Perfetto export's generated code (report/report.mk makes its source).
$(FUZZ_BUILD)/gen/perfetto_trace.pb-c.o: $(REPORT_GEN)/perfetto_trace.pb-c.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Wno-error -fsanitize=fuzzer-no-link -c $< -o $@
$(FUZZ_BUILD)/report/views/export_perfetto.o: $(REPORT_GEN)/perfetto_trace.pb-c.h

$(FUZZ_BIN): $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $^ -o $@ $(REPORT_LDLIBS)

-include $(shell find $(FUZZ_BUILD) -name '*.d' 2>/dev/null)

.PHONY: fuzz fuzz-ci
fuzz: $(FUZZ_BIN)
	@mkdir -p $(FUZZ_BUILD)/corpus $(FUZZ_BUILD)/artifacts
	$(FUZZ_BIN) $(FUZZ_OPTS) $(FUZZ_BUILD)/corpus $(FUZZ_SAVED)

# Replays the saved inputs, then fuzzes FUZZ_CI_RUNS executions in all over FUZZ_CI_JOBS
# processes, stopping at FUZZ_CI_SECONDS whatever the count; prints executions and
# execs/s; fails on any finding (test/fuzz/fuzz_ci.sh).
fuzz-ci: $(FUZZ_BIN)
	sh test/fuzz/fuzz_ci.sh $(FUZZ_BIN) $(FUZZ_BUILD) $(FUZZ_CI_RUNS) $(FUZZ_CI_SECONDS) \
		$(FUZZ_CI_JOBS)
