/* SPDX-License-Identifier: MIT */
/*
 * Preloaded into test programs run under qemu-aarch64 -p 16384 or -p 65536
 * (scripts/test-aarch64.sh), never shipped.  qemu 7.2 tracks guest pages
 * in 4 KiB units whatever -p says, and its ELF loader marks a module's
 * writable segment valid only up to the segment's end.  The dynamic
 * loader, told the page is 16 or 64 KiB, allocates the rest of its last
 * page (link map names, the main thread's TLS) and uses it: plain loads
 * and stores work, but qemu answers EFAULT to a system call given such an
 * address (sigaltstack with a TLS argument) and raises SIGSEGV for an SVE
 * load from it (glibc's memcpy with -cpu max).  mprotect with the
 * protection the page has makes qemu mark the whole page valid.
 */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

static int mark_valid(struct dl_phdr_info *info, size_t size, void *arg)
{
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);

    (void)size;
    (void)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;

        /* The last page of a writable segment is past RELRO, which ld.so rounds down to whole pages. */
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W) && end % pg)
            mprotect((void *)(end & ~(pg - 1)), pg, PROT_READ | PROT_WRITE);
    }
    return 0;
}

__attribute__((constructor)) static void qemu_pageflags(void)
{
    dl_iterate_phdr(mark_valid, NULL);
}
