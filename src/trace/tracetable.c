/*
 * The stack tracer's report, in the format of the kernel's
 * /sys/kernel/tracing/stack_trace:
 *
 *         Depth    Size   Location    (N entries)
 *         -----    ----   --------
 *   0)     7696      16   lookup_address+0x1b/0x40 [module] file.c:123
 *
 * Depth is counted from the top of the task's stack down to the stack
 * pointer in that frame; Size is the frame's share, Depth(i) - Depth(i+1)
 * (for the outermost entry, all that lies above it: glibc's thread
 * descriptor and TLS, the main thread's arguments and environment).
 * Locations are return addresses (the faulting instruction for entry 0),
 * printed as the kernel's %pS; the source line is that of the call.
 *
 * Symbols come from elfutils' libdwfl, outside signal context (at exit):
 * .symtab or .dynsym, or the .symtab of a separate debug file in the
 * standard places.  file:line comes from the module's own .debug_line
 * (programs and libraries built with -g); separately installed debug
 * files are read for it only with --all-lines (VMSTACK_TRACE_ALL_LINES=1):
 * their compressed DWARF costs 0.1-0.2 s per library to open, more than
 * the whole tracing of most runs.  Without libdwfl's answer the symbol
 * snapshot of the overflow report is used.
 */
#include "core/demangle.h"
#include "fault/fault.h"
#include "trace/trace.h"

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');

    return s ? s + 1 : path;
}

static Dwfl *open_dwfl(void)
{
    static char *debuginfo_path;
    static const Dwfl_Callbacks cb = {
        .find_elf = dwfl_linux_proc_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .debuginfo_path = &debuginfo_path,
    };
    Dwfl *d = dwfl_begin(&cb);

    if (d && (dwfl_linux_proc_report(d, getpid()) || dwfl_report_end(d, NULL, NULL))) {
        dwfl_end(d);
        d = NULL;
    }
    return d;
}

/* Whether m's own file has line tables (answer cached in the module's user data). */
static bool own_lines(Dwfl_Module *m)
{
    static char yes, no;
    void **cache;
    GElf_Addr bias;
    Elf *e;
    size_t shstrndx;
    Elf_Scn *scn = NULL;

    dwfl_module_info(m, &cache, NULL, NULL, NULL, NULL, NULL, NULL);
    if (*cache)
        return *cache == &yes;
    *cache = &no;
    if ((e = dwfl_module_getelf(m, &bias)) && elf_getshdrstrndx(e, &shstrndx) == 0)
        while ((scn = elf_nextscn(e, scn))) {
            GElf_Shdr sh;
            const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
            if (name && !strcmp(name, ".debug_line") && sh.sh_type != SHT_NOBITS)
                *cache = &yes;
        }
    return *cache == &yes;
}

static bool want_lines(Dwfl_Module *m)
{
    const char *all = getenv("VMSTACK_TRACE_ALL_LINES");

    return (all && !strcmp(all, "1")) || own_lines(m);
}

/*
 * "function+0xoff/0xsize [module] file.c:line"; ret: ip is a return
 * address, looked up at ip - 1 (the call), which a call at the end of a
 * function (to a function that does not return) needs: ip itself may be
 * the next function's first byte.
 */
static void locate(Dwfl *d, uintptr_t ip, bool ret, char *buf, size_t n)
{
    uintptr_t at = ip - ret;
    Dwfl_Module *m = d ? dwfl_addrmodule(d, at) : NULL;
    char cxx[512];
    const char *name = NULL, *mod = NULL, *file;
    GElf_Off off = 0;
    GElf_Sym sym = {0};
    Dwfl_Line *line;
    int lineno = 0;
    size_t len;

    if (!ip) {
        snprintf(buf, n, "? (unknown: called indirectly, or the frames above were overwritten)");
        return;
    }
    if (m) {
        name = dwfl_module_addrinfo(m, at, &off, &sym, NULL, NULL, NULL);
        mod = dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    }
    if (!name) {
        struct vms_symres s;
        vms__symbols_lookup(at, &s);
        name = s.name;
        off = s.off;
        sym.st_size = s.size;
        if (!mod)
            mod = s.module;
    }
    if (name)
        len = (size_t)snprintf(buf, n, "%s+0x%lx/0x%lx", vms__demangle(name, cxx, sizeof cxx), (unsigned long)(off + ret),
                               (unsigned long)sym.st_size);
    else
        len = (size_t)snprintf(buf, n, "0x%lx", (unsigned long)ip);
    if (mod && len < n)
        len += (size_t)snprintf(buf + len, n - len, " [%s]", base_name(mod));
    if (m && len < n && want_lines(m) && (line = dwfl_module_getsrc(m, at)) &&
        (file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL)))
        snprintf(buf + len, n - len, " %s:%d", base_name(file), lineno);
}

/*
 * Symbolizing with its memory: a deep chain repeats a few return addresses
 * thousands of times, and libdwfl's symbol lookup scans the whole symbol
 * table each time.
 */
#define CACHE_SLOTS 1024
struct symbolizer {
    Dwfl *d;
    struct {
        uintptr_t key;
        char *text;
    } cache[CACHE_SLOTS];
};

static void put_location(FILE *f, struct symbolizer *z, uintptr_t ip, bool ret)
{
    uintptr_t key = ip << 1 | ret;
    size_t slot = (size_t)(key * 0x9e3779b97f4a7c15ull >> 54) % CACHE_SLOTS;
    char buf[1024];

    if (!z->cache[slot].text || z->cache[slot].key != key) {
        locate(z->d, ip, ret, buf, sizeof buf);
        free(z->cache[slot].text);
        z->cache[slot].key = key;
        if (!(z->cache[slot].text = strdup(buf))) {
            fprintf(f, "%s\n", buf);
            return;
        }
    }
    fprintf(f, "%s\n", z->cache[slot].text);
}

/* Frames from i on that repeat frame i (the same return address, the same size), as recursion makes them. */
static uint32_t repeats(const struct vms_trace_frame *fr, uint32_t i, uint32_t n, uint32_t gap)
{
    uint32_t k = i + 1;

    while (k + 1 < n && k != gap && k + 1 != gap && i > 0 && fr[k].ip == fr[i].ip &&
           fr[k + 1].sp - fr[k].sp == fr[i + 1].sp - fr[i].sp)
        k++;
    return k - i - 1;
}

/*
 * The table of n frames (innermost first) out of a chain of total; hi is
 * the stack's top.  A chain cut short gives its last kept frame no size.
 * Recursion is folded as in the overflow report: the first of FOLD_MIN
 * or more identical frames is printed, then one line for the rest, and
 * the numbering goes on as if they had been printed.
 */
#define FOLD_MIN 3
static void put_chain(FILE *f, struct symbolizer *z, const struct vms_trace_frame *fr, uint32_t n, uint32_t total,
                      uintptr_t hi, bool first_ret, uint32_t gap)
{
    fprintf(f, "        Depth    Size   Location    (%u entries)\n"
               "        -----    ----   --------\n",
            total);
    for (uint32_t i = 0; i < n; i++) {
        uintptr_t above = i + 1 < n ? fr[i + 1].sp : hi;
        uint32_t more;
        if (i == gap)
            fprintf(f, "     ... (frames lost here: overwritten by later calls; the callers as the tripwires saw them)\n");
        if (i + 1 == n && n < total)
            fprintf(f, "%3u) %8lu       ?   ", i, (unsigned long)(hi - fr[i].sp));
        else
            fprintf(f, "%3u) %8lu   %5lu   ", i, (unsigned long)(hi - fr[i].sp), (unsigned long)(above - fr[i].sp));
        put_location(f, z, fr[i].ip, i > 0 || first_ret);
        if ((more = repeats(fr, i, n, gap)) + 1 >= FOLD_MIN) {
            fprintf(f, "     ... %u more entries of the same %lu-byte frame\n", more, (unsigned long)(above - fr[i].sp));
            i += more;
        }
    }
    if (n < total)
        fprintf(f, "     ... %u more entries\n", total - n);
    else if (gap == n)
        fprintf(f, "     ... (the rest was overwritten by later calls)\n");
}

/* The name of the function at addr; else "module+0xoffset", or the address. */
static void function_name(struct symbolizer *z, uintptr_t addr, char *buf, size_t n)
{
    Dwfl_Module *m = z->d ? dwfl_addrmodule(z->d, addr) : NULL;
    const char *name = m ? dwfl_module_addrname(m, addr) : NULL;
    struct vms_symres s;
    char cxx[512];

    vms__symbols_lookup(addr, &s);
    if (!name)
        name = s.name;
    if (name)
        snprintf(buf, n, "%s", vms__demangle(name, cxx, sizeof cxx));
    else if (s.module)
        snprintf(buf, n, "%s+0x%lx", s.module, (unsigned long)s.modoff);
    else
        snprintf(buf, n, "0x%lx", (unsigned long)addr);
}

static void put_task(FILE *f, struct symbolizer *z, const struct vms_task *who, bool main)
{
    char start[256];

    if (who->kind == VMS_TASK_FIBER) {
        fprintf(f, "fiber '%.*s' (id %lu)", (int)sizeof who->name, who->name, (unsigned long)who->id);
    } else if (main) {
        fprintf(f, "main thread '%.*s' (pid %lu)", (int)sizeof who->name, who->name, (unsigned long)who->id);
        return;
    } else {
        fprintf(f, "thread '%.*s' (tid %lu)", (int)sizeof who->name, who->name, (unsigned long)who->id);
    }
    if (who->start) {
        function_name(z, (uintptr_t)who->start, start, sizeof start);
        fprintf(f, ", start routine %s", start);
    }
}

static void put_result(FILE *f, struct symbolizer *z, const struct vms_trace_chain *c)
{
    put_task(f, z, &c->who, c->main);
    if (c->count > 1)
        fprintf(f, " and %lu more threads of it (the deepest shown)", c->count - 1);
    fprintf(f, "%s: %lu of %lu stack bytes deep, %lu tripwire faults\n", c->running ? " (running)" : "",
            (unsigned long)c->depth, (unsigned long)(c->hi - c->lo), (unsigned long)c->faults);
    if (!c->exact)
        fprintf(f, "  (still running: depth and chain as the tripwires saw them, exact to the window)\n");
    if (c->partial)
        fprintf(f, "  (partial: later calls overwrote part of the chain at that depth)\n");
    if (c->lost)
        fprintf(f, "  (the tripwire could not be moved lower: deeper use was not traced)\n");
    if (c->signal_lost)
        fprintf(f, "  (a signal could not be delivered next to the tripwire and was lost)\n");
    if (c->depth_warned)
        fprintf(f, "  WARNING: passed --warn-depth %u%% of its stack\n", vms__trace_options()->warn_depth);
    put_chain(f, z, c->f, c->n, c->n, c->hi, c->ret, c->partial ? c->gap : UINT32_MAX);
}

static void put_warnings(FILE *f, struct symbolizer *z)
{
    struct vms_trace_warn *w;
    size_t n = vms__trace_warnings(&w);

    for (size_t i = 0; i < n; i++) {
        fprintf(f, "\nvmstack trace: WARNING: frame of %zu bytes (--warn-frame %zu) in ", w[i].size,
                vms__trace_options()->warn_frame);
        put_location(f, z, w[i].f[0].ip, w[i].ret);
        fprintf(f, "  on ");
        put_task(f, z, &w[i].who, w[i].who.start == NULL);
        fprintf(f, ", reached by:\n");
        put_chain(f, z, w[i].f, w[i].n, w[i].total, w[i].hi, w[i].ret, UINT32_MAX);
    }
    free(w);
}

void vms__trace_format(FILE *f, const char *why)
{
    struct vms_trace_chain *c;
    size_t n = vms__trace_collect(&c);
    struct symbolizer *z = calloc(1, sizeof *z);
    unsigned long quiet;

    if (!z) {
        vms__trace_free(c, n);
        return;
    }
    z->d = open_dwfl();
    fprintf(f, "\nvmstack trace: deepest call chains of %s (pid %d) at %s; depths exact to the word\n",
            program_invocation_short_name, (int)getpid(), why);
    if (n) {
        fprintf(f, "overall deepest: ");
        put_task(f, z, &c[0].who, c[0].main);
        fprintf(f, ", %lu bytes\n", (unsigned long)c[0].depth);
    }
    for (size_t i = 0; i < n; i++) {
        fputc('\n', f);
        put_result(f, z, &c[i]);
    }
    if ((quiet = vms__trace_quiet()))
        fprintf(f, "\n%lu more %s never reached %s first tripwire: no deeper than a page or two below where "
                   "%s started\n",
                quiet, quiet == 1 ? "task" : "tasks", quiet == 1 ? "its" : "their", quiet == 1 ? "it" : "they");
    put_warnings(f, z);
    if (z->d)
        dwfl_end(z->d);
    for (size_t i = 0; i < CACHE_SLOTS; i++)
        free(z->cache[i].text);
    free(z);
    vms__trace_free(c, n);
}

int vms_trace_report(int fd)
{
    char *text = NULL;
    size_t len = 0, done = 0;
    FILE *f;

    if (!atomic_load_explicit(&vms__trace_armed, memory_order_acquire))
        return vms__fail(EINVAL, "vms_trace_report: tracing is off (vms_trace_enable was not called)");
    vms__symbols_snapshot();
    if (!(f = open_memstream(&text, &len)))
        return vms__fail(ENOMEM, "vms_trace_report: out of memory for the report");
    vms__trace_format(f, "vms_trace_report");
    fclose(f);
    /* One write where it fits, so that reports from two threads do not mix. */
    while (done < len) {
        ssize_t n = write(fd, text + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            free(text);
            return vms__fail(errno ? errno : EIO, "vms_trace_report: write to fd %d failed", fd);
        }
        done += (size_t)n;
    }
    free(text);
    return 0;
}
