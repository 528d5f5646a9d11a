PRELOAD_SRCS := preload/init.c preload/lifecycle.c preload/resolve.c preload/settings.c \
	preload/python_attach.c preload/python_names.c preload/python_tree.c \
	preload/python_actions.c preload/python_threads.c preload/torch.c \
	preload/torch_memory.c
ifeq ($(HAVE_CUDA),1)
PRELOAD_SRCS += preload/cudart.c preload/cupti_sub.c preload/cublas.c preload/cudnn.c preload/nvtx.c
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
$(BUILD)/preload/torch.o: preload/torch_bridge.cpp preload/torch.h
