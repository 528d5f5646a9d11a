$(PROFRUN): $(BUILD)/scripts/profrun.o $(BUILD)/preload/settings.o
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS_SAN)
