/* SPDX-License-Identifier: MIT */
/*
 * The memory 'vmstack run' shares with the program it starts: a memfd the
 * launcher creates and keeps, which the preload library in the program
 * maps from /proc/PPID/fd/N at start and closes at once, so that no
 * descriptor of ours stays in the program, nor passes to what it runs.
 * In it the program leaves what the launcher writes once the program has
 * ended, however it ends:
 *   - the table at exit (text, or JSON), made by the program's exit
 *     handlers; when they never ran (exit_group, SIGKILL, abort), by the
 *     program's keeper (keeper.c), which the launcher wakes once it has
 *     reaped the program;
 *   - overflow reports that could not go to the program's fd 2 at the
 *     time (fd 2 closed, or reopened to another file).
 * Only the process 'vmstack run' started writes here (VMSTACK_RUN_PID):
 * forked children and the programs they run keep their hands off.  A
 * program that execs itself into another (same pid) maps it again; the
 * table is the last image's.  Used by src/preload/ and tools/launch.c.
 */
#ifndef VMS_RUNSHM_H
#define VMS_RUNSHM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define VMS_RUN_SHM_ENV "VMSTACK_RUN_SHM"    /* the launcher's descriptor number */
#define VMS_RUN_SHM_SIZE (64ul << 20)        /* only touched pages cost memory */
#define VMS_RUN_SHM_MAGIC 0x766d7372u
#define VMS_RUN_REPORTS_MAX (256u << 10)

struct vms_run_shm {
    uint32_t magic;
    _Atomic uint32_t attached;     /* a program mapped it */
    _Atomic uint32_t table_done;   /* text[0, text_len) is the table at exit */
    _Atomic uint32_t reported;     /* an overflow report was written: it says why the program died */
    _Atomic uint32_t events;       /* futex word of the keeper: changes when generation or ended does */
    _Atomic uint32_t generation;   /* images of the program that attached (one more at each exec) */
    _Atomic int32_t keeper;        /* pid of the newest image's keeper, 0: none */
    _Atomic uint32_t ended;        /* the launcher reaped the program: end_status is its wait status */
    int32_t end_status;
    _Atomic size_t reports_len;    /* bytes reserved in reports */
    size_t text_len;
    char reports[VMS_RUN_REPORTS_MAX];
    char text[];                   /* to the end of VMS_RUN_SHM_SIZE */
};

#define VMS_RUN_TEXT_MAX (VMS_RUN_SHM_SIZE - offsetof(struct vms_run_shm, text))

#endif
