/* SPDX-License-Identifier: MIT */
/*
 * The tool's companion files (the preload library, the Boost peers
 * module): next to the vmstack binary in a build tree, else in the
 * directory cmake/install.cmake installs them to, found relative to the
 * binary (VMS_PRELOAD_REL) so that an installed tree can move; and the
 * programs the tool runs (gnuplot), on PATH.
 */
#include "cmd.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool cmd_find_lib(const char *name, char *out, size_t n)
{
    static char exe[PATH_MAX]; /* not on the stack: 'vmstack run' runs under 'ulimit -s 16' */
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash;

    if (len <= 0)
        return false;
    exe[len] = '\0';
    if (!(slash = strrchr(exe, '/')))
        return false;
    *slash = '\0';
    if ((size_t)snprintf(out, n, "%s/%s", exe, name) < n && access(out, R_OK) == 0)
        return true;
    return (size_t)snprintf(out, n, "%s/" VMS_PRELOAD_REL "/%s", exe, name) < n && access(out, R_OK) == 0;
}

bool cmd_on_path(const char *prog)
{
    const char *path = getenv("PATH");
    static char file[PATH_MAX]; /* not on the stack: 'vmstack run' may have 16 KiB in all */

    for (const char *p = path ? path : ""; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(file, sizeof file, "%.*s/%s", (int)n, p, prog);
        if (n && access(file, X_OK) == 0)
            return true;
        p += n + (p[n] == ':');
    }
    return false;
}
