/* SPDX-License-Identifier: MIT */
/*
 * elfutils (libdw, libelf) for the tracer, opened on first use.
 *
 * Only the tracer needs them, and only at a task's end or at exit; linked
 * in, they (with liblzma, libz and libbz2) were loaded at the start of
 * every program on vmstack, traced or not.  DW(fn) is libdw's fn, called
 * the same way; vms__dw_open() says whether they are there, and must be
 * true before any DW() call.  Not from a signal handler (dlopen).
 */
#ifndef VMS_TRACE_DW_H
#define VMS_TRACE_DW_H

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdbool.h>

#define VMS__DW_FUNCTIONS(X)                                                                                   \
    X(dwfl_begin) X(dwfl_end) X(dwfl_report_module) X(dwfl_report_begin_add) X(dwfl_report_end)              \
    X(dwfl_linux_proc_find_elf) X(dwfl_build_id_find_debuginfo) X(dwfl_addrmodule) X(dwfl_module_info)           \
    X(dwfl_module_addrinfo) X(dwfl_module_addrname) X(dwfl_module_getelf) X(dwfl_module_getsrc)                   \
    X(dwfl_lineinfo) X(dwfl_module_eh_cfi) X(dwfl_module_dwarf_cfi) X(dwarf_cfi_addrframe) X(dwarf_frame_cfa)     \
    X(dwarf_frame_register) X(dwarf_frame_info) X(elf_getshdrstrndx) X(elf_nextscn) X(elf_strptr) X(gelf_getshdr)

struct vms__dw {
#define VMS__DW_FIELD(fn) __typeof__(fn) *fn;
    VMS__DW_FUNCTIONS(VMS__DW_FIELD)
#undef VMS__DW_FIELD
};

extern struct vms__dw vms__dw;

/* True when libdw.so.1 is loaded with every function above; once, then remembered. */
bool vms__dw_open(void);

#define DW(fn) (vms__dw.fn)

/*
 * dwfl_linux_proc_report from the loader's list of modules rather than
 * /proc/self/maps, whose parsing (sscanf) cost more than all the rest of
 * a short program's trace.  Modules are named by their files' paths, as
 * dwfl_linux_proc_find_elf expects.  0, or -1 when libdwfl refused one.
 */
int vms__dw_report_loaded(Dwfl *d);

#endif
