/* SPDX-License-Identifier: MIT */
/*
 * bench offload: a file read whole in 64 KiB blocks, with vms_pread from
 * 64 fibers of one thread, against the same preads on a pool of 16 plain
 * threads (the offload pool's bound), started once and kept; each reader
 * takes the next block until none is left.  Timed twice: with the file in
 * the page cache, and from the disk (its cache dropped with
 * posix_fadvise(POSIX_FADV_DONTNEED) before each read).  vms_pread reads
 * what the cache holds at once on the fiber's thread (RWF_NOWAIT), the
 * rest on the offload pool's helpers.  Wall time: the question is how long
 * a program waits for its data.
 */
#include "bench.h"
#include "vmstack.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK (64 << 10)
#define FIBERS 64
#define THREADS 16

struct file {
    int fd;
    long blocks;
    bool drop;                  /* from the disk: the cache dropped before each read */
};

static struct file file;
static long fiber_next;         /* fibers: one thread */
static _Atomic long thread_next;
static char *bufs;              /* a block per reader */

static pthread_barrier_t start, done;
static bool quit;

static void drop_cache(const struct file *f)
{
    if (f->drop && posix_fadvise(f->fd, 0, 0, POSIX_FADV_DONTNEED))
        bench_fail("posix_fadvise DONTNEED");
}

static void *fiber_reader(void *arg)
{
    char *buf = bufs + (size_t)(intptr_t)arg * BLOCK;
    long b;

    while ((b = fiber_next++) < file.blocks)
        if (vms_pread(file.fd, buf, BLOCK, (off_t)b * BLOCK) != BLOCK)
            bench_fail("vms_pread");
    return NULL;
}

static double run_fibers(void *arg, long iters)
{
    vms_fiber fb[FIBERS];
    double t = 0;

    (void)arg;
    for (long i = 0; i < iters; i++) {
        double t0;

        drop_cache(&file);
        fiber_next = 0;
        t0 = bench_now_ns();
        for (int k = 0; k < FIBERS; k++)
            if (vms_fiber_spawn(&fb[k], fiber_reader, (void *)(intptr_t)k, NULL))
                bench_fail("vms_fiber_spawn");
        if (vms_run())
            bench_fail("vms_run");
        for (int k = 0; k < FIBERS; k++)
            vms_fiber_join(fb[k], NULL);
        t += bench_now_ns() - t0;
    }
    return t;
}

static void *pool_thread(void *arg)
{
    char *buf;
    long b;

    (void)arg;
    pthread_barrier_wait(&start);
    buf = bufs + (size_t)(atomic_fetch_add(&thread_next, 1) % THREADS) * BLOCK;
    for (;;) {
        pthread_barrier_wait(&start);
        if (quit)
            return NULL;
        while ((b = atomic_fetch_add(&thread_next, 1)) < file.blocks)
            if (pread(file.fd, buf, BLOCK, (off_t)b * BLOCK) != BLOCK)
                bench_fail("pread");
        pthread_barrier_wait(&done);
    }
}

static double run_threads(void *arg, long iters)
{
    double t = 0;

    (void)arg;
    for (long i = 0; i < iters; i++) {
        double t0;

        drop_cache(&file);
        atomic_store(&thread_next, 0);
        t0 = bench_now_ns();
        pthread_barrier_wait(&start);
        pthread_barrier_wait(&done);
        t += bench_now_ns() - t0;
    }
    return t;
}

/* The file: size bytes of something, unlinked at once; written through the page cache and synced. */
static int make_file(long blocks)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    int fd;

    snprintf(path, sizeof path, "%s/vmstack-bench-offload.XXXXXX", dir && *dir ? dir : "/tmp");
    if ((fd = mkstemp(path)) < 0)
        return -1;
    unlink(path);
    memset(bufs, 0x5a, BLOCK);
    for (long b = 0; b < blocks; b++)
        if (pwrite(fd, bufs, BLOCK, (off_t)b * BLOCK) != BLOCK) {
            close(fd);
            return -1;
        }
    if (fsync(fd)) {
        close(fd);
        return -1;
    }
    return fd;
}

static void measure(struct bench_variant v[2], const char *what, const char *key)
{
    double mib = (double)file.blocks * BLOCK / (1 << 20);

    v[0] = (struct bench_variant){ .name = "vmstack", .run = run_fibers };
    v[1] = (struct bench_variant){ .name = "threads", .run = run_threads };
    bench_compare(v, 2, 5, 1);
    bench_note("%s:", what);
    bench_row("vms_pread, 64 fibers", v[0].median_ns / 1e6, "ms", v[0].spread, "");
    bench_row("pread, 16 threads", v[1].median_ns / 1e6, "ms", v[1].spread, "");
    bench_note("  vmstack / threads = %.2fx (goal <= 1.0); %.0f vs %.0f MiB/s", v[0].median_ns / v[1].median_ns,
               mib / (v[0].median_ns / 1e9), mib / (v[1].median_ns / 1e9));
    bench_json_num(key, v[0].median_ns / v[1].median_ns);
}

int bench_offload(void)
{
    long blocks = bench_quick() ? 256 : 4096; /* 16 MiB, 256 MiB */
    struct bench_variant cached[2], disk[2];
    pthread_t t[THREADS];

    if (!(bufs = malloc((size_t)(FIBERS > THREADS ? FIBERS : THREADS) * BLOCK)))
        bench_fail("malloc");
    file.blocks = blocks;
    if ((file.fd = make_file(blocks)) < 0)
        bench_fail("a file to read (TMPDIR, else /tmp)");
    pthread_barrier_init(&start, NULL, THREADS + 1);
    pthread_barrier_init(&done, NULL, THREADS + 1);
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, pool_thread, NULL))
            bench_fail("pthread_create");
    pthread_barrier_wait(&start);
    bench_title("offload: a %ld MiB file read whole in 64 KiB blocks (wall ms per file, median of 5)",
                blocks * BLOCK >> 20);
    bench_json_open("offload");
    measure(cached, "from the page cache (vms_pread reads it with RWF_NOWAIT, no helper)",
            "file_read_vs_threadpool_cached");
    file.drop = true;
    measure(disk, "from the disk (the cache dropped before each read: vms_pread's helpers read)",
            "file_read_vs_threadpool");
    bench_note("  echo p99 with file reads beside it (offload.echo_p99_ratio): not measured yet");
    bench_json_close();
    quit = true;
    pthread_barrier_wait(&start);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&done);
    close(file.fd);
    free(bufs);
    return 0;
}
