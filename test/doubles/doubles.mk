# Test doubles of the device side, for machines without a GPU (included by test/test.mk).
# $(BUILD)/test/doubles/libcudart.so.13 stands in for the CUDA runtime when a test puts
# $(BUILD)/test/doubles first in LD_LIBRARY_PATH.

FAKE_CUDART := $(BUILD)/test/doubles/libcudart.so.13
FAKE_CUDART_SRC := test/doubles/fake_cudart.c test/doubles/fake_cudart_launch.c
# The doubles play the device, not the profiler: never sanitized, so unsanitized programs
# can load them.
DOUBLES_CFLAGS := $(filter-out -fsanitize=%,$(CFLAGS_BASE)) -isystem $(CUDA_HOME)/include

.PHONY: doubles

ifeq ($(HAVE_CUDA),1)
doubles: $(FAKE_CUDART)
else
doubles:
	@echo "doubles: no CUDA toolkit at $(CUDA_HOME), fake libcudart not built"
endif

$(FAKE_CUDART): $(FAKE_CUDART_SRC) test/doubles/fake_cudart.h test/doubles/fake_cudart.map
	@mkdir -p $(dir $@)
	$(CC) $(DOUBLES_CFLAGS) -shared -o $@ $(FAKE_CUDART_SRC) -Wl,-soname,libcudart.so.13 \
		-Wl,--version-script=test/doubles/fake_cudart.map -Wl,-Bsymbolic
