# The process-wide parts sit at the top of preload/; each capture layer has its folder.
PRELOAD_SRCS := preload/attach.c preload/attach_got.c preload/got.c preload/init.c preload/lifecycle.c preload/resolve.c preload/settings.c \
	preload/job.c preload/job_env.c preload/window.c \
	$(wildcard preload/comm/*.c) $(wildcard preload/python/*.c) $(wildcard preload/torch/*.c) $(wildcard preload/stacks/*.c)
ifeq ($(HAVE_CUDA),1)
PRELOAD_SRCS += $(wildcard preload/cuda/*.c)
endif
PRELOAD_OBJS := $(PRELOAD_SRCS:%.c=$(BUILD)/%.o)

# Only the interposed functions are exported (visibility attributes, no version script:
# an unversioned definition then satisfies the versioned references of programs linked
# against libcudart.so.13).
$(PRELOAD_OBJS) $(COLLECTOR_OBJS): CFLAGS += -fvisibility=hidden

$(LIB): $(PRELOAD_OBJS) $(COLLECTOR_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $^ -Wl,-z,now -Wl,--no-undefined -pthread -ldl $(LDFLAGS_SAN)

# torch.c embeds the bridge's source (.incbin): rebuild it when they change.
$(BUILD)/preload/torch/torch.o: preload/torch/torch_bridge.cpp preload/torch/torch.h
