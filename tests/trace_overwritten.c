/* SPDX-License-Identifier: MIT */
/*
 * A deep chain, then a later, shallower call that overwrites the top of
 * it: main -> recurse x21 -> middle -> leaf returns, then main calls
 * printf, whose frames (stdio, the float conversion) land where the
 * outer recurse frames were.  The tracer's chain at the deepest point must
 * hold none of printf's frames.
 */
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) static int leaf(int x)
{
    volatile char b[512];

    memset((char *)b, x, sizeof b);
    return b[x & 511];
}

__attribute__((noinline)) static int middle(int x)
{
    volatile char b[256];

    b[0] = (char)x;
    return leaf(x + b[0]) + 1;
}

__attribute__((noinline)) static int recurse(int n)
{
    volatile char b[200];

    b[0] = (char)n;
    if (n == 0)
        return middle(b[0]);
    return recurse(n - 1) + b[0];
}

int main(int argc, char **argv)
{
    int r = recurse(20 + argc);

    (void)argv;
    printf("%d %s %d %f\n", r, "hello, world", argc, 3.5);
    return 0;
}
