$(PROFRUN): $(BUILD)/scripts/profrun.o $(BUILD)/scripts/attach.o $(BUILD)/scripts/attach_inject.o $(BUILD)/scripts/attach_job.o $(BUILD)/preload/settings.o $(BUILD)/collector/outdir.o $(BUILD)/preload/job_env.o
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS_SAN)
