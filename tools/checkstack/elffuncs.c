/*
 * Function symbols of an ELF file via libelf.  The full symbol table
 * (.symtab) is preferred; a stripped file still has the dynamic one
 * (.dynsym) with its exported functions.
 */
#include "elffuncs.h"

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

int elf_funcs_open(struct elf_funcs *f, const char *path, char *err, size_t errlen)
{
    struct stat st;
    Elf_Scn *scn;

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
    if (gelf_getclass(f->elf) != ELFCLASS64 || elf64_getehdr(f->elf)->e_machine != EM_X86_64)
        return fail(f, err, errlen, "not an x86-64 ELF file (checkstack decodes x86-64 code only)");
    f->symtab = ".symtab";
    scn = find_section(f->elf, SHT_SYMTAB);
    if (!scn || collect(f, scn) || !f->n) {
        free(f->v);
        f->v = NULL;
        f->symtab = ".dynsym";
        scn = find_section(f->elf, SHT_DYNSYM);
        if (scn && collect(f, scn))
            return fail(f, err, errlen, "cannot read its symbol table");
    }
    if (!f->n)
        return fail(f, err, errlen, "has no function symbols (stripped): checkstack needs its .symtab, "
                                    "or a .dynsym with exported functions");
    return 0;
}

void elf_funcs_close(struct elf_funcs *f)
{
    free(f->v);
    if (f->elf)
        elf_end(f->elf);
    if (f->fd >= 0)
        close(f->fd);
    memset(f, 0, sizeof *f);
    f->fd = -1;
}
