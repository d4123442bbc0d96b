/* SPDX-License-Identifier: MIT */
/*
 * The first byte below and the first byte above every stack fault, in a
 * forked child (SIGSEGV); and so they do after the stacks were freed and
 * handed out again, both warm from the caches and cold after their memory
 * went back to the kernel.  Enough stacks to cross chunk boundaries.
 */
#include "check.h"
#include "vmstack.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 1000

static int signal_of_write(volatile char *p)
{
    int status;
    pid_t pid = fork();

    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        *p = 1;
        _exit(0);
    }
    CHECK(pid > 0);
    CHECK(waitpid(pid, &status, 0) == pid);
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

static void check_guarded(vms_stack *st, int n, const char *when)
{
    for (int i = 0; i < n; i++) {
        char *lo = st[i].base, *hi = vms_stack_top(&st[i]);
        lo[0] = 1; /* the usable ends are usable */
        hi[-1] = 1;
        if (signal_of_write(lo - 1) != SIGSEGV || signal_of_write(hi) != SIGSEGV) {
            fprintf(stderr, "%s: stack %d (%p..%p) is not guarded\n", when, i, (void *)lo, (void *)hi);
            exit(1);
        }
    }
    printf("%s: %d stacks, byte below and byte above each fault with SIGSEGV\n", when, n);
}

static void alloc_all(vms_stack *st, int n)
{
    for (int i = 0; i < n; i++)
        CHECK_EQ(vms_stack_alloc(&st[i], 0), 0);
}

static void free_all(vms_stack *st, int n)
{
    for (int i = 0; i < n; i++)
        CHECK_EQ(vms_stack_free(&st[i]), 0);
}

int main(void)
{
    static vms_stack st[N];
    vms_stats s;

    CHECK_EQ(vms_init(NULL), 0);
    if (vms_guard_mode_active() == VMS_GUARD_NONE) {
        printf("guard mode none: nothing to test\n");
        return 0;
    }
    alloc_all(st, N);
    vms_stats_get(&s);
    CHECK(s.chunks >= 2);
    check_guarded(st, N, "fresh");
    free_all(st, N);
    alloc_all(st, N);
    check_guarded(st, N, "reused warm");
    free_all(st, N);
    CHECK(vms_trim() > 0);
    vms_stats_get(&s);
    CHECK_EQ(s.pooled_warm, 0);
    CHECK(s.pooled_cold >= N - 64);
    alloc_all(st, N);
    /* Released memory comes back zero-filled. */
    for (int i = 0; i < N; i++)
        CHECK(((char *)st[i].base)[0] == 0 && ((char *)vms_stack_top(&st[i]))[-1] == 0);
    check_guarded(st, N, "reused after release to the kernel");
    free_all(st, N);
    return 0;
}
