/* SPDX-License-Identifier: MIT */
/*
 * The memory the program 'vmstack run' became shares with its keeper
 * (keeper.c): a private anonymous mapping of the program's own, which the
 * keeper sees because it shares the program's address space (CLONE_VM).
 * No descriptor, no file: nothing of ours in the program's fd table nor in
 * what it runs.  In it the program leaves what must outlive it:
 *   - the table at exit, made by the program's exit handlers; when they
 *     never ran (exit_group, a fatal signal, SIGKILL), the keeper makes it
 *     from the memory the program left;
 *   - overflow reports and the table that could not go to the program's
 *     fd 2 at the time (fd 2 closed, or reopened to another file): the
 *     keeper holds the stderr the program started with and writes them
 *     there when the program asks (a report is whole, the table made),
 *     before the program goes on, and what is left once it has ended.
 * Only the process 'vmstack run' started (VMSTACK_RUN_PID) maps it:
 * forked children and the programs they run keep their hands off.  An
 * exec gives the new image a mapping and a keeper of its own; the old
 * keeper writes what is left in its memory and ends.
 */
#ifndef VMS_RUNSHM_H
#define VMS_RUNSHM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define VMS_RUN_SHM_SIZE (64ul << 20) /* only touched pages cost memory */
#define VMS_RUN_REPORTS_MAX (256u << 10)

struct vms_run_shm {
    _Atomic uint32_t table_done;   /* a table was made at the end: the keeper makes none */
    _Atomic uint32_t reported;     /* an overflow report was written: it says why the program died */
    _Atomic uint32_t keeper_ready; /* futex word: the keeper is set up (1) or gave up (2) */
    _Atomic uint32_t exec_pending; /* the program is in an exec call: its main thread may end for it */
    _Atomic size_t reports_len;    /* bytes reserved in reports, for the keeper to write */
    _Atomic size_t reports_done;   /* of which the keeper wrote these */
    _Atomic uint32_t flush;        /* futex word: the program asks the keeper to write now (keeper.c) */
    size_t text_len;               /* bytes of text, the table for the keeper to write */
    _Atomic uint32_t text_whole;   /* text is the table at the end, for the keeper to deliver as the program would */
    char reports[VMS_RUN_REPORTS_MAX];
    char text[];                   /* to the end of VMS_RUN_SHM_SIZE */
};

#define VMS_RUN_TEXT_MAX (VMS_RUN_SHM_SIZE - offsetof(struct vms_run_shm, text))

/* How long a reader of stderr may keep a write waiting: a report's line (or all that waits), the table. */
#define VMS_RUN_LINE_PATIENCE_NS 2000000000LL
#define VMS_RUN_TABLE_PATIENCE_NS 10000000000LL

#endif
