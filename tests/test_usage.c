/* SPDX-License-Identifier: MIT */
/*
 * vms_stack_used finds the deepest non-zero word without painting: exact on
 * fresh stacks, and with scrubbing on, exact again after warm reuse.
 */
#include "check.h"
#include "vmstack.h"

#include <string.h>

static void write_at_depth(vms_stack *st, size_t depth)
{
    char *top = vms_stack_top(st);

    memset(top - depth, 0x5a, 16);
}

int main(void)
{
    vms_stack st;
    size_t depths[] = { 16, 4096, 5000, 40000, 65536 };

    CHECK_EQ(vms_init(NULL), 0);
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        CHECK_EQ(vms_stack_alloc(&st, 64 << 10), 0);
        CHECK_EQ(vms_stack_used(&st), 0);
        write_at_depth(&st, depths[i]);
        CHECK_EQ(vms_stack_used(&st), depths[i]);
        /* Scrub on: the next user of this (warm) stack starts from zero. */
        vms_set_scrub(1);
        CHECK_EQ(vms_stack_free(&st), 0);
        vms_set_scrub(0);
        CHECK_EQ(vms_stack_used(&st), 0); /* stale handle */
    }
    /* Without scrub, warm reuse keeps the previous user's high-water mark (documented). */
    CHECK_EQ(vms_stack_alloc(&st, 64 << 10), 0);
    write_at_depth(&st, 30000);
    CHECK_EQ(vms_stack_free(&st), 0);
    CHECK_EQ(vms_stack_alloc(&st, 64 << 10), 0);
    CHECK_EQ(vms_stack_used(&st), 30000);
    CHECK_EQ(vms_stack_free(&st), 0);
    printf("high-water marks exact at every depth\n");
    return 0;
}
