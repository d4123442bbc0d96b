/* SPDX-License-Identifier: MIT */
/*
 * Every stack is MADV_NOHUGEPAGE ("nh" in the VmFlags of /proc/self/smaps),
 * whatever the machine's transparent huge page setting: stacks of 64 KiB,
 * 2 MiB and 8 MiB (the sizes from which a stack can hold a whole 2 MiB
 * page), the later chunks of a region, a thread's 8 MiB stack and its
 * alternate signal stack.  Needs no root: test_thp.sh measures what the
 * flag saves where it may set transparent huge pages to "always".
 */
#include "vmstack.h"
#include "check.h"
#include "nohuge.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>

/* The lowest and the highest usable byte of a stack. */
static void check_stack(const char *what, const vms_stack *st)
{
    const char *lo = st->base, *hi = (const char *)st->base + st->size - 1;

    if (!no_huge_pages(lo) || !no_huge_pages(hi)) {
        fprintf(stderr, "%s (%p..%p): not MADV_NOHUGEPAGE\n", what, (void *)lo, (const void *)(hi + 1));
        exit(1);
    }
    printf("%s: nh\n", what);
}

static void *thread_checks(void *unused)
{
    int local = 0;
    stack_t alt;
    vms_stack st = {0};

    (void)unused;
    CHECK(vms_on_stack(&local, &st));
    check_stack("thread stack (8 MiB)", &st);
    CHECK(sigaltstack(NULL, &alt) == 0 && !(alt.ss_flags & SS_DISABLE));
    st.base = alt.ss_sp;
    st.size = alt.ss_size;
    check_stack("thread's alternate signal stack", &st);
    return NULL;
}

int main(void)
{
    static const size_t sizes[] = {64 << 10, 2 << 20, 8 << 20};
    vms_stack st[3], more[40];
    pthread_attr_t attr;
    pthread_t t;

    printf("guard mode %s\n", vms_guard_mode_name(vms_guard_mode_active()));
    for (int i = 0; i < 3; i++) {
        char what[64];
        CHECK_EQ(vms_stack_alloc(&st[i], sizes[i]), 0);
        snprintf(what, sizeof what, "stack of %zu KiB", sizes[i] >> 10);
        check_stack(what, &st[i]);
    }
    /* Chunks of 32 MiB: these fill the first and two more. */
    for (int i = 0; i < 40; i++) {
        CHECK_EQ(vms_stack_alloc(&more[i], 2 << 20), 0);
        if (i == 39)
            check_stack("40th stack of 2048 KiB", &more[i]);
        else if (!no_huge_pages(more[i].base) || !no_huge_pages((char *)more[i].base + more[i].size - 1))
            check_stack("a stack of 2048 KiB", &more[i]);
    }
    for (int i = 0; i < 40; i++)
        vms_stack_free(&more[i]);
    CHECK(pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, 8 << 20) == 0);
    CHECK_EQ(vms_thread_create(&t, &attr, thread_checks, NULL, "checks"), 0);
    CHECK_EQ(vms_thread_join(t, NULL), 0);
    for (int i = 0; i < 3; i++)
        vms_stack_free(&st[i]);
    return 0;
}
