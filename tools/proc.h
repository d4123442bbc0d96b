/* SPDX-License-Identifier: MIT */
/* What /proc says about this process: VMAs, resident memory, open descriptors. */
#ifndef VMS_PROC_H
#define VMS_PROC_H

#include "core/internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

/* Lines of /proc/self/maps: one per VMA (the library's own counter). */
static inline long proc_vmas(void)
{
    return vms__os_count_vmas();
}

/* Resident set size in bytes, from /proc/self/statm. */
static inline long proc_rss(void)
{
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

/* Open file descriptors, from /proc/self/fd (not counting the directory's own). */
static inline long proc_fds(void)
{
    long n = 0;
    DIR *d = opendir("/proc/self/fd");

    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n - 3; /* ".", ".." and the DIR's own descriptor */
}

#endif
