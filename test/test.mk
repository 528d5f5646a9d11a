# Tests: `make check` = deps + build + unit + e2e + fuzz-ci (the reader fuzzer, see
# test/fuzz/fuzz.mk). Unit tests are Criterion programs (test/unit/test_*.c) linked with
# the collector and report libraries; end-to-end tests are pytest files (test/e2e/) that
# run fixtures under profrun and read the report.

-include test/doubles/doubles.mk
-include test/fuzz/fuzz.mk
-include test/fixtures/cuda/cuda.mk
-include test/fixtures/libs/libs.mk
-include test/fixtures/stacks/stacks.mk
-include test/fixtures/comm/comm.mk

.SECONDARY:

PYTHON ?= /usr/bin/python3
UNIT_SRCS := $(wildcard test/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:test/unit/%.c=$(BUILD)/test/unit/%)
UNIT_LDLIBS := -lcriterion $(REPORT_LDLIBS) -pthread -ldl
STRESS_SRCS := $(wildcard test/unit/stress_*.c)
STRESS_BINS := $(STRESS_SRCS:test/unit/%.c=$(BUILD)/test/unit/%)
# Criterion's arena needs a fixed mapping that ThreadSanitizer's layout refuses: the
# thread-sanitized build runs the plain-C stress programs only.
ifeq ($(findstring thread,$(SAN)),thread)
UNIT_RUN := $(STRESS_BINS)
else
UNIT_RUN := $(UNIT_BINS) $(STRESS_BINS)
endif

$(BUILD)/test/unit/test_%: $(BUILD)/test/unit/test_%.o $(BUILD)/libprofcore.a $(BUILD)/libprofreport.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(UNIT_LDLIBS) $(LDFLAGS_SAN)

# the sampler's page reads: a preload part with no other dependency
$(BUILD)/test/unit/test_stacks_window: $(BUILD)/preload/stacks/stacks_window.o

$(BUILD)/test/unit/stress_%: $(BUILD)/test/unit/stress_%.o $(BUILD)/libprofcore.a $(BUILD)/libprofreport.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(REPORT_LDLIBS) -pthread -ldl $(LDFLAGS_SAN)

PROCESS_FIXTURES_DIR := $(BUILD)/test/fixtures
PROCESS_FIXTURES := $(PROCESS_FIXTURES_DIR)/lifecycle
PROCESS_FIXTURE_CFLAGS := $(filter-out -fsanitize=%,$(CFLAGS_BASE)) -isystem $(CUDA_HOME)/include

$(PROCESS_FIXTURES_DIR)/lifecycle: test/fixtures/process/lifecycle.c
	@mkdir -p $(dir $@)
	$(CC) $(PROCESS_FIXTURE_CFLAGS) -o $@ $< -L$(CUDA_HOME)/lib64 -lcudart \
		-Wl,--enable-new-dtags -Wl,-rpath,$(CUDA_HOME)/lib64 -pthread

$(PROCESS_FIXTURES_DIR)/libcuda_calls.so: test/fixtures/python/cuda_calls.c
	@mkdir -p $(dir $@)
	$(CC) $(PROCESS_FIXTURE_CFLAGS) -shared -o $@ $< -L$(CUDA_HOME)/lib64 -lcudart \
		-Wl,--enable-new-dtags -Wl,-rpath,$(CUDA_HOME)/lib64
PROCESS_FIXTURES += $(PROCESS_FIXTURES_DIR)/libcuda_calls.so

# Python calling back from a thread made in C (no CUDA needed).
$(PROCESS_FIXTURES_DIR)/libgil_thread.so: test/fixtures/python/gil_thread.c
	@mkdir -p $(dir $@)
	$(CC) $(PROCESS_FIXTURE_CFLAGS) -shared -o $@ $< -pthread
PYTHON_FIXTURES := $(PROCESS_FIXTURES_DIR)/libgil_thread.so

BENCH_DIR := $(BUILD)/test/bench
$(BENCH_DIR)/bench_collector: $(BUILD)/test/bench/bench_collector.o $(BUILD)/libprofcore.a $(BUILD)/libprofreport.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(REPORT_LDLIBS) -pthread $(LDFLAGS_SAN)
$(BENCH_DIR)/bench_symbols: $(BUILD)/test/bench/bench_symbols.o $(BUILD)/libprofreport.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(REPORT_LDLIBS) -pthread $(LDFLAGS_SAN)
$(BENCH_DIR)/bench_timeline: $(BUILD)/test/bench/bench_timeline.o
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS_SAN)
$(BENCH_DIR)/bench_report: $(BUILD)/test/bench/bench_report.o $(BUILD)/libprofreport.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(REPORT_LDLIBS) $(LDFLAGS_SAN)
$(BENCH_DIR)/bench_html: $(BUILD)/test/bench/bench_html.o
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS_SAN)
$(BENCH_DIR)/bench_merge: $(BUILD)/test/bench/bench_merge.o $(BUILD)/test/bench/bench_merge_gen.o \
		$(BUILD)/test/bench/bench_proc.o
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ -ljansson $(LDFLAGS_SAN)
$(BENCH_DIR)/bench_merge_real: $(BUILD)/test/bench/bench_merge_real.o $(BUILD)/test/bench/bench_proc.o
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ -ljansson $(LDFLAGS_SAN)
$(BENCH_DIR)/bench_summarize: $(BUILD)/test/bench/bench_summarize.o
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS_SAN)
$(BENCH_DIR)/bench_call_cost: test/bench/bench_call_cost.c
	@mkdir -p $(dir $@)
	$(CC) $(PROCESS_FIXTURE_CFLAGS) -o $@ $< -L$(CUDA_HOME)/lib64 -lcudart \
		-Wl,--enable-new-dtags -Wl,-rpath,$(CUDA_HOME)/lib64 -ldl

$(BENCH_DIR)/bench_stacks: test/bench/bench_stacks.c
	@mkdir -p $(dir $@)
	$(CC) $(PROCESS_FIXTURE_CFLAGS) -o $@ $< -L$(CUDA_HOME)/lib64 -lcudart \
		-Wl,--enable-new-dtags -Wl,-rpath,$(CUDA_HOME)/lib64 -ldl

$(BENCH_DIR)/bench_launch: test/bench/bench_launch.cu
	@mkdir -p $(dir $@)
	$(NVCC) -ccbin $(NVCC_HOST_CXX) $(NVCC_ARCH) -cudart shared -O2 -o $@ $< \
		-Xlinker --enable-new-dtags -Xlinker -rpath -Xlinker $(CUDA_HOME)/lib64

ifeq ($(HAVE_CUDA),1)
TEST_FIXTURES := cuda-fixtures libs-fixtures stacks-fixtures $(PROCESS_FIXTURES) $(PYTHON_FIXTURES) \
	$(COMM_FIXTURES)
BENCH_BINS := $(BENCH_DIR)/bench_collector $(BENCH_DIR)/bench_timeline $(BENCH_DIR)/bench_call_cost \
	$(BENCH_DIR)/bench_launch $(BENCH_DIR)/bench_stacks $(BENCH_DIR)/bench_symbols $(BENCH_DIR)/bench_report \
	$(BENCH_DIR)/bench_html $(BENCH_DIR)/bench_merge $(BENCH_DIR)/bench_summarize \
	$(BENCH_DIR)/bench_merge_real
else
TEST_FIXTURES := stacks-fixtures $(PYTHON_FIXTURES) $(COMM_FIXTURES)
BENCH_BINS := $(BENCH_DIR)/bench_collector $(BENCH_DIR)/bench_timeline $(BENCH_DIR)/bench_symbols \
	$(BENCH_DIR)/bench_report $(BENCH_DIR)/bench_html $(BENCH_DIR)/bench_merge \
	$(BENCH_DIR)/bench_summarize $(BENCH_DIR)/bench_merge_real
endif

BENCH_BINS += $(COMM_BENCH_BINS)

unit: $(UNIT_RUN)
	@set -e; for t in $(UNIT_BINS); do case " $(UNIT_RUN) " in *" $$t "*) echo "== $$t"; $$t --jobs 2;; esac; done
	@set -e; for t in $(STRESS_BINS); do echo "== $$t"; $$t; done

e2e: all report-fixtures $(TEST_FIXTURES) $(BENCH_DIR)/bench_merge $(BENCH_DIR)/bench_merge_real
	PROF_BUILD=$(abspath $(BUILD)) CUDA_HOME=$(CUDA_HOME) $(PYTHON) -m pytest -q -rs test/e2e

bench: all $(BENCH_BINS) $(TEST_FIXTURES)
	BUILD=$(abspath $(BUILD)) CUDA_HOME=$(CUDA_HOME) sh test/bench/run.sh

demo: deps
	$(MAKE) all $(TEST_FIXTURES)
	sh scripts/demo.sh $(abspath $(BUILD))

deps:
	sh scripts/install-deps.sh

GPU_COUNT_LIB := $(BUILD)/test/gpu/libcupti_count.so
$(GPU_COUNT_LIB): test/gpu/cupti_count.c
	@mkdir -p $(dir $@)
	$(CC) $(PROCESS_FIXTURE_CFLAGS) -shared -o $@ $< -L$(CUDA_HOME)/lib64 -lcupti \
		-Wl,-rpath,$(CUDA_HOME)/lib64

# On a machine with an NVIDIA GPU and a CUDA torch: the GPU paths for real (see the script).
gpu-check: all $(GPU_COUNT_LIB)
	sh scripts/gpu-check.sh $(abspath $(BUILD))

# The sanitized builds run the unit tests (the stress test included) in their own folder,
# and sampling's stress program against the sanitized libprof.so (san-stress).
check-san:
	$(MAKE) SAN=address,undefined unit
	$(MAKE) SAN=thread unit
	$(MAKE) san-stress

# ASan and TSan builds of libprof.so, each preloaded after its runtime, under the sampling
# stress program (test/e2e/test_sample_sanitizers.py; PROF_SAN_ROUNDS rounds each, 5 by
# default). The program, its library and profreport are the plain build's.
SAN_ASAN_LIB := build-san-address-undefined/lib/libprof.so
SAN_TSAN_LIB := build-san-thread/lib/libprof.so
.PHONY: san-stress
san-stress: all stacks-fixtures
	@test -z "$(SAN)" || { echo "san-stress builds its sanitized libraries itself: run it without SAN="; exit 2; }
	$(MAKE) SAN=address,undefined $(SAN_ASAN_LIB)
	$(MAKE) SAN=thread $(SAN_TSAN_LIB)
	PROF_BUILD=$(abspath $(BUILD)) CUDA_HOME=$(CUDA_HOME) \
	PROF_SAN_ASAN_PRELOAD="$$($(CC) -print-file-name=libasan.so) $(abspath $(SAN_ASAN_LIB))" \
	PROF_SAN_TSAN_PRELOAD="$$($(CC) -print-file-name=libtsan.so) $(abspath $(SAN_TSAN_LIB))" \
	$(PYTHON) -m pytest -q -rs test/e2e/test_sample_sanitizers.py \
		"test/e2e/test_stacks_python.py::test_frames_pushed_and_popped_under_the_signal"

check: deps
	$(MAKE) all
	$(MAKE) unit
	$(MAKE) check-san
	$(MAKE) e2e
	$(MAKE) fuzz-ci

# The reader fuzzer's saved inputs, replayed through its own path (test/fuzz/fuzz.mk).
$(BUILD)/test/unit/test_fuzz_inputs: $(BUILD)/test/unit/test_fuzz_inputs.o \
		$(BUILD)/test/fuzz/fuzz_input.o $(BUILD)/libprofcore.a $(BUILD)/libprofreport.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(UNIT_LDLIBS) $(LDFLAGS_SAN)
