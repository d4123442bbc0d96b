/* SPDX-License-Identifier: MIT */
/*
 * The functions of an ELF file: names, addresses, sizes and machine code.
 * Functions are the entries of its call-frame information (every FDE of
 * .eh_frame, from .eh_frame_hdr's table), named from .symtab, .dynsym or
 * the separate debug file (build-id or .gnu_debuglink, libdwfl's standard
 * lookup), or by address when nothing names them; a file without
 * .eh_frame_hdr falls back to its symbol table's functions.  Reusable by
 * anything that needs per-function facts about a binary.
 */
#ifndef VMS_ELFFUNCS_H
#define VMS_ELFFUNCS_H

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_func {
    const char *name;    /* valid until elf_funcs_close; demangled; "0x..." when unnamed */
    uint64_t addr;       /* link-time address (as in the symbol table and the CFI) */
    uint64_t size;
    const uint8_t *code; /* the function's bytes, or NULL if the file does not hold them */
};

struct elf_funcs {
    int fd;
    Elf *elf;
    const char *symtab;  /* where names came from: ".symtab", ".dynsym", or the debug file's path */
    bool from_fdes;      /* functions are the FDEs (else the symbol table's functions) */
    size_t unnamed;      /* functions shown by address */
    struct elf_func *v;  /* by address; one entry per address (aliases merged) */
    size_t n;
    bool owned;          /* names are malloc'd copies */
    Dwfl *dwfl;          /* names and lines; NULL when libdwfl could not take the file */
    Dwfl_Module *mod;
};

/*
 * Opens path and lists its defined functions (STT_FUNC and STT_GNU_IFUNC
 * with a size).  Returns 0, or -1 with err set to a reason that fits after
 * "PATH: " (unreadable, not an ELF file, no function symbols).
 */
int elf_funcs_open(struct elf_funcs *f, const char *path, char *err, size_t errlen);

void elf_funcs_close(struct elf_funcs *f);

/* "file.c:123" of the function at addr, when DWARF (also in the debug file) has it; false if not. */
bool elf_funcs_line(const struct elf_funcs *f, uint64_t addr, char *buf, size_t n);

#endif
