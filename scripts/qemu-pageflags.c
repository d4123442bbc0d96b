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
 *
 * qemu 7.2 also passes mincore to its host as it is: the host answers one
 * byte per 4 KiB page of its own, so the vector gets 4 or 16 bytes for
 * each guest page, written past its end.  mincore here asks the host in
 * chunks and gives one byte per guest page: resident when any of its
 * 4 KiB parts is.
 */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define HOST_PAGE 4096 /* qemu's host: x86-64 */

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

int mincore(void *addr, size_t len, unsigned char *vec)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), per = pg / HOST_PAGE, npages = (len + pg - 1) / pg;
    unsigned char host[256];

    if (per <= 1)
        return (int)syscall(SYS_mincore, addr, len, vec);
    for (size_t i = 0; i < npages; i += sizeof host / per) {
        size_t n = npages - i < sizeof host / per ? npages - i : sizeof host / per;
        if (syscall(SYS_mincore, (char *)addr + i * pg, n * pg, host))
            return -1;
        for (size_t j = 0; j < n; j++) {
            vec[i + j] = 0;
            for (size_t k = 0; k < per; k++)
                vec[i + j] |= host[j * per + k] & 1;
        }
    }
    return 0;
}
