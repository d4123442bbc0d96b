/* SPDX-License-Identifier: MIT */
/*
 * Blocking calls off the fiber's thread: a call that blocks for a second
 * through vms_offload while 1,000 other fibers of the thread keep going;
 * vms_pread from many fibers, from the page cache and from the disk (the
 * cache dropped, so that helpers read); vms_pwrite; the errors; offload
 * outside a fiber; fork while helpers are busy.  Labelled "threads".
 */
#include "check.h"
#include "vmstack.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MS 1000000LL
#define TICKERS 1000

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void run_one(void *(*fn)(void *), void *arg)
{
    vms_fiber f;

    CHECK_EQ(vms_fiber_spawn(&f, fn, arg, NULL), 0);
    CHECK_EQ(vms_run(), 0);
    CHECK_EQ(vms_fiber_join(f, NULL), 0);
}

/* ---- a second-long call while 1,000 fibers tick ---- */

static long ticks[TICKERS];
static bool stop;

static void *ticker(void *arg)
{
    long *n = arg;

    while (!stop) {
        CHECK_EQ(vms_sleep_ns(1 * MS), 0);
        (*n)++;
    }
    return NULL;
}

static void *sleep_one_second(void *arg)
{
    *(pthread_t *)arg = pthread_self();
    sleep(1);
    return (void *)(intptr_t)42;
}

static void *offloader(void *unused)
{
    long before[TICKERS], least = -1;
    pthread_t ran_on;
    void *result = NULL;
    int64_t t0;

    (void)unused;
    /* Let every ticker start, so that all of them are counted from here. */
    CHECK_EQ(vms_sleep_ns(20 * MS), 0);
    memcpy(before, ticks, sizeof before);
    t0 = now_ns();
    CHECK_EQ(vms_offload(sleep_one_second, &ran_on, &result), 0);
    CHECK(now_ns() - t0 >= 1000 * MS);
    CHECK_EQ((intptr_t)result, 42);
    for (int i = 0; i < TICKERS; i++)
        if (least < 0 || ticks[i] - before[i] < least)
            least = ticks[i] - before[i];
    /* 1 ms ticks for a second: each fiber ticked many times while the call blocked (not once: it never ran). */
    printf("offload: the least any of %d fibers ticked during the 1 s call: %ld\n", TICKERS, least);
    CHECK(least >= 10);
    CHECK(!pthread_equal(ran_on, pthread_self()));
    stop = true;
    return NULL;
}

static void test_no_stall(void)
{
    vms_fiber f[TICKERS], off;

    for (int i = 0; i < TICKERS; i++)
        CHECK_EQ(vms_fiber_spawn(&f[i], ticker, &ticks[i], NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&off, offloader, NULL, NULL), 0);
    CHECK_EQ(vms_run(), 0);
    for (int i = 0; i < TICKERS; i++)
        CHECK_EQ(vms_fiber_join(f[i], NULL), 0);
    CHECK_EQ(vms_fiber_join(off, NULL), 0);
}

/* ---- vms_pread and vms_pwrite from many fibers ---- */

#define FILE_BYTES (8 << 20)
#define READERS 64
#define CHUNK (64 << 10)

static int file_fd;

static unsigned char byte_at(off_t off)
{
    return (unsigned char)((off * 2654435761u) >> 13);
}

static void *reader(void *arg)
{
    uintptr_t seed = (uintptr_t)arg;
    static unsigned char bufs[READERS][CHUNK];
    unsigned char *b = bufs[seed];

    for (int round = 0; round < 16; round++) {
        off_t off = (off_t)((seed * 7919 + (uintptr_t)round * 104729) * 4093 % (FILE_BYTES - CHUNK));
        size_t len = CHUNK - (size_t)(seed * 61 % 4096);

        CHECK_EQ(vms_pread(file_fd, b, len, off), (ssize_t)len);
        for (size_t i = 0; i < len; i++)
            if (b[i] != byte_at(off + (off_t)i)) {
                fprintf(stderr, "byte %lld: %d, not %d\n", (long long)(off + (off_t)i), b[i], byte_at(off + (off_t)i));
                CHECK(0);
            }
    }
    return NULL;
}

static void *writer(void *arg)
{
    uintptr_t part = (uintptr_t)arg;
    unsigned char b[4096];
    off_t base = (off_t)part * (FILE_BYTES / READERS);

    for (off_t off = base; off < base + FILE_BYTES / READERS; off += (off_t)sizeof b) {
        for (size_t i = 0; i < sizeof b; i++)
            b[i] = byte_at(off + (off_t)i);
        CHECK_EQ(vms_pwrite(file_fd, b, sizeof b, off), (ssize_t)sizeof b);
    }
    return NULL;
}

static void fibers(void *(*fn)(void *))
{
    vms_fiber f[READERS];

    for (uintptr_t i = 0; i < READERS; i++)
        CHECK_EQ(vms_fiber_spawn(&f[i], fn, (void *)i, NULL), 0);
    CHECK_EQ(vms_run(), 0);
    for (int i = 0; i < READERS; i++)
        CHECK_EQ(vms_fiber_join(f[i], NULL), 0);
}

/* Threads of the process named as the pool's helpers. */
static int helpers(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;

    CHECK(d);
    while ((e = readdir(d))) {
        char path[300], comm[32] = "";
        FILE *f;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        if ((f = fopen(path, "r"))) {
            n += fgets(comm, sizeof comm, f) && !strcmp(comm, "vmstack-offload\n");
            fclose(f);
        }
    }
    closedir(d);
    return n;
}

static void *edges(void *unused)
{
    unsigned char b[100];

    (void)unused;
    /* The end of the file: a short read, then 0. */
    CHECK_EQ(vms_pread(file_fd, b, sizeof b, FILE_BYTES - 10), 10);
    CHECK_EQ(b[9], byte_at(FILE_BYTES - 1));
    CHECK_EQ(vms_pread(file_fd, b, sizeof b, FILE_BYTES), 0);
    CHECK_EQ(vms_pread(file_fd, b, 0, 0), 0);
    return NULL;
}

static void test_file(void)
{
    char path[] = "test_offload.XXXXXX";

    file_fd = mkstemp(path);
    CHECK(file_fd >= 0);
    unlink(path);
    /* Outside a fiber, vms_pwrite is plain pwrite: no helper yet. */
    for (uintptr_t i = 0; i < READERS; i++)
        writer((void *)i);
    CHECK_EQ(fsync(file_fd), 0);
    CHECK_EQ(helpers(), 0);
    /* From the page cache: no helper needed (RWF_NOWAIT), unless reclaim took pages meanwhile. */
    fibers(reader);
    printf("offload: %d helper threads after reading a cached file\n", helpers());
    /* From the disk: the cache dropped, helpers read. */
    CHECK_EQ(posix_fadvise(file_fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    fibers(reader);
    printf("offload: %d helper threads after reading an uncached file\n", helpers());
    CHECK(helpers() >= 1);
    run_one(edges, NULL);
    /* Written by fibers (helpers), read back plainly. */
    CHECK_EQ(ftruncate(file_fd, 0), 0);
    fibers(writer);
    for (uintptr_t i = 0; i < READERS; i++)
        reader((void *)i);
    close(file_fd);
}

/* ---- errors, and outside a fiber ---- */

static void *errors(void *unused)
{
    int p[2];
    char b[16];

    (void)unused;
    CHECK_EQ(vms_pread(-1, b, sizeof b, 0), -EBADF);
    CHECK(strstr(vms_last_error(), "vms_pread: fd -1"));
    CHECK_EQ(vms_pwrite(-1, b, sizeof b, 0), -EBADF);
    CHECK(strstr(vms_last_error(), "vms_pwrite: fd -1"));
    CHECK_EQ(pipe(p), 0);
    CHECK_EQ(vms_pread(p[0], b, sizeof b, 0), -ESPIPE);
    CHECK_EQ(vms_pwrite(p[1], b, sizeof b, 0), -ESPIPE);
    /* A file open for reading only: the helper's pwrite fails, the fiber gets its errno. */
    CHECK_EQ(vms_pwrite(p[0], b, sizeof b, 0), -ESPIPE);
    close(p[0]);
    close(p[1]);
    p[0] = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    CHECK_EQ(vms_pwrite(p[0], b, sizeof b, 0), -EBADF);
    close(p[0]);
    CHECK_EQ(vms_offload(NULL, NULL, NULL), -EINVAL);
    return NULL;
}

static void *whose(void *arg)
{
    *(pthread_t *)arg = pthread_self();
    return arg;
}

static void test_errors(void)
{
    pthread_t t;
    void *r = NULL;
    char b[4];

    run_one(errors, NULL);
    /* Outside a fiber: fn runs on the calling thread, the I/O calls are plain. */
    CHECK_EQ(vms_offload(whose, &t, &r), 0);
    CHECK(pthread_equal(t, pthread_self()));
    CHECK(r == &t);
    CHECK_EQ(vms_offload(NULL, NULL, NULL), -EINVAL);
    CHECK_EQ(vms_pread(-1, b, sizeof b, 0), -EBADF);
}

/* ---- fork while another thread's fibers keep the helpers busy ---- */

static atomic_bool busy_stop;

static void *spin_call(void *arg)
{
    (void)arg;
    usleep(100);
    return NULL;
}

static void *busy_fiber(void *unused)
{
    (void)unused;
    while (!atomic_load(&busy_stop))
        CHECK_EQ(vms_offload(spin_call, NULL, NULL), 0);
    return NULL;
}

static void *busy_thread(void *unused)
{
    vms_fiber f[8];

    (void)unused;
    for (int i = 0; i < 8; i++)
        CHECK_EQ(vms_fiber_spawn(&f[i], busy_fiber, NULL, NULL), 0);
    CHECK_EQ(vms_run(), 0);
    for (int i = 0; i < 8; i++)
        CHECK_EQ(vms_fiber_join(f[i], NULL), 0);
    return NULL;
}

static void *child_call(void *arg)
{
    void *r = NULL;

    CHECK_EQ(vms_offload(whose, arg, &r), 0);
    CHECK(r == arg);
    return NULL;
}

/* From a thread that never ran fibers: the child shares no epoll set with the parent (see vms_fiber_park). */
static void *forker(void *unused)
{
    (void)unused;
    for (int i = 0; i < 20; i++) {
        int st;
        pid_t pid = fork();

        CHECK(pid >= 0);
        if (pid == 0) {
            pthread_t ran_on = pthread_self();

            alarm(10); /* a hang dies by SIGALRM */
            run_one(child_call, &ran_on);
            _exit(pthread_equal(ran_on, pthread_self()) ? 3 : 0);
        }
        CHECK_EQ(waitpid(pid, &st, 0), pid);
        if (!WIFEXITED(st) || WEXITSTATUS(st))
            fprintf(stderr, "child %d: status 0x%x\n", i, st);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    return NULL;
}

static void test_fork(void)
{
    pthread_t t, f;

    CHECK_EQ(pthread_create(&t, NULL, busy_thread, NULL), 0);
    usleep(20000);
    CHECK_EQ(pthread_create(&f, NULL, forker, NULL), 0);
    CHECK_EQ(pthread_join(f, NULL), 0);
    atomic_store(&busy_stop, true);
    CHECK_EQ(pthread_join(t, NULL), 0);
}

int main(void)
{
    test_file();
    test_errors();
    test_no_stall();
    test_fork();
    printf("test_offload: ok\n");
    return 0;
}
