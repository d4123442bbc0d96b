/* SPDX-License-Identifier: MIT */
/*
 * For 'vmstack run' (test_run_same.sh thread_depth_as_plain): how deep a
 * thread can go, one line per stack size asked: the bytes from its start
 * routine's frame down to the bottom pthread_getattr_np reads back (where
 * the guard is, and where a JVM puts its own guard zones), that bottom
 * written to so that it is known to be stack.  "default": no attributes.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define NSIZES 4

static const size_t sizes[NSIZES] = { 64 << 10, 100000, 512 << 10, 0 };

static void *depth(void *arg)
{
    char *line = arg, *frame = __builtin_frame_address(0);
    size_t n = strlen(line), size;
    pthread_attr_t a;
    void *lo;

    if (pthread_getattr_np(pthread_self(), &a) || pthread_attr_getstack(&a, &lo, &size)) {
        snprintf(line + n, 80 - n, " pthread_getattr_np failed");
        return NULL;
    }
    *(volatile char *)lo = 0;
    snprintf(line + n, 80 - n, " usable %zu", (size_t)(frame - (char *)lo));
    pthread_attr_destroy(&a);
    return NULL;
}

int main(void)
{
    char lines[NSIZES][80];

    for (int i = 0; i < NSIZES; i++) {
        pthread_attr_t a;
        pthread_t t;

        pthread_attr_init(&a);
        if (sizes[i])
            pthread_attr_setstacksize(&a, sizes[i]);
        snprintf(lines[i], sizeof lines[i], sizes[i] ? "asked %zu:" : "default:", sizes[i]);
        if (pthread_create(&t, sizes[i] ? &a : NULL, depth, lines[i]) || pthread_join(t, NULL))
            return 1;
        pthread_attr_destroy(&a);
        puts(lines[i]);
    }
    return 0;
}
