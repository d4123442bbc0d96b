/* SPDX-License-Identifier: MIT */
/*
 * An overflow of a stack vmstack does not manage (test_run.sh, case
 * unmanaged): a makecontext stack of the program's own, mmap'd with an
 * mprotect'd page below it, recursed through until it hits that page.
 * Plain: death by SIGSEGV.  Under 'vmstack run': the same death, after a
 * report that names it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define STACK ((size_t)64 << 10)

static ucontext_t main_ctx, co_ctx;

__attribute__((noinline)) static unsigned long down(unsigned long n)
{
    volatile char frame[512];

    memset((char *)frame, (int)n, sizeof frame);
    return n ? down(n - 1) + frame[n % sizeof frame] : 0;
}

static void coroutine(void)
{
    printf("%lu\n", down(1000000));
}

int main(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *m = mmap(NULL, page + STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (m == MAP_FAILED || mprotect(m, page, PROT_NONE) || getcontext(&co_ctx))
        return 1;
    co_ctx.uc_stack.ss_sp = m + page;
    co_ctx.uc_stack.ss_size = STACK;
    co_ctx.uc_link = &main_ctx;
    makecontext(&co_ctx, coroutine, 0);
    puts("into the coroutine");
    fflush(stdout);
    swapcontext(&main_ctx, &co_ctx);
    return 0;
}
