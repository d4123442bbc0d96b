/* SPDX-License-Identifier: MIT */
/*
 * The usage table of 'vmstack run': one row per thread (tid, name, start
 * routine, stack size, guard, peak use, % used), the main thread included,
 * at exit and on a signal; text or JSON, to stderr or replacing a file.
 *
 * Peak use is the distance from the top of the stack to its deepest
 * non-zero word (vms__used_bytes: mincore, then a scan of the deepest
 * resident page; no painting).  It counts what glibc keeps at the top of
 * the stack (thread descriptor, static TLS, start_thread's frame; for the
 * main thread the arguments, environment and auxiliary vector), because
 * that too is what overflows: PEAK/STACK is how full the stack got.  The
 * part above the start routine is reported as "tls_bytes" in JSON.
 *
 * The table at exit goes to the memory shared with 'vmstack run', which
 * writes it (to stderr or FILE) once the program has ended; a table on
 * --report-signal is written at once, to the program's stderr as at start
 * or replacing FILE.
 *
 * A finished thread's row is kept; past ROWS_MAX rows, finished threads
 * are folded into one row per start routine (count, deepest peak), so a
 * program that makes millions of threads keeps a bounded table.
 */
#include "arch/arch.h"
#include "fault/fault.h"
#include "preload/preload.h"
#include "preload/outfile.h"
#include "core/demangle.h"
#include "core/json.h"
#include "core/sanitizer.h"
#include "trace/trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROWS_MAX 4096

extern void *__libc_stack_end; /* ld.so: the stack pointer the program started with */

static pthread_mutex_t rows_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER; /* one table at a time */
static struct run_thread *live;          /* running threads */
static struct run_thread **done;         /* finished threads' rows */
static size_t ndone, done_cap;
static struct run_thread *folded;        /* past ROWS_MAX: one row per start routine */
static pid_t kept_pid;                   /* in the keeper: the program's pid, which the table is of */
static const char *kept_name;            /* and its main thread's name */

/* One line of the table, copied under the lock and printed after. */
struct row {
    pid_t tid;
    unsigned long count;
    char name[16];
    void *start;
    bool is_main, user_stack, running, measured;
    size_t stack, guard, peak, top;
};

size_t vms__run_measure(const struct run_thread *t)
{
    uintptr_t pg = vms__g.page, lo = ((uintptr_t)t->lo + pg - 1) & ~(pg - 1);

    if (!t->measurable || !t->hi || (uintptr_t)t->hi <= lo)
        return 0;
    /* Counted from hi whatever the alignment of lo. */
    return vms__used_bytes_top((char *)lo, (uintptr_t)t->hi - lo);
}

void vms__run_live(struct run_thread *t)
{
    pthread_mutex_lock(&rows_lock);
    t->prev = NULL;
    t->next = live;
    if (live)
        live->prev = t;
    live = t;
    t->listed = true;
    pthread_mutex_unlock(&rows_lock);
}

static void unlink_live(struct run_thread *t)
{
    if (!t->listed)
        return;
    t->listed = false;
    if (t->prev)
        t->prev->next = t->next;
    else
        live = t->next;
    if (t->next)
        t->next->prev = t->prev;
}

void vms__run_rename(pthread_t thread, const char *name)
{
    pthread_mutex_lock(&rows_lock);
    for (struct run_thread *t = live; t; t = t->next)
        if (pthread_equal(t->self, thread)) {
            strncpy(t->name, name, sizeof t->name - 1);
            break;
        }
    pthread_mutex_unlock(&rows_lock);
}

/* Past ROWS_MAX: into the folded row of its start routine.  Returns true if t was consumed. */
static bool fold(struct run_thread *t)
{
    struct run_thread *f;

    if (ndone < ROWS_MAX)
        return false;
    for (f = folded; f && f->fn != t->fn; f = f->next)
        ;
    if (!f) {
        t->next = folded;
        folded = t;
        return true;
    }
    f->count++;
    if (t->peak > f->peak)
        f->peak = t->peak;
    free(t);
    return true;
}

/* Moves a finished thread's row from the live list to the table; called with rows_lock held. */
static void finish_locked(struct run_thread *t)
{
    unlink_live(t);
    if (!fold(t)) {
        if (ndone == done_cap) {
            size_t cap = done_cap ? 2 * done_cap : 256;
            struct run_thread **p = realloc(done, cap * sizeof *p);
            if (p) {
                done = p;
                done_cap = cap;
            }
        }
        if (ndone < done_cap)
            done[ndone++] = t;
        else
            free(t); /* out of memory: the row is lost, the program goes on */
    }
}

void vms__run_finished(struct run_thread *t)
{
    pthread_mutex_lock(&rows_lock);
    finish_locked(t);
    pthread_mutex_unlock(&rows_lock);
}

/* No lock: threads ending and starting must not wait on each other. */
void vms__run_ended(struct run_thread *t)
{
    atomic_store_explicit(&t->ended, true, memory_order_relaxed);
}

/*
 * Measuring and zeroing happen outside the lock, so that no thread waits
 * on a mincore call; a table printed at that very moment may see this
 * thread's stack half zeroed.  Zeroing only what was used keeps it cheap,
 * and a stack that goes back to the kernel comes back zero-filled anyway.
 */
#define ZERO_BY_RELEASE ((size_t)1 << 20) /* more used than this: its whole pages are given back instead */

/*
 * Zeroes [p, p + n): a deep thread's whole pages go back to the kernel,
 * which refills them with zeros when they are touched again, rather than
 * being written (36 MB deep: milliseconds, and memory the program no
 * longer holds).
 */
static void zero_used(char *p, size_t n)
{
    uintptr_t pg = vms__g.page, lo = ((uintptr_t)p + pg - 1) & ~(pg - 1), hi = ((uintptr_t)p + n) & ~(pg - 1);

    if (n < ZERO_BY_RELEASE || vms__os_release((void *)lo, hi - lo)) {
        memset(p, 0, n);
        return;
    }
    memset(p, 0, lo - (uintptr_t)p);
    memset((void *)hi, 0, (uintptr_t)p + n - hi);
}

void vms__run_released(vms_stack *st)
{
    struct vms_task *task = vms__task_of(st);
    struct run_thread *t = task ? task->owner : NULL;
    char *top = t ? t->hi + t->room : (char *)vms_stack_top(st); /* the slot's rest above was never used */
    size_t used = vms__used_bytes_top(st->base, (size_t)(top - (char *)st->base));

    /* A gone thread's stack: valgrind holds it inaccessible, and zeroing it is no error. */
    vms__san_quiet_begin();
    zero_used(top - used, used);
    vms__san_quiet_end();
    if (!t)
        return;
    pthread_mutex_lock(&rows_lock);
    t->peak = used > t->room ? used - t->room : 0; /* from the top of the program's part, as a plain thread's */
    memcpy(t->name, task->name, sizeof t->name - 1); /* kept up to date by pthread_setname_np */
    finish_locked(t);
    pthread_mutex_unlock(&rows_lock);
}

/* ---- collecting rows ---- */

/*
 * The bounds found last are kept for when /proc cannot be opened (a
 * program that used up its descriptors and exits): the table then
 * measures the stack as it was then, without the part it grew since.
 */
int vms__run_main_stack(char **lo, char **hi)
{
    static char *last_lo, *last_hi;
    FILE *f = fopen("/proc/self/maps", "re");
    char line[512];
    int rc = -ENOENT;

    if (!f) {
        rc = -errno;
        if (!last_hi)
            return rc;
        *lo = last_lo;
        *hi = last_hi;
        return 0;
    }
    while (fgets(line, sizeof line, f))
        if (strstr(line, "[stack]") && sscanf(line, "%p-%p", (void **)lo, (void **)hi) == 2) {
            last_lo = *lo;
            last_hi = *hi;
            rc = 0;
            break;
        }
    fclose(f);
    return rc;
}

static pid_t program_pid(void)
{
    return kept_pid ? kept_pid : getpid();
}

/*
 * A thread's name as the kernel has it now; false (name untouched) if it
 * is gone.  Read through core, which reads it also where the program has
 * used up its descriptors.
 */
static bool task_comm(pid_t tid, char name[16])
{
    char path[64], buf[17];
    ssize_t n;

    snprintf(path, sizeof path, "/proc/%d/task/%d/comm", (int)program_pid(), (int)tid);
    if ((n = vms__os_read_file(path, buf, 16)) <= 0)
        return false;
    buf[n - 1] = '\0'; /* the newline */
    memcpy(name, buf, (size_t)n);
    return true;
}

static void main_row(struct row *r)
{
    struct rlimit rl;
    char *lo, *hi;

    memset(r, 0, sizeof *r);
    r->is_main = true;
    r->tid = program_pid();
    r->count = 1;
    r->guard = MAIN_GUARD_PAGES * vms__g.page;
    if (kept_name)
        snprintf(r->name, sizeof r->name, "%s", kept_name);
    else if (!task_comm(r->tid, r->name))
        prctl(PR_GET_NAME, r->name); /* no descriptor to be had: the exiting thread's name, most often the main one's */
    if (vms__run_main_stack(&lo, &hi))
        return;
    r->stack = getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? rl.rlim_cur : (size_t)(hi - lo);
    r->peak = vms__used_bytes(lo, (size_t)(hi - lo));
    r->top = (size_t)(hi - (char *)__libc_stack_end);
    r->measured = true;
}

/* live: still in the live list (running, or ended with its stack not yet freed): measured now. */
static void thread_row(struct row *r, const struct run_thread *t, bool live)
{
    bool running = live && !atomic_load_explicit(&t->ended, memory_order_relaxed);

    *r = (struct row){
        .tid = t->tid,
        .count = t->count,
        .start = (void *)t->fn,
        .user_stack = t->user_stack,
        .running = running,
        .measured = t->measurable,
        .stack = (size_t)(t->hi - t->lo),
        .guard = t->user_stack ? 0 : t->guard,
        .peak = live ? vms__run_measure(t) : t->peak,
        .top = t->top,
    };
    memcpy(r->name, t->name, sizeof r->name);
    if (running && t->tid)
        task_comm(t->tid, r->name); /* the name it has now, however it was set */
}

static int by_tid(const void *a, const void *b)
{
    const struct row *x = a, *y = b;

    if (x->is_main != y->is_main)
        return x->is_main ? -1 : 1;
    if ((x->count > 1) != (y->count > 1))
        return x->count > 1 ? 1 : -1;
    return (x->tid > y->tid) - (x->tid < y->tid);
}

/* All rows, sorted: main thread, threads by tid, folded rows.  NULL when out of memory. */
static struct row *collect(size_t *n)
{
    struct row *rows;
    size_t cap = 1, i = 0;
    struct run_thread *t;

    pthread_mutex_lock(&rows_lock);
    for (t = live; t; t = t->next)
        cap++;
    for (t = folded; t; t = t->next)
        cap++;
    cap += ndone;
    if ((rows = malloc(cap * sizeof *rows))) {
        main_row(&rows[i++]);
        for (t = live; t; t = t->next)
            thread_row(&rows[i++], t, true);
        for (size_t k = 0; k < ndone; k++)
            thread_row(&rows[i++], done[k], false);
        for (t = folded; t; t = t->next)
            thread_row(&rows[i++], t, false);
    }
    pthread_mutex_unlock(&rows_lock);
    if (rows)
        qsort(rows, i, sizeof *rows, by_tid);
    *n = i;
    return rows;
}

/* ---- formatting ---- */

static void symbolize(const struct row *r, char *buf, size_t n)
{
    struct vms_symres s;
    Dl_info di;
    char cxx[512];

    if (r->is_main) {
        snprintf(buf, n, "main");
        return;
    }
    vms__symbols_lookup((uintptr_t)r->start, &s);
    if (s.name && s.off == 0)
        snprintf(buf, n, "%s", vms__demangle(s.name, cxx, sizeof cxx));
    else if (dladdr(r->start, &di) && di.dli_sname && di.dli_saddr == r->start)
        snprintf(buf, n, "%s", di.dli_sname);
    else if (s.module)
        snprintf(buf, n, "%s+0x%lx", s.module, (unsigned long)s.modoff);
    else
        snprintf(buf, n, "%p", r->start);
}

/*
 * Symbolized once per start routine in a row: thousands of rows often
 * share a few.  Only used under out_lock; forgotten at each table.
 */
static struct {
    bool valid, is_main;
    void *start;
    char name[128];
} last;

static void start_name(const struct row *r, char *buf, size_t n)
{
    if (!last.valid || r->start != last.start || r->is_main != last.is_main) {
        symbolize(r, last.name, sizeof last.name);
        last.start = r->start;
        last.is_main = r->is_main;
        last.valid = true;
    }
    snprintf(buf, n, "%s", last.name);
}

/* "8M", "64K", or bytes when not a whole number of KiB. */
static const char *size_str(size_t v, char *buf, size_t n)
{
    if (v && v % (1u << 20) == 0)
        snprintf(buf, n, "%zuM", v >> 20);
    else if (v && v % 1024 == 0)
        snprintf(buf, n, "%zuK", v >> 10);
    else
        snprintf(buf, n, "%zu", v);
    return buf;
}

static double used_pct(const struct row *r)
{
    return r->stack ? 100.0 * (double)r->peak / (double)r->stack : 0.0;
}

static void text_row(FILE *f, const struct row *r)
{
    char start[128], tid[24], name[32], st[24], gd[24], peak[24], pct[16];

    start_name(r, start, sizeof start);
    snprintf(tid, sizeof tid, "%d", (int)r->tid);
    snprintf(name, sizeof name, "%s", r->name);
    if (r->count > 1) {
        snprintf(tid, sizeof tid, "-");
        snprintf(name, sizeof name, "(%lu threads)", r->count);
    }
    snprintf(peak, sizeof peak, r->measured ? "%zu" : "-", r->peak);
    snprintf(pct, sizeof pct, r->measured ? "%.1f%%" : "-", used_pct(r));
    fprintf(f, "%8s  %-15s  %-28s %7s %7s %9s %6s%s%s\n", tid, name, start, size_str(r->stack, st, sizeof st),
            r->user_stack ? "-" : size_str(r->guard, gd, sizeof gd), peak, pct,
            r->user_stack ? "  user stack" : "", r->running ? "  running" : "");
}

static void json_row(struct vms_json *j, const struct row *r)
{
    char start[128];

    start_name(r, start, sizeof start);
    vms__json_obj(j);
    vms__json_key(j, "tid");
    vms__json_int(j, r->tid);
    vms__json_key_str(j, "name", r->name);
    vms__json_key_str(j, "start", start);
    vms__json_key_uint(j, "stack_size", r->stack);
    vms__json_key_uint(j, "guard_size", r->user_stack ? 0 : r->guard);
    vms__json_key(j, "peak_bytes");
    if (r->measured)
        vms__json_uint(j, r->peak);
    else
        vms__json_null(j);
    vms__json_key(j, "used_pct");
    if (r->measured)
        vms__json_double(j, r->stack ? (double)((r->peak * 10000 + r->stack / 2) / r->stack) / 100 : 0.0);
    else
        vms__json_null(j);
    vms__json_key_uint(j, "tls_bytes", r->top);
    vms__json_key_bool(j, "user_stack", r->user_stack);
    vms__json_key_bool(j, "running", r->running);
    vms__json_key_uint(j, "count", r->count);
    vms__json_obj_end(j);
}

static void json_table(FILE *f, const struct row *rows, size_t n, const char *why)
{
    char buf[1024];
    struct vms_json j;

    vms__json_init(&j, buf, sizeof buf, vms__json_sink_file, f, true);
    vms__json_obj(&j);
    vms__json_key(&j, "pid");
    vms__json_int(&j, program_pid());
    vms__json_key_str(&j, "program", program_invocation_short_name);
    vms__json_key_str(&j, "when", why);
    vms__json_key(&j, "stderr_dropped_bytes");
    vms__json_int(&j, (long long)vms__out_dropped());
    vms__json_key(&j, "threads");
    vms__json_arr(&j);
    for (size_t i = 0; i < n; i++)
        json_row(&j, &rows[i]);
    vms__json_arr_end(&j);
    /* 'vmstack trace --json': the deepest chains in the same object. */
    /* Acquire (as in make_table): the tracer's tables, read next, were set up before it was armed. */
    if (atomic_load_explicit(&vms__trace_armed, memory_order_acquire)) {
        vms__json_key(&j, "trace");
        vms__trace_json(&j, why);
    }
    vms__json_obj_end(&j);
    vms__json_end(&j);
    fputc('\n', f);
}

static void format(FILE *f, const struct row *rows, size_t n, const char *why)
{
    last.valid = false;
    if (vms__run_opts.json) {
        json_table(f, rows, n, why);
        return;
    }
    /* "vmstack run:" under trace too: scripts find the table by this line. */
    fprintf(f, "vmstack run: stack usage of %s (pid %d) at %s\n", program_invocation_short_name, (int)program_pid(),
            why);
    fprintf(f, "%8s  %-15s  %-28s %7s %7s %9s %6s\n", "TID", "NAME", "START", "STACK", "GUARD", "PEAK", "USED%");
    for (size_t i = 0; i < n; i++)
        text_row(f, &rows[i]);
    if (vms__out_dropped())
        fprintf(f, "vmstack run: %zu bytes of reports and notices were dropped: stderr took none of them for 2 s\n",
                vms__out_dropped());
}

/* ---- output ---- */

/* Whether the program can still open a file: one that used up its descriptors hands its files to the keeper. */
static bool fd_free(void)
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return errno != EMFILE && errno != ENFILE;
    close(fd);
    return true;
}

/*
 * The table at the end (at_exit: by the exit handlers or the keeper) is
 * the last: the keeper then makes none, and --plot and --folded are drawn
 * from it.  Without --output it goes to the stderr of the start, now or
 * through the keeper (outfd.c); under --quiet only after an overflow
 * report, which it then completes.
 */
static int deliver(const char *text, size_t len, bool at_exit)
{
    const struct run_opts *o = &vms__run_opts;
    int rc = 0;

    if (at_exit) {
        vms__out_ended();
        if ((o->output || o->plot || o->folded || o->flamegraph) && !fd_free() && vms__out_hand_over(text, len))
            return 0;
    }
    if (o->output)
        rc = vms__run_write_output(vms__run_command(), o->output, text, len, vms__out_printf);
    else if (at_exit && (!o->quiet || vms__out_reported()))
        vms__out_table(text, len);
    else if (!at_exit)
        vms__out_write(text, len); /* stderr gone: nothing to fail the program for */
    if (at_exit && vms__run_post(text, len))
        rc = -1;
    return rc;
}

void vms__run_deliver_kept(void)
{
    const char *text;
    size_t len;

    if (vms__out_handed_over(&text, &len))
        deliver(text, len, true);
}

static int make_table(const char *why, bool at_exit)
{
    char *text = NULL;
    int rc = -1;
    size_t len = 0, n;
    struct row *rows;
    FILE *f;

    pthread_mutex_lock(&out_lock);
    vms__symbols_snapshot();
    if ((rows = collect(&n)) && (f = open_memstream(&text, &len))) {
        format(f, rows, n, why);
        /* 'vmstack trace' adds the deepest chains, in the same single write (JSON: inside the table's object). */
        if (atomic_load_explicit(&vms__trace_armed, memory_order_acquire) && !vms__run_opts.json)
            vms__trace_format(f, why, program_pid());
        fclose(f);
        /* One write, never mixed with the program's own buffered stderr. */
        rc = deliver(text, len, at_exit);
    }
    free(text);
    free(rows);
    pthread_mutex_unlock(&out_lock);
    return rc;
}

struct table_call {
    const char *why;
    bool at_exit;
    int rc;
};

static void table_on_side_stack(void *arg, uintptr_t unused)
{
    struct table_call *c = arg;

    (void)unused;
    c->rc = make_table(c->why, c->at_exit);
}

/*
 * The table is made on a guarded stack of its own: symbolising with libdw
 * takes tens of KiB, which the program's thread may not have left (its
 * main thread has 16 KiB in all under 'ulimit -s 16'), and frames of ours
 * on the program's stack would count in its peak.  Only touched pages of
 * it cost memory.  Without one (no memory, no mapping left), in place.
 */
#define TABLE_STACK ((size_t)1 << 20)

static int run_table(const char *why, bool at_exit)
{
    struct table_call c = { .why = why, .at_exit = at_exit, .rc = -1 };
    size_t guard = (size_t)sysconf(_SC_PAGESIZE);
    char *m = vms__os_reserve(guard + TABLE_STACK);

    if (!m)
        return make_table(why, at_exit);
    if (vms__os_commit(m + guard, TABLE_STACK)) {
        munmap(m, guard + TABLE_STACK);
        return make_table(why, at_exit);
    }
    vms__call_on_stack(m + guard + TABLE_STACK, table_on_side_stack, &c);
    munmap(m, guard + TABLE_STACK);
    return c.rc;
}

int vms__run_table(const char *why)
{
    return run_table(why, false);
}

int vms__run_exit_table(void)
{
    static _Atomic int printed;

    if ((vms__run_opts.pid && vms__run_opts.pid != getpid()) || atomic_exchange(&printed, 1))
        return 0;
    return run_table("exit", true);
}

/*
 * In the keeper, the only task left in the program's memory: locks that
 * the program's threads held when they were killed are free again, as
 * they would be in a forked child.
 */
int vms__run_keeper_table(pid_t pid, const char *name, const char *why)
{
    pthread_mutex_init(&rows_lock, NULL);
    pthread_mutex_init(&out_lock, NULL);
    kept_pid = pid;
    kept_name = name;
    return run_table(why, true);
}

/* ---- the table on a signal ---- */

static sem_t sig_sem; /* posted by the handler, for the helper thread: no descriptor */
static bool sig_on;

/*
 * A child made by fork() is not the program 'vmstack run' started: its
 * report signal has its default action again (the helper thread that
 * would print the table is not in the child anyway).
 */
static void signal_child(void)
{
    struct sigaction dfl = { .sa_handler = SIG_DFL };

    if (vms__run_opts.report_signal && sig_on) {
        sigemptyset(&dfl.sa_mask);
        sigaction(vms__run_opts.report_signal, &dfl, NULL);
        sig_on = false;
    }
}

static void out_lock_take(void)
{
    pthread_mutex_lock(&out_lock);
}

static void out_lock_release(void)
{
    pthread_mutex_unlock(&out_lock);
}

static void out_lock_child(void)
{
    signal_child();
    out_lock_release();
}

/* The table's locks, free and whole in a child after fork (core/fork.c). */
void vms__run_fork_init(void)
{
    vms__fork_mutex(VMS_FORK_RUN_ROWS, &rows_lock);
    vms__fork_hook(VMS_FORK_RUN_OUTPUT, out_lock_take, out_lock_release, out_lock_child);
}

/* Async-signal-safe: only a post to the helper thread's semaphore. */
static void on_report_signal(int sig)
{
    int saved = errno;

    (void)sig;
    sem_post(&sig_sem); /* EOVERFLOW: tables are on their way anyway */
    errno = saved;
}

static void *signal_helper(void *unused)
{
    char why[32];

    (void)unused;
    for (;;) {
        if (sem_wait(&sig_sem)) {
            if (errno == EINTR)
                continue;
            return NULL;
        }
        snprintf(why, sizeof why, "SIG%s", sigabbrev_np(vms__run_opts.report_signal));
        vms__run_table(why);
    }
}

int vms__run_signal_init(void)
{
    struct sigaction sa = { .sa_handler = on_report_signal, .sa_flags = SA_RESTART };
    pthread_attr_t a;
    sigset_t all;
    pthread_t t;
    int rc;

    if (sem_init(&sig_sem, 0, 0))
        return -errno;
    /* The helper takes none of the program's signals. */
    sigfillset(&all);
    pthread_attr_init(&a);
    pthread_attr_setsigmask_np(&a, &all);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    rc = vms__pthread.create(&t, &a, signal_helper, NULL);
    pthread_attr_destroy(&a);
    if (rc)
        return -rc;
    sigemptyset(&sa.sa_mask);
    if (sigaction(vms__run_opts.report_signal, &sa, NULL))
        return -errno;
    sig_on = true;
    return 0;
}
