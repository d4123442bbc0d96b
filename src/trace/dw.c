/* SPDX-License-Identifier: MIT */
/*
 * elfutils, opened when the tracer first needs it (see dw.h).  libdw's
 * handle also finds libelf's functions: dlsym searches a library's
 * dependencies too.
 */
#include "trace/dw.h"
#include "fault/fault.h"

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
    uintptr_t lo, hi;

    (void)size;
    if (!vms__module_range(info, &lo, &hi))
        return 0;
    if (!name || !*name) { /* the main program */
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        name = exe;
    }
    /* The vDSO has no file to read. */
    if (name[0] != '/')
        return 0;
    return DW(dwfl_report_module)(d, name, lo, hi) ? 0 : -1;
}

int vms__dw_report_loaded(Dwfl *d)
{
    int rc;

    if (vms__modules_begin())
        return -1;
    rc = dl_iterate_phdr(report_one, d);
    vms__unwind_end();
    return rc;
}
