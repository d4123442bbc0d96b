/* SPDX-License-Identifier: MIT */
/*
 * libunwind's pipe, refused.  At its initialisation libunwind opens a pipe
 * (it checks an address by writing a byte from it into the pipe), which
 * vmstack's unwinding never uses (it reads memory its own way: unwind.c)
 * and which the program would find open: two descriptors it did not make.
 * So libunwind's pipe2 fails with EMFILE: the slot of libunwind's global
 * offset table through which it calls pipe2 points at refuse_pipe2 below
 * from vmstack's first use of libunwind on (libunwind may open its pipe
 * later, at its first check of an address, in a signal handler), and
 * libunwind checks addresses without it.  Only libunwind's calls go
 * through that slot; nothing of libc's is replaced for the program, as a
 * pipe2 exported by the library would be, in every program linked with
 * it.  A libunwind linked into the program (cc
 * -static) calls pipe2 directly: its pipe is then made.
 */
#include "fault/fault.h"

#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int refuse_pipe2(int fds[2], int flags)
{
    (void)fds, (void)flags;
    errno = EMFILE;
    return -1;
}

/* What the search of the loaded objects looks for, and finds. */
struct search {
    uintptr_t in;                   /* an address inside libunwind */
    void **slot;                    /* its slot for pipe2 */
    uintptr_t relro_lo, relro_hi;   /* its part made read-only after relocation */
};

/* glibc relocates the dynamic section's addresses in place; other loaders may not. */
static uintptr_t dyn_ptr(uintptr_t base, ElfW(Addr) p)
{
    return p < base ? base + p : p;
}

/* The slot of the first relocation in [r, r + bytes) against pipe2. */
static void **slot_in(uintptr_t base, const ElfW(Rela) *r, size_t bytes, const ElfW(Sym) *syms, const char *strs)
{
    for (size_t i = 0; r && i < bytes / sizeof *r; i++) {
        size_t s = ELF64_R_SYM(r[i].r_info); /* x86-64 and aarch64 */
        if (s && !strcmp(strs + syms[s].st_name, "pipe2"))
            return (void **)(base + r[i].r_offset);
    }
    return NULL;
}

/* pipe2's slot among the object's lazy (DT_JMPREL) or load-time (DT_RELA, -fno-plt) relocations. */
static void **pipe2_slot(uintptr_t base, const ElfW(Dyn) *d)
{
    const ElfW(Rela) *plt = NULL, *rela = NULL;
    const ElfW(Sym) *syms = NULL;
    const char *strs = NULL;
    size_t plt_bytes = 0, rela_bytes = 0;
    void **slot;

    for (; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_JMPREL: plt = (const ElfW(Rela) *)dyn_ptr(base, d->d_un.d_ptr); break;
        case DT_PLTRELSZ: plt_bytes = d->d_un.d_val; break;
        case DT_RELA: rela = (const ElfW(Rela) *)dyn_ptr(base, d->d_un.d_ptr); break;
        case DT_RELASZ: rela_bytes = d->d_un.d_val; break;
        case DT_SYMTAB: syms = (const ElfW(Sym) *)dyn_ptr(base, d->d_un.d_ptr); break;
        case DT_STRTAB: strs = (const char *)dyn_ptr(base, d->d_un.d_ptr); break;
        default: break;
        }
    }
    if (!syms || !strs)
        return NULL;
    slot = slot_in(base, plt, plt_bytes, syms, strs);
    return slot ? slot : slot_in(base, rela, rela_bytes, syms, strs);
}

static int find_libunwind(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct search *s = arg;
    uintptr_t lo, hi;

    (void)size;
    if (!vms__module_range(info, &lo, &hi) || s->in < lo || s->in >= hi)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uintptr_t at = info->dlpi_addr + p->p_vaddr;
        if (p->p_type == PT_DYNAMIC) {
            s->slot = pipe2_slot(info->dlpi_addr, (const ElfW(Dyn) *)at);
        } else if (p->p_type == PT_GNU_RELRO) {
            s->relro_lo = at;
            s->relro_hi = at + p->p_memsz;
        }
    }
    return 1;
}

/* Points the slot at fn, through a read-only page if the slot is in one (bind-now). */
static void set_slot(const struct search *s, void *fn)
{
    uintptr_t page = (uintptr_t)s->slot & ~(uintptr_t)(vms__g.page - 1);
    bool ro = (uintptr_t)s->slot >= s->relro_lo && (uintptr_t)s->slot < s->relro_hi;

    if (ro && mprotect((void *)page, vms__g.page, PROT_READ | PROT_WRITE))
        return;
    __atomic_store_n(s->slot, fn, __ATOMIC_SEQ_CST);
    if (ro)
        mprotect((void *)page, vms__g.page, PROT_READ);
}

void vms__unwind_init_pipeless(void (*init)(void *), void *arg)
{
    struct search s = { .in = (uintptr_t)unw_local_addr_space };

    /* The local address space is a static of libunwind's, wherever the program's copy of the pointer lives. */
    if (s.in)
        dl_iterate_phdr(find_libunwind, &s);
    if (s.slot)
        set_slot(&s, (void *)refuse_pipe2);
    init(arg);
}
