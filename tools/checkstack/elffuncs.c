/* SPDX-License-Identifier: MIT */
/*
 * The functions of an ELF file (see elffuncs.h): the FDEs listed in
 * .eh_frame_hdr, named from the symbol tables (.symtab preferred, a
 * stripped file still has .dynsym with its exported functions) and then
 * through libdwfl, whose standard lookup finds the separate debug file
 * (/usr/lib/debug/.build-id/..., .gnu_debuglink) and its .symtab.
 */
#include "elffuncs.h"
#include "core/demangle.h"

#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static Elf_Scn *find_section(Elf *elf, Elf64_Word type)
{
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;

    while ((scn = elf_nextscn(elf, scn)))
        if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
            return scn;
    return NULL;
}

/* The bytes at [addr, addr + size) of an allocated section with file contents. */
static const uint8_t *code_at(Elf *elf, uint64_t addr, uint64_t size)
{
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;

    while ((scn = elf_nextscn(elf, scn))) {
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_ALLOC))
            continue;
        if (addr < sh.sh_addr || addr + size > sh.sh_addr + sh.sh_size)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d || !d->d_buf || d->d_size != sh.sh_size)
            return NULL;
        return (const uint8_t *)d->d_buf + (addr - sh.sh_addr);
    }
    return NULL;
}

/*
 * Among aliases of one address, name the function by its most public
 * symbol (global, then weak, then local), then by fewer leading
 * underscores: "malloc" rather than "__libc_malloc".
 */
static int name_rank(unsigned char bind, const char *name)
{
    int r = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 100 : 200;

    while (*name++ == '_')
        r++;
    return r;
}

struct cand {
    struct elf_func fn;
    int rank;
};

static int cmp_cand(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;

    if (x->fn.addr != y->fn.addr)
        return x->fn.addr < y->fn.addr ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static int collect(struct elf_funcs *f, Elf_Scn *scn)
{
    GElf_Shdr sh;
    Elf_Data *d = elf_getdata(scn, NULL);
    struct cand *c;
    size_t n = 0, count;

    if (!gelf_getshdr(scn, &sh) || !d || !sh.sh_entsize)
        return -1;
    count = sh.sh_size / sh.sh_entsize;
    c = calloc(count ? count : 1, sizeof *c);
    if (!c)
        return -1;
    for (size_t i = 0; i < count; i++) {
        GElf_Sym s;
        const char *name;
        int type;

        if (!gelf_getsym(d, (int)i, &s))
            continue;
        type = GELF_ST_TYPE(s.st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || !s.st_size || s.st_shndx == SHN_UNDEF)
            continue;
        name = elf_strptr(f->elf, sh.sh_link, s.st_name);
        if (!name || !*name)
            continue;
        c[n].fn = (struct elf_func){ name, s.st_value, s.st_size, NULL };
        c[n++].rank = name_rank(GELF_ST_BIND(s.st_info), name);
    }
    qsort(c, n, sizeof *c, cmp_cand);
    f->v = calloc(n ? n : 1, sizeof *f->v);
    if (!f->v) {
        free(c);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (f->n && f->v[f->n - 1].addr == c[i].fn.addr)
            continue; /* an alias; the best name came first */
        f->v[f->n] = c[i].fn;
        f->v[f->n].code = code_at(f->elf, c[i].fn.addr, c[i].fn.size);
        f->n++;
    }
    free(c);
    return 0;
}

static int fail(struct elf_funcs *f, char *err, size_t errlen, const char *msg)
{
    snprintf(err, errlen, "%s", msg);
    elf_funcs_close(f);
    return -1;
}

/* ---- every FDE, from .eh_frame_hdr ---- */

static Elf_Scn *section_named(Elf *elf, const char *want, GElf_Shdr *sh)
{
    Elf_Scn *scn = NULL;
    size_t shstrndx;

    if (elf_getshdrstrndx(elf, &shstrndx))
        return NULL;
    while ((scn = elf_nextscn(elf, scn))) {
        const char *name = gelf_getshdr(scn, sh) ? elf_strptr(elf, shstrndx, sh->sh_name) : NULL;
        if (name && !strcmp(name, want))
            return scn;
    }
    return NULL;
}

/* One value of a DWARF pointer encoding (the forms .eh_frame_hdr uses); false if unknown. */
static bool read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t here, uint64_t data,
                         uint64_t *out)
{
    uint64_t v = 0, base = (enc & 0x70) == DW_EH_PE_pcrel ? here : (enc & 0x70) == DW_EH_PE_datarel ? data : 0;
    size_t len;

    switch (enc & 0x0f) {
    case DW_EH_PE_udata4: case DW_EH_PE_sdata4: len = 4; break;
    case DW_EH_PE_absptr: case DW_EH_PE_udata8: case DW_EH_PE_sdata8: len = 8; break;
    default: return false;
    }
    if ((enc & 0x70) && !base)
        return false;
    if ((size_t)(end - *p) < len)
        return false;
    memcpy(&v, *p, len);
    if ((enc & 0x0f) == DW_EH_PE_sdata4)
        v = (uint64_t)(int64_t)(int32_t)(uint32_t)v;
    *p += len;
    *out = base + v;
    return true;
}

/* The start addresses of all FDEs, sorted (the search table of .eh_frame_hdr); NULL if there is none. */
static uint64_t *fde_starts(Elf *elf, size_t *n)
{
    GElf_Shdr sh;
    Elf_Scn *scn = section_named(elf, ".eh_frame_hdr", &sh);
    Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
    const uint8_t *p, *end;
    uint64_t ehptr, count, *v;

    if (!d || !d->d_buf || d->d_size < 4 || ((const uint8_t *)d->d_buf)[0] != 1)
        return NULL;
    p = d->d_buf;
    end = p + d->d_size;
    {
        uint8_t ptr_enc = p[1], count_enc = p[2], table_enc = p[3];
        p += 4;
        if (!read_encoded(&p, end, ptr_enc, sh.sh_addr + 4, sh.sh_addr, &ehptr) ||
            !read_encoded(&p, end, count_enc, sh.sh_addr + (uint64_t)(p - (const uint8_t *)d->d_buf), sh.sh_addr,
                          &count) ||
            table_enc != (DW_EH_PE_datarel | DW_EH_PE_sdata4) || count == 0 || count > (uint64_t)(end - p) / 8)
            return NULL;
    }
    if (!(v = malloc(count * sizeof *v)))
        return NULL;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t fde;
        if (!read_encoded(&p, end, DW_EH_PE_datarel | DW_EH_PE_sdata4, 0, sh.sh_addr, &v[i]) ||
            !read_encoded(&p, end, DW_EH_PE_datarel | DW_EH_PE_sdata4, 0, sh.sh_addr, &fde)) {
            free(v);
            return NULL;
        }
    }
    *n = (size_t)count;
    return v;
}

/* ---- names through libdwfl: the symbol tables, and the separate debug file's ---- */

static void open_dwfl(struct elf_funcs *f, const char *path)
{
    static char *debuginfo_path;
    static const Dwfl_Callbacks cb = {
        .find_elf = dwfl_build_id_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .section_address = dwfl_offline_section_address,
        .debuginfo_path = &debuginfo_path,
    };
    const char *slash = strrchr(path, '/');

    if (!(f->dwfl = dwfl_begin(&cb)))
        return;
    /* At the file's own addresses (base 0), as .eh_frame_hdr gives them. */
    f->mod = dwfl_report_elf(f->dwfl, slash ? slash + 1 : path, path, -1, 0, false);
    if (!f->mod || dwfl_report_end(f->dwfl, NULL, NULL)) {
        dwfl_end(f->dwfl);
        f->dwfl = NULL;
        f->mod = NULL;
    }
}

/* The function at addr from the symbol list sym (sorted by address), or NULL. */
static const struct elf_func *sym_at(const struct elf_func *sym, size_t n, uint64_t addr)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (sym[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && sym[lo].addr == addr ? &sym[lo] : NULL;
}

/*
 * The function list from the FDE starts: named by the symbol list, else by
 * libdwfl (the debug file's .symtab), else by address; sized by its symbol,
 * else up to the next FDE.
 */
static int from_fdes(struct elf_funcs *f, const uint64_t *start, size_t n)
{
    struct elf_func *sym = f->v, *v = calloc(n, sizeof *v);
    size_t nsym = f->n, k = 0;
    bool from_debug = false;

    if (!v)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const struct elf_func *s;
        const char *name = NULL;
        uint64_t size = 0, next = i + 1 < n ? start[i + 1] : 0;
        GElf_Off off = 0;
        GElf_Sym gs;

        if (i > 0 && start[i] == start[i - 1])
            continue;
        if ((s = sym_at(sym, nsym, start[i]))) {
            name = s->name;
            size = s->size;
        } else if (f->mod && (name = dwfl_module_addrinfo(f->mod, start[i], &off, &gs, NULL, NULL, NULL)) &&
                   off == 0) {
            size = gs.st_size;
            from_debug = true;
        } else {
            name = NULL;
        }
        if (!size)
            size = next > start[i] ? next - start[i] : 16;
        v[k] = (struct elf_func){name, start[i], size, code_at(f->elf, start[i], size)};
        if (!v[k].code && next > start[i] && size > next - start[i])
            v[k].code = code_at(f->elf, start[i], v[k].size = next - start[i]);
        f->unnamed += !name;
        k++;
    }
    free(sym);
    f->v = v;
    f->n = k;
    f->from_fdes = true;
    if (from_debug) {
        const char *debugfile = NULL;
        dwfl_module_info(f->mod, NULL, NULL, NULL, NULL, NULL, NULL, &debugfile);
        if (debugfile)
            f->symtab = debugfile;
    }
    return 0;
}

/* Every name its own copy, demangled; unnamed functions by address.  Out of memory: -1, names left NULL. */
static int own_names(struct elf_funcs *f)
{
    bool ok = true;

    f->owned = true;
    for (size_t i = 0; i < f->n; i++) {
        char buf[1024];
        const char *name = f->v[i].name;

        if (name)
            name = vms__demangle(name, buf, sizeof buf);
        else
            snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)f->v[i].addr), name = buf;
        f->v[i].name = ok ? strdup(name) : NULL;
        ok = ok && f->v[i].name;
    }
    return ok ? 0 : -1;
}

bool elf_funcs_line(const struct elf_funcs *f, uint64_t addr, char *buf, size_t n)
{
    Dwfl_Line *line = f->mod ? dwfl_module_getsrc(f->mod, addr) : NULL;
    const char *file, *slash;
    int lineno = 0;

    if (!line || !(file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL)) || lineno <= 0)
        return false;
    slash = strrchr(file, '/');
    snprintf(buf, n, "%s:%d", slash ? slash + 1 : file, lineno);
    return true;
}

int elf_funcs_open(struct elf_funcs *f, const char *path, char *err, size_t errlen)
{
    struct stat st;
    Elf_Scn *scn;
    uint64_t *starts;
    size_t nstarts = 0;
    int rc;

    memset(f, 0, sizeof *f);
    elf_version(EV_CURRENT);
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below. */
    f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (f->fd < 0)
        return fail(f, err, errlen, strerror(errno));
    if (fstat(f->fd, &st) || !S_ISREG(st.st_mode))
        return fail(f, err, errlen, "not a regular file");
    f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
    if (!f->elf || elf_kind(f->elf) != ELF_K_ELF)
        return fail(f, err, errlen, "not an ELF file");
    /* Before the symbols: a 32-bit file would read as one without them ("stripped"). */
    if (gelf_getclass(f->elf) != ELFCLASS64 ||
        (elf64_getehdr(f->elf)->e_machine != EM_X86_64 && elf64_getehdr(f->elf)->e_machine != EM_AARCH64))
        return fail(f, err, errlen, "not an x86-64 or aarch64 ELF file (checkstack decodes their code only)");
    f->symtab = ".symtab";
    scn = find_section(f->elf, SHT_SYMTAB);
    if (!scn || collect(f, scn) || !f->n) {
        free(f->v);
        f->v = NULL;
        f->symtab = ".dynsym";
        scn = find_section(f->elf, SHT_DYNSYM);
        if (scn && collect(f, scn))
            return fail(f, err, errlen, "cannot read its symbol table");
        if (!scn)
            f->symtab = "no symbol table";
    }
    open_dwfl(f, path);
    if ((starts = fde_starts(f->elf, &nstarts))) {
        rc = from_fdes(f, starts, nstarts);
        free(starts);
        if (rc)
            return fail(f, err, errlen, "out of memory");
    }
    if (!f->n)
        return fail(f, err, errlen, "has no function symbols and no .eh_frame_hdr (stripped): checkstack needs "
                                    "its call-frame information or its .symtab");
    if (own_names(f))
        return fail(f, err, errlen, "out of memory");
    return 0;
}

void elf_funcs_close(struct elf_funcs *f)
{
    /* Names are copies once elf_funcs_open succeeded; before, they point into the file. */
    for (size_t i = 0; f->owned && i < f->n; i++)
        free((char *)f->v[i].name);
    free(f->v);
    if (f->dwfl)
        dwfl_end(f->dwfl);
    if (f->elf)
        elf_end(f->elf);
    if (f->fd >= 0)
        close(f->fd);
    memset(f, 0, sizeof *f);
    f->fd = -1;
}
