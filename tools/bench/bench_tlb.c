/* SPDX-License-Identifier: MIT */
/*
 * bench tlb: the cost the article says "has not yet been measured" -- TLB
 * misses from reaching stacks through 4 KiB mappings instead of the direct
 * map's huge pages.
 *
 * N live fibers (1 to 100,000) take turns in a ring; each turn a fiber
 * writes one byte per cache line of a TOUCH-byte buffer on its stack, then
 * yields.  The cost per turn is one switch plus that touch, so it grows as
 * the fibers' stacks stop fitting the caches and the TLB.  Two series, on
 * stacks of the kernel's 16 KiB, through the same scheduler:
 *   guarded_4k  vmstack stacks: guards between them, 4 KiB pages
 *   huge_2m     stacks packed without guards into one mapping with
 *               MADV_HUGEPAGE, so 128 stacks share one 2 MiB TLB entry
 * Both series run in alternating batches, so they see the same noise.  Each
 * batch runs WARM untimed rounds first (page faults), then SAMPLES samples,
 * timed by fiber 0 at the start of its turns, in CPU time of the thread (all
 * fibers run on it): the time it waited for a CPU on a busy machine is not
 * a cost of its stacks.  With 1 fiber, a yield finds nobody else ready and
 * returns at once: touch and yield, no switch.
 *
 * TOUCH is 1 KiB, a modest frame of 16 cache lines: the more data a turn
 * touches, the more data-cache misses drown the translation misses asked
 * about.  Stacks are 16 KiB so that 100,000 huge-page stacks fit in 1.6 GB.
 */
#include "bench.h"
#include "task/task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define STACK ((size_t)16 << 10)
#define TOUCH 1024
#define LINE 64
#define HUGE ((size_t)2 << 20)
#define WARM 2
/* Many short samples: on a shared machine, the median of short ones dodges preemption best. */
#define SAMPLES 9
#define SAMPLE_TURNS 50000
#define BATCHES 3

static const long sizes[] = { 1, 10, 100, 1000, 10000, 100000 };
#define NSIZES (sizeof sizes / sizeof sizes[0])
#define QUICK_SIZES 4 /* up to 1000 fibers */

/* The ring's schedule, read by every fiber; stamps written by fiber 0. */
static struct {
    long turns, every;
    double stamp[SAMPLES + 1];
} ring;

static void *turn(void *arg)
{
    char buf[TOUCH];

    for (long t = 0; t < ring.turns; t++) {
        /* arg is the fiber's index: fiber 0 keeps the time. */
        if (arg == NULL && t >= WARM && (t - WARM) % ring.every == 0)
            ring.stamp[(t - WARM) / ring.every] = bench_thread_cpu_ns();
        for (int i = 0; i < TOUCH; i += LINE)
            buf[i] = (char)t;
        BENCH_KEEP(buf);
        vms_yield();
    }
    return NULL;
}

/* The huge-page series' stacks and descriptors, for the largest N. */
struct packed {
    char *raw, *base;         /* the mapping, and its 2 MiB-aligned part */
    size_t bytes;
    struct vms_fiber_desc *desc;
    struct vms_task *task;
};

static int run_vmstack(long n)
{
    const vms_fiber_opts opts = { .stack_size = STACK };
    vms_fiber *f = calloc((size_t)n, sizeof *f);
    int rc = f ? 0 : -1;

    for (long i = 0; i < n && !rc; i++)
        rc = vms_fiber_spawn(&f[i], turn, (void *)(intptr_t)i, &opts);
    if (rc)
        fprintf(stderr, "vmstack bench tlb: %s\n", vms_last_error());
    rc = vms_run() || rc;
    for (long i = 0; f && i < n; i++)
        if (f[i].id)
            vms_fiber_join(f[i], NULL);
    free(f);
    return rc;
}

static int run_packed(struct packed *p, long n)
{
    for (long i = 0; i < n; i++)
        vms__fiber_start(&p->desc[i], &p->task[i], p->base + (size_t)i * STACK, STACK, turn, (void *)(intptr_t)i);
    if (vms_run())
        return -1;
    for (long i = 0; i < n; i++)
        vms__fiber_wait(&p->desc[i], NULL);
    return 0;
}

/* One batch of n fibers; adds its SAMPLES ns-per-turn figures to out. */
static int batch(struct packed *p, long n, double *out)
{
    ring.every = (bench_quick() ? SAMPLE_TURNS / 10 : SAMPLE_TURNS) / n;
    if (ring.every < 1)
        ring.every = 1;
    ring.turns = WARM + SAMPLES * ring.every + 1;
    if (p ? run_packed(p, n) : run_vmstack(n))
        return -1;
    for (int j = 0; j < SAMPLES; j++)
        out[j] = (ring.stamp[j + 1] - ring.stamp[j]) / ((double)ring.every * (double)n);
    return 0;
}

/* One 2 MiB-aligned mapping for all stacks, asking for huge pages. */
static int packed_map(struct packed *p, long n, int *huge)
{
    size_t bytes = (size_t)n * STACK;
    char *raw = mmap(NULL, bytes + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

    p->desc = calloc((size_t)n, sizeof *p->desc);
    p->task = calloc((size_t)n, sizeof *p->task);
    if (raw == MAP_FAILED || !p->desc || !p->task)
        return -1;
    p->raw = raw;
    p->base = (char *)(((uintptr_t)raw + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
    p->bytes = bytes;
    *huge = madvise(p->base, bytes, MADV_HUGEPAGE) == 0;
    return 0;
}

/* AnonHugePages of the mapping holding addr, from /proc/self/smaps; -1 if unknown. */
static long huge_bytes(const void *addr)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    unsigned long lo, hi;
    long kb = -1;
    int in = 0;

    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
        else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
            break;
    }
    fclose(f);
    return kb < 0 ? -1 : kb << 10;
}

/* Medians and spreads of both series for n fibers, batches alternating. */
static int measure(struct packed *p, long n, double med[2], double spread[2])
{
    int batches = bench_quick() ? 1 : BATCHES;
    double s[2][BATCHES * SAMPLES];
    char name[2][64];

    for (int b = 0; b < batches; b++)
        for (int k = 0; k < 2; k++) {
            int series = (k + b) % 2;
            if (batch(series ? p : NULL, n, s[series] + b * SAMPLES))
                return -1;
        }
    snprintf(name[0], sizeof name[0], "tlb guarded_4k at %ld fibers", n);
    snprintf(name[1], sizeof name[1], "tlb huge_2m at %ld fibers", n);
    for (int k = 0; k < 2; k++)
        bench_summarize(name[k], s[k], batches * SAMPLES, &med[k], &spread[k]);
    return 0;
}

static void report(const long *n, double med[][2], double spread[][2], size_t count, long huge, size_t used)
{
    char key[24];

    bench_title("tlb: one turn (touch %d bytes of a %zu KiB stack, yield) per live fiber (ns, median of %d)", TOUCH,
                STACK >> 10, (bench_quick() ? 1 : BATCHES) * SAMPLES);
    bench_note("%8s  %12s %8s  %12s %8s  %s", "fibers", "guarded_4k", "spread", "huge_2m", "spread", "4k/huge");
    for (size_t i = 0; i < count; i++)
        bench_note("%8ld  %9.1f ns %7.1f%%  %9.1f ns %7.1f%%  %.2fx", n[i], med[i][0], spread[i][0] * 100,
                   med[i][1], spread[i][1] * 100, med[i][0] / med[i][1]);
    bench_note("huge pages backing the huge_2m stacks: %ld of %zu bytes", huge, used);
    bench_json_open("tlb");
    bench_json_num("stack_bytes", (double)STACK);
    bench_json_num("touch_bytes", TOUCH);
    for (int k = 0; k < 2; k++) {
        bench_json_open(k ? "huge_2m" : "guarded_4k");
        for (size_t i = 0; i < count; i++) {
            snprintf(key, sizeof key, "%ld", n[i]);
            bench_json_num(key, med[i][k]);
            bench_plot_point("tlb", k ? "unguarded, 2 MiB huge pages" : "vmstack: guarded, 4 KiB pages",
                             (double)n[i], med[i][k]);
        }
        bench_json_close();
    }
    bench_json_num("huge_page_bytes", (double)huge);
    bench_json_num("huge_page_share", used ? (double)huge / (double)used : 0);
    bench_json_close();
}

int bench_tlb(void)
{
    size_t count = bench_quick() ? QUICK_SIZES : NSIZES;
    long largest = sizes[count - 1];
    double med[NSIZES][2], spread[NSIZES][2];
    struct packed p = { 0 };
    int huge_ok = 0, rc = 0;
    long huge;

    if (packed_map(&p, largest, &huge_ok)) {
        fprintf(stderr, "vmstack bench tlb: cannot map %ld stacks of %zu KiB\n", largest, STACK >> 10);
        free(p.desc);
        free(p.task);
        return 1;
    }
    if (!huge_ok)
        fprintf(stderr, "vmstack bench tlb: MADV_HUGEPAGE refused (no transparent huge pages here): "
                        "huge_2m runs on 4 KiB pages, unguarded\n");
    for (size_t i = 0; i < count && !rc; i++)
        rc = measure(&p, sizes[i], med[i], spread[i]);
    huge = huge_bytes(p.base);
    if (!rc && huge_ok && huge <= 0)
        fprintf(stderr, "vmstack bench tlb: warning: the kernel gave no huge pages (see "
                        "/sys/kernel/mm/transparent_hugepage): huge_2m ran on 4 KiB pages\n");
    if (!rc)
        report(sizes, med, spread, count, huge, p.bytes);
    else
        fprintf(stderr, "vmstack bench tlb: a batch of fibers failed\n");
    munmap(p.raw, p.bytes + HUGE);
    free(p.desc);
    free(p.task);
    return rc ? 1 : 0;
}
