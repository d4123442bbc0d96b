/* SPDX-License-Identifier: MIT */
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
#include "core/json.h"
#include "fault/fault.h"
#include "trace/dw.h"
#include "trace/trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');

    return s ? s + 1 : path;
}

/*
 * Debug files are looked up locally, by build id
 * (dwfl_build_id_find_debuginfo): the standard lookup falls back to the
 * debuginfod client, which loads some thirty libraries (curl, TLS,
 * Kerberos...) into the traced program at exit and may go to the network.
 */
static Dwfl *open_dwfl(void)
{
    static char *debuginfo_path;
    static Dwfl_Callbacks cb = {.debuginfo_path = &debuginfo_path}; /* libdwfl keeps a pointer to it */
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

/* Whether m's own file has line tables (answer cached in the module's user data). */
static bool own_lines(Dwfl_Module *m)
{
    static char yes, no;
    void **cache;
    GElf_Addr bias;
    Elf *e;
    size_t shstrndx;
    Elf_Scn *scn = NULL;

    DW(dwfl_module_info)(m, &cache, NULL, NULL, NULL, NULL, NULL, NULL);
    if (*cache)
        return *cache == &yes;
    *cache = &no;
    if ((e = DW(dwfl_module_getelf)(m, &bias)) && DW(elf_getshdrstrndx)(e, &shstrndx) == 0)
        while ((scn = DW(elf_nextscn)(e, scn))) {
            GElf_Shdr sh;
            const char *name = DW(gelf_getshdr)(scn, &sh) ? DW(elf_strptr)(e, shstrndx, sh.sh_name) : NULL;
            if (name && !strcmp(name, ".debug_line") && sh.sh_type != SHT_NOBITS)
                *cache = &yes;
        }
    return *cache == &yes;
}

static bool want_lines(Dwfl_Module *m)
{
    const char *all = secure_getenv("VMSTACK_TRACE_ALL_LINES");

    return (all && !strcmp(all, "1")) || own_lines(m);
}

/*
 * Where ip is: function (demangled), offset and size, module, file:line.
 * ret: ip is a return address, looked up at ip - 1 (the call), which a
 * call at the end of a function (to a function that does not return)
 * needs: ip itself may be the next function's first byte; the offset is
 * still that of ip.
 */
struct place {
    const char *name;   /* NULL when unknown */
    char cxx[512];      /* the demangled name's room */
    unsigned long off, size;
    const char *module; /* base name, NULL when unknown */
    const char *file;   /* base name, NULL without line information */
    int line;
};

static void place_of(Dwfl *d, uintptr_t ip, bool ret, struct place *p)
{
    uintptr_t at = ip - ret;
    Dwfl_Module *m = d && ip ? DW(dwfl_addrmodule)(d, at) : NULL;
    const char *name = NULL, *mod = NULL, *file;
    GElf_Off off = 0;
    GElf_Sym sym = {0};
    struct vms_symres s;
    Dwfl_Line *line;

    memset(p, 0, sizeof *p);
    if (!ip)
        return;
    /*
     * The fault layer's index first: sorted, where libdwfl scans a
     * module's whole symbol table for each address (a JVM's libjvm.so:
     * some 100,000 symbols, tens of milliseconds at every exit); and the
     * same names as the overflow report's.  libdwfl for what it lacks.
     */
    vms__symbols_lookup(at, &s);
    name = s.name;
    off = s.off;
    sym.st_size = s.size;
    if (m)
        mod = DW(dwfl_module_info)(m, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    if (!name && m)
        name = DW(dwfl_module_addrinfo)(m, at, &off, &sym, NULL, NULL, NULL);
    if (!mod)
        mod = s.module;
    if (name) {
        p->name = vms__demangle(name, p->cxx, sizeof p->cxx);
        p->off = (unsigned long)(off + ret);
        p->size = (unsigned long)sym.st_size;
    }
    p->module = mod ? base_name(mod) : NULL;
    if (m && want_lines(m) && (line = DW(dwfl_module_getsrc)(m, at)) &&
        (file = DW(dwfl_lineinfo)(line, NULL, &p->line, NULL, NULL, NULL)))
        p->file = base_name(file);
}

/* "function+0xoff/0xsize [module] file.c:line", the kernel's %pS with the line. */
static void locate(Dwfl *d, uintptr_t ip, bool ret, char *buf, size_t n)
{
    struct place p;
    size_t len;

    if (!ip) {
        snprintf(buf, n, "? (unknown: called indirectly, or the frames above were overwritten)");
        return;
    }
    place_of(d, ip, ret, &p);
    if (p.name)
        len = (size_t)snprintf(buf, n, "%s+0x%lx/0x%lx", p.name, p.off, p.size);
    else
        len = (size_t)snprintf(buf, n, "0x%lx", (unsigned long)ip);
    if (p.module && len < n)
        len += (size_t)snprintf(buf + len, n - len, " [%s]", p.module);
    if (p.file && len < n)
        snprintf(buf + len, n - len, " %s:%d", p.file, p.line);
}

/*
 * Symbolizing with its memory: a deep chain repeats a few return addresses
 * thousands of times, each a line-table lookup and a demangling.
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

/*
 * A chain as the report shows it, from a task's deepest chain or a
 * warning's: n frames (innermost first) out of a chain of total, on a
 * stack whose top is hi.
 */
struct chain_view {
    const struct vms_trace_frame *f;
    uint32_t n, total;
    uintptr_t hi;
    bool first_ret;               /* f[0].ip is a return address (not the faulting ip) */
    uint32_t gap;                 /* frames lost before f[gap]; UINT32_MAX: none */
    bool cut;                     /* f[n - 1]'s callers are unknown */
};

static struct chain_view view_of_chain(const struct vms_trace_chain *c)
{
    return (struct chain_view){.f = c->f, .n = c->n, .total = c->n, .hi = c->hi, .first_ret = c->ret,
                               .gap = c->partial ? c->gap : UINT32_MAX, .cut = c->cut};
}

static struct chain_view view_of_warning(const struct vms_trace_warn *w)
{
    return (struct chain_view){.f = w->f, .n = w->n, .total = w->total, .hi = w->hi, .first_ret = w->ret,
                               .gap = UINT32_MAX, .cut = false};
}

/* Frames from i on that repeat frame i (the same return address, the same size), as recursion makes them. */
static uint32_t repeats(const struct chain_view *v, uint32_t i)
{
    const struct vms_trace_frame *fr = v->f;
    uint32_t k = i + 1;

    while (k + 1 < v->n && k != v->gap && k + 1 != v->gap && i > 0 && fr[k].ip == fr[i].ip &&
           fr[k + 1].sp - fr[k].sp == fr[i + 1].sp - fr[i].sp)
        k++;
    return k - i - 1;
}

/*
 * The table of a chain's frames.  A chain cut short, or whose outermost
 * frame's callers are unknown (overwritten, or code without call-frame
 * information: `cut`), gives its last frame no size.
 * Recursion is folded as in the overflow report: the first of FOLD_MIN
 * or more identical frames is printed, then one line for the rest, and
 * the numbering goes on as if they had been printed.
 */
#define FOLD_MIN 3

/* Whether the last frame has no known size: the chain cut short, its rest overwritten, its callers unknown. */
static bool open_end(const struct chain_view *v)
{
    return v->n < v->total || v->gap == v->n || v->cut;
}

static void put_chain(FILE *f, struct symbolizer *z, const struct chain_view *v)
{
    const struct vms_trace_frame *fr = v->f;
    bool unknown = open_end(v);

    fprintf(f, "        Depth    Size   Location    (%u entries)\n"
               "        -----    ----   --------\n",
            v->total);
    for (uint32_t i = 0; i < v->n; i++) {
        uintptr_t above = i + 1 < v->n ? fr[i + 1].sp : v->hi;
        uint32_t more;
        if (i == v->gap)
            fprintf(f, "     ... (frames lost here: overwritten by later calls; the callers as the tripwires saw them)\n");
        if (i + 1 == v->n && unknown)
            fprintf(f, "%3u) %8lu       ?   ", i, (unsigned long)(v->hi - fr[i].sp));
        else
            fprintf(f, "%3u) %8lu   %5lu   ", i, (unsigned long)(v->hi - fr[i].sp), (unsigned long)(above - fr[i].sp));
        put_location(f, z, fr[i].ip, i > 0 || v->first_ret);
        if ((more = repeats(v, i)) + 1 >= FOLD_MIN) {
            fprintf(f, "     ... %u more entries of the same %lu-byte frame\n", more, (unsigned long)(above - fr[i].sp));
            i += more;
        }
    }
    if (v->n < v->total)
        fprintf(f, "     ... %u more entries\n", v->total - v->n);
    else if (v->gap == v->n)
        fprintf(f, "     ... (the rest was overwritten by later calls)\n");
    else if (v->cut)
        fprintf(f, "     ... (callers unknown: this code has no call-frame information, as JIT-compiled code and a "
                   "runtime's hand-written builtins have none)\n");
}

/* The name of the function at addr (as place_of finds it); else "module+0xoffset", or the address. */
static void function_name(struct symbolizer *z, uintptr_t addr, char *buf, size_t n)
{
    struct vms_symres s;
    const char *name;
    Dwfl_Module *m;
    char cxx[512];

    vms__symbols_lookup(addr, &s);
    if (!(name = s.name) && (m = z->d ? DW(dwfl_addrmodule)(z->d, addr) : NULL))
        name = DW(dwfl_module_addrname)(m, addr);
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
    struct chain_view v = view_of_chain(c);

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
    put_chain(f, z, &v);
}

static void put_warnings(FILE *f, struct symbolizer *z)
{
    struct vms_trace_warn *w;
    size_t n = vms__trace_warnings(&w);

    for (size_t i = 0; i < n; i++) {
        struct chain_view v = view_of_warning(&w[i]);
        fprintf(f, "\nvmstack trace: WARNING: frame of %zu bytes (--warn-frame %zu) in ", w[i].size,
                vms__trace_options()->warn_frame);
        put_location(f, z, w[i].f[0].ip, w[i].ret);
        fprintf(f, "  on ");
        put_task(f, z, &w[i].who, w[i].who.start == NULL);
        fprintf(f, ", reached by:\n");
        put_chain(f, z, &v);
    }
    free(w);
}

void vms__trace_format(FILE *f, const char *why, pid_t pid)
{
    struct vms_trace_chain *c;
    size_t n = vms__trace_collect(&c);
    struct symbolizer *z = calloc(1, sizeof *z);
    unsigned long quiet, untraced;
    int limit;

    if (!z) {
        vms__trace_free(c, n);
        return;
    }
    z->d = open_dwfl();
    fprintf(f, "\nvmstack trace: deepest call chains of %s (pid %d) at %s; depths exact to the word\n",
            program_invocation_short_name, (int)pid, why);
    if (vms__trace_tracer())
        fprintf(f, "no tripwires: the process is ptraced (by pid %d), where each would stop it; depths and "
                   "chains come from the dead stacks of ended tasks alone\n",
                vms__trace_tracer());
    else if (vms__trace_on_valgrind())
        fprintf(f, "no tripwires: the process runs under valgrind; depths and chains come from the dead stacks "
                   "of ended tasks alone\n");
    if ((untraced = vms__trace_untraced(&limit)))
        fprintf(f, "%lu %s not traced: %d tasks are traced at once ('vmstack trace --max-tasks N' raises the "
                   "limit); the deepest below is of those traced\n",
                untraced, untraced == 1 ? "task was" : "tasks were", limit);
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
        DW(dwfl_end)(z->d);
    for (size_t i = 0; i < CACHE_SLOTS; i++)
        free(z->cache[i].text);
    free(z);
    vms__trace_free(c, n);
}

/* ---- the same as JSON, the "trace" member of 'vmstack trace --json''s object ---- */

static void json_place(struct vms_json *j, Dwfl *d, uintptr_t ip, bool ret)
{
    struct place p;

    place_of(d, ip, ret, &p);
    vms__json_key(j, "ip");
    vms__json_hex(j, ip);
    vms__json_key_bool(j, "return_address", ret);
    vms__json_key_str(j, "function", p.name);
    vms__json_key(j, "offset");
    p.name ? vms__json_uint(j, p.off) : vms__json_null(j);
    vms__json_key(j, "function_size");
    p.name ? vms__json_uint(j, p.size) : vms__json_null(j);
    vms__json_key_str(j, "module", p.module);
    vms__json_key_str(j, "file", p.file);
    vms__json_key(j, "line");
    p.file ? vms__json_int(j, p.line) : vms__json_null(j);
}

/* The entries as the text's rows, unfolded; size null where the text prints '?'. */
static void json_frames(struct vms_json *j, Dwfl *d, const struct chain_view *v)
{
    const struct vms_trace_frame *fr = v->f;

    vms__json_key_uint(j, "entries", v->total);
    vms__json_key(j, "frames");
    vms__json_arr(j);
    for (uint32_t i = 0; i < v->n; i++) {
        vms__json_obj(j);
        vms__json_key_uint(j, "depth", v->hi - fr[i].sp);
        vms__json_key(j, "size");
        if (i + 1 == v->n && open_end(v))
            vms__json_null(j);
        else
            vms__json_uint(j, (i + 1 < v->n ? fr[i + 1].sp : v->hi) - fr[i].sp);
        json_place(j, d, fr[i].ip, i > 0 || v->first_ret);
        vms__json_obj_end(j);
    }
    vms__json_arr_end(j);
}

static void json_task(struct vms_json *j, Dwfl *d, const struct vms_task *who, bool main)
{
    char start[256];
    struct symbolizer z = {.d = d};

    vms__json_key_str(j, "kind", who->kind == VMS_TASK_FIBER ? "fiber" : main ? "main thread" : "thread");
    vms__json_key(j, "name");
    vms__json_strn(j, who->name, strnlen(who->name, sizeof who->name));
    vms__json_key_uint(j, "id", who->id);
    vms__json_key(j, "start");
    if (who->start && !main) {
        function_name(&z, (uintptr_t)who->start, start, sizeof start);
        vms__json_str(j, start);
    } else {
        vms__json_null(j);
    }
}

static void json_chain(struct vms_json *j, Dwfl *d, const struct vms_trace_chain *c)
{
    struct chain_view v = view_of_chain(c);

    vms__json_obj(j);
    json_task(j, d, &c->who, c->main);
    vms__json_key_uint(j, "count", c->count);
    vms__json_key_bool(j, "running", c->running);
    vms__json_key_uint(j, "depth", c->depth);
    vms__json_key_uint(j, "stack_size", c->hi - c->lo);
    vms__json_key_uint(j, "tripwire_faults", c->faults);
    vms__json_key_bool(j, "exact", c->exact);
    vms__json_key_bool(j, "partial", c->partial);
    vms__json_key(j, "frames_lost_before");
    c->partial ? vms__json_uint(j, c->gap) : vms__json_null(j);
    vms__json_key_bool(j, "callers_unknown", c->cut);
    vms__json_key_bool(j, "window_lost", c->lost);
    vms__json_key_bool(j, "signal_lost", c->signal_lost);
    vms__json_key_bool(j, "depth_warned", c->depth_warned);
    json_frames(j, d, &v);
    vms__json_obj_end(j);
}

void vms__trace_json(struct vms_json *j, const char *why)
{
    struct vms_trace_chain *c;
    struct vms_trace_warn *w;
    size_t n = vms__trace_collect(&c), nw = vms__trace_warnings(&w);
    Dwfl *d = open_dwfl();
    int limit;

    vms__json_obj(j);
    vms__json_key_str(j, "when", why);
    vms__json_key(j, "chains");
    vms__json_arr(j);
    for (size_t i = 0; i < n; i++)
        json_chain(j, d, &c[i]);
    vms__json_arr_end(j);
    vms__json_key(j, "ptraced_by");
    vms__trace_tracer() ? vms__json_int(j, vms__trace_tracer()) : vms__json_null(j);
    vms__json_key_uint(j, "quiet_tasks", vms__trace_quiet());
    vms__json_key_uint(j, "untraced_tasks", vms__trace_untraced(&limit));
    vms__json_key(j, "max_tasks");
    vms__json_int(j, limit);
    vms__json_key(j, "warnings");
    vms__json_arr(j);
    for (size_t i = 0; i < nw; i++) {
        struct chain_view v = view_of_warning(&w[i]);
        vms__json_obj(j);
        vms__json_key_uint(j, "frame_size", w[i].size);
        vms__json_key_uint(j, "warn_frame", vms__trace_options()->warn_frame);
        json_task(j, d, &w[i].who, w[i].who.start == NULL);
        json_frames(j, d, &v);
        vms__json_obj_end(j);
    }
    vms__json_arr_end(j);
    vms__json_obj_end(j);
    if (d)
        DW(dwfl_end)(d);
    free(w);
    vms__trace_free(c, n);
}

int vms_trace_report(int fd)
{
    char *text = NULL;
    size_t len = 0;
    int rc;
    FILE *f;

    if (!atomic_load_explicit(&vms__trace_armed, memory_order_acquire))
        return vms__fail(EINVAL, "vms_trace_report: tracing is off (vms_trace_enable was not called)");
    vms__symbols_snapshot();
    if (!(f = open_memstream(&text, &len)))
        return vms__fail(ENOMEM, "vms_trace_report: out of memory for the report");
    vms__trace_format(f, "vms_trace_report", getpid());
    fclose(f);
    /* One write where it fits, so that reports from two threads do not mix. */
    rc = vms__os_write_all(fd, text, len);
    free(text);
    return rc ? vms__fail(-rc, "vms_trace_report: write to fd %d failed", fd) : 0;
}
