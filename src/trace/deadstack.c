/* SPDX-License-Identifier: MIT */
/*
 * The dead stack: what a task's stack still holds below its live frames,
 * read when the task ends (or at exit).  The tracer zeroes a task's unused
 * stack when tracing starts, so its lowest non-zero word is the deepest the
 * task ever wrote: its exact depth, whatever the tripwires saw (a leaf
 * frame that never reached the tripwire window, a deep call made after
 * the stack had come back up).  The frames of that deepest moment are
 * still there, up to where later, shallower calls overwrote them.  They
 * are unwound here from the return addresses with the call-frame
 * information (libdw), outwards until they join the chain the tripwires
 * recorded or reach the outermost frame; a chain that can do neither is
 * partial.
 *
 * Not async-signal-safe (libdw allocates): it runs in the task's own
 * thread as the task ends, on the thread's alternate signal stack
 * (vms__trace_on_altstack), so that this work overwrites nothing of the
 * dead stack it reads.
 */
#include "arch/arch.h"
#include "core/internal.h"
#include "core/sanitizer.h"
#include "fault/fault.h"
#include "trace/trace.h"

#include "trace/dw.h"

#include <dwarf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MINCORE_PAGES 64
#define SEGS_MAX 1024          /* executable segments of the process, at most */
#define ALTSTACK_NEEDED ((size_t)16 << 10)
#define OWN_SLACK 256          /* with no alternate stack: below the stack pointer, what the first calls write */
#define TOP_SLACK 64           /* a fiber's first frame: its zero return address this near the top */
#define RED_ZONE VMS_ARCH_RED_ZONE /* what a leaf function may use below its stack pointer */
#define FRAME_SCAN ((uintptr_t)64 << 10) /* how far a frame record is looked for above a stack pointer */
#define SCAN_BUDGET_MS 200     /* a task's scan gives up after this long: a chain cut short, never a stalled exit */

/* DWARF register numbers of the frame pointer, the stack pointer and the return address column. */
enum { DW_FP = VMS_DW_FP, DW_SP = VMS_DW_SP, DW_RA = VMS_DW_RA };

/* ---- the lowest written word, and zeroing ---- */

/* Reads raw stack memory (ASan would see stale redzones of dead frames): not instrumented. */
__attribute__((no_sanitize_address)) static uintptr_t first_nonzero(uintptr_t from, uintptr_t to)
{
    for (uintptr_t a = from; a + sizeof(uint64_t) <= to; a += sizeof(uint64_t))
        if (*(const volatile uint64_t *)a)
            return a;
    return 0;
}

static bool resident(uintptr_t page, unsigned char *vec, size_t n)
{
    return mincore((void *)page, n * vms__g.page, vec) == 0;
}

/*
 * The lowest page of [lo, below) that is resident, from below downwards, stopping at the first
 * unmapped page (the main thread's stack mapping ends there); 0 if none.
 */
static uintptr_t lowest_resident(uintptr_t lo, uintptr_t below)
{
    uintptr_t pg = vms__g.page, hi = below & ~(pg - 1);
    uintptr_t low = below & (pg - 1) ? hi : 0; /* a partial page at the top: the caller's frames are on it */
    unsigned char vec[MINCORE_PAGES];
    while (hi > lo) {
        uintptr_t from = hi - lo > MINCORE_PAGES * pg ? hi - MINCORE_PAGES * pg : lo;
        size_t n = (hi - from) / pg;
        if (!resident(from, vec, n)) {
            /* Partly unmapped: page by page from the top, up to the hole. */
            for (uintptr_t p = hi - pg; p >= from && resident(p, vec, 1); p -= pg)
                if (vec[0] & 1)
                    low = p;
            return low;
        }
        for (size_t i = 0; i < n; i++)
            if (vec[i] & 1) {
                low = from + i * pg;
                break;
            }
        hi = from;
    }
    return low;
}

/* Reads dead stack, below every frame: valgrind is told not to report it. */
static uintptr_t lowest_word(uintptr_t lo, uintptr_t below)
{
    uintptr_t pg = vms__g.page, p = lowest_resident(lo, below), hit;
    unsigned char vec[MINCORE_PAGES];

    if (!p)
        return 0;
    if (p < lo)
        p = lo;
    /* A fiber's canary at the lowest word is not use. */
    if (p == lo && *(const uint64_t *)lo == VMS_STACK_END_MAGIC)
        p += sizeof(uint64_t);
    while (p < below) {
        uintptr_t page = p & ~(pg - 1), end = page + pg < below ? page + pg : below;
        if (resident(page, vec, 1) && (vec[0] & 1) && (hit = first_nonzero(p, end)))
            return hit;
        p = end;
    }
    return 0;
}

uintptr_t vms__dead_lowest(uintptr_t lo, uintptr_t below)
{
    uintptr_t w;

    vms__san_quiet_begin();
    w = lowest_word(lo, below);
    vms__san_quiet_end();
    return w;
}

void vms__dead_zero(uintptr_t lo, uintptr_t below)
{
    uintptr_t pg = vms__g.page, w = vms__dead_lowest(lo, below), a, b;

    if (!w)
        return;
    a = (w + pg - 1) & ~(pg - 1);
    b = below & ~(pg - 1);
    vms__san_quiet_begin(); /* below every frame: valgrind would report each write */
    if (b > a) {
        /* Whole pages go back to the kernel, which gives them back zero-filled. */
        madvise((void *)a, b - a, MADV_DONTNEED);
        memset((void *)w, 0, a - w);
        memset((void *)b, 0, below - b);
    } else {
        memset((void *)w, 0, below - w);
    }
    vms__san_quiet_end();
}

/* ---- running on the alternate signal stack ---- */

/* What the call on the alternate stack needs, kept in the frame that leaves the task's. */
struct off_stack {
    void (*fn)(void *, uintptr_t);
    void *arg;
    char *lo, *hi;
};

/* First on the alternate stack, not instrumented: nothing instrumented runs there before its old redzones are gone. */
__attribute__((no_sanitize_address)) static void on_altstack(void *p, uintptr_t left)
{
    struct off_stack *o = p;

#ifdef VMS_SAN_ADDRESS
    /* Frames of handlers that never returned normally may have left their redzones. */
    __asan_unpoison_memory_region(o->lo, (size_t)(o->hi - o->lo));
#endif
    sigset_t all, old;

    /*
     * A signal delivered here would land on the alternate stack, below
     * these frames, and the program's handler would take them for the
     * thread's: its signals wait until the thread is back on its own stack.
     */
    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    o->fn(o->arg, left);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/*
 * No call before the switch, whose own two words are the lowest it
 * writes: the rest below is still the task's, exactly (a task whose
 * deepest frames were shallow keeps its chain).
 */
void vms__trace_on_altstack(void (*fn)(void *, uintptr_t), void *arg)
{
    struct off_stack o = {fn, arg, vms__altstack_own.lo, vms__altstack_own.hi};
    uintptr_t sp = vms__arch_sp();

    if (!o.hi || (size_t)(o.hi - o.lo) < ALTSTACK_NEEDED || (sp >= (uintptr_t)o.lo && sp < (uintptr_t)o.hi)) {
        fn(arg, sp - OWN_SLACK); /* in place: what the task wrote right below here may be lost */
        return;
    }
    vms__call_on_stack((void *)((uintptr_t)o.hi & ~(uintptr_t)15), on_altstack, &o);
}

/* ---- the process's code, as it is when a scan begins ---- */

struct range {
    uintptr_t lo, hi;
};

/* One scan: the stack, the chain being built, the process's code. */
#define MAP_MIN_ADDR 65536 /* vm.mmap_min_addr's default: nothing is mapped below */
#define SEEN_MAX 8 /* a dead stack's words point mostly into a few mappings: its own, the heap, a module */

struct dead {
    uintptr_t lo, hi, clobbered;
    const struct vms_trace_frame *rec; /* outermost first */
    uint32_t nrec;
    struct vms_trace_frame *f;
    uint32_t n, cap;
    struct range *segs;                /* the modules' executable segments */
    size_t nsegs;
    struct range *exec;                /* every executable mapping: code outside the segments is JIT-compiled */
    size_t nexec;
    int maps_fd;                       /* /proc/self/maps to ask of one address (-1: exec lists them all) */
    struct vms_mapping seen[SEEN_MAX]; /* the last mappings asked about */
    unsigned nseen;
    struct timespec deadline;          /* the scan gives up here: its task's share of the process's time */
    bool refreshed;                    /* the modules were reported to libdwfl again during this scan */
    bool stopped;                      /* gave up: JIT code, or out of time */
    bool rec_cut;                      /* the recorded chain ends in code without call-frame information */
    bool cut;                          /* so does this one: it ends with the recorded chain's outermost frame */
    bool partial;                      /* frames of the chain are missing, from f[gap] on */
    uint32_t gap;
    struct deepest {                   /* the deepest moment, as chain_from works it out: */
        uintptr_t w;                   /* the lowest written word; then the deepest function's lowest sp */
        uintptr_t at, first;           /* where the deepest function's return address is; the lowest one */
        uintptr_t cfa, callee;         /* the deepest function's CFA and entry (0: not known) */
        uintptr_t fn, frame;           /* none reaching w: the lowest return address's callee, and its frame */
        uintptr_t leaf, site;          /* a leaf that fn called, and that call's return address */
    } deep;
};

static int add_segs(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct dead *d = arg;

    (void)size;
    for (int i = 0; i < info->dlpi_phnum && d->nsegs < SEGS_MAX; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type == PT_LOAD && (p->p_flags & PF_X))
            d->segs[d->nsegs++] =
                (struct range){info->dlpi_addr + p->p_vaddr, info->dlpi_addr + p->p_vaddr + p->p_memsz};
    }
    return 0;
}

/* Whether [a, a + n) is code of a loaded module. */
static bool is_code(const struct dead *d, uintptr_t a, size_t n)
{
    for (size_t i = 0; i < d->nsegs; i++)
        if (a >= d->segs[i].lo && a < d->segs[i].hi && n <= d->segs[i].hi - a)
            return true;
    return false;
}

/* read_exec's list as it grows: the scan and the room in d->exec. */
struct exec_list {
    struct dead *d;
    size_t cap;
};

static void add_exec(uintptr_t lo, uintptr_t hi, void *ctx)
{
    struct exec_list *x = ctx;
    struct dead *d = x->d;

    if (d->nexec == x->cap) {
        size_t c = x->cap ? 2 * x->cap : 64;
        struct range *r = realloc(d->exec, c * sizeof *r);
        if (!r)
            return;
        d->exec = r;
        x->cap = c;
    }
    d->exec[d->nexec++] = (struct range){lo, hi};
}

/* The executable ranges of one "lo-hi perms ..." line of /proc/self/maps. */
static void exec_line(const char *l, void *ctx)
{
    char *e;
    uintptr_t lo = strtoul(l, &e, 16), hi;

    if (*e != '-')
        return;
    hi = strtoul(e + 1, &e, 16);
    if (e[0] == ' ' && e[1] && e[2] && e[3] == 'x')
        add_exec(lo, hi, ctx);
}

/* Every executable mapping of the process, from the text of /proc/self/maps. */
static void read_exec(struct dead *d)
{
    char buf[4096];
    struct exec_list x = { d, 0 };

    vms__os_maps_each(buf, sizeof buf, exec_line, &x);
}

/*
 * The loader knows only the modules; a virtual machine's compiled code
 * (the JVM's, V8's) is in anonymous executable mappings, where there is no
 * call-frame information to unwind by.  Where the kernel answers for one
 * address, each word the scan asks about is looked up there: the whole
 * text of /proc/self/maps, read at each fiber's end, cost 10,000 fibers
 * with guards in mprotect mode (20,000 mappings) minutes.  Elsewhere, the
 * text once a scan.
 */
static void exec_open(struct dead *d)
{
    struct vms_mapping m;

    d->maps_fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (d->maps_fd >= 0 && vms__os_mapping_at(d->maps_fd, (uintptr_t)exec_open, &m) == 0)
        return;
    if (d->maps_fd >= 0)
        close(d->maps_fd);
    d->maps_fd = -1;
    read_exec(d);
}

static bool in_exec_mapping(struct dead *d, uintptr_t v)
{
    struct vms_mapping m;

    if (d->maps_fd < 0) {
        for (size_t i = 0; i < d->nexec; i++)
            if (v >= d->exec[i].lo && v < d->exec[i].hi)
                return true;
        return false;
    }
    if (v < MAP_MIN_ADDR)
        return false;
    for (unsigned i = 0; i < d->nseen && i < SEEN_MAX; i++)
        if (v >= d->seen[i].lo && v < d->seen[i].hi)
            return d->seen[i].exec;
    if (vms__os_mapping_at(d->maps_fd, v, &m))
        return false;
    d->seen[d->nseen++ % SEEN_MAX] = m;
    return m.exec;
}

/* Whether v points into compiled code that is in no module (JIT). */
static bool is_jit(struct dead *d, uintptr_t v)
{
    return !is_code(d, v, 1) && in_exec_mapping(d, v);
}

/* Whether the scan's time is up; it then stops for good. */
static bool out_of_time(struct dead *d)
{
    struct timespec now;

    if (!d->stopped) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        d->stopped = now.tv_sec > d->deadline.tv_sec ||
                     (now.tv_sec == d->deadline.tv_sec && now.tv_nsec >= d->deadline.tv_nsec);
    }
    return d->stopped;
}

/* Whether an indirect call ends at v, in code. */
static bool after_indirect_call(const struct dead *d, uintptr_t v)
{
    return is_code(d, v - VMS_CALL_BEFORE, VMS_CALL_BEFORE) && vms__arch_after_indirect_call(v);
}

/* Whether v is a return address: in code, right after a call instruction. */
static bool is_return_address(const struct dead *d, uintptr_t v)
{
    return is_code(d, v - VMS_CALL_BEFORE, VMS_CALL_BEFORE) && vms__arch_after_call(v);
}

/* is_code for the architecture's call-site rules, which know the scan only as ctx. */
static bool is_code_of(const void *ctx, uintptr_t a, size_t n)
{
    return is_code(ctx, a, n);
}

/*
 * The function a direct call that returns to ret went to, through a PLT
 * stub when there is one (*plt true then); 0 for an indirect call.
 */
static uintptr_t call_target_plt(const struct dead *d, uintptr_t ret, bool *plt)
{
    return vms__arch_call_target(ret, is_code_of, d, plt);
}

static uintptr_t call_target(const struct dead *d, uintptr_t ret)
{
    bool plt;

    return call_target_plt(d, ret, &plt);
}

/*
 * Whether entry is the dynamic loader's lazy-binding resolver
 * (_dl_runtime_resolve and its variants, _dl_runtime_profile): a call
 * through a PLT stub enters it, not its function, on the first call, and
 * the slot read now holds the function bound since.
 */
static bool lazy_resolver(uintptr_t entry)
{
    struct vms_symres s;

    vms__symbols_lookup(entry, &s);
    return s.name && !s.off && !strncmp(s.name, "_dl_runtime_", 12);
}

/*
 * Whether the function at fn jumps to entry: a tail call (an unconditional
 * or conditional jump, vms__arch_jumps_to), so that a frame of entry's
 * sits right below the frame that called fn.  Its bytes are searched, not
 * decoded: a stray match only keeps a frame that is checked no further.
 */
static bool tail_calls(const struct dead *d, uintptr_t fn, uintptr_t entry)
{
    struct vms_symres s;

    vms__symbols_lookup(fn, &s);
    return s.name && !s.off && is_code(d, fn, s.size) && vms__arch_jumps_to(fn, s.size, entry);
}

/*
 * Whether the call that returns to ret could have entered the function at
 * entry (0: not known, nothing to hold against it): an indirect call
 * could reach anything, a direct one only its target or what the target
 * tail-calls, one through a PLT stub also the loader's resolver.  A
 * return address that fails was left by a later call, made after the
 * frame below had returned, over the frame that called it.
 */
static bool call_reaches(const struct dead *d, uintptr_t ret, uintptr_t entry)
{
    bool plt;
    uintptr_t t = call_target_plt(d, ret, &plt);

    return !entry || !t || t == entry || after_indirect_call(d, ret) || tail_calls(d, t, entry) ||
           (plt && lazy_resolver(entry));
}

/* The entry of the function holding pc, from the symbol tables; 0 when unknown. */
static uintptr_t entry_of(uintptr_t pc)
{
    struct vms_symres s;

    vms__symbols_lookup(pc, &s);
    return s.name ? pc - s.off : 0;
}

/*
 * libdwfl is not thread-safe: the session and its call-frame lookups are
 * under this lock, held for one lookup at a time, never across a scan or
 * a symbol lookup (those use the fault layer's lock-free symbol tables).
 */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static Dwfl *dwfl;

/* Free in a child after fork, where a thread that ends scans its dead stack too (core/fork.c). */
__attribute__((constructor)) static void lock_at_fork(void)
{
    vms__fork_mutex(VMS_FORK_TRACE_CODE, &lock);
}

/*
 * No separate debug files: the unwinding needs only .eh_frame and the
 * modules' own symbol tables, and opening a debug package's file (libc6-dbg:
 * megabytes of compressed DWARF) would cost every traced process tens of
 * milliseconds.  libdwfl's lookup by build id (never debuginfod) searches
 * only the absolute directories of debuginfo_path, and this one names none.
 * The callbacks outlive the session (libdwfl keeps a pointer); filled once
 * libdw is open.
 */
static Dwfl *open_dwfl(void)
{
    static char empty[1], *no_dirs = empty;
    static Dwfl_Callbacks cb = {.debuginfo_path = &no_dirs};
    Dwfl *d;

    if (!vms__dw_open())
        return NULL;
    cb.find_elf = DW(dwfl_linux_proc_find_elf);
    cb.find_debuginfo = DW(dwfl_build_id_find_debuginfo);
    d = DW(dwfl_begin)(&cb);

    if (d && (vms__dw_report_loaded(d) || DW(dwfl_report_end)(d, NULL, NULL))) {
        DW(dwfl_end)(d);
        d = NULL;
    }
    return d;
}

/* How to find the caller's frame, at a pc of the process. */
struct rule {
    int cfa_reg;       /* DW_SP or DW_FP */
    int64_t cfa_off;
    enum { FP_SAME, FP_AT, FP_LOST } fp;
    int64_t fp_off;    /* FP_AT: the caller's frame pointer is saved at CFA + fp_off */
    bool outermost;    /* the return address is undefined: no caller */
    bool ra_saved;     /* the return address is saved at CFA + ra_off */
    int64_t ra_off;
    bool no_fde;       /* the pc is in a module that has no call-frame information for it */
    bool cfa_elsewhere; /* its CFA is kept in a register the scan does not follow */
};

/* A register's rule "saved at CFA + off", as libdw gives it: true with *off when it is one. */
static bool saved_at_cfa(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
    if (nops < 1 || nops > 2 || ops[0].atom != DW_OP_call_frame_cfa || (nops == 2 && ops[1].atom != DW_OP_plus_uconst))
        return false;
    *off = nops == 2 ? (int64_t)ops[1].number : 0;
    return true;
}

static bool rule_locked(struct dead *d, uintptr_t pc, struct rule *r)
{
    Dwfl_Module *m = dwfl ? DW(dwfl_addrmodule)(dwfl, pc) : NULL;
    Dwarf_Op mem[3], *ops;
    Dwarf_Frame *fr = NULL;
    Dwarf_CFI *cfi;
    Dwarf_Addr bias;
    size_t nops;
    bool ok = false;

    if (!m && !d->refreshed && dwfl) {
        /* Loaded after the first look: report the modules again. */
        d->refreshed = true;
        DW(dwfl_report_begin_add)(dwfl);
        if (vms__dw_report_loaded(dwfl) == 0 && DW(dwfl_report_end)(dwfl, NULL, NULL) == 0)
            m = DW(dwfl_addrmodule)(dwfl, pc);
    }
    if (!m)
        return false;
    if ((!(cfi = DW(dwfl_module_eh_cfi)(m, &bias)) || DW(dwarf_cfi_addrframe)(cfi, pc - bias, &fr)) &&
        (!(cfi = DW(dwfl_module_dwarf_cfi)(m, &bias)) || DW(dwarf_cfi_addrframe)(cfi, pc - bias, &fr))) {
        r->no_fde = true;
        return false;
    }
    if (DW(dwarf_frame_cfa)(fr, &ops, &nops) == 0 && nops == 1) {
        /* libdw gives "register + offset" as DW_OP_bregx, or as DW_OP_bregN. */
        if (ops[0].atom == DW_OP_bregx) {
            r->cfa_reg = (int)ops[0].number;
            r->cfa_off = (int64_t)ops[0].number2;
        } else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
            r->cfa_reg = ops[0].atom - DW_OP_breg0;
            r->cfa_off = (int64_t)ops[0].number;
        } else {
            r->cfa_reg = -1;
        }
        ok = r->cfa_reg == DW_SP || r->cfa_reg == DW_FP;
        r->cfa_elsewhere = !ok && r->cfa_reg >= 0;
    }
    r->outermost = false;
    r->ra_saved = false;
    if (DW(dwarf_frame_register)(fr, DW_RA, mem, &ops, &nops) == 0) {
        r->outermost = nops == 0 && ops == mem;
        r->ra_saved = saved_at_cfa(ops, nops, &r->ra_off);
    }
    r->fp = FP_LOST;
    if (DW(dwarf_frame_register)(fr, DW_FP, mem, &ops, &nops) == 0) {
        if (nops == 0 && !ops)
            r->fp = FP_SAME;
        else if (saved_at_cfa(ops, nops, &r->fp_off))
            r->fp = FP_AT;
    }
    free(fr);
    return ok;
}

/*
 * The rules looked up last, direct-mapped by pc, under the lock: a
 * recursion's frames share their return address, and libdw's lookup of
 * a frame costs microseconds, so a scan of a stack tens of megabytes deep
 * would take a second without them.  Emptied when the modules are
 * reported again, as the session's own answers are then.
 */
#define RULES_KNOWN 64

static struct {
    uintptr_t pc;
    bool ok;
    struct rule r;
} rules[RULES_KNOWN];

static bool rule_at(struct dead *d, uintptr_t pc, struct rule *r)
{
    unsigned i = (unsigned)((pc ^ pc >> 6) % RULES_KNOWN);
    bool ok, refreshed = d->refreshed;

    pthread_mutex_lock(&lock);
    if (pc && rules[i].pc == pc) {
        *r = rules[i].r;
        ok = rules[i].ok;
    } else {
        ok = rule_locked(d, pc, r);
        if (d->refreshed != refreshed)
            memset(rules, 0, sizeof rules);
        rules[i].pc = pc;
        rules[i].ok = ok;
        rules[i].r = *r;
    }
    pthread_mutex_unlock(&lock);
    return ok;
}

/*
 * The fixed frame of a function that sets up a frame pointer (saves the
 * caller's, points its own at the saved one, then saves registers and
 * allocates its locals), decoded from its first instructions by the
 * architecture's rules: its call-frame information stops following the
 * stack pointer there.  0 when the prologue is not of that form.
 */
static uintptr_t fp_prologue_frame(const struct dead *d, uintptr_t entry)
{
    return is_code(d, entry, VMS_PROLOGUE_BYTES) ? vms__arch_fp_prologue_frame(entry) : 0;
}

/*
 * The fixed frame of the function holding addr: the largest "CFA = stack
 * pointer + N" over its call-frame information (N counts the return address, as
 * -fstack-usage does), or its prologue's once it sets up a frame pointer.
 * 0 when unknown.  The zero-filled stack cannot show the zero words a
 * function wrote, so the deepest function's frame is taken whole.
 * *ra_off: where its body saves the return address, CFA + *ra_off (0:
 * nowhere, a leaf on aarch64).
 */
static uintptr_t cfa_max_locked(const struct dead *d, uintptr_t entry, uintptr_t end, int64_t *ra_off)
{
    Dwfl_Module *m = dwfl ? DW(dwfl_addrmodule)(dwfl, entry) : NULL;
    uintptr_t max = 0;
    Dwarf_CFI *cfi;
    Dwarf_Addr bias;

    if (!m || !((cfi = DW(dwfl_module_eh_cfi)(m, &bias)) || (cfi = DW(dwfl_module_dwarf_cfi)(m, &bias))))
        return 0;
    for (uintptr_t a = entry; a < end;) {
        Dwarf_Frame *fr;
        Dwarf_Addr start, stop;
        Dwarf_Op mem[3], *ops;
        size_t nops;
        int reg = -1;
        int64_t o = 0, ra;

        if (DW(dwarf_cfi_addrframe)(cfi, a - bias, &fr))
            break;
        DW(dwarf_frame_info)(fr, &start, &stop, NULL);
        if (!*ra_off && DW(dwarf_frame_register)(fr, DW_RA, mem, &ops, &nops) == 0 && saved_at_cfa(ops, nops, &ra))
            *ra_off = ra;
        if (DW(dwarf_frame_cfa)(fr, &ops, &nops) == 0 && nops == 1) {
            if (ops[0].atom == DW_OP_bregx)
                reg = (int)ops[0].number, o = (int64_t)ops[0].number2;
            else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31)
                reg = ops[0].atom - DW_OP_breg0, o = (int64_t)ops[0].number;
        }
        free(fr);
        if (reg == DW_FP) {
            uintptr_t fixed = fp_prologue_frame(d, entry);
            return fixed > max ? fixed : max;
        }
        if (reg == DW_SP && o > 0 && (uintptr_t)o > max)
            max = (uintptr_t)o;
        a = stop + bias > a ? stop + bias : a + 1;
    }
    return max;
}

static uintptr_t frame_of(const struct dead *d, uintptr_t addr, int64_t *ra_off)
{
    struct vms_symres s;
    uintptr_t max;

    *ra_off = 0;
    vms__symbols_lookup(addr, &s);
    if (!s.name || !s.size)
        return 0;
    pthread_mutex_lock(&lock);
    max = cfa_max_locked(d, addr - s.off, addr - s.off + s.size, ra_off);
    pthread_mutex_unlock(&lock);
    return max;
}

/* ---- unwinding the dead frames ---- */

__attribute__((no_sanitize_address)) static uintptr_t word(const struct dead *d, uintptr_t a, bool *ok)
{
    if (a < d->lo || a + sizeof(uintptr_t) > d->hi || (a & 7)) {
        *ok = false;
        return 0;
    }
    return *(const volatile uintptr_t *)a;
}

/* A return address read from the stack, its pointer-authentication code (pac-ret) stripped. */
static uintptr_t ret_word(const struct dead *d, uintptr_t a, bool *ok)
{
    return vms__arch_strip(word(d, a, ok));
}

static bool put(struct dead *d, uintptr_t ip, uintptr_t sp)
{
    if (d->n == d->cap)
        return false;
    d->f[d->n++] = (struct vms_trace_frame){ip, sp};
    return true;
}

/* The recorded frame at sp, or -1: the chain's stack pointers fall from the outermost frame in. */
static long rec_at(const struct dead *d, uintptr_t sp)
{
    uint32_t lo = 0, hi = d->nrec;

    while (lo < hi) {
        uint32_t m = lo + (hi - lo) / 2;
        if (d->rec[m].sp == sp)
            return m;
        if (d->rec[m].sp > sp)
            lo = m + 1;
        else
            hi = m;
    }
    return -1;
}

/*
 * The recorded frames m, m - 1, ... 0 (outwards), up to the first whose
 * code is in no module: the unwinder at the tripwire went on through JIT
 * code (by its frame pointer) or stopped there, and nothing checks a
 * frame there; the scan then stops, its chain partial.  Where the
 * recorded chain ended at code without call-frame information, so does
 * this one.
 */
static void put_recorded(struct dead *d, long m)
{
    for (; m >= 0; m--) {
        if (!is_code(d, d->rec[m].ip - 1, 1)) {
            d->stopped = true;
            return;
        }
        if (!put(d, d->rec[m].ip, d->rec[m].sp))
            return;
    }
    d->cut = d->rec_cut;
}

/*
 * Ends the chain with the recorded callers of the frame at sp, when the
 * recorded chain has the same frame there (the same return address, or
 * one our own exit code overwrote): true if it could.  The recorded
 * callers' return addresses are not checked in memory: shallower calls
 * made since (printf after the deep work) overwrite them, and they were
 * the callers of this very frame when it was recorded.
 */
static bool join(struct dead *d, uintptr_t ip, uintptr_t sp, uintptr_t slot)
{
    long m = rec_at(d, sp);
    bool ours = slot >= d->clobbered;

    if (m < 0 || !(ours || d->rec[m].ip == ip))
        return false;
    /* Where our exit code overwrote the return address, the recorded one is the program's. */
    put_recorded(d, m);
    return true;
}

/*
 * A frame-pointer function whose callee did not save the frame pointer
 * where we could see it: its frame record (saved frame pointer, then the
 * return address) is the first pair at or above sp that looks like one.
 */
static bool frame_record(const struct dead *d, uintptr_t sp, uintptr_t *fp)
{
    bool ok = true;

    for (uintptr_t x = sp; x + 2 * sizeof(uintptr_t) <= d->hi && x - sp < FRAME_SCAN; x += sizeof(uintptr_t)) {
        uintptr_t saved = word(d, x, &ok), ret = ret_word(d, x + sizeof(uintptr_t), &ok);
        if (ok && (saved == 0 || (saved > x && saved < d->hi)) && is_return_address(d, ret)) {
            *fp = x;
            return true;
        }
    }
    return false;
}

/*
 * A frame whose CFA is kept in a register the scan does not follow (the
 * loader's lazy-binding resolver realigns the stack and keeps it in a
 * callee-saved register):
 * where a call pushes the return address, the CFA is right above the
 * first word at or above sp that a direct call into this function left.
 * *r: the rule that makes of it.
 */
static bool pushed_return_above(struct dead *d, uintptr_t ip, uintptr_t sp, struct rule *r)
{
    uintptr_t fn = entry_of(ip - 1);
    bool ok = true;

    if (!VMS_ARCH_RA_PUSHED || !fn)
        return false;
    for (uintptr_t x = sp; x + sizeof(uintptr_t) <= d->hi && x - sp < FRAME_SCAN; x += sizeof(uintptr_t)) {
        uintptr_t v = ret_word(d, x, &ok);
        if (!ok)
            return false;
        if (is_return_address(d, v) && !after_indirect_call(d, v) && call_reaches(d, v, fn)) {
            *r = (struct rule){.cfa_reg = DW_SP, .cfa_off = (int64_t)(x + sizeof(uintptr_t) - sp), .ra_saved = true,
                               .ra_off = -(int64_t)sizeof(uintptr_t), .fp = FP_LOST};
            return true;
        }
    }
    return false;
}

/*
 * Where the unwinding is: the frame (ip, sp), ip read at slot; below, the
 * entry of the function that ip's call went to (0: unknown); fp, the
 * frame pointer there when fp_known.
 */
struct cursor {
    uintptr_t ip, sp, slot, below, fp;
    bool fp_known;
};

/* From the frame at c outwards; false when the chain was lost on the way (overwritten, JIT code, out of time). */
static bool unwind_from(struct dead *d, struct cursor c)
{
    for (;;) {
        struct rule r = {0};
        uintptr_t cfa, ret;
        bool ok = true;

        if (join(d, c.ip, c.sp, c.slot))
            return true;
        if (out_of_time(d) || !is_return_address(d, c.ip) || !call_reaches(d, c.ip, c.below))
            return false;
        if (!put(d, c.ip, c.sp))
            return false;
        if (!rule_at(d, c.ip - 1, &r)) {
            if (r.no_fde) {
                d->cut = true; /* code without call-frame information: its callers are not known */
                return true;
            }
            if (!r.cfa_elsewhere || !pushed_return_above(d, c.ip, c.sp, &r))
                return false;
        }
        if (r.outermost || c.sp == d->hi)
            return true;
        if (r.cfa_reg == DW_FP && !c.fp_known && !(c.fp_known = frame_record(d, c.sp, &c.fp)))
            return false;
        cfa = (r.cfa_reg == DW_SP ? c.sp : c.fp) + (uintptr_t)r.cfa_off;
        if (cfa <= c.sp || cfa > d->hi || !r.ra_saved)
            return false;
        c.slot = cfa + (uintptr_t)r.ra_off;
        ret = ret_word(d, c.slot, &ok);
        if (r.fp == FP_AT)
            c.fp = word(d, cfa + (uintptr_t)r.fp_off, &ok);
        else if (r.fp == FP_LOST)
            c.fp_known = false;
        if (!ok)
            return false;
        /*
         * A zero return address: a fiber's first frame, at the top of its
         * stack; anywhere else a lost chain, unless our exit code wrote it
         * (then the recorded chain may go on from there: join).
         */
        if (!ret && c.slot < d->clobbered)
            return d->hi - cfa <= TOP_SLACK;
        c.below = entry_of(c.ip - 1);
        c.ip = ret;
        c.sp = cfa;
    }
}

/*
 * When no return address below our own frames leads to the lowest word
 * (the deepest function was the start routine's callee, whose return
 * address our exit code overwrote): the recorded chain, if its innermost
 * function's frame holds the lowest word.
 */
static bool recorded_deepest(struct dead *d)
{
    uintptr_t sp, cfa, frame, low, *w = &d->deep.w;
    int64_t ra_off;

    if (d->nrec < 2 || !is_code(d, d->rec[d->nrec - 1].ip, 1))
        return false;
    sp = d->rec[d->nrec - 1].sp;
    cfa = d->rec[d->nrec - 2].sp;
    frame = frame_of(d, d->rec[d->nrec - 1].ip, &ra_off);
    low = frame ? cfa - frame : sp;
    if (low > *w + RED_ZONE || cfa <= *w)
        return false;
    if (low >= d->lo)
        *w = low;
    put(d, d->rec[d->nrec - 1].ip, *w);
    put_recorded(d, (long)d->nrec - 2);
    return true;
}

/*
 * The recorded frame that returns to ret and whose callee stored it at
 * at, or -1: the one right above at where the call pushed it, else the
 * nearest above at (the callee's frame record lies in its frame).
 */
static long rec_returning(const struct dead *d, uintptr_t ret, uintptr_t at)
{
    long best = -1;

    if (VMS_ARCH_RA_PUSHED)
        return (best = rec_at(d, at + sizeof(uintptr_t))) >= 0 && d->rec[best].ip == ret ? best : -1;
    for (uint32_t m = 0; m < d->nrec; m++)
        if (d->rec[m].ip == ret && d->rec[m].sp > at && (best < 0 || d->rec[m].sp < d->rec[best].sp))
            best = m;
    return best;
}

/* The function a call that returns to ret (stored at at) went to; for an indirect one, what the tripwires saw there. */
static uintptr_t callee_of(const struct dead *d, uintptr_t ret, uintptr_t at)
{
    uintptr_t fn = is_code(d, ret - VMS_CALL_BEFORE, VMS_CALL_BEFORE) ? call_target(d, ret) : 0;
    long m;

    if (!fn && (m = rec_returning(d, ret, at)) >= 0 && (uint32_t)m + 1 < d->nrec)
        fn = d->rec[m + 1].ip;
    return fn;
}

/*
 * The CFA (the caller's stack pointer) of the callee that stored a return
 * address at at, which its body saves at CFA + ra_off; 0 when not known.
 */
static uintptr_t callee_cfa(uintptr_t at, int64_t ra_off)
{
    if (VMS_ARCH_RA_PUSHED)
        return at + sizeof(uintptr_t);
    return ra_off < 0 ? at - (uintptr_t)ra_off : 0;
}

/*
 * The scan's budget starts once its code map and libdwfl's session are
 * ready: opening them is bounded work, and slow where the process runs
 * slowly (qemu-user, valgrind), which would otherwise leave no time for
 * the scan itself.
 */
static void scan_deadline(struct dead *d)
{
    clock_gettime(CLOCK_MONOTONIC, &d->deadline);
    d->deadline.tv_sec += SCAN_BUDGET_MS / 1000;
    d->deadline.tv_nsec += (SCAN_BUDGET_MS % 1000) * 1000000L;
    if (d->deadline.tv_nsec >= 1000000000L) {
        d->deadline.tv_sec++;
        d->deadline.tv_nsec -= 1000000000L;
    }
}

/* The process's code, and libdwfl's session, for one scan; false when out of memory. */
static bool scan_open(struct dead *d)
{
    if (!(d->segs = malloc(SEGS_MAX * sizeof *d->segs)))
        return false;
    vms__symbols_snapshot();
    if (vms__modules_begin())
        return false; /* a fork under way: no code map, the chain is the deepest frame alone */
    dl_iterate_phdr(add_segs, d);
    vms__unwind_end();
    exec_open(d);
    pthread_mutex_lock(&lock);
    if (!dwfl)
        dwfl = open_dwfl();
    pthread_mutex_unlock(&lock);
    scan_deadline(d);
    return true;
}

/* Whether the recorded chain has one of the kept frames: the same function's frame at the same place. */
static bool recorded_meets(const struct dead *d)
{
    uint32_t i = 1;
    long j = (long)d->nrec - 1;

    /* Both in order of their stack pointers, deepest first. */
    while (i < d->n && j >= 0) {
        if (d->f[i].sp < d->rec[j].sp) {
            i++;
        } else if (d->f[i].sp > d->rec[j].sp) {
            j--;
        } else {
            uintptr_t fn = entry_of(d->f[i].ip - 1);
            if (fn && fn == entry_of(d->rec[j].ip - 1))
                return true;
            i++, j--;
        }
    }
    return false;
}

/*
 * Where the chain was lost, after f's last frame: the callers as the
 * tripwires saw them, when the recorded chain passes through this one:
 * one of its frames is one of the kept ones, or its innermost frame is
 * the last one kept, caught by a tripwire while it ran.  A recorded chain
 * that does not was another call's (the loader's at start-up): nothing
 * says it called this one.
 */
static void recorded_callers(struct dead *d)
{
    const struct vms_trace_frame *lastf = &d->f[d->n - 1];
    long m = (long)d->nrec - 1;

    if (m < 0)
        return;
    if (d->rec[m].sp > lastf->sp) {
        uintptr_t fn = lastf->ip ? entry_of(lastf->ip - 1) : 0;
        if (!fn || entry_of(d->rec[m].ip) != fn)
            return;
        m--;
    } else if (!recorded_meets(d)) {
        return;
    }
    while (m >= 0 && d->rec[m].sp <= lastf->sp)
        m--;
    put_recorded(d, m);
}

/*
 * The deepest function's return address (deep.at, with its CFA and entry,
 * and its lowest stack pointer in deep.w): the first one at or above the
 * lowest word deep.w whose function's frame reaches down to it (red zone
 * allowed); false when none does.  Return addresses below it that do not
 * reach are stale words of earlier, shallower calls that a large frame
 * left in place; when none reaches, the frames at the deepest point were
 * overwritten by a later, shallower call.  deep.first: the lowest return
 * address seen (0: none).  Stops at a pointer into JIT code (unless the
 * tripwires saw the call it returns from): the frames from there up are
 * the virtual machine's, which nothing here can unwind.
 */
static bool deepest_return(struct dead *d)
{
    struct deepest *x = &d->deep;
    bool ok = true;

    x->first = 0;
    for (x->at = x->w & ~(uintptr_t)7; x->at < d->clobbered && ok && !out_of_time(d); x->at += sizeof(uintptr_t)) {
        uintptr_t ret = ret_word(d, x->at, &ok), fn, frame = 0, low;
        int64_t ra_off = 0;
        bool jit = is_jit(d, ret);
        if (!jit && !is_return_address(d, ret))
            continue;
        if (!jit && !x->first)
            x->first = x->at;
        fn = callee_of(d, ret, x->at);
        if (fn)
            frame = frame_of(d, fn, &ra_off);
        x->cfa = callee_cfa(x->at, ra_off);
        low = x->cfa - frame;
        if (frame && x->cfa > x->at && low <= x->w + RED_ZONE) {
            x->callee = fn;
            /*
             * The depth is its lowest stack pointer, from its frame: the
             * words it wrote last may be zeros, and a leaf's red zone is
             * below its stack pointer.
             */
            if (low >= d->lo)
                x->w = low;
            return true;
        }
        if (jit) {
            d->stopped = true;
            return false;
        }
    }
    return false;
}

/*
 * The CFA of the callee of the lowest return address (deep.first),
 * however deep its frame, into deep.cfa; 0 when not known.  deep.fn,
 * deep.frame: that callee and its frame (0: not known).
 */
static uintptr_t first_cfa(struct dead *d)
{
    struct deepest *x = &d->deep;
    bool ok = true;
    int64_t ra_off = 0;

    x->frame = 0;
    x->fn = callee_of(d, ret_word(d, x->first, &ok), x->first);
    if (x->fn)
        x->frame = frame_of(d, x->fn, &ra_off);
    return x->cfa = ok ? callee_cfa(x->first, ra_off) : 0;
}

/*
 * Where a call leaves its return address in a register (aarch64), a leaf
 * need not save it: when the deepest function was such a leaf, no return
 * address on the dead stack is its call's, and the lowest one is its
 * caller's own.  That caller, deep.fn, had its stack pointer at low
 * (deep.cfa - deep.frame), above the lowest word deep.w.  The leaf is the
 * function fn calls directly that saves no return address and whose
 * frame reaches from low down to deep.w: known when exactly one of fn's
 * call sites leads to one (deep.site: its return address; deep.w: the
 * leaf's lowest stack pointer).  Into deep.leaf; 0 when none or several.
 */
static uintptr_t leaf_below(struct dead *d)
{
    struct deepest *x = &d->deep;
    struct vms_symres s;
    uintptr_t fn = x->fn, low = x->cfa - x->frame, *w = &x->w;
    uintptr_t found = 0, bottom = 0, ret;

    vms__symbols_lookup(fn, &s);
    if (VMS_ARCH_RA_PUSHED || !s.name || s.off || !is_code(d, fn, s.size))
        return 0;
    for (uintptr_t from = fn; (ret = vms__arch_next_call(from, fn + s.size)) && !out_of_time(d); from = ret) {
        uintptr_t t = call_target(d, ret), frame;
        int64_t ra_off;
        if (!t || !(frame = frame_of(d, t, &ra_off)) || ra_off || frame > low - d->lo || low - frame > *w + RED_ZONE)
            continue;
        if (found)
            return 0; /* two call sites could have been it: neither is known */
        found = t;
        bottom = low - frame;
        x->site = ret;
    }
    if (found && !d->stopped)
        *w = bottom;
    return x->leaf = d->stopped ? 0 : found;
}

/*
 * The frames below f[n] are not known to call f[n]: the chain is partial,
 * its first gap there.
 */
static void mark_partial(struct dead *d)
{
    if (!d->partial)
        d->gap = d->n;
    d->partial = true;
}

/* All that is known is the depth w. */
static void depth_only(struct dead *d, uintptr_t w)
{
    put(d, 0, w);
    mark_partial(d);
}

/*
 * A callee with a frame pointer saved the caller's one right below the
 * return address at at (x86-64's push, aarch64's frame record): *fp,
 * believed when it points at a frame record (saved frame pointer, then a
 * return address).
 */
static bool saved_fp(const struct dead *d, uintptr_t at, uintptr_t *fp)
{
    bool ok = true;

    *fp = word(d, at - sizeof(uintptr_t), &ok);
    return ok && *fp > at && *fp + 2 * sizeof(uintptr_t) <= d->hi && !(*fp & 7) &&
           is_return_address(d, ret_word(d, *fp + sizeof(uintptr_t), &ok)) && ok;
}

/* The chain of the deepest moment, whose lowest written word is d->deep.w, into d. */
static void chain_from(struct dead *d)
{
    struct deepest *x = &d->deep;
    struct cursor c;
    bool ok = true;

    if (!deepest_return(d)) {
        if (recorded_deepest(d)) {
            if (d->stopped)
                mark_partial(d); /* What the tripwires saw: nothing on the dead stack said how it went on. */
            return;
        }
        if (!x->first || !first_cfa(d)) {
            /* No return address below our own frames (or only JIT code, or no frame known): all we know is the depth. */
            depth_only(d, x->w);
            return;
        }
        x->at = x->first;
        if (x->frame && x->frame <= x->cfa - d->lo)
            leaf_below(d);
    }
    c = (struct cursor){.ip = ret_word(d, x->at, &ok), .sp = x->cfa, .slot = x->at};
    if (x->leaf) {
        put(d, x->leaf, x->w);
        put(d, x->site, x->cfa - x->frame);
        x->callee = x->fn;
    } else {
        put(d, x->callee, x->w);
        if (!x->callee)
            mark_partial(d); /* the deepest function is not known: nor whether the frame above called it */
    }
    c.below = x->callee;
    c.fp_known = saved_fp(d, x->at, &c.fp) && ok;
    if (!unwind_from(d, c)) {
        mark_partial(d);
        recorded_callers(d);
    } else if (d->stopped) {
        /* Joined the recorded chain, which went on into JIT code: the rest is not known. */
        mark_partial(d);
    }
}

void vms__dead_chain(const struct vms_dead_args *a, struct vms_trace_chain *chain, uint32_t cap)
{
    struct dead d = {.lo = a->lo, .hi = a->hi, .clobbered = a->clobbered, .rec = a->rec, .nrec = a->nrec,
                     .rec_cut = a->rec_cut, .f = chain->f, .cap = cap, .deep.w = a->lowest, .maps_fd = -1};

    if (a->lowest && cap >= 2) {
        if (scan_open(&d)) {
            /* The dead frames are no frame's any more: valgrind would report every read. */
            vms__san_quiet_begin();
            chain_from(&d);
            vms__san_quiet_end();
        } else {
            depth_only(&d, a->lowest);
        }
        free(d.segs);
        free(d.exec);
        if (d.maps_fd >= 0)
            close(d.maps_fd);
    }
    chain->n = d.n;
    chain->partial = d.partial;
    chain->gap = d.gap;
    chain->cut = d.cut;
}
