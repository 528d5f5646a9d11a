$(PROFRUN): $(BUILD)/scripts/profrun.o $(BUILD)/preload/settings.o $(BUILD)/collector/outdir.o
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS_SAN)
