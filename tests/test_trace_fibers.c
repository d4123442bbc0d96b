/* SPDX-License-Identifier: MIT */
/*
 * The stack tracer for fibers (vms_trace_enable, vms_trace_report): a
 * fiber 'deep' runs tf_f1 (1000-byte array) -> tf_f2 (3000) -> tf_recurse
 * (512) x (DEPTH + 1), yielding at its deepest point to a fiber 'shallow'
 * (6000-byte array, touched across its own tripwire) on the same thread:
 * the handler must tell the two apart by the tripwire's address.  'deep'
 * measures its own depth.  The report must give 'deep' the chain
 * tf_recurse... tf_f2 tf_f1 in call order, frames of the arrays' size
 * (plus at most SLACK bytes of saved registers and alignment), Depth(i) =
 * Size(i) + Depth(i+1), a depth within one page of the truth, and the
 * warning for frames above 2048 bytes for tf_f2 only.
 */
#include "check.h"
#include "sp.h"
#include "tracereport.h"
#include "vmstack.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))
#define DEPTH 30
#ifdef VMS_ASAN
#define SLACK 512 /* ASan's redzones around each array */
#else
#define SLACK 64 /* saved registers and alignment */
#endif

static uintptr_t deepest;

NOINLINE int tf_recurse(int n)
{
    volatile unsigned char buf[512];

    buf[0] = (unsigned char)n;
    buf[511] = (unsigned char)n;
    if (n == 0) {
        deepest = stack_pointer();
        vms_yield();
        return buf[0];
    }
    return tf_recurse(n - 1) + buf[511];
}

NOINLINE int tf_f2(int n)
{
    volatile unsigned char buf[3000];

    buf[0] = 2;
    buf[2999] = 2;
    return tf_recurse(n) + buf[0] + buf[2999];
}

NOINLINE int tf_f1(int n)
{
    volatile unsigned char buf[1000];

    buf[0] = 1;
    buf[999] = 1;
    return tf_f2(n) + buf[0] + buf[999];
}

static void *deep(void *arg)
{
    return (void *)(intptr_t)tf_f1((int)(intptr_t)arg);
}

static void *shallow(void *arg)
{
    volatile unsigned char buf[6000];

    buf[5999] = 1;
    vms_yield();
    buf[0] = 1;
    return (void *)(intptr_t)(buf[0] + buf[5999] + (intptr_t)arg);
}

struct row {
    unsigned long depth, size;
    char fn[64];
};

/*
 * The rows of the chain under the header starting with head; a folded
 * recursion ("... N more entries of the same frame") unfolded into rows.
 */
static int rows(const char *text, const char *head, struct row *r, int max)
{
    const char *p = strstr(text, head);
    unsigned more;
    int n = 0;

    CHECK(p);
    p = strstr(strstr(p, "-----"), "\n") + 1;
    while (n < max) {
        if (sscanf(p, " %*u) %lu %lu %63[^+]", &r[n].depth, &r[n].size, r[n].fn) == 3) {
            n++;
        } else if (n > 0 && sscanf(p, " ... %u more entries of the same", &more) == 1) {
            for (; more > 0 && n < max; more--, n++) {
                r[n] = r[n - 1];
                r[n].depth -= r[n].size;
            }
        } else {
            break;
        }
        if (!(p = strchr(p, '\n')))
            break;
        p++;
    }
    return n;
}

int main(void)
{
    vms_fiber fd, fs;
    vms_stack st;
    struct row r[256];
    uintptr_t top;
    char *text;
    long truth;
    int n, k, first;

    CHECK_EQ(vms_trace_enable(2048, 0), 0);
    CHECK_EQ(vms_fiber_spawn(&fd, deep, (void *)(intptr_t)DEPTH, &(vms_fiber_opts){.name = "deep"}), 0);
    CHECK_EQ(vms_fiber_spawn(&fs, shallow, NULL, &(vms_fiber_opts){.name = "shallow"}), 0);
    CHECK_EQ(vms_fiber_stack(fd, &st), 0);
    top = (uintptr_t)vms_stack_top(&st);
    CHECK_EQ(vms_run(), 0);
    truth = (long)(top - deepest);
    text = report();

    n = rows(text, "fiber 'deep' (id", r, 256);
    CHECK(n >= DEPTH + 1 - 4096 / 512 + 3);
    for (int i = 0; i + 1 < n; i++)
        CHECK_EQ(r[i].depth, r[i].size + r[i + 1].depth);
    /* Innermost: tf_recurse, or vms_yield called from it; the first frame may be partial. */
    for (first = 0; first < n && strcmp(r[first].fn, "tf_recurse"); first++)
        ;
    for (k = first; k < n && !strcmp(r[k].fn, "tf_recurse"); k++)
        if (k > 0)
            CHECK(r[k].size >= 512 + 8 && r[k].size <= 512 + SLACK);
    CHECK(k - first >= DEPTH + 1 - 4096 / 512);
    CHECK(!strcmp(r[k].fn, "tf_f2") && r[k].size >= 3008 && r[k].size <= 3000 + SLACK);
    CHECK(!strcmp(r[k + 1].fn, "tf_f1") && r[k + 1].size >= 1008 && r[k + 1].size <= 1000 + SLACK);
    if (labs(truth - (long)r[0].depth) > 4096 + 64) {
        fprintf(stderr, "traced depth %lu, true depth %ld\n%s", r[0].depth, truth, text);
        return 1;
    }
    CHECK(strstr(text, "fiber 'shallow' (id"));
    CHECK(strstr(text, "WARNING: frame of ") && strstr(text, "(--warn-frame 2048) in tf_f2+"));
    CHECK(!strstr(text, "in tf_f1+"));
    printf("ok: fiber 'deep': %d entries, %lu bytes deep (truth %ld), %s\n", n, r[0].depth, truth,
           vms_guard_mode_name(vms_guard_mode_active()));
    free(text);
    return 0;
}
