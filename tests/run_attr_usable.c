/* SPDX-License-Identifier: MIT */
/*
 * For 'vmstack run' (test_run_same.sh attr_usable): the stack a thread gets
 * for the stack and guard sizes it asked for, as it reads it back with
 * pthread_getattr_np, one line per thread: the size and guard read back,
 * the bytes usable below its first frame down to the bottom it read back
 * (where a JVM puts its own guard zones), whether that bottom is page
 * aligned and writable, and whether the byte below it is guarded.  All
 * threads are alive at once, so that glibc hands none of them a cached
 * stack of an earlier one's size.  "default": a thread created without
 * attributes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NSIZES 4
#define NGUARDS 4
#define NTHREADS (NSIZES * NGUARDS + 1)

static const size_t sizes[NSIZES] = { 16384, 100000, 512 << 10, 1 << 20 };
static const size_t guards[NGUARDS] = { 0, 1, 4096, 65536 };

static pthread_barrier_t all_up;
static int probe[2];
static char lines[NTHREADS][160];

/* Whether the byte at p cannot be read: the kernel says EFAULT rather than the program faulting. */
static int unreadable(const char *p)
{
    char c;

    if (write(probe[1], p, 1) == 1)
        return read(probe[0], &c, 1) != 1;
    return errno == EFAULT;
}

static void *show(void *arg)
{
    char *line = arg, *frame = __builtin_frame_address(0);
    pthread_attr_t a;
    void *lo;
    size_t size = 0, guard = 0;
    long pg = sysconf(_SC_PAGESIZE);
    int n = (int)strlen(line);

    if (pthread_getattr_np(pthread_self(), &a) || pthread_attr_getstack(&a, &lo, &size) ||
        pthread_attr_getguardsize(&a, &guard)) {
        snprintf(line + n, 160 - (size_t)n, " pthread_getattr_np failed");
    } else {
        *(volatile char *)lo = 0;
        snprintf(line + n, 160 - (size_t)n, " size %zu guard %zu usable %zu %s writable, below %s", size, guard,
                 (size_t)(frame - (char *)lo), (uintptr_t)lo % (uintptr_t)pg ? "unaligned" : "aligned",
                 unreadable((char *)lo - 1) ? "guarded" : "accessible");
        pthread_attr_destroy(&a);
    }
    pthread_barrier_wait(&all_up);
    return NULL;
}

int main(void)
{
    pthread_t t[NTHREADS];
    pthread_attr_t a;
    int n = 0;

    if (pipe(probe) || pthread_barrier_init(&all_up, NULL, NTHREADS))
        return 1;
    for (int i = 0; i < NSIZES; i++) {
        for (int j = 0; j < NGUARDS; j++, n++) {
            snprintf(lines[n], sizeof lines[n], "asked %zu guard %zu:", sizes[i], guards[j]);
            pthread_attr_init(&a);
            pthread_attr_setstacksize(&a, sizes[i]);
            pthread_attr_setguardsize(&a, guards[j]);
            if (pthread_create(&t[n], &a, show, lines[n]))
                return 1;
            pthread_attr_destroy(&a);
        }
    }
    snprintf(lines[n], sizeof lines[n], "default:");
    if (pthread_create(&t[n], NULL, show, lines[n]))
        return 1;
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < NTHREADS; i++)
        puts(lines[i]);
    return 0;
}
