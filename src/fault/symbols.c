/* SPDX-License-Identifier: MIT */
/*
 * Symbols: user space's kallsyms, read only when a name is printed.
 *
 * The kernel can name a function in any context because its table is
 * ready in advance; preparing ours at start-up (reading and sorting every
 * module's symbol table) cost a traced or run process several
 * milliseconds before main, for names that most processes never print.
 * So start-up only lists the loaded modules (dl_iterate_phdr: address
 * ranges, paths, build ids), and a module's symbols are read the first
 * time an address in it is looked up, possibly inside the overflow
 * handler.  That read is async-signal-safe: the file mapped by core
 * (open, fstat, mmap and close, also when the program is out of
 * descriptors), ELF parsed by hand from the mapping (libelf allocates), an index sorted
 * in place in a fresh mapping by heapsort (qsort may allocate).  Names
 * point into the mapped file and stay mapped for the life of the process.
 * They are the names as stored: C++ names are demangled by the printer,
 * where it may allocate (core/demangle.h).
 *
 * A module's separate debug file is preferred when one is installed under
 * its build id (/usr/lib/debug/.build-id/xx/yyyy.debug), as gdb does:
 * shared libraries ship stripped to .dynsym, which names none of their
 * internal functions.
 *
 * The module list is its own mapping rather than the heap: the overflow
 * report must still be right when the program has trashed its heap.  A
 * refresh (after dlopen) publishes a new list and keeps the old one
 * mapped, since a handler in another thread may be reading it; a module
 * already indexed keeps its index across refreshes.
 */
#include "fault/fault.h"
#include "core/demangle.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_MODULES 512
#define PATH_BYTES 4096
#define LOAD_SPINS 100000  /* yields a reader waits for another thread's read of a module */

struct sym {
    uintptr_t addr;
    uintptr_t size;
    const char *name;
    uint32_t order;     /* its place in the symbol table */
    unsigned char rank; /* of its binding among aliases: global, weak, then local (glibc's __GI_ names) */
};

enum { UNREAD, READING, READY, NONE };

struct index {
    const struct sym *syms; /* sorted by address */
    size_t n;
    struct vms_dwarf dwarf;  /* its line table, when it has one */
};

struct module {
    uintptr_t lo, hi, bias;    /* mapped range of its PT_LOAD segments, load address */
    const char *name, *path;   /* base name shown in reports; file to read ("" for none) */
    char debug[80];            /* its build-id debug file, or "" */
    _Atomic int state;
    _Atomic pid_t reader;      /* the thread reading it (READING) */
    struct index idx;          /* READY */
    _Atomic int lines;         /* idx.dwarf's sequences: UNREAD, READING, READY or NONE */
};

struct table {
    size_t bytes;              /* of the whole mapping */
    size_t nmods;
    struct module mods[MAX_MODULES];
    char strings[];            /* names and paths */
};

static _Atomic(struct table *) current;
static unsigned long long seen_adds = ~0ull, seen_subs = ~0ull;
static pthread_mutex_t snapshot_lock = PTHREAD_MUTEX_INITIALIZER;

static void lock_for_fork(void)
{
    pthread_mutex_lock(&snapshot_lock);
}

static void unlock_after_fork(void)
{
    pthread_mutex_unlock(&snapshot_lock);
}

static void reset_in_child(void);

/*
 * Free in a child after fork, whatever another thread was doing
 * (core/fork.c); and a module another thread was reading when it forked
 * is read anew in the child, which has no such thread to wait for.
 */
__attribute__((constructor)) static void snapshot_lock_at_fork(void)
{
    vms__fork_hook(VMS_FORK_FAULT_SYMBOLS, lock_for_fork, unlock_after_fork, reset_in_child);
}

/* ---- reading one module's symbols (async-signal-safe) ---- */

static void *map_fresh(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    return p == MAP_FAILED ? NULL : p;
}

/*
 * Address order; at one address the largest alias first (it covers every
 * address the others do), then the one libdwfl would name: global before
 * weak before local (glibc's internal __GI_ names), then the first in the
 * symbol table.
 */
static bool before(const struct sym *a, const struct sym *b)
{
    if (a->addr != b->addr)
        return a->addr < b->addr;
    if (a->size != b->size)
        return a->size > b->size;
    if (a->rank != b->rank)
        return a->rank < b->rank;
    return a->order < b->order;
}

static unsigned char rank_of(const Elf64_Sym *s)
{
    int bind = ELF64_ST_BIND(s->st_info);

    return bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
}

static void sift(struct sym *s, size_t root, size_t n)
{
    for (size_t child; (child = 2 * root + 1) < n; root = child) {
        struct sym t;

        if (child + 1 < n && before(&s[child], &s[child + 1]))
            child++;
        if (!before(&s[root], &s[child]))
            return;
        t = s[root];
        s[root] = s[child];
        s[child] = t;
    }
}

static void heapsort_syms(struct sym *s, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift(s, i, n);
    for (size_t end = n; end-- > 1;) {
        struct sym t = s[0];
        s[0] = s[end];
        s[end] = t;
        sift(s, 0, end);
    }
}

/* Drops aliases and gives sizeless symbols the gap to the next one. */
static size_t tidy(struct sym *s, size_t n)
{
    size_t k = 0;

    for (size_t i = 0; i < n; i++)
        if (k == 0 || s[i].addr != s[k - 1].addr)
            s[k++] = s[i];
    for (size_t i = 0; i + 1 < k; i++)
        if (s[i].size == 0)
            s[i].size = s[i + 1].addr - s[i].addr;
    return k;
}

static bool in_file(uint64_t off, uint64_t len, size_t size)
{
    return off <= size && len <= size - off;
}

/* The section to read, checked against the file's size: .symtab, else .dynsym. */
static const Elf64_Shdr *symbol_section(const char *f, size_t size, const Elf64_Ehdr *eh)
{
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(f + eh->e_shoff), *dyn = NULL;

    for (size_t i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *s = &sh[i], *str;
        if ((s->sh_type != SHT_SYMTAB && s->sh_type != SHT_DYNSYM) || s->sh_entsize != sizeof(Elf64_Sym) ||
            !in_file(s->sh_offset, s->sh_size, size) || s->sh_link >= eh->e_shnum)
            continue;
        str = &sh[s->sh_link];
        if (str->sh_size == 0 || !in_file(str->sh_offset, str->sh_size, size) ||
            f[str->sh_offset + str->sh_size - 1] != '\0')
            continue;
        if (s->sh_type == SHT_SYMTAB)
            return s;
        dyn = s;
    }
    return dyn;
}

static bool wanted(const Elf64_Sym *s, size_t strsize)
{
    int type = ELF64_ST_TYPE(s->st_info);

    return (type == STT_FUNC || type == STT_GNU_IFUNC) && s->st_shndx != SHN_UNDEF && s->st_value != 0 &&
           s->st_name != 0 && s->st_name < strsize;
}

/*
 * The DWARF sections the report's file:line reads (lines.c), from the
 * image's section names; a compressed one (separate debug files) is left
 * out: inflating it takes a library and memory.
 */
static void dwarf_sections(const char *f, size_t size, const Elf64_Ehdr *eh, struct vms_dwarf *d)
{
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(f + eh->e_shoff), *names;

    if (eh->e_shstrndx >= eh->e_shnum)
        return;
    names = &sh[eh->e_shstrndx];
    if (!in_file(names->sh_offset, names->sh_size, size) || !names->sh_size || f[names->sh_offset + names->sh_size - 1])
        return;
    for (size_t i = 0; i < eh->e_shnum; i++) {
        const char *name = sh[i].sh_name < names->sh_size ? f + names->sh_offset + sh[i].sh_name : "";
        const char **at = !strcmp(name, ".debug_line") ? &d->line : !strcmp(name, ".debug_line_str") ? &d->line_str
                        : !strcmp(name, ".debug_str") ? &d->str : NULL;
        if (!at || (sh[i].sh_flags & SHF_COMPRESSED) || sh[i].sh_type == SHT_NOBITS ||
            !in_file(sh[i].sh_offset, sh[i].sh_size, size))
            continue;
        *at = f + sh[i].sh_offset;
        *(at == &d->line ? &d->line_size : at == &d->line_str ? &d->line_str_size : &d->str_size) = sh[i].sh_size;
    }
}

/* The sorted index of the functions in the ELF image f, loaded at bias. */
static bool index_image(const char *f, size_t size, uintptr_t bias, struct index *out)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f;
    const Elf64_Shdr *sh, *str;
    const Elf64_Sym *syms;
    size_t nsyms, n = 0, bytes;
    struct sym *idx;

    if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) || !in_file(eh->e_shoff, (uint64_t)eh->e_shnum * sizeof *sh, size) ||
        !(sh = symbol_section(f, size, eh)))
        return false;
    str = &((const Elf64_Shdr *)(f + eh->e_shoff))[sh->sh_link];
    syms = (const Elf64_Sym *)(f + sh->sh_offset);
    nsyms = sh->sh_size / sizeof *syms;
    for (size_t i = 0; i < nsyms; i++)
        n += wanted(&syms[i], str->sh_size);
    if (n == 0)
        return false;
    bytes = n * sizeof *idx;
    if (!(idx = map_fresh(bytes)))
        return false;
    n = 0;
    for (size_t i = 0; i < nsyms; i++)
        if (wanted(&syms[i], str->sh_size))
            idx[n++] = (struct sym){bias + syms[i].st_value, syms[i].st_size, f + str->sh_offset + syms[i].st_name,
                                    (uint32_t)i, rank_of(&syms[i])};
    heapsort_syms(idx, n);
    n = tidy(idx, n);
    mprotect(idx, bytes, PROT_READ);
    out->syms = idx;
    out->n = n;
    dwarf_sections(f, size, eh, &out->dwarf);
    return true;
}

/*
 * Maps path whole and indexes it; the mapping stays (the names point into
 * it).  Without a descriptor kept: a program that has used up its own
 * would otherwise get a report without a single name (core's os.c).
 */
static bool index_file(const char *path, uintptr_t bias, struct index *out)
{
    size_t bytes;
    void *f = vms__os_map_file(path, &bytes);

    if (!f)
        return false;
    if (index_image(f, bytes, bias, out))
        return true;
    munmap(f, bytes);
    return false;
}

static void read_module(struct module *m)
{
    struct index idx = {0};
    bool ok = (m->debug[0] && index_file(m->debug, m->bias, &idx)) || (m->path[0] && index_file(m->path, m->bias, &idx));

    m->idx = idx;
    atomic_store_explicit(&m->state, ok ? READY : NONE, memory_order_release);
}

/*
 * The module's index, read now if nobody has.  Another thread reading it
 * is waited for (a bounded wait: it makes progress); this thread reading
 * it already (a signal came in the middle) gets no names.
 */
static const struct index *module_index(struct module *m)
{
    int st = atomic_load_explicit(&m->state, memory_order_acquire);
    pid_t me;

    if (st == UNREAD) {
        me = gettid();
        if (atomic_compare_exchange_strong_explicit(&m->state, &st, READING, memory_order_acq_rel,
                                                    memory_order_acquire)) {
            atomic_store_explicit(&m->reader, me, memory_order_relaxed);
            read_module(m);
            st = atomic_load_explicit(&m->state, memory_order_acquire);
        }
    }
    for (long i = 0; st == READING && i < LOAD_SPINS; i++) {
        if (atomic_load_explicit(&m->reader, memory_order_relaxed) == gettid())
            return NULL;
        sched_yield();
        st = atomic_load_explicit(&m->state, memory_order_acquire);
    }
    return st == READY ? &m->idx : NULL;
}

static void reset_in_child(void)
{
    struct table *t = atomic_load_explicit(&current, memory_order_acquire);
    int reading = READING;

    for (size_t k = 0; t && k < t->nmods; k++, reading = READING) {
        atomic_compare_exchange_strong_explicit(&t->mods[k].state, &reading, UNREAD, memory_order_relaxed,
                                                memory_order_relaxed);
        reading = READING;
        atomic_compare_exchange_strong_explicit(&t->mods[k].lines, &reading, UNREAD, memory_order_relaxed,
                                                memory_order_relaxed);
    }
    pthread_mutex_unlock(&snapshot_lock);
}

/* ---- the module list (outside signal context) ---- */

/* The build-id note of a loaded module, in memory: its debug file's name, if installed. */
static void debug_file(const struct dl_phdr_info *info, char *path, size_t cap)
{
    static const char hex[] = "0123456789abcdef", dir[] = "/usr/lib/debug/.build-id/";

    path[0] = '\0';
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;

        if (ph->p_type != PT_NOTE)
            continue;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
            const char *name = p + sizeof *n;
            const unsigned char *id = (const unsigned char *)name + ((n->n_namesz + 3) & ~3u);
            size_t len = sizeof dir - 1;

            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
                n->n_descsz >= 2 && len + 2 * n->n_descsz + 8 < cap) {
                memcpy(path, dir, len);
                for (size_t k = 0; k < n->n_descsz; k++) {
                    path[len++] = hex[id[k] >> 4];
                    path[len++] = hex[id[k] & 15];
                    if (k == 0)
                        path[len++] = '/';
                }
                memcpy(path + len, ".debug", 7);
                return;
            }
            p = (const char *)id + ((n->n_descsz + 3) & ~3u);
        }
    }
}

struct build {
    struct table *t, *old;
    size_t nstr, capstr;
};

static const char *keep_string(struct build *b, const char *s)
{
    size_t len = strlen(s) + 1;
    char *at;

    if (len > b->capstr - b->nstr)
        return "";
    at = b->t->strings + b->nstr;
    memcpy(at, s, len);
    b->nstr += len;
    return at;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');

    return s ? s + 1 : path;
}

/* The same module in the table before this one, already indexed: its index carries over. */
static void carry_over(struct build *b, struct module *m)
{
    if (!b->old)
        return;
    for (size_t i = 0; i < b->old->nmods; i++) {
        struct module *o = &b->old->mods[i];
        if (o->lo == m->lo && o->hi == m->hi && o->bias == m->bias && strcmp(o->path, m->path) == 0 &&
            atomic_load_explicit(&o->state, memory_order_acquire) == READY) {
            int lines = atomic_load_explicit(&o->lines, memory_order_acquire);
            m->idx = o->idx;
            atomic_store_explicit(&m->state, READY, memory_order_relaxed);
            /* Its line index too, when it is made: one being made goes on in the old table only. */
            atomic_store_explicit(&m->lines, lines == READING ? UNREAD : lines, memory_order_relaxed);
            if (lines == READING)
                m->idx.dwarf.seqs = NULL, m->idx.dwarf.nseqs = 0;
            return;
        }
    }
}

bool vms__module_range(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
    *lo = UINTPTR_MAX;
    *hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        if (info->dlpi_addr + ph->p_vaddr < *lo)
            *lo = info->dlpi_addr + ph->p_vaddr;
        if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > *hi)
            *hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    }
    return *lo < *hi;
}

static int add_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct build *b = arg;
    uintptr_t lo, hi;
    char exe[PATH_BYTES];
    const char *path = info->dlpi_name;
    struct module *m;

    (void)size;
    if (b->t->nmods == MAX_MODULES)
        return 1;
    if (!vms__module_range(info, &lo, &hi))
        return 0;
    m = &b->t->mods[b->t->nmods++];
    m->lo = lo;
    m->hi = hi;
    m->bias = info->dlpi_addr;
    if (!path || !*path) { /* the main program: named by its file, read through /proc */
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = 0;
        m->name = keep_string(b, *exe ? base_name(exe) : "?");
        m->path = "/proc/self/exe";
    } else {
        m->name = keep_string(b, base_name(path));
        /* The vDSO has no file: its functions stay unnamed. */
        m->path = path[0] == '/' ? keep_string(b, path) : "";
    }
    debug_file(info, m->debug, sizeof m->debug);
    carry_over(b, m);
    return 0;
}

static int count_changes(struct dl_phdr_info *info, size_t size, void *arg)
{
    unsigned long long *v = arg;

    (void)size;
    v[0] = info->dlpi_adds;
    v[1] = info->dlpi_subs;
    return 1;
}

void vms__modules_counts(unsigned long long *adds, unsigned long long *subs)
{
    unsigned long long v[2] = {0, 0};

    dl_iterate_phdr(count_changes, v);
    *adds = v[0];
    *subs = v[1];
}

int vms__symbols_snapshot(void)
{
    unsigned long long changes[2] = {0, 0};
    size_t bytes = sizeof(struct table) + (size_t)MAX_MODULES * 256;
    struct build b = {0};
    int rc = 0;

    pthread_mutex_lock(&snapshot_lock);
    if ((rc = vms__modules_begin()))
        goto unlock; /* the last snapshot stays */
    vms__modules_counts(&changes[0], &changes[1]);
    if (changes[0] == seen_adds && changes[1] == seen_subs)
        goto out;
    if (!(b.t = map_fresh(bytes))) {
        rc = -ENOMEM;
        goto out;
    }
    b.t->bytes = bytes;
    b.capstr = bytes - sizeof(struct table);
    b.old = atomic_load_explicit(&current, memory_order_relaxed);
    dl_iterate_phdr(add_module, &b);
    atomic_store_explicit(&current, b.t, memory_order_release);
    vms__demangle_find_loaded();
    seen_adds = changes[0];
    seen_subs = changes[1];
out:
    vms__unwind_end();
unlock:
    pthread_mutex_unlock(&snapshot_lock);
    return rc;
}

/* ---- lookup (async-signal-safe) ---- */

/* The last symbol at or below addr, or -1. */
static long find_sym(const struct index *x, uintptr_t addr)
{
    long lo = 0, hi = (long)x->n - 1, best = -1;

    while (lo <= hi) {
        long mid = lo + (hi - lo) / 2;
        if (x->syms[mid].addr <= addr) {
            best = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return best;
}

/* The module addr is in, NULL for none. */
static struct module *module_of(uintptr_t addr)
{
    struct table *t = atomic_load_explicit(&current, memory_order_acquire);

    for (size_t k = 0; t && k < t->nmods; k++)
        if (addr >= t->mods[k].lo && addr < t->mods[k].hi)
            return &t->mods[k];
    return NULL;
}

/*
 * The module's line table, indexed now if nobody has: only when a line is
 * asked for, as trace and the tables name functions without it.  A thread
 * that finds another indexing it gets no line rather than wait.
 */
static const struct vms_dwarf *module_lines(struct module *m)
{
    int st = UNREAD;

    if (!module_index(m) || !m->idx.dwarf.line)
        return NULL;
    if (atomic_compare_exchange_strong_explicit(&m->lines, &st, READING, memory_order_acq_rel, memory_order_acquire)) {
        st = vms__dwarf_index(&m->idx.dwarf) ? READY : NONE;
        atomic_store_explicit(&m->lines, st, memory_order_release);
    }
    return st == READY ? &m->idx.dwarf : NULL;
}

bool vms__symbols_line(uintptr_t addr, const char **file, unsigned *line)
{
    struct module *m = module_of(addr);
    const struct vms_dwarf *d = m ? module_lines(m) : NULL;

    return d && vms__dwarf_line(d, addr - m->bias, file, line);
}

void vms__symbols_lookup(uintptr_t addr, struct vms_symres *r)
{
    struct module *m = module_of(addr);
    const struct index *x;
    long i;

    memset(r, 0, sizeof *r);
    if (!m)
        return;
    r->module = m->name;
    r->modoff = addr - m->bias;
    if (!(x = module_index(m)) || (i = find_sym(x, addr)) < 0 || addr - x->syms[i].addr >= x->syms[i].size)
        return;
    r->name = x->syms[i].name;
    r->off = addr - x->syms[i].addr;
    r->size = x->syms[i].size;
}
