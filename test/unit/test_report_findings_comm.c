/* The communication finding (findings_steps.c, findings_step_comm) from one step's figures:
 * alone, the exposed communication's share with its wait; beside a rank the others wait
 * for (already its own finding), only the transfer beyond that wait, its share the
 * transfer's (a review's read "82% of the training step is communication", 20.46 ms of it
 * the wait for a rank that slept). */
#include <criterion/criterion.h>
#include <string.h>

#include "findings.h"
#include "findings_steps.h"

/* A 30 ms step with 27 ms of exposed communication, 20 ms of it waiting. */
static struct findings_step comm_step(void)
{
    struct findings_step m = {.step_ns = 30000000, .comm_ns = 28000000, .wait_ns = 20000000,
                              .wait_known = 1, .who = " (median rank)"};
    m.part_ns[MODEL_STEP_COMM] = 27000000;
    m.part_ns[MODEL_STEP_FORWARD] = 3000000;
    return m;
}

Test(report_findings_comm, alone_the_share_is_all_the_exposed_communication)
{
    struct findings f = {0};
    struct findings_step m = comm_step();
    findings_step_comm(&f, &m, -1, NULL);
    cr_assert_eq(f.n, 1);
    cr_assert_float_eq(f.items[0].value, 0.9, 1e-9);
    cr_assert_str_eq(f.items[0].title, "communication: 90% of the training step (median rank) "
                                       "is communication no compute hides");
    cr_assert(strstr(f.items[0].evidence, "20.00 ms of it waiting for other ranks to arrive, "
                                          "the rest transfer"),
              "%s", f.items[0].evidence);
    findings_free(&f);
}

Test(report_findings_comm, beside_a_waited_rank_the_share_is_the_transfers)
{
    struct findings f = {0};
    struct findings_step m = comm_step();
    findings_step_comm(&f, &m, 1, NULL);
    cr_assert_eq(f.n, 1);
    cr_assert_float_eq(f.items[0].value, 7.0 / 30, 1e-9);
    cr_assert_str_eq(f.items[0].title, "communication: 23% of the training step (median rank) "
                                       "is transfer no compute hides, besides the wait for rank 1");
    cr_assert(strstr(f.items[0].evidence, "20.00 ms of it waiting for rank 1 to arrive (the "
                                          "finding on it), the rest, 7.00 ms, the collectives' "
                                          "own time"),
              "%s", f.items[0].evidence);
    findings_free(&f);
}

Test(report_findings_comm, beside_a_waited_rank_a_small_transfer_is_no_finding)
{
    struct findings f = {0};
    struct findings_step m = comm_step();
    m.part_ns[MODEL_STEP_COMM] = 23000000; /* 3 ms beyond the wait: 10 % of the step */
    findings_step_comm(&f, &m, 1, NULL);
    cr_assert_eq(f.n, 0);
    findings_free(&f);
}
