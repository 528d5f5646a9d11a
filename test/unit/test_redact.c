/* PROF_REDACT: which names count as secrets, and what argv and env values become. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"

static int secret(const char *name)
{
    return redact_secret_name(name, strlen(name));
}

Test(redact, names_that_hold_secrets)
{
    const char *yes[] = {"--password",  "--passwd",   "--token",    "--secret",
                         "--api-key",   "--API_KEY",  "-password",  "WANDB_API_KEY",
                         "HF_TOKEN",    "AWS_SECRET", "--hf-token", "DB_PASSWORD_FILE",
                         "--my-passwd", "apikey"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        cr_expect(secret(yes[i]), "%s should be a secret", yes[i]);
    const char *no[] = {"--name", "--batch-size", "--keyboard", "MONKEY", "--tokens",
                        "-v",     "PYTHONPATH",   "--",         ""};
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        cr_expect(!secret(no[i]), "%s should not be a secret", no[i]);
}

Test(redact, argv_values_in_both_forms)
{
    const char *in[] = {"prog",
                        "--password=hunter2",
                        "--token",
                        "t0k",
                        "--api-key",
                        "--verbose",
                        "HF_TOKEN=abc",
                        "--name",
                        "run",
                        "--secret",
                        "s3",
                        "--token",
                        "-starts-with-dash",
                        "--db-passwd"};
    int argc = (int)(sizeof in / sizeof *in);
    char *argv[sizeof in / sizeof *in];
    for (int i = 0; i < argc; i++)
        argv[i] = strdup(in[i]);
    redact_argv(argc, argv);
    const char *want[] = {"prog",
                          "--password=<redacted>",
                          "--token",
                          "<redacted>",
                          "--api-key",
                          "--verbose", /* a flag, not the key's value */
                          "HF_TOKEN=<redacted>",
                          "--name",
                          "run",
                          "--secret",
                          "<redacted>",
                          "--token",
                          "<redacted>",
                          "--db-passwd"};
    for (int i = 0; i < argc; i++) {
        cr_expect_str_eq(argv[i], want[i], "argv[%d]", i);
        free(argv[i]);
    }
}

Test(redact, recorded_environment)
{
    cr_expect_str_eq(redact_meta_value("env.WANDB_API_KEY", "abc"), REDACT_TEXT);
    cr_expect_str_eq(redact_meta_value("env.DB_PASSWORD", "abc"), REDACT_TEXT);
    cr_expect_str_eq(redact_meta_value("env.CUDA_VISIBLE_DEVICES", "0,1"), "0,1");
    cr_expect_str_eq(redact_meta_value("host", "node_token"), "node_token");
    cr_expect_null(redact_meta_value("env.HF_TOKEN", NULL));
}
