/*
 * The symbol snapshot: user space's kallsyms.  The kernel can symbolize an
 * oops in any context because its symbol table is prepared in advance; a
 * signal handler cannot open files, parse ELF or allocate, so we do all of
 * that here, outside signal context: walk the loaded modules with
 * dl_iterate_phdr, read each one's .symtab (or .dynsym when stripped) with
 * libelf, and leave one sorted, read-only table in its own mmap'd block.
 * The handler only binary-searches it.
 *
 * C++ names are demangled here, as they are read, so that the report shows
 * "recurse(int)" rather than "_ZL7recursei": the demangler allocates, which
 * the handler must not.
 *
 * Its own mapping rather than the heap: the overflow report must still be
 * right when the program has trashed its heap.  A refresh (after dlopen)
 * publishes a new table and keeps the old one mapped, since a handler in
 * another thread may be reading it; refreshes happen only when the set of
 * loaded modules changed, so that costs little.
 */
#include "fault/fault.h"
#include "core/demangle.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct sym {
    uintptr_t addr;
    uintptr_t size;
    uint32_t name;          /* offset into the string pool */
};

struct module {
    uintptr_t lo, hi, bias; /* mapped range of its PT_LOAD segments, load address */
    uint32_t name;
};

struct table {
    size_t bytes;           /* of the whole mapping */
    uint32_t nsyms, nmods;
    struct sym *syms;       /* sorted by address */
    struct module *mods;
    char *strings;
};

static _Atomic(struct table *) current;
static unsigned long long seen_adds = ~0ull, seen_subs = ~0ull;
static pthread_mutex_t snapshot_lock = PTHREAD_MUTEX_INITIALIZER;

/* The table under construction, on the heap. */
struct build {
    struct sym *syms;
    size_t nsyms, capsyms;
    struct module *mods;
    size_t nmods, capmods;
    char *strings;
    size_t nstr, capstr;
    int failed;
};

/* Free in a child after fork, whatever another thread was doing (core/fork.c). */
__attribute__((constructor)) static void snapshot_lock_at_fork(void)
{
    vms__fork_mutex(VMS_FORK_FAULT_SYMBOLS, &snapshot_lock);
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem, int *failed)
{
    size_t n = *cap ? *cap : 64;
    void *q;

    if (need <= *cap)
        return p;
    while (n < need)
        n *= 2;
    q = realloc(p, n * elem);
    if (!q) {
        *failed = 1;
        return p;
    }
    *cap = n;
    return q;
}

static uint32_t add_string(struct build *b, const char *s)
{
    size_t len = strlen(s) + 1;
    uint32_t at = (uint32_t)b->nstr;

    b->strings = grow(b->strings, &b->capstr, b->nstr + len, 1, &b->failed);
    if (b->failed)
        return 0;
    memcpy(b->strings + b->nstr, s, len);
    b->nstr += len;
    return at;
}

static void add_sym(struct build *b, uintptr_t addr, uintptr_t size, const char *name)
{
    b->syms = grow(b->syms, &b->capsyms, b->nsyms + 1, sizeof *b->syms, &b->failed);
    if (b->failed)
        return;
    b->syms[b->nsyms].addr = addr;
    b->syms[b->nsyms].size = size;
    b->syms[b->nsyms].name = add_string(b, name);
    b->nsyms++;
}

/* The section to read: .symtab when present (not stripped), else .dynsym. */
static Elf_Scn *symbol_section(Elf *elf, GElf_Shdr *out)
{
    Elf_Scn *scn = NULL, *dyn = NULL;
    GElf_Shdr sh, dynsh;

    while ((scn = elf_nextscn(elf, scn))) {
        if (!gelf_getshdr(scn, &sh))
            continue;
        if (sh.sh_type == SHT_SYMTAB) {
            *out = sh;
            return scn;
        }
        if (sh.sh_type == SHT_DYNSYM) {
            dyn = scn;
            dynsh = sh;
        }
    }
    if (dyn)
        *out = dynsh;
    return dyn;
}

static void read_symbols(struct build *b, Elf *elf, uintptr_t bias)
{
    GElf_Shdr sh;
    Elf_Scn *scn = symbol_section(elf, &sh);
    Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
    size_t n = data && sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
    char plain[512];

    for (size_t i = 0; i < n && !b->failed; i++) {
        GElf_Sym s;
        const char *name;
        int type;

        if (!gelf_getsym(data, (int)i, &s))
            continue;
        type = GELF_ST_TYPE(s.st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF || s.st_value == 0)
            continue;
        name = elf_strptr(elf, sh.sh_link, s.st_name);
        if (name && *name)
            add_sym(b, bias + s.st_value, s.st_size, vms__demangle(name, plain, sizeof plain));
    }
}

/* Returns how many symbols the file gave. */
static size_t read_file_symbols(struct build *b, const char *path, uintptr_t bias)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t before = b->nsyms;
    Elf *elf;

    if (fd < 0)
        return 0;
    elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (elf) {
        read_symbols(b, elf, bias);
        elf_end(elf);
    }
    close(fd);
    return b->nsyms - before;
}

/*
 * The module's separate debug file, found by its build id the way gdb does
 * (/usr/lib/debug/.build-id/xx/yyyy.debug), when one is installed: shared
 * libraries ship stripped to .dynsym, which names none of their internal
 * functions, and the debug file has the full .symtab.
 */
static bool debug_file(const struct dl_phdr_info *info, char *path, size_t cap)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;

        if (ph->p_type != PT_NOTE)
            continue;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
            const char *name = p + sizeof *n;
            const unsigned char *id = (const unsigned char *)name + ((n->n_namesz + 3) & ~3u);
            size_t len;

            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
                n->n_descsz >= 2 && 2 * n->n_descsz + 64 < cap) {
                len = (size_t)snprintf(path, cap, "/usr/lib/debug/.build-id/%02x/", id[0]);
                for (size_t k = 1; k < n->n_descsz; k++)
                    len += (size_t)snprintf(path + len, cap - len, "%02x", id[k]);
                snprintf(path + len, cap - len, ".debug");
                return access(path, R_OK) == 0;
            }
            p = (const char *)id + ((n->n_descsz + 3) & ~3u);
        }
    }
    return false;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');

    return s ? s + 1 : path;
}

static int add_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct build *b = arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    char exe[4096], dbg[4096];
    const char *path = info->dlpi_name;
    struct module *m;

    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        if (info->dlpi_addr + ph->p_vaddr < lo)
            lo = info->dlpi_addr + ph->p_vaddr;
        if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
            hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    }
    if (lo >= hi)
        return 0;
    if (!path || !*path) { /* the main program */
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = 0;
        path = exe;
    }
    b->mods = grow(b->mods, &b->capmods, b->nmods + 1, sizeof *b->mods, &b->failed);
    if (b->failed)
        return 1;
    m = &b->mods[b->nmods++];
    m->lo = lo;
    m->hi = hi;
    m->bias = info->dlpi_addr;
    m->name = add_string(b, *path ? base_name(path) : "?");
    /* The vDSO has no file: its functions stay unnamed. */
    if (path[0] == '/' && !(debug_file(info, dbg, sizeof dbg) && read_file_symbols(b, dbg, info->dlpi_addr)))
        read_file_symbols(b, path, info->dlpi_addr);
    return b->failed;
}

static int by_address(const void *x, const void *y)
{
    const struct sym *a = x, *b = y;

    if (a->addr != b->addr)
        return (a->addr > b->addr) - (a->addr < b->addr);
    return (a->size < b->size) - (a->size > b->size); /* the largest alias first */
}

/* Sorts, drops aliases, and gives sizeless symbols the gap to the next one. */
static void finish_symbols(struct build *b)
{
    size_t n = 0;

    qsort(b->syms, b->nsyms, sizeof *b->syms, by_address);
    for (size_t i = 0; i < b->nsyms; i++)
        if (n == 0 || b->syms[i].addr != b->syms[n - 1].addr)
            b->syms[n++] = b->syms[i];
    for (size_t i = 0; i + 1 < n; i++)
        if (b->syms[i].size == 0)
            b->syms[i].size = b->syms[i + 1].addr - b->syms[i].addr;
    b->nsyms = n;
}

/* Copies the built table into one fresh mapping. */
static struct table *publishable(const struct build *b)
{
    size_t syms = b->nsyms * sizeof(struct sym), mods = b->nmods * sizeof(struct module);
    size_t bytes = sizeof(struct table) + syms + mods + b->nstr;
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct table *t;

    if (p == MAP_FAILED)
        return NULL;
    t = (struct table *)p;
    t->bytes = bytes;
    t->nsyms = (uint32_t)b->nsyms;
    t->nmods = (uint32_t)b->nmods;
    t->syms = (struct sym *)(p + sizeof *t);
    t->mods = (struct module *)(p + sizeof *t + syms);
    t->strings = p + sizeof *t + syms + mods;
    memcpy(t->syms, b->syms, syms);
    memcpy(t->mods, b->mods, mods);
    memcpy(t->strings, b->strings, b->nstr);
    mprotect(p, bytes, PROT_READ);
    return t;
}

static int count_changes(struct dl_phdr_info *info, size_t size, void *arg)
{
    unsigned long long *v = arg;

    (void)size;
    v[0] = info->dlpi_adds;
    v[1] = info->dlpi_subs;
    return 1;
}

int vms__symbols_snapshot(void)
{
    unsigned long long changes[2] = {0, 0};
    struct build b = {0};
    struct table *t = NULL;
    int rc = 0;

    pthread_mutex_lock(&snapshot_lock);
    dl_iterate_phdr(count_changes, changes);
    if (changes[0] == seen_adds && changes[1] == seen_subs)
        goto out;
    if (elf_version(EV_CURRENT) == EV_NONE) {
        rc = -ENOSYS;
        goto out;
    }
    dl_iterate_phdr(add_module, &b);
    if (!b.failed) {
        finish_symbols(&b);
        t = publishable(&b);
    }
    if (!t) {
        rc = -ENOMEM;
        goto out;
    }
    atomic_store_explicit(&current, t, memory_order_release);
    seen_adds = changes[0];
    seen_subs = changes[1];
out:
    pthread_mutex_unlock(&snapshot_lock);
    free(b.syms);
    free(b.mods);
    free(b.strings);
    return rc;
}

/* The last symbol at or below addr, or -1. */
static long find_sym(const struct table *t, uintptr_t addr)
{
    long lo = 0, hi = (long)t->nsyms - 1, best = -1;

    while (lo <= hi) {
        long mid = lo + (hi - lo) / 2;
        if (t->syms[mid].addr <= addr) {
            best = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return best;
}

void vms__symbols_lookup(uintptr_t addr, struct vms_symres *r)
{
    const struct table *t = atomic_load_explicit(&current, memory_order_acquire);
    long i;

    memset(r, 0, sizeof *r);
    if (!t)
        return;
    for (uint32_t m = 0; m < t->nmods; m++)
        if (addr >= t->mods[m].lo && addr < t->mods[m].hi) {
            r->module = t->strings + t->mods[m].name;
            r->modoff = addr - t->mods[m].bias;
            break;
        }
    i = find_sym(t, addr);
    if (i >= 0 && addr - t->syms[i].addr < t->syms[i].size) {
        r->name = t->strings + t->syms[i].name;
        r->off = addr - t->syms[i].addr;
        r->size = t->syms[i].size;
    }
}
