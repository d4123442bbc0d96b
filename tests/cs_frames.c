/* SPDX-License-Identifier: MIT */
/*
 * A program with known stack frames for the checkstack test: fixed arrays
 * of 64, 512, 4096 and 20000 bytes, a variable-length array, alloca,
 * recursion, and a stack pointer saved to a register and restored from it.  test_checkstack.sh compiles it with -fstack-usage and compares
 * GCC's figures with what 'vmstack checkstack' reads from the binary.
 */
#include <alloca.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

/* Touches a buffer the compiler cannot see through, so arrays stay on the stack. */
NOINLINE void cs_sink(volatile char *p, size_t n)
{
    for (size_t i = 0; i < n; i += 64)
        p[i] = (char)i;
}

NOINLINE int frame_64(int x)
{
    volatile char b[64];

    cs_sink(b, sizeof b);
    return b[x & 63];
}

NOINLINE int frame_512(int x)
{
    volatile char b[512];

    cs_sink(b, sizeof b);
    return b[x & 511];
}

NOINLINE int frame_4096(int x)
{
    volatile char b[4096];

    cs_sink(b, sizeof b);
    return b[x & 4095];
}

/* Larger than a 16 KiB guard (test_checkstack.sh asks for one): a stack-clash candidate. */
NOINLINE int frame_20000(int x)
{
    volatile char b[20000];

    cs_sink(b, sizeof b);
    return b[x % 20000];
}

NOINLINE int frame_vla(int n)
{
    volatile char b[n];

    cs_sink(b, (size_t)n);
    return b[n - 1];
}

NOINLINE int frame_alloca(int n)
{
    volatile char *b = alloca((size_t)n);

    cs_sink(b, (size_t)n);
    return b[n - 1];
}

NOINLINE int frame_recurse(int depth)
{
    volatile char b[300];

    cs_sink(b, sizeof b);
    return depth ? frame_recurse(depth - 1) + b[depth % 300] : b[0];
}

/*
 * Moves rsp and puts it back from a copy in a register, as interpreters'
 * code does around calls with a realigned stack: a restore, not a dynamic
 * frame (-fstack-usage calls it static).
 */
NOINLINE int frame_restore(int x)
{
    volatile char b[256];

    cs_sink(b, sizeof b);
#if defined(__aarch64__)
    __asm__ volatile("mov x13, sp\n\tsub sp, sp, #64\n\tmov sp, x13" ::: "x13", "memory");
#else
    __asm__ volatile("mov %%rsp, %%r13\n\tsub $64, %%rsp\n\tmov %%r13, %%rsp" ::: "r13", "memory");
#endif
    return b[x & 255];
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100;

    if (n < 1)
        n = 1;
    printf("%d\n", frame_64(n) + frame_512(n) + frame_4096(n) + frame_20000(n) + frame_vla(n) +
                       frame_alloca(n) + frame_recurse(5) + frame_restore(n));
    return 0;
}
