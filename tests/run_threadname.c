/* SPDX-License-Identifier: MIT */
/*
 * For 'vmstack run --json' (test_run.sh): a thread whose 15-byte name ends
 * in the first byte of a two-byte character, as a name cut at the kernel's
 * 15-byte limit does, next to one with quotes, a backslash and a control
 * character.  The table must still be strict JSON.
 */
#include <pthread.h>

/* The threads live until both are named: a thread that is gone cannot be named. */
static pthread_barrier_t named;

static void *idle(void *arg)
{
    pthread_barrier_wait(&named);
    return arg;
}

int main(void)
{
    /* "abcdefghijklmn" then the first byte of U+00C3 (0xC3 0x83). */
    static const char cut[] = "abcdefghijklmn\xc3";
    static const char odd[] = "q\"b\\\x01";
    pthread_t a, b;

    pthread_barrier_init(&named, NULL, 3);
    if (pthread_create(&a, NULL, idle, NULL) || pthread_create(&b, NULL, idle, NULL))
        return 1;
    if (pthread_setname_np(a, cut) || pthread_setname_np(b, odd))
        return 1;
    pthread_barrier_wait(&named);
    return pthread_join(a, NULL) || pthread_join(b, NULL);
}
