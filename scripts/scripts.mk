$(PROFRUN): $(BUILD)/scripts/profrun.o $(BUILD)/scripts/attach.o $(BUILD)/scripts/attach_inject.o $(BUILD)/scripts/attach_job.o $(BUILD)/scripts/attach_util.o $(BUILD)/scripts/attach_start.o $(BUILD)/preload/settings.o $(BUILD)/collector/outdir.o $(BUILD)/preload/job_env.o
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS_SAN)

# The libtorch bridge for the torch of each interpreter in TORCH_PYTHON that can import
# it, built at make time (profrun --prepare) so that no profiled run waits for its build;
# again when the bridge's sources change. Without torch, or when the build fails, nothing
# stops: the first profiled run that imports torch builds it (its time is then left out of
# the program's).
TORCH_PYTHON ?= python3 /usr/bin/python3
TORCH_BRIDGE_STAMP := $(BUILD)/torch-bridge.stamp
all: $(TORCH_BRIDGE_STAMP)
$(TORCH_BRIDGE_STAMP): preload/torch/torch_bridge.cpp preload/torch/torch.h | $(LIB) $(PROFRUN)
	@for py in $(TORCH_PYTHON); do \
	    if $$py -c 'import torch' >/dev/null 2>&1; then \
	        $(PROFRUN) --prepare $$py || \
	        echo "make: the libtorch bridge for $$py was not built; its first profiled run builds it"; \
	    fi; \
	done; touch $@
