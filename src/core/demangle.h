/* SPDX-License-Identifier: MIT */
/*
 * C++ and Rust names for reports, traces and checkstack, without a C++ dependency:
 * libstdc++'s __cxa_demangle is found at run time (already loaded in a C++
 * program, else dlopen'd when present).  It allocates with malloc.
 */
#ifndef VMS_DEMANGLE_H
#define VMS_DEMANGLE_H

#include <stddef.h>

/*
 * The demangled form of name in buf (cut to cap - 1 bytes), or name itself
 * when it is not a mangled C++ name or no demangler is available.  Not
 * from a signal handler.
 */
const char *vms__demangle(const char *name, char *buf, size_t cap);

/*
 * Looks for the demangler among the loaded modules only (no dlopen): a
 * program with no C++ in it has no C++ names.  Outside signal context;
 * again after dlopen.
 */
void vms__demangle_find_loaded(void);

/*
 * vms__demangle with the demangler vms__demangle_find_loaded found, for a
 * signal handler: no lookup, but it still calls malloc, so only where the
 * interrupted code provably holds no allocator lock.
 */
const char *vms__demangle_loaded(const char *name, char *buf, size_t cap);

/*
 * A Rust name, v0 ("_R...") or legacy ("_ZN...17h<hash>E"), as
 * rustc-demangle's alternate form writes it (no hashes, no crate
 * disambiguators), in buf (cut to cap - 1 bytes); name itself when it is
 * neither or cannot be read (rustdemangle.c).  Async-signal-safe: no
 * allocation, bounded recursion.  vms__demangle and vms__demangle_loaded
 * try it first.
 */
const char *vms__demangle_rust(const char *name, char *buf, size_t cap);

#endif
