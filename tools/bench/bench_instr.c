/* SPDX-License-Identifier: MIT */
/*
 * bench instructions: callgrind instructions per operation of each path a
 * coroutine runtime takes through vmstack, against its peer, in one run.
 * Instruction counts do not depend on the load of a shared machine, so
 * they are the figures small costs are judged by.
 *
 * The command re-runs itself under valgrind --tool=callgrind with
 * collection off ('vmstack bench --callgrind-child'); the child warms each
 * path up, then collects only around its measured loop
 * (CALLGRIND_TOGGLE_COLLECT) and dumps the counts under the measurement's
 * name (CALLGRIND_DUMP_STATS_AT).  The parent reads the dumps back.  The
 * C++ paths (Boost.Fiber, Boost.Context, vmstack.hpp) are in the
 * vmstack-peers.so module, built -O2 -DNDEBUG as users build them.
 */
#include "bench.h"
#include "vmstack.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#ifdef VMS_HAVE_BOOST_CONTEXT
#include "bench/peers_boost.h"
#include "cmd.h"

#include <dlfcn.h>
#include <limits.h>

#define PEERS_MODULE "vmstack-peers.so"
#define ITERS 20000
#define BATCH 8 /* stacks allocated, then freed, per round: within a per-CPU cache */
#define THREAD_SCALE 10 /* a thread's life is counted over ITERS / THREAD_SCALE of them */
#define THREAD_STACK (64 << 10)

typedef int (*peers_fn)(int vmstack_side, long iters);

static peers_fn peer_callcc, peer_resume, peer_fiber;

/* One counted measurement: the name of its dump, and how it runs. */
struct measure {
    const char *name;
    void (*run)(const struct measure *m, long iters); /* collects around what it counts */
    peers_fn *fn;
    int vmstack_side; /* the module's side; for run_alloc_free, what it counts (COUNT_*) */
    int scale;        /* it runs iters / scale operations */
};

/* A row of the table: vmstack's measurement against the peer's. */
struct path {
    const char *key;
    const char *what;
    const char *vmstack, *peer; /* measurement names */
    double goal;
};

static const struct path paths[] = {
    { "boost_fiber_spawn_join", "Boost.Fiber spawn + join: vmstack::stack_allocator vs pooled_fixedsize_stack",
      "fiber_vmstack", "fiber_pooled", 1.0 },
    { "free_sp_vs_alloc", "vms_stack_free_sp vs vms_stack_alloc", "free_sp", "alloc", 1.0 },
    { "callcc_spawn", "vmstack::callcc spawn vs boost::context::callcc on pooled stacks", "callcc_vmstack",
      "callcc_pooled", 1.3 },
    { "continuation_resume", "vmstack::continuation::resume vs raw resume (there and back)", "resume_vmstack",
      "resume_raw", 1.1 },
    { "fiber_spawn_run_join", "vms_fiber_spawn + join vs raw callcc on pooled stacks", "spawn_join",
      "callcc_pooled", 1.3 },
    { "yield", "vms_yield vs raw resume (there and back: two yields vs one resume)", "yield", "resume_raw", 1.0 },
    { "thread_create_join", "vms_thread_create + join vs pthread_create + join, 64 KiB stacks, all threads",
      "thread_vmstack", "thread_pthread", 1.1 },
};
#define NPATHS (sizeof paths / sizeof paths[0])

/* A path measured alone, against a goal in instructions (the kernel's: tens of them). */
struct alone {
    const char *key;
    const char *what;
    const char *name; /* the measurement */
    double goal;
};

static const struct alone alones[] = {
    { "stack_alloc", "vms_stack_alloc of a warm stack", "alloc", 60 },
    { "stack_free", "vms_stack_free", "free", 60 },
};
#define NALONES (sizeof alones / sizeof alones[0])

static void run_module(const struct measure *m, long iters)
{
    CALLGRIND_TOGGLE_COLLECT;
    int rc = (*m->fn)(m->vmstack_side, iters);
    CALLGRIND_TOGGLE_COLLECT;
    if (rc)
        bench_fail(m->name);
}

/* What run_alloc_free counts: the allocations, or the frees by address or by handle. */
enum { COUNT_ALLOC, COUNT_FREE_SP, COUNT_FREE };

static void free_batch(vms_stack *st, int count)
{
    if (count == COUNT_FREE) {
        for (int k = 0; k < BATCH; k++)
            if (vms_stack_free(&st[k]))
                bench_fail("vms_stack_free");
        return;
    }
    for (int k = 0; k < BATCH; k++)
        if (vms_stack_free_sp(vms_stack_top(&st[k])))
            bench_fail("vms_stack_free_sp");
}

/* Allocations and frees alternate in batches; only one of the two is counted. */
static void run_alloc_free(const struct measure *m, long iters)
{
    const int count = m->vmstack_side;
    vms_stack st[BATCH];

    for (long i = 0; i < iters; i += BATCH) {
        if (count == COUNT_ALLOC)
            CALLGRIND_TOGGLE_COLLECT;
        for (int k = 0; k < BATCH; k++)
            if (vms_stack_alloc(&st[k], PEERS_STACK))
                bench_fail("vms_stack_alloc");
        if (count == COUNT_ALLOC)
            CALLGRIND_TOGGLE_COLLECT;
        else
            CALLGRIND_TOGGLE_COLLECT;
        free_batch(st, count);
        if (count != COUNT_ALLOC)
            CALLGRIND_TOGGLE_COLLECT;
    }
}

static void *empty(void *arg)
{
    return arg;
}

static void run_spawn_join(const struct measure *m, long iters)
{
    const vms_fiber_opts opts = { .stack_size = PEERS_STACK };
    vms_fiber f;

    (void)m;
    CALLGRIND_TOGGLE_COLLECT;
    for (long i = 0; i < iters; i++)
        if (vms_fiber_spawn(&f, empty, NULL, &opts) || vms_fiber_join(f, NULL))
            bench_fail("vms_fiber_spawn + join");
    CALLGRIND_TOGGLE_COLLECT;
}

static void *yielder(void *arg)
{
    for (long n = (long)(intptr_t)arg; n > 0; n--)
        vms_yield();
    return NULL;
}

/* Two fibers yield to each other: per operation one round, there and back. */
static void run_yield(const struct measure *m, long iters)
{
    const vms_fiber_opts opts = { .stack_size = PEERS_STACK, .detached = 1 };

    (void)m;
    if (vms_fiber_spawn(NULL, yielder, (void *)(intptr_t)iters, &opts) ||
        vms_fiber_spawn(NULL, yielder, (void *)(intptr_t)iters, &opts))
        bench_fail("vms_fiber_spawn");
    CALLGRIND_TOGGLE_COLLECT;
    int rc = vms_run();
    CALLGRIND_TOGGLE_COLLECT;
    if (rc)
        bench_fail("vms_run");
}

/* A thread created and joined per operation; the new thread's instructions count too. */
static void run_thread(const struct measure *m, long iters)
{
    pthread_attr_t attr;
    pthread_t t;

    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, THREAD_STACK);
    CALLGRIND_TOGGLE_COLLECT;
    for (long i = 0; i < iters / m->scale; i++) {
        int rc = m->vmstack_side ? vms_thread_create(&t, &attr, empty, NULL, NULL) || vms_thread_join(t, NULL)
                                 : pthread_create(&t, &attr, empty, NULL) || pthread_join(t, NULL);
        if (rc)
            bench_fail(m->name);
    }
    CALLGRIND_TOGGLE_COLLECT;
    pthread_attr_destroy(&attr);
}

static const struct measure measures[] = {
    { "fiber_vmstack", run_module, &peer_fiber, 1, 1 },
    { "fiber_pooled", run_module, &peer_fiber, 0, 1 },
    { "free_sp", run_alloc_free, NULL, COUNT_FREE_SP, 1 },
    { "alloc", run_alloc_free, NULL, COUNT_ALLOC, 1 },
    { "free", run_alloc_free, NULL, COUNT_FREE, 1 },
    { "callcc_vmstack", run_module, &peer_callcc, 1, 1 },
    { "callcc_pooled", run_module, &peer_callcc, 0, 1 },
    { "resume_vmstack", run_module, &peer_resume, 1, 1 },
    { "resume_raw", run_module, &peer_resume, 0, 1 },
    { "spawn_join", run_spawn_join, NULL, 0, 1 },
    { "yield", run_yield, NULL, 0, 1 },
    { "thread_vmstack", run_thread, NULL, 1, THREAD_SCALE },
    { "thread_pthread", run_thread, NULL, 0, THREAD_SCALE },
};
#define NMEASURES (sizeof measures / sizeof measures[0])

static long iterations(void)
{
    return bench_quick() ? ITERS / 10 : ITERS;
}

static const char *open_module(void)
{
    static const struct peers_vms_api api = {
        vms_last_error,        vms_on_stack,       vms_stack_alloc,       vms_stack_free,
        vms_stack_free_sp,     vms_stack_set_name, vms_stack_on_overflow, vms_thread_attach,
        vms_stack_alloc_opts,
    };
    void (*init)(const struct peers_vms_api *);
    const char *why;
    void *m;

    if ((why = bench_peers_open(&m)))
        return why;
    peer_callcc = (peers_fn)dlsym(m, "peers_instr_callcc");
    peer_resume = (peers_fn)dlsym(m, "peers_instr_resume");
    peer_fiber = (peers_fn)dlsym(m, "peers_instr_fiber");
    init = (void (*)(const struct peers_vms_api *))dlsym(m, "peers_instr_init");
    if (!peer_callcc || !peer_resume || !peer_fiber || !init)
        return "lacks the peers_instr_* functions";
    init(&api);
    return NULL;
}

/* Under callgrind: every measurement warmed up, then counted and dumped by name. */
int bench_callgrind_child(void)
{
    const char *why;
    long iters = iterations();

    /*
     * Collection starts on (--collect-atstart=yes) because callgrind gives
     * each new thread that start state: a thread's own instructions, from
     * its first to its last, count only so.  This thread turns it off here
     * and on around each measured loop.
     */
    CALLGRIND_TOGGLE_COLLECT;
    why = open_module();
    if (why) {
        fprintf(stderr, "vmstack bench instructions: %s %s\n", PEERS_MODULE, why);
        return 1;
    }
    /* Boost.Fiber: without its library the module says so, and the row is left out. */
    int with_fiber = peer_fiber(0, 1) == 0;
    for (size_t i = 0; i < NMEASURES; i++) {
        const struct measure *m = &measures[i];

        if (m->fn == &peer_fiber && !with_fiber)
            continue;
        m->run(m, iters / 10);
        CALLGRIND_ZERO_STATS;
        m->run(m, iters);
        CALLGRIND_DUMP_STATS_AT(m->name);
    }
    fflush(NULL);
    /* No static destructor (a suspended continuation's unwinding) after the dumps. */
    _exit(0);
}

/* ---- the parent: run the child under callgrind, read its dumps ---- */

struct count {
    char name[64];
    double ir;
};

/* The name and instruction total of one dump file, or 0 when it has none of ours. */
static int read_dump(const char *file, struct count *c)
{
    static const char trigger[] = "desc: Trigger: Client Request: ";
    FILE *f = fopen(file, "r");
    char line[512];
    int have_name = 0, have_ir = 0;

    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, trigger, sizeof trigger - 1)) {
            const char *name = line + sizeof trigger - 1;
            size_t len = strcspn(name, "\n");

            have_name = len < sizeof c->name;
            if (have_name) {
                memcpy(c->name, name, len);
                c->name[len] = '\0';
            }
        } else if (!strncmp(line, "summary: ", 9) || !strncmp(line, "totals: ", 8)) {
            c->ir = strtod(strchr(line, ' ') + 1, NULL);
            have_ir = 1;
        }
    }
    fclose(f);
    return have_name && have_ir;
}

static int run_child(const char *dir)
{
    char exe[PATH_MAX], out[PATH_MAX + 64], log[PATH_MAX + 16];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    int status;
    pid_t pid;

    if (len <= 0)
        return -1;
    exe[len] = '\0';
    snprintf(out, sizeof out, "--callgrind-out-file=%s/cg.out", dir);
    snprintf(log, sizeof log, "%s/log", dir);
    fflush(NULL);
    if ((pid = fork()) < 0)
        return -1;
    if (pid == 0) {
        char *argv[] = { "valgrind", "--tool=callgrind", "--collect-atstart=yes", out, "-q", exe, "bench",
                         "--callgrind-child", NULL };

        if (!freopen(log, "w", stderr) || !freopen("/dev/null", "w", stdout))
            _exit(126);
        execvp(argv[0], argv);
        _exit(127);
    }
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return 127;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        FILE *f = fopen(log, "r");
        char line[512];

        fprintf(stderr, "vmstack bench instructions: the run under callgrind failed; its output:\n");
        while (f && fgets(line, sizeof line, f))
            fputs(line, stderr);
        if (f)
            fclose(f);
        return -1;
    }
    return 0;
}

static int read_dumps(const char *dir, struct count *c, int max)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char file[PATH_MAX + 300];
    int n = 0;

    if (!d)
        return 0;
    while ((e = readdir(d)) && n < max) {
        if (strncmp(e->d_name, "cg.out", 6))
            continue;
        snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
        n += read_dump(file, &c[n]);
    }
    closedir(d);
    return n;
}

static double per_op(const struct count *c, int n, const char *name, long iters)
{
    long ops = iters;

    for (size_t i = 0; i < NMEASURES; i++)
        if (!strcmp(measures[i].name, name))
            ops = iters / measures[i].scale;
    for (int i = 0; i < n; i++)
        if (!strcmp(c[i].name, name))
            return c[i].ir / (double)ops;
    return -1;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char file[PATH_MAX + 300];

    if (!d)
        return;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
            unlink(file);
        }
    closedir(d);
    rmdir(dir);
}

int bench_instructions(void)
{
    char dir[] = "/tmp/vmstack-callgrind-XXXXXX";
    struct count c[2 * NMEASURES];
    const char *why = open_module();
    long iters = iterations();
    int n, rc;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    /* valgrind cannot run a sanitizer's runtime, and its counts would be the sanitizer's. */
    (void)why, (void)iters, (void)n, (void)rc, (void)c, (void)dir;
    bench_title("instructions: skipped, this vmstack is built with a sanitizer, which valgrind cannot run");
    return 0;
#endif
    if (why) {
        bench_title("instructions: skipped, " PEERS_MODULE " %s: reinstall vmstack", why);
        return 0;
    }
    if (!mkdtemp(dir))
        bench_fail("mkdtemp");
    rc = run_child(dir);
    n = rc ? 0 : read_dumps(dir, c, (int)(sizeof c / sizeof c[0]));
    remove_dir(dir);
    if (rc == 127) {
        bench_title("instructions: skipped, valgrind is not installed (apt-get install valgrind)");
        return 0;
    }
    if (rc)
        return 1;
    bench_title("instructions: callgrind instructions per operation, collected around the loop only "
                "(%ld operations; C++ built -O2 -DNDEBUG)",
                iters);
    bench_json_open("instructions");
    bench_json_num("operations", (double)iters);
    for (size_t i = 0; i < NPATHS; i++) {
        const struct path *p = &paths[i];
        double v = per_op(c, n, p->vmstack, iters), q = per_op(c, n, p->peer, iters);

        if (v < 0 || q < 0) {
            bench_note("%s: not measured (Boost.Fiber not built: install libboost-fiber-dev)", p->what);
            continue;
        }
        bench_note("%s:", p->what);
        bench_note("  %-22s vmstack %8.1f  peer %8.1f  ratio %.2fx (goal <= %.1fx)%s", p->key, v, q, v / q,
                   p->goal, v / q <= p->goal ? "" : "  NOT MET");
        bench_json_open(p->key);
        bench_json_num("vmstack", v);
        bench_json_num("peer", q);
        bench_json_num("ratio", v / q);
        bench_json_num("goal", p->goal);
        bench_json_close();
    }
    for (size_t i = 0; i < NALONES; i++) {
        const struct alone *a = &alones[i];
        double v = per_op(c, n, a->name, iters);

        bench_note("%s:", a->what);
        bench_note("  %-22s vmstack %8.1f  (goal <= %.0f)%s", a->key, v, a->goal, v <= a->goal ? "" : "  NOT MET");
        bench_json_open(a->key);
        bench_json_num("vmstack", v);
        bench_json_close();
    }
    bench_json_close();
    return 0;
}

#else

int bench_callgrind_child(void)
{
    return 1;
}

int bench_instructions(void)
{
    bench_title("instructions: skipped, no vmstack-peers.so: vmstack was built without Boost.Context (libboost-context-dev), or its Debian package vmstack-bench-boost is not installed");
    return 0;
}

#endif
