/* SPDX-License-Identifier: MIT */
/*
 * The library's description of itself for debuggers (debugtable.c), as
 * nptl's _thread_db_* symbols describe threads to libthread_db: a debugger
 * that has no debug information reads the exported table vms_debug_table
 * and finds the fibers with it, in a live process or a core file.
 *
 * Layout, version 1 (all little-endian, every field naturally aligned;
 * new fields are only ever appended, and `size` says how far it goes; an
 * incompatible change bumps `version`):
 *   magic "vmstack\0", version, size
 *   where the regions are, then offsets and sizes in a region, a slot, a
 *   task record and a fiber descriptor (struct vms_debug_field each)
 *   the values of the enumerations a debugger tests
 *   the saved frame of a fiber that switched away: its size, and for each
 *   register saved in it, gdb's name of the register and its offset from the
 *   saved stack pointer; the entry named as the program counter holds the
 *   return address, and the stack pointer after the resume is the saved one
 *   plus frame_size
 *   where each thread's scheduler is: the thread-pointer register's name,
 *   and the address of struct vms_debug_sched: the address of a variable
 *   holding the scheduler's offset from the thread pointer (0 until a
 *   scheduler was first used), and the scheduler's fields
 */
#ifndef VMS_DEBUGTABLE_H
#define VMS_DEBUGTABLE_H

#include <stdint.h>

#define VMS_DEBUG_MAGIC "vmstack"
#define VMS_DEBUG_VERSION 1
#define VMS_DEBUG_MAX_REGS 24

struct vms_debug_field {
    uint32_t offset, size;
};

struct vms_debug_reg {
    char name[8];
    uint32_t offset, size;
};

/* The scheduler's part, defined in fiber.c where the scheduler is. */
struct vms_debug_sched {
    const int64_t *tpoff;                  /* the scheduler's offset from the thread pointer */
    struct vms_debug_field current, main, serial;
};
extern const struct vms_debug_sched vms__debug_sched;

struct vms_debug_table {
    char magic[8];
    uint32_t version, size;
    const void *nregions;                  /* unsigned: regions in use */
    const void *regions;                   /* array of pointers to regions */
    struct vms_debug_field region_slots, region_nchunks, region_chunk_slots, region_max_slots;
    uint32_t slot_size, slot_ext;          /* a slot; where the fiber descriptor is in it */
    struct vms_debug_field slot_state, task_kind, task_name, task_start;
    struct vms_debug_field fiber_sp, fiber_base, fiber_size, fiber_id, fiber_owner, fiber_ended, fiber_joiner,
        fiber_wait, fiber_wait_fd;
    uint32_t slot_live, task_fiber;        /* slot_state & 0xffffffff, task_kind */
    uint32_t wait_park, wait_sleep, wait_fd;
    uint32_t frame_size, frame_nregs;
    char frame_sp[8], frame_pc[8];         /* gdb's names of the stack pointer and program counter */
    char thread_pointer[8];                /* gdb's name of the thread-pointer register */
    const struct vms_debug_sched *sched;
    struct vms_debug_reg frame_regs[VMS_DEBUG_MAX_REGS];
};

#endif
