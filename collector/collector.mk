COLLECTOR_SRCS := $(wildcard collector/*.c)
COLLECTOR_OBJS := $(COLLECTOR_SRCS:%.c=$(BUILD)/%.o)

$(BUILD)/libprofcore.a: $(COLLECTOR_OBJS)
	@mkdir -p $(dir $@)
	ar rcs $@ $^
