/*
 * elfutils, opened when the tracer first needs it (see dw.h).  libdw's
 * handle also finds libelf's functions: dlsym searches a library's
 * dependencies too.
 */
#include "trace/dw.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <unistd.h>

struct vms__dw vms__dw;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool ready;

static void load(void)
{
    void *h = dlopen("libdw.so.1", RTLD_LAZY | RTLD_LOCAL);
    bool all = h != NULL;

    if (!h)
        return;
#define VMS__DW_LOAD(fn) all = all && (vms__dw.fn = (__typeof__(fn) *)dlsym(h, #fn)) != NULL;
    VMS__DW_FUNCTIONS(VMS__DW_LOAD)
#undef VMS__DW_LOAD
    ready = all;
}

bool vms__dw_open(void)
{
    pthread_once(&once, load);
    return ready;
}

static int report_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    Dwfl *d = arg;
    const char *name = info->dlpi_name;
    char exe[PATH_MAX];
    uintptr_t lo = UINTPTR_MAX, hi = 0;

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
    if (!name || !*name) { /* the main program */
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        name = exe;
    }
    /* The vDSO has no file to read. */
    if (name[0] != '/' || lo >= hi)
        return 0;
    return DW(dwfl_report_module)(d, name, lo, hi) ? 0 : -1;
}

int vms__dw_report_loaded(Dwfl *d)
{
    return dl_iterate_phdr(report_one, d);
}
