/* SPDX-License-Identifier: MIT */
/*
 * C++ names without a C++ dependency (see demangle.h).  libstdc++ exports
 * __cxa_demangle with C linkage; a C++ program has it loaded already, and a
 * C program that prints C++ names (checkstack on a C++ binary) opens it.
 */
#include "core/demangle.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*cxa_demangle_fn)(const char *mangled, char *out, size_t *len, int *status);

static _Atomic(cxa_demangle_fn) demangler;
static pthread_once_t once = PTHREAD_ONCE_INIT;

void vms__demangle_find_loaded(void)
{
    if (!atomic_load_explicit(&demangler, memory_order_acquire))
        atomic_store_explicit(&demangler, (cxa_demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle"),
                              memory_order_release);
}

static void find_demangler(void)
{
    void *lib;

    vms__demangle_find_loaded();
    if (!atomic_load_explicit(&demangler, memory_order_acquire) &&
        (lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL)))
        atomic_store_explicit(&demangler, (cxa_demangle_fn)dlsym(lib, "__cxa_demangle"), memory_order_release);
}

const char *vms__demangle_loaded(const char *name, char *buf, size_t cap)
{
    cxa_demangle_fn fn = atomic_load_explicit(&demangler, memory_order_acquire);
    const char *rust = vms__demangle_rust(name, buf, cap);
    char *out;
    int status = -1;
    size_t n;

    if (rust != name)
        return rust;
    if (!fn || !name || strncmp(name, "_Z", 2) || cap == 0 || !(out = fn(name, NULL, NULL, &status)))
        return name;
    n = strlen(out);
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, out, n);
    buf[n] = '\0';
    free(out);
    return buf;
}

const char *vms__demangle(const char *name, char *buf, size_t cap)
{
    const char *rust = vms__demangle_rust(name, buf, cap);

    if (rust != name || !name || strncmp(name, "_Z", 2) || cap == 0)
        return rust;
    pthread_once(&once, find_demangler);
    return vms__demangle_loaded(name, buf, cap);
}
