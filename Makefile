# profrun: `make` builds build/lib/libprof.so, build/bin/profrun, build/bin/profreport.
# `make check` installs what the tests need (Debian, as root), builds and runs every test.
# Switches: SAN=address,undefined or SAN=thread (sanitized build in build-san-*/),
# CUDA_HOME=/path (default /usr/local/cuda; without it CUDA parts are left out).

SAN ?=
ifeq ($(SAN),)
BUILD ?= build
else
BUILD ?= build-san-$(subst $(comma),-,$(SAN))
endif
comma := ,

# Every layer folder is on the include path: a header is named by its file name alone.
PRELOAD_INCLUDES := -Ipreload -Ipreload/comm -Ipreload/cuda -Ipreload/python -Ipreload/torch -Ipreload/stacks
REPORT_INCLUDES := -Ireport -Ireport/read -Ireport/model -Ireport/symbols -Ireport/merge \
	-Ireport/views -Ireport/summarize

CUDA_HOME ?= /usr/local/cuda
HAVE_CUDA := $(shell test -f $(CUDA_HOME)/include/cuda_runtime_api.h && echo 1)

CC ?= cc
CXX ?= c++
OPT ?= -O2
CFLAGS_BASE := -std=gnu11 $(OPT) -g -Wall -Wextra -Werror -fPIC -pthread \
	-fno-omit-frame-pointer -I. -Icollector $(PRELOAD_INCLUDES) $(REPORT_INCLUDES)
ifneq ($(SAN),)
CFLAGS_BASE += -fsanitize=$(SAN)
LDFLAGS_SAN := -fsanitize=$(SAN)
# undefined behaviour fails the test that meets it, instead of a line in the log; GCC
# leaves a float cast out of range out of "undefined": asked for by name
ifneq ($(findstring undefined,$(SAN)),)
CFLAGS_BASE += -fsanitize=float-cast-overflow -fno-sanitize-recover=undefined,float-cast-overflow
LDFLAGS_SAN += -fsanitize=float-cast-overflow -fno-sanitize-recover=undefined,float-cast-overflow
endif
endif
ifeq ($(HAVE_CUDA),1)
CUDA_CFLAGS := -DPROF_HAVE_CUDA=1 -isystem $(CUDA_HOME)/include
endif
CFLAGS := $(CFLAGS_BASE) $(CUDA_CFLAGS)

LIB := $(BUILD)/lib/libprof.so
PROFRUN := $(BUILD)/bin/profrun
PROFREPORT := $(BUILD)/bin/profreport

all: $(LIB) $(PROFRUN) $(PROFREPORT)

.PHONY: all check unit e2e demo bench deps clean gpu-check format

include collector/collector.mk
include preload/preload.mk
-include report/report.mk
include scripts/scripts.mk
-include test/test.mk

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

clean:
	rm -rf build build-san-* build-fuzz

format:
	clang-format -i $$(git ls-files '*.c' '*.h')
