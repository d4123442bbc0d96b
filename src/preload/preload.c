/* SPDX-License-Identifier: MIT */
/*
 * libvmstack-preload.so: 'vmstack run' for unmodified programs.
 *
 * Interposes pthread_create so that threads run on guarded vmstack stacks
 * (or, when they bring their own stack, keep it and are registered for
 * fault classification as "user stack"), and the join and detach calls so
 * that those stacks are freed when the thread is really gone.  Every
 * thread, the main one included, gets an alternate signal stack and a
 * task record, so that an overflow anywhere gives the overflow report.
 * Each thread's peak stack use is measured once it is gone (see
 * vms__run_finished in preload.h); the table is printed at exit and on
 * demand (runtable.c).
 *
 * pthread_getattr_np is interposed too: on a vmstack stack glibc would
 * see a stack of the program's own, without guard, always joinable; the
 * program (Rust's std, the JVM, Boehm GC, Ruby, cgo find their stack
 * bounds and guard there) must see what glibc reports for its own stacks,
 * the guard size included: the one the thread asked for, in whole pages
 * (0 for a thread that asked for none, as the JVM's do), while vmstack's
 * guard (--guard) is below the stack all the same.  glibc too reports the
 * guard asked for where its real one is larger (arm64's 64 KiB minimum),
 * and a program that takes the guard size off the stack it reads back
 * (older JVMs do) must not lose vmstack's guard from its own stack.
 * The main thread's stack is glibc's answer without trace's tripwires
 * (mainattr.c).
 *
 * The real pthread calls are found with dlsym(RTLD_NEXT) on first use, not
 * only in the constructor: another library's constructor may create a
 * thread before ours ran.
 */
#include "preload/preload.h"
#include "trace/trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define ALTSTACK_SIZE ((size_t)1 << 20)

struct run_opts vms__run_opts;

static _Atomic int resolved;
static bool active;            /* vmstack initialised: threads go on its stacks */
static size_t default_stack;   /* glibc's default thread stack size */
static size_t tls_align = 64;  /* glibc's alignment of static TLS: at least its descriptor's 64 */
static size_t tls_ours;        /* our own static TLS, in every thread's block */
static size_t tls_room;        /* what it takes off a thread's stack: given back to every vmstack thread */
static pthread_key_t ending;   /* its destructor ends a thread of the table (thread_finished) */

static int (*real_timedjoin)(pthread_t, void **, const struct timespec *);
static int (*real_clockjoin)(pthread_t, void **, clockid_t, const struct timespec *);
static int (*real_setname)(pthread_t, const char *);
static int (*real_getattr)(pthread_t, pthread_attr_t *);
static void (*real_exit)(int);
static void (*real_Exit)(int);

static void *next_fn(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);

    if (!p && dlsym(RTLD_DEFAULT, name)) { /* glibc preloaded before us (vmstack run puts us first) */
        vms__out_printf("vmstack %s: libc comes before libvmstack-preload.so in LD_PRELOAD, so %s cannot be "
                        "interposed: put libvmstack-preload.so before it; aborting\n", vms__run_command(), name);
        abort();
    }
    if (!p) { /* libc without the call we interpose: nothing sensible is left to do */
        vms__out_printf("vmstack %s: libc has no %s, which libvmstack-preload.so interposes: aborting\n",
                        vms__run_command(), name);
        abort();
    }
    return p;
}

/* Idempotent, so a race between two first callers is harmless. */
static void resolve(void)
{
    if (atomic_load_explicit(&resolved, memory_order_acquire))
        return;
    vms__pthread.create = next_fn("pthread_create");
    vms__pthread.join = next_fn("pthread_join");
    vms__pthread.tryjoin = next_fn("pthread_tryjoin_np");
    vms__pthread.detach = next_fn("pthread_detach");
    real_timedjoin = next_fn("pthread_timedjoin_np");
    real_clockjoin = next_fn("pthread_clockjoin_np");
    real_setname = next_fn("pthread_setname_np");
    real_getattr = next_fn("pthread_getattr_np");
    real_exit = next_fn("_exit");
    real_Exit = next_fn("_Exit");
    atomic_store_explicit(&resolved, 1, memory_order_release);
}

/* ---- options ---- */

const char *vms__run_command(void)
{
    static const char *command;
    const char *v;

    if (!command)
        command = (v = secure_getenv("VMSTACK_RUN_TRACE")) && !strcmp(v, "1") ? "trace" : "run";
    return command;
}

/*
 * As strict as 'vmstack run' itself: a value it would refuse is refused
 * here too, with a line that says so, for the environment can be set by
 * hand or inherited by a process 'vmstack run' never checked.
 */
static bool bad_option(const char *name, const char *v, const char *accepted)
{
    vms__out_printf("vmstack %s: %s=%s: expected %s; %s (pid %d) runs without vmstack\n", vms__run_command(), name,
                    v, accepted, program_invocation_short_name, (int)getpid());
    return false;
}

static bool whole_number(const char *v, long min, long max, long *out)
{
    char *end;

    errno = 0;
    *out = strtol(v, &end, 10);
    return *v >= '0' && *v <= '9' && !*end && !errno && *out >= min && *out <= max;
}

static bool read_size_option(const char *name, size_t *out)
{
    const char *v = secure_getenv(name);
    bool guard = !strcmp(name, "VMSTACK_RUN_GUARD_SIZE");
    size_t min = guard ? vms__g.page : VMS_MIN_STACK, max = guard ? VMS_MAX_GUARD : VMS_MAX_STACK;

    *out = 0;
    if (!v)
        return true;
    if (vms__parse_size(v, out) || *out % vms__g.page || *out < min || *out > max)
        return bad_option(name, v, guard ? "a page multiple from one page to 1G" : "a page multiple from 16K to 1G");
    return true;
}

static bool read_path_option(const char *name, const char **out)
{
    const char *v = secure_getenv(name);

    *out = v;
    return !v || v[0] == '/' || !strcmp(v, "-") || bad_option(name, v, "an absolute path, or - for stdout");
}

static bool read_options(void)
{
    const char *v;
    long n;

    vms__g.page = (size_t)sysconf(_SC_PAGESIZE);
    vms__run_command(); /* read before the program can change its environment, and before threads */
    if (!read_size_option("VMSTACK_RUN_STACK_SIZE", &vms__run_opts.stack_size) ||
        !read_size_option("VMSTACK_RUN_GUARD_SIZE", &vms__run_opts.guard_size))
        return false;
    if ((v = secure_getenv("VMSTACK_RUN_JSON")) && strcmp(v, "0") && strcmp(v, "1"))
        return bad_option("VMSTACK_RUN_JSON", v, "0 or 1");
    vms__run_opts.json = v && !strcmp(v, "1");
    if ((v = secure_getenv("VMSTACK_RUN_QUIET")) && strcmp(v, "0") && strcmp(v, "1"))
        return bad_option("VMSTACK_RUN_QUIET", v, "0 or 1");
    vms__run_opts.quiet = v && !strcmp(v, "1");
    if (!read_path_option("VMSTACK_RUN_OUTPUT", &vms__run_opts.output) ||
        !read_path_option("VMSTACK_RUN_PLOT", &vms__run_opts.plot) ||
        !read_path_option("VMSTACK_RUN_FOLDED", &vms__run_opts.folded) || !read_path_option("VMSTACK_RUN_FLAMEGRAPH", &vms__run_opts.flamegraph))
        return false;
    if ((v = secure_getenv("VMSTACK_RUN_REPORT_SIGNAL")) &&
        (!whole_number(v, 0, NSIG - 1, &n) || n == SIGKILL || n == SIGSTOP || n == SIGSEGV || n == SIGBUS))
        return bad_option("VMSTACK_RUN_REPORT_SIGNAL", v,
                          "a signal number that can be caught and is not SIGSEGV or SIGBUS, or 0 for none");
    vms__run_opts.report_signal = v ? (int)n : 0;
    if ((v = secure_getenv("VMSTACK_RUN_PID")) && !whole_number(v, 1, INT32_MAX, &n))
        return bad_option("VMSTACK_RUN_PID", v, "a process id");
    vms__run_opts.pid = v ? (pid_t)n : 0;
    return true;
}

/* The process 'vmstack run' started, not one of its descendants. */
static bool is_the_program(void)
{
    return !vms__run_opts.pid || vms__run_opts.pid == getpid();
}

/* ---- threads ---- */

/*
 * The calling thread's name, which a thread it creates inherits from the
 * kernel: asked once per thread, then kept up to date by
 * pthread_setname_np below (a direct prctl(PR_SET_NAME) is not seen).
 */
static __thread char my_name[16];

static const char *creator_name(void)
{
    if (!my_name[0])
        prctl(PR_GET_NAME, my_name);
    return my_name;
}

/* The size asked for, or the default (glibc's, or --stack-size), before any rounding. */
static size_t stack_size_asked(const pthread_attr_t *attr)
{
    size_t size = 0;

    if (attr)
        pthread_attr_getstacksize(attr, &size);
    if (size == 0 || size == default_stack)
        size = vms__run_opts.stack_size ? vms__run_opts.stack_size : default_stack;
    return size;
}

/* Round up to a page and to vmstack's minimum. */
static size_t stack_size_for(const pthread_attr_t *attr)
{
    size_t size = stack_size_asked(attr), pg = vms__g.page;

    size = (size + pg - 1) & ~(pg - 1);
    return size < VMS_MIN_STACK ? VMS_MIN_STACK : size;
}

/* The guard size glibc reports for a thread created with attr: the one asked, in whole pages. */
static size_t guard_asked(const pthread_attr_t *attr)
{
    pthread_attr_t d;
    size_t guard = 0, pg = vms__g.page;

    if (attr) {
        pthread_attr_getguardsize(attr, &guard);
    } else if (pthread_getattr_default_np(&d) == 0) {
        pthread_attr_getguardsize(&d, &guard);
        pthread_attr_destroy(&d);
    }
    return (guard + pg - 1) & ~(pg - 1);
}

/* The largest static TLS alignment, and the size of our own TLS (the module that holds tls_ours). */
static int tls_layout_of(struct dl_phdr_info *info, size_t n, void *unused)
{
    uintptr_t me = (uintptr_t)&tls_ours;
    bool ours = false;
    size_t memsz = 0;

    (void)n;
    (void)unused;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t at = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && me >= at && me - at < ph->p_memsz)
            ours = true;
        if (ph->p_type == PT_TLS) {
            memsz = ph->p_memsz;
            if (ph->p_align > tls_align)
                tls_align = ph->p_align;
        }
    }
    if (ours)
        tls_ours = memsz;
    return 0;
}

/*
 * glibc puts the static TLS of every module loaded at start, ours
 * included, at the top of each thread's stack, and takes it off the size
 * asked.  Every vmstack thread gets that much more stack, above the part
 * the program sees (pthread_getattr_np), so that it goes exactly as deep
 * as without vmstack.  Our block's size in whole alignment units is what
 * it adds to the total: exact when the other modules' alignments are no
 * larger, within one unit otherwise.
 */
static void tls_room_init(void)
{
    dl_iterate_phdr(tls_layout_of, NULL);
    tls_room = (tls_ours + tls_align - 1) & ~(tls_align - 1);
}

/* Whether [lo, below) holds only zeros, so that the deepest non-zero word will be the thread's. */
static bool zero_below(char *lo, char *below)
{
    uintptr_t pg = vms__g.page, a = ((uintptr_t)lo + pg - 1) & ~(pg - 1);
    uintptr_t b = ((uintptr_t)below & ~(pg - 1)) - pg; /* a page of margin under our own frames */

    return b <= a || vms__used_bytes((char *)a, b - a) == 0;
}

/* A stack vmstack did not allocate: find it (glibc's) and register it for fault classification. */
static void foreign_stack_started(struct run_thread *t, char *frame)
{
    struct vms_task task = { .kind = VMS_TASK_THREAD, .id = (uint64_t)t->tid, .start = (void *)t->fn, .owner = t };
    pthread_attr_t a;

    if (!t->user_stack && pthread_getattr_np(pthread_self(), &a) == 0) {
        void *lo;
        size_t size;
        pthread_attr_getstack(&a, &lo, &size);
        pthread_attr_getguardsize(&a, &t->guard);
        pthread_attr_destroy(&a);
        t->lo = lo;
        t->hi = (char *)lo + size;
    }
    if (!t->lo)
        return;
    t->measurable = zero_below(t->lo, frame);
    memcpy(task.name, t->name, sizeof t->name);
    /* A user stack has no known guard: a fault within a page below it counts as its overflow. */
    t->reg = vms__stack_register(t->lo, t->hi, t->user_stack ? vms__g.page : t->guard, &task);
}

static void thread_started(struct run_thread *t, char *frame)
{
    t->self = pthread_self();
    memcpy(my_name, t->name, sizeof my_name);
    if (t->task) {
        t->tid = gettid();
        t->measurable = true; /* fresh or zeroed by vms__thread_release */
    } else {
        t->tid = gettid();
        foreign_stack_started(t, frame);
    }
    if (t->hi)
        t->top = (size_t)(t->hi - frame);
    vms__run_live(t);
    /* 'vmstack trace' puts a tripwire on the thread's stack (tracepreload.c). */
    if (atomic_load_explicit(&vms__trace_armed, memory_order_relaxed))
        vms__trace_run_thread(t);
}

static void thread_finished(void *p)
{
    struct run_thread *t = p;

    if (atomic_load_explicit(&vms__trace_armed, memory_order_relaxed))
        vms__trace_end(); /* its tripwire off, its deepest chain kept */
    if (t->task) {
        vms__run_ended(t); /* measured when its stack is freed */
        return;
    }
    t->peak = vms__run_measure(t);
    if (t->reg >= 0)
        vms__stack_unregister(t->reg);
    vms__run_finished(t);
}

/*
 * The start routine is called last, as a tail call, so that its frame is
 * where glibc's start_thread would have put it (as deep as without
 * vmstack, and no frame of ours in its backtraces).  The thread's end
 * therefore comes from a key's destructor, which glibc runs however the
 * thread ends: a return, pthread_exit or a cancellation.
 */
static void *run_entry(void *p)
{
    struct run_thread *t = p;

    vms__thread_begin();
    thread_started(t, __builtin_frame_address(0));
    pthread_setspecific(ending, t);
    return t->fn(t->arg);
}

/*
 * On a vmstack stack; EINVAL when glibc will not take it (static TLS too
 * large for it).  As glibc lays out its own: the size asked (cut down to
 * the static TLS alignment, as glibc does) right above the guard, then
 * the room our TLS takes (tls_room_init), then the descriptor; the slot's
 * rest above is left unused.  The descriptor, which glibc clears, so ends
 * that room's bytes past a page boundary: one page per thread more than
 * a stack glibc maps.  Its top on a boundary would need a bottom off one
 * (the JVM protects pages from the bottom it reads back) or a depth that
 * is not plain's.
 */
static int create_on_vmstack(struct run_thread *t, pthread_t *thread, const pthread_attr_t *attr)
{
    size_t asked = stack_size_asked(attr) & ~(tls_align - 1);
    vms_stack given;
    const struct vms_thread_start how = { .entry = run_entry, .arg = t, .start = (void *)t->fn };
    int rc;

    if (vms__stack_alloc(&t->st, stack_size_for(attr) + tls_room, vms__run_opts.guard_size))
        return EINVAL;
    t->lo = t->st.base;
    t->hi = t->lo + asked;
    t->room = tls_room;
    t->guard = t->st.guard_size;
    t->guard_asked = guard_asked(attr);
    t->task = vms__task_of(&t->st);
    t->task->owner = t;
    t->task->size = asked;
    memcpy(t->task->name, t->name, sizeof t->name);
    given = t->st;
    given.size = asked + tls_room;
    if ((rc = -vms__thread_start_on(thread, attr, &given, &how))) {
        vms_stack_free(&t->st);
        t->st.base = NULL;
        t->task = NULL;
        t->lo = t->hi = NULL;
        t->room = 0;
    }
    return rc;
}

VMS_API int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    struct run_thread *t;
    void *own;
    int rc;

    resolve();
    if (atomic_load_explicit(&vms__trace_armed, memory_order_relaxed))
        vms__trace_prefault(VMS_PREFAULT_THREAD); /* see trace/trace.h */
    if (!active || !(t = calloc(1, sizeof *t)))
        return vms__pthread.create(thread, attr, fn, arg);
    *t = (struct run_thread){ .fn = fn, .arg = arg, .reg = -1, .count = 1 };
    memcpy(t->name, creator_name(), sizeof t->name);
    if ((own = vms__attr_stackaddr(attr))) {
        size_t size = 0;
        pthread_attr_getstacksize(attr, &size);
        t->user_stack = true;
        t->hi = own;
        t->lo = (char *)own - size;
        rc = vms__pthread.create(thread, attr, run_entry, t);
    } else if ((rc = create_on_vmstack(t, thread, attr)) == EINVAL) {
        /* No vmstack stack (size out of range, too many sizes, memory): glibc's, still registered. */
        rc = vms__pthread.create(thread, attr, run_entry, t);
    }
    if (rc)
        free(t);
    return rc;
}

VMS_API int pthread_join(pthread_t t, void **ret)
{
    resolve();
    return -vms__thread_join(t, ret, vms__pthread.join);
}

VMS_API int pthread_tryjoin_np(pthread_t t, void **ret)
{
    resolve();
    return -vms__thread_join(t, ret, vms__pthread.tryjoin);
}

/* The timed joins: as vms__thread_join, with their extra arguments. */
static int joined(int rc, int ours, vms_stack *st)
{
    if (rc == 0 && ours)
        vms__thread_release(st);
    return rc;
}

VMS_API int pthread_timedjoin_np(pthread_t t, void **ret, const struct timespec *abstime)
{
    vms_stack st;
    int ours;

    resolve();
    if ((ours = vms__thread_of(t, &st)) < 0)
        return -ours;
    return joined(real_timedjoin(t, ret, abstime), ours, &st);
}

VMS_API int pthread_clockjoin_np(pthread_t t, void **ret, clockid_t clock, const struct timespec *abstime)
{
    vms_stack st;
    int ours;

    resolve();
    if ((ours = vms__thread_of(t, &st)) < 0)
        return -ours;
    return joined(real_clockjoin(t, ret, clock, abstime), ours, &st);
}

VMS_API int pthread_detach(pthread_t t)
{
    resolve();
    return -vms_thread_detach(t);
}

/*
 * On a vmstack stack: the usable stack glibc reports for the size the
 * program asked, right above the guard (create_on_vmstack), the guard
 * size it asked for (vmstack's guard, below it, for a thread of
 * vms_thread_create), and whether the thread is detached, which glibc
 * cannot know (thread.c).
 */
VMS_API int pthread_getattr_np(pthread_t t, pthread_attr_t *attr)
{
    vms_stack st;
    struct vms_task *task;
    int rc;

    resolve();
    if ((rc = real_getattr(t, attr)))
        return rc;
    if (vms__thread_of(t, &st) == 0 || !vms_on_stack((void *)t, &st) || !(task = vms__task_of(&st))) {
        if (atomic_load_explicit(&vms__trace_armed, memory_order_relaxed))
            vms__main_attr_untrace(attr);
        return 0;
    }
    pthread_attr_setstack(attr, st.base, task->size ? task->size : st.size);
    pthread_attr_setguardsize(attr, task->owner ? ((struct run_thread *)task->owner)->guard_asked : st.guard_size);
    if (task->detached)
        pthread_attr_setdetachstate(attr, PTHREAD_CREATE_DETACHED);
    return 0;
}

/* Keeps the task record's name, which the overflow report shows, in step. */
VMS_API int pthread_setname_np(pthread_t t, const char *name)
{
    vms_stack st;
    int rc;

    resolve();
    rc = real_setname(t, name);
    if (rc)
        return rc;
    if (pthread_equal(t, pthread_self()))
        strncpy(my_name, name, sizeof my_name - 1);
    vms__run_rename(t, name);
    if (vms_on_stack((void *)t, &st)) {
        struct vms_task *task = vms__task_of(&st);
        if (task)
            strncpy(task->name, name, sizeof task->name - 1);
    }
    return rc;
}

/* ---- the main thread, start and end ---- */

/* Registers the main thread's stack: [stack] up to where RLIMIT_STACK lets it grow. */
static void main_thread_register(void)
{
    struct vms_task task = { .kind = VMS_TASK_THREAD, .id = (uint64_t)getpid() };
    struct rlimit rl;
    char *lo, *hi;

    if (vms__run_main_stack(&lo, &hi) || getrlimit(RLIMIT_STACK, &rl) || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur > (rlim_t)(hi - (char *)0))
        return; /* no limit: no lowest address, nothing to classify against */
    prctl(PR_GET_NAME, task.name);
    vms__stack_register(hi - rl.rlim_cur, hi, MAIN_GUARD_PAGES * vms__g.page, &task);
}

/* The overflow handler, behind which the program's own handlers are kept. */
static int fault_init(void)
{
    vms__sigchain_init();
    if (vms__fault_thread_init()) {
        vms__sigchain_undo();
        return -1;
    }
    vms__sigchain_start();
    return 0;
}

static void at_exit(int status, void *unused);

/* One line on the report destination: never silently unprotected. */
static void unprotected(const char *why)
{
    vms__out_printf("vmstack %s: %s (pid %d) runs without guarded stacks: %s\n", vms__run_command(),
                    program_invocation_short_name, (int)getpid(), why);
    vms__out_detach();
}

static void preload_start(void)
{
    vms_config cfg;
    pthread_attr_t a;

    resolve();
    vms__out_init();
    vms__run_fork_init();
    /* Secure-execution mode, where the loader takes no LD_PRELOAD: its caller's environment is not ours to obey. */
    if (getauxval(AT_SECURE) || !read_options())
        return;
    if (is_the_program())
        vms__out_attach(); /* what the keeper needs, however the program ends */
    vms_config_defaults(&cfg);
    if (vms_config_from_env(&cfg)) {
        unprotected(vms_last_error());
        return;
    }
    /*
     * Reused thread stacks start zeroed, so that every thread's peak is its
     * own: vms__run_released measures a thread's stack once the thread is
     * gone and zeroes what it used (looking from the top: one mincore call
     * even for 8 MiB stacks), rather than the caches' scrub.
     */
    vms__thread_ended = vms__run_released;
    /*
     * The alternate signal stacks are larger than the 64 KiB they need, so
     * that a chunk of their region is ~30 slots, not ~400 slots each
     * guarded at start-up; only touched pages cost memory.  Thread stacks
     * get explicit sizes and the run's guard.  The configuration itself is
     * the one the program would get without 'vmstack run' (the defaults and
     * its environment), and stays the program's to replace: a program
     * linked with libvmstack calls this library, so its own vms_init must
     * win, and its fibers must not get the run's sizes.
     */
    vms__g.altstack_size = ALTSTACK_SIZE;
    if (pthread_getattr_default_np(&a) == 0) {
        pthread_attr_getstacksize(&a, &default_stack);
        pthread_attr_destroy(&a);
    }
    if (!default_stack) {
        unprotected("glibc gives no default thread stack size");
        return;
    }
    tls_room_init();
    if (pthread_key_create(&ending, thread_finished)) {
        unprotected("no thread-specific data key is left");
        return;
    }
    if (vms__init_provisional(&cfg, vms__run_command()) || fault_init()) {
        unprotected(vms_last_error());
        return;
    }
    vms__set_report_writer(vms__out_report, vms__out_report_done); /* line by line, checked (outfd.c) */
    vms__fault_report_unmanaged(); /* the program's runtimes' own stacks too (src/fault/unmanaged.c) */
    main_thread_register();
    /* --report-signal is for the program, not for the processes it starts. */
    if (vms__run_opts.report_signal && is_the_program())
        vms__run_signal_init();
    vms__trace_preload_init(); /* on when VMSTACK_RUN_TRACE=1 */
    on_exit(at_exit, NULL);
    if (is_the_program())
        vms__keeper_start(); /* the table when the exit handlers never run */
    active = true;
}

/* The program's own stack limit holds from the first of our calls on, its stack mapping once we are done. */
__attribute__((constructor)) static void preload_init(void)
{
    vms__run_stack_limit_restore();
    preload_start();
    vms__run_stack_trim();
}

/*
 * The table at exit.  Run by exit() as an on_exit handler, which knows the
 * exit status: when the table cannot be written to --output FILE, a
 * program that succeeded ends with status 1 (its stdio flushed first).
 */
static void at_exit(int status, void *unused)
{
    (void)unused;
    if (!active)
        return;
    /* The exiting thread's dead stack is read before our exit code runs on it. */
    if (atomic_load_explicit(&vms__trace_armed, memory_order_relaxed))
        vms__trace_end();
    /* --folded - and --flamegraph - follow what the program wrote to stdout, as exit would flush it. */
    if ((vms__run_opts.folded && !strcmp(vms__run_opts.folded, "-")) ||
        (vms__run_opts.flamegraph && !strcmp(vms__run_opts.flamegraph, "-")))
        fflush(stdout);
    if (vms__run_exit_table() < 0 && status == 0) {
        fflush(NULL);
        real_exit(1);
    }
}

/* Programs that end with _exit (shells do) skip exit handlers: the table comes here. */
VMS_API _Noreturn void _exit(int status)
{
    resolve();
    if (active && vms__run_exit_table() < 0 && status == 0)
        status = 1;
    real_exit(status);
    __builtin_unreachable();
}

VMS_API _Noreturn void _Exit(int status)
{
    resolve();
    if (active && vms__run_exit_table() < 0 && status == 0)
        status = 1;
    real_Exit(status);
    __builtin_unreachable();
}
