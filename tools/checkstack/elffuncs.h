/*
 * The functions of an ELF file: names, addresses, sizes and machine code,
 * from its symbol table.  Reusable by anything that needs per-function
 * facts about a binary (checkstack, the tracer).
 */
#ifndef VMS_ELFFUNCS_H
#define VMS_ELFFUNCS_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

struct elf_func {
    const char *name;    /* points into the ELF data, valid until elf_funcs_close */
    uint64_t addr;       /* link-time address (as in the symbol table and the CFI) */
    uint64_t size;
    const uint8_t *code; /* the function's bytes, or NULL if the file does not hold them */
};

struct elf_funcs {
    int fd;
    Elf *elf;
    const char *symtab;  /* ".symtab", or ".dynsym" for a stripped file */
    struct elf_func *v;  /* by address; one entry per address (aliases merged) */
    size_t n;
};

/*
 * Opens path and lists its defined functions (STT_FUNC and STT_GNU_IFUNC
 * with a size).  Returns 0, or -1 with err set to a reason that fits after
 * "PATH: " (unreadable, not an ELF file, no function symbols).
 */
int elf_funcs_open(struct elf_funcs *f, const char *path, char *err, size_t errlen);

void elf_funcs_close(struct elf_funcs *f);

#endif
