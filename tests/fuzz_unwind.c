/* SPDX-License-Identifier: MIT */
/*
 * Fuzzing of the overflow handler's unwinding: a seeded mutation run in
 * which a fiber overflows its stack below frames that were damaged first.
 * The handler walks those frames twice (the report's call trace, and the
 * kill check that must follow the chain to the fiber's start), with
 * libunwind, inside the signal handler; whatever it finds there, the
 * report must come out whole and the policy must go on.
 *
 * 'fuzz_unwind SEED CASES' ('SEED I --one': case I alone, to reproduce
 * it).  A case is a fiber that calls down a chain of a few functions,
 * damages what lies above its own frame, and then recurses into its guard.
 * The damage is one of:
 *   - words of the frames above (return addresses, saved frame pointers,
 *     locals, the fiber's first frames) replaced by random values, by
 *     addresses into the stack, its guard, the program's or libc's code,
 *     or the last bytes before a guard page (a word read there straddles
 *     into the guard: libunwind's own address check lets it through);
 *   - bytes of the call-frame information (.eh_frame) of a function of
 *     the chain, or of the CIE they share, made writable for the case and
 *     put back after it.
 * Every case must end in one of the policy's outcomes: the fiber killed
 * and the program going on, or the kill refused with its reason and death
 * by SIGSEGV; and its text must be exactly one report, every line of the
 * expected form, the first one exact.  A hang (a child running past
 * HANG_SECONDS), another signal or exit status, a second report or a line
 * of any other form fails the run.  The counts of each outcome are printed.
 *
 * Cases run in batches in forked children, several at a time: a child
 * runs its batch's cases one after the other until one aborts, which ends
 * it; the next child starts at the case after that one.
 */
#include "overflow.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define PARALLEL 8      /* children at a time: an abort waits 50 ms for other reports */
#define BATCH 32        /* cases given to one child */
#define HANG_SECONDS 20 /* a child still running then has hung */
#define MAX_TEXT (1 << 20)

/* ---- the case, in the child ---- */

/* xorshift64*: the same cases for the same seed, on every machine. */
static uint64_t next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

struct fuzz_case {
    uint64_t rng;
    int depth;            /* functions of the chain above the damage */
    bool cfi;             /* damage the call-frame information, not the stack */
    uintptr_t lo, hi;     /* the fiber's stack */
    char *straddle;       /* the start of a guard page, a readable one below */
};

static struct fuzz_case fc;

/* Case i of the run: what the parent also knows of it. */
static void plan(struct fuzz_case *c, uint64_t seed, long i)
{
    c->rng = seed ^ ((uint64_t)(i + 1) * 0x9e3779b97f4a7c15ull);
    next(&c->rng);
    c->depth = (int)(next(&c->rng) % 6);
    c->cfi = next(&c->rng) % 4 == 0;
}

/* libgcc's lookup of a function's FDE in .eh_frame (the unwinder's own). */
struct dwarf_eh_bases {
    void *tbase, *dbase, *func;
};
extern const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);

NOINLINE void damage_and_overflow(void);
NOINLINE int chain_a(int n);
NOINLINE int chain_b(int n);

/* A value for a damaged word: something an unwinder would take for an address, or not. */
static uint64_t bad_word(uint64_t old)
{
    uint64_t r = next(&fc.rng);
    size_t span = fc.hi - fc.lo;

    switch (next(&fc.rng) % 9) {
    case 0: return r;
    case 1: return r % 4096;                                      /* small numbers, NULL */
    case 2: return fc.lo + r % span;                              /* into the stack itself */
    case 3: return fc.lo - 8 - r % 65536;                         /* into its guard */
    case 4: return (uintptr_t)chain_a + r % 4096 - 2048;          /* the program's code */
    case 5: return (uintptr_t)malloc + r % 65536;                 /* libc's code */
    case 6: return (uintptr_t)fc.straddle - 1 - r % 15;           /* straddling a guard page */
    case 7: return old ^ (1ull << (r % 64));                      /* one bit flipped */
    default: return old + (r % 64) - 32;                          /* a little off */
    }
}

/*
 * Damages the stack above this function's frame: from its return address
 * (the CFA less 8) to the top.  Not instrumented: it writes over other
 * frames' redzones on purpose.
 */
__attribute__((no_sanitize_address)) static void damage_stack(uintptr_t cfa)
{
    uintptr_t from = (cfa - 8) & ~(uintptr_t)7;
    size_t words = (fc.hi - from) / 8;
    int k = 1 + (int)(next(&fc.rng) % 8);

    for (; k > 0; k--) {
        /* Mostly near the damaged frame, where the walk goes first. */
        size_t i = next(&fc.rng) % (next(&fc.rng) & 1 ? (words < 64 ? words : 64) : words);
        volatile uint64_t *w = (volatile uint64_t *)from + i;
        *w = bad_word(*w);
    }
}

/* The call-frame information a case damaged, kept to be put back after it. */
static struct {
    uint8_t *at;
    size_t len;
    uint8_t saved[4096];
} cfi_undo;

/* Damages bytes of one chain function's FDE, or of the CIE they share. */
static void damage_cfi(void)
{
    void *fns[] = {(void *)recurse, (void *)damage_and_overflow, (void *)chain_a, (void *)chain_b};
    void *fn = fns[next(&fc.rng) % 4];
    struct dwarf_eh_bases bases;
    uint8_t *fde = (uint8_t *)_Unwind_Find_FDE((char *)fn + 1, &bases), *at;
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t start;
    size_t len;

    CHECK(fde);
    at = fde;
    if (next(&fc.rng) % 4 == 0) /* the CIE: its offset back from the FDE's second word */
        at = fde + 4 - *(const int32_t *)(fde + 4);
    len = 4 + *(const uint32_t *)at;
    CHECK(len <= sizeof cfi_undo.saved);
    start = (uintptr_t)at & ~(uintptr_t)(pg - 1);
    CHECK(mprotect((void *)start, (uintptr_t)at + len - start, PROT_READ | PROT_WRITE) == 0);
    memcpy(cfi_undo.saved, at, len);
    cfi_undo.at = at;
    cfi_undo.len = len;
    for (int k = 1 + (int)(next(&fc.rng) % 4); k > 0; k--)
        at[next(&fc.rng) % len] = (uint8_t)next(&fc.rng);
}

/* After a case that went on: its damage undone for the next one (the pages stay writable). */
static void undo_cfi(void)
{
    if (cfi_undo.at)
        memcpy(cfi_undo.at, cfi_undo.saved, cfi_undo.len);
    cfi_undo.at = NULL;
}

NOINLINE void damage_and_overflow(void)
{
    if (fc.cfi)
        damage_cfi();
    else
        damage_stack((uintptr_t)__builtin_dwarf_cfa());
    recurse(1L << 40);
}

/* Two functions of different frames calling each other down to the damage. */
NOINLINE int chain_a(int n)
{
    volatile char pad[48];

    pad[n % 48] = (char)n;
    if (n == 0)
        damage_and_overflow();
    else
        chain_b(n - 1);
    return pad[n % 48];
}

NOINLINE int chain_b(int n)
{
    volatile long pad[3];

    pad[n % 3] = n;
    chain_a(n);
    return (int)pad[n % 3];
}

static void *fuzz_fiber(void *unused)
{
    (void)unused;
    return (void *)(long)chain_a(fc.depth);
}

static char *guard_page(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    CHECK(p != MAP_FAILED);
    memset(p, 0x11, (size_t)pg);
    CHECK(mprotect(p + pg, (size_t)pg, PROT_NONE) == 0);
    return p + pg;
}

static void run_case(uint64_t seed, long i)
{
    /* A small stack: the walk's work is above the damage, not in the recursion below it. */
    vms_fiber_opts o = {.name = "fuzz", .stack_size = 16 << 10};
    vms_fiber_status st;
    vms_stack s;
    vms_fiber f;

    plan(&fc, seed, i);
    if (!fc.straddle)
        fc.straddle = guard_page();
    CHECK_EQ(vms_fiber_spawn(&f, fuzz_fiber, NULL, &o), 0);
    CHECK_EQ(vms_fiber_stack(f, &s), 0);
    fc.lo = (uintptr_t)s.base;
    fc.hi = (uintptr_t)vms_stack_top(&s);
    CHECK_EQ(vms_run(), 0);
    CHECK_EQ(vms_fiber_join(f, &st), 0);
    CHECK_EQ(st.end, VMS_FIBER_KILLED_OVERFLOW);
    undo_cfi();
    fprintf(stderr, "fuzz: killed, went on\n");
}

/* A child's batch: cases [from, to), each after a line that names it. */
static void run_batch(uint64_t seed, long from, long to)
{
    for (long i = from; i < to; i++) {
        fprintf(stderr, "fuzz: case %ld\n", i);
        run_case(seed, i);
    }
}

/* ---- the checks, in the parent ---- */

#ifdef __SANITIZE_ADDRESS__
/*
 * Reading the symbols fills AddressSanitizer's quarantine of freed memory
 * (256 MiB by default), which every fork would copy: a small one, for
 * this program only.  ASAN_OPTIONS still overrides it.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "quarantine_size_mb=16";
}
#endif

enum outcome { KILLED, ABORT_UNFOLLOWED, ABORT_HOLDER, N_OUTCOMES };

struct tally {
    long outcome[N_OUTCOMES];
    long unwinding_failed, cfi;
};

/* Fails the run, showing the case. */
static void bad(long i, const char *text, int status, const char *what)
{
    fprintf(stderr, "case %ld (child's status 0x%x): %s; its text was:\n%s\n", i, status, what, text);
    exit(1);
}

/*
 * Does the line [s, s + n) match re?  Each pattern is compiled once: the
 * run checks some hundred thousand lines (line_matches compiles every time).
 */
static bool matches(const char *s, size_t n, const char *re)
{
    static struct {
        const char *re;
        regex_t rx;
    } known[16];
    static int nknown;
    char line[4096];
    int k = 0;

    while (k < nknown && known[k].re != re)
        k++;
    if (k == nknown) {
        CHECK(nknown < 16 && regcomp(&known[k].rx, re, REG_EXTENDED | REG_NOSUB) == 0);
        known[nknown++].re = re;
    }
    if (n >= sizeof line)
        n = sizeof line - 1;
    memcpy(line, s, n);
    line[n] = 0;
    return regexec(&known[k].rx, line, 0, NULL, 0) == 0;
}

/* The next line of text, which must match re. */
static void expect(long i, const char *text, int status, const char **pos, const char *re, const char *what)
{
    size_t n;
    const char *s = next_line(pos, &n);

    if (!s || !matches(s, n, re))
        bad(i, text, status, what);
}

/*
 * Checks case i's text, line by line, and counts its outcome.  last: the
 * child's last case, which the status is about; the others went on.
 */
static void check_case(long i, const char *text, int status, bool last, struct tally *t)
{
    const char *pos = text, *s;
    size_t n;

    expect(i, text, status, &pos, "^vmstack: BUG: stack guard page was hit at " HEX " \\(stack is " HEX "\\.\\." HEX "\\)$",
           "the first line is not the report's");
    expect(i, text, status, &pos, "^vmstack: fiber 'fuzz' \\(id " DEC "\\) on thread 'fuzz_unwind' \\(tid " DEC
           "\\), start routine fuzz_fiber\\+0x0/" HEX " \\[fuzz_unwind\\]$", "the task line");
    expect(i, text, status, &pos, "^vmstack: stack " DEC " KiB, guard " DEC " KiB at " HEX "\\.\\." HEX "; sp is " DEC
           " bytes below the top$", "the stack line");
    expect(i, text, status, &pos, "^vmstack: ip " HEX " sp " HEX " bp " HEX "$", "the register line");
    expect(i, text, status, &pos, "^vmstack: Call Trace:$", "the Call Trace line");
    expect(i, text, status, &pos, "^vmstack:  \\[<" HEX ">\\] recurse\\+" HEX "/" HEX " \\[fuzz_unwind\\]" LINE "$",
           "the faulting frame");
    while ((s = next_line(&pos, &n)) &&
           matches(s, n, "^vmstack:  (\\[<" HEX ">\\] .+|\\.\\.\\. " DEC " more frames? of .+|\\.\\.\\. " DEC
                              " frames not shown \\.\\.\\.)$"))
        ;
    if (s && matches(s, n, "^vmstack:  \\(unwinding failed\\)$")) {
        t->unwinding_failed++;
        s = next_line(&pos, &n);
    }
    if (!s)
        bad(i, text, status, "no outcome line");
    if (matches(s, n, "^vmstack: killed fiber 'fuzz'$")) {
        expect(i, text, status, &pos, "^fuzz: killed, went on$", "killed, but the program did not go on");
        if (last && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
            bad(i, text, status, "killed, but the program did not exit 0");
        t->outcome[KILLED]++;
    } else {
        if (matches(s, n, "^vmstack: the call chain could not be followed to the fiber's start: killing the "
                               "fiber could leave a lock held; aborting$"))
            t->outcome[ABORT_UNFOLLOWED]++;
        else if (matches(s, n, "^vmstack: overflow inside .+ \\(.+\\): killing the fiber could leave a lock "
                                    "held; aborting$"))
            t->outcome[ABORT_HOLDER]++;
        else
            bad(i, text, status, "not an outcome line");
        if (!last || !WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV)
            bad(i, text, status, "aborted, but not dead by SIGSEGV");
    }
    if (next_line(&pos, &n))
        bad(i, text, status, "more text after the report");
}

/* A child and the batch it runs. */
struct running {
    pid_t pid;
    long from, to;   /* its cases */
    int fd;          /* its stderr */
    char *text;
    size_t len;
    struct timespec start;
};

static void start_batch(struct running *r, uint64_t seed, long from, long to)
{
    int fd[2];

    CHECK(pipe(fd) == 0);
    fflush(NULL);
    r->pid = fork();
    CHECK(r->pid >= 0);
    if (r->pid == 0) {
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);
        close(fd[0]);
        dup2(fd[1], 2);
        close(fd[1]);
        run_batch(seed, from, to);
        _exit(0);
    }
    close(fd[1]);
    r->from = from;
    r->to = to;
    r->fd = fd[0];
    r->len = 0;
    clock_gettime(CLOCK_MONOTONIC, &r->start);
}

/* Reads what the child wrote; true at its end (EOF, or too much text: the check says so). */
static bool drain(struct running *r)
{
    ssize_t n = read(r->fd, r->text + r->len, MAX_TEXT - r->len);

    if (n < 0 && errno == EINTR)
        return false;
    if (n > 0) {
        r->len += (size_t)n;
        if (r->len < MAX_TEXT)
            return false;
    }
    return true;
}

/*
 * The child ended (or hung): checks each case it started, from its "fuzz:
 * case N" line to the next.  Returns the first case it did not run.
 */
static long finish_batch(struct running *r, struct tally *t, bool hung)
{
    char marker[64];
    char *p = r->text;
    long i = r->from;
    int status;

    if (hung)
        kill(r->pid, SIGKILL);
    CHECK(waitpid(r->pid, &status, 0) == r->pid);
    close(r->fd);
    r->pid = 0;
    r->text[r->len] = 0;
    if (hung)
        bad(i, r->text, status, "hung");
    if (r->len == MAX_TEXT)
        bad(i, r->text, status, "too much text");
    snprintf(marker, sizeof marker, "fuzz: case %ld\n", i);
    if (strncmp(p, marker, strlen(marker)) != 0)
        bad(i, r->text, status, "the child's text does not start with its first case");
    for (; i < r->to; i++) {
        char *end;
        bool last;

        p += strlen(marker);
        snprintf(marker, sizeof marker, "\nfuzz: case %ld\n", i + 1);
        end = strstr(p, marker);
        last = !end;
        if (end)
            *++end = 0; /* the case's text ends with its newline */
        check_case(i, p, status, last, t);
        if (last)
            return i + 1;
        p = end;
        p[0] = 'f'; /* the marker's first byte, overwritten above */
        snprintf(marker, sizeof marker, "fuzz: case %ld\n", i + 1);
    }
    return i;
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

int main(int argc, char **argv)
{
    struct running run[PARALLEL] = {{0}};
    struct tally t = {{0}, 0, 0};
    struct timespec t0;
    uint64_t seed;
    long cases, given = 0, done = 0, children = 0;

    if (argc != 3 && !(argc == 4 && strcmp(argv[3], "--one") == 0)) {
        fprintf(stderr, "usage: %s SEED CASES         the run\n"
                        "       %s SEED CASE --one    one case, in this process (to reproduce it)\n",
                argv[0], argv[0]);
        return 2;
    }
    seed = strtoull(argv[1], NULL, 0);
    cases = strtol(argv[2], NULL, 0);
    if (argc == 4) {
        run_case(seed, cases);
        return 0;
    }
    /* Once, not in every child: the handler, the symbols, the unwinder set up. */
    CHECK_EQ(vms_fault_install(), 0);
    for (int k = 0; k < PARALLEL; k++)
        CHECK((run[k].text = malloc(MAX_TEXT + 1)));
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (done < cases) {
        struct pollfd pfd[PARALLEL];

        for (int k = 0; k < PARALLEL; k++)
            if (!run[k].pid && given < cases) {
                long to = given + BATCH < cases ? given + BATCH : cases;
                start_batch(&run[k], seed, given, to);
                given = to;
                children++;
            }
        for (int k = 0; k < PARALLEL; k++)
            pfd[k] = (struct pollfd){.fd = run[k].pid ? run[k].fd : -1, .events = POLLIN};
        CHECK(poll(pfd, PARALLEL, 100) >= 0 || errno == EINTR);
        for (int k = 0; k < PARALLEL; k++) {
            struct running *r = &run[k];
            long from, to;

            if (!r->pid || !((pfd[k].revents && drain(r)) || seconds_since(&r->start) > HANG_SECONDS))
                continue;
            from = finish_batch(r, &t, seconds_since(&r->start) > HANG_SECONDS);
            to = r->to;
            done += from - r->from;
            /* An abort ended the child before the end of its batch: the rest in a new one. */
            if (from < to) {
                start_batch(r, seed, from, to);
                children++;
            }
        }
    }
    for (long i = 0; i < cases; i++) {
        struct fuzz_case c;
        plan(&c, seed, i);
        t.cfi += c.cfi;
    }
    for (int k = 0; k < PARALLEL; k++)
        free(run[k].text);
    printf("fuzz_unwind: %ld cases (%ld damaged stacks, %ld damaged call-frame information) in %.1f s, %ld "
           "children: %ld killed, %ld aborted (chain not followed), %ld aborted (lock holder); %ld with "
           "\"(unwinding failed)\"\n",
           cases, cases - t.cfi, t.cfi, seconds_since(&t0), children, t.outcome[KILLED],
           t.outcome[ABORT_UNFOLLOWED], t.outcome[ABORT_HOLDER], t.unwinding_failed);
    return 0;
}
