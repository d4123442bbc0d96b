/* SPDX-License-Identifier: MIT */
/* Whether memory is MADV_NOHUGEPAGE, as /proc/self/smaps says ("nh" in VmFlags). */
#ifndef VMS_NOHUGE_H
#define VMS_NOHUGE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The mapping that holds addr is marked "nh"; false too if none holds it. */
static inline bool no_huge_pages(const void *addr)
{
    uintptr_t a = (uintptr_t)addr, lo, hi;
    char line[512];
    bool in = false, nh = false;
    FILE *f = fopen("/proc/self/smaps", "r");

    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            in = a >= lo && a < hi;
        else if (in && !strncmp(line, "VmFlags:", 8)) {
            nh = strstr(line, " nh") != NULL;
            break;
        }
    }
    if (f)
        fclose(f);
    return nh;
}

#endif
