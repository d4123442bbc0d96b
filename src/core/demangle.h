/*
 * C++ names for reports, traces and checkstack, without a C++ dependency:
 * libstdc++'s __cxa_demangle is found at run time (already loaded in a C++
 * program, else dlopen'd when present).  It allocates: call it only outside
 * signal context (when symbols are snapshotted, or in the tools).
 */
#ifndef VMS_DEMANGLE_H
#define VMS_DEMANGLE_H

#include <stddef.h>

/*
 * The demangled form of name in buf (cut to cap - 1 bytes), or name itself
 * when it is not a mangled C++ name or no demangler is available.
 */
const char *vms__demangle(const char *name, char *buf, size_t cap);

#endif
