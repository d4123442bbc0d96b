/* SPDX-License-Identifier: MIT */
/*
 * vms_debug_table: the offsets, sizes and values a debugger needs to list
 * fibers and unwind them without the library's debug information (layout
 * in debugtable.h; gdb/vmstack-gdb.py reads it).  Exported, and read-only
 * once relocated.
 */
#include "task/debugtable.h"
#include "task/task.h"

#include <stddef.h>

#define FIELD(type, member) { offsetof(type, member), sizeof ((type *)0)->member }
#define NREGS(...) (sizeof (struct vms_debug_reg[]){ __VA_ARGS__ } / sizeof (struct vms_debug_reg))

_Static_assert(NREGS(VMS_SWITCH_FRAME_REGS) <= VMS_DEBUG_MAX_REGS, "the saved frame fits the table");

__attribute__((visibility("default"))) const struct vms_debug_table vms_debug_table = {
    .magic = VMS_DEBUG_MAGIC,
    .version = VMS_DEBUG_VERSION,
    .size = sizeof(struct vms_debug_table),
    .nregions = &vms__g.nregions,
    .regions = &vms__g.regions,
    .region_slots = FIELD(struct vms_region, slots),
    .region_nchunks = FIELD(struct vms_region, nchunks),
    .region_chunk_slots = FIELD(struct vms_region, chunk_slots),
    .region_max_slots = FIELD(struct vms_region, max_slots),
    .slot_size = sizeof(struct vms_slot),
    .slot_ext = offsetof(struct vms_slot, task_ext),
    .slot_state = FIELD(struct vms_slot, state),
    .task_kind = FIELD(struct vms_slot, task.kind),
    .task_name = FIELD(struct vms_slot, task.name),
    .task_start = FIELD(struct vms_slot, task.start),
    .fiber_sp = FIELD(struct vms_fiber_desc, sp),
    .fiber_base = FIELD(struct vms_fiber_desc, base),
    .fiber_size = FIELD(struct vms_fiber_desc, size),
    .fiber_id = FIELD(struct vms_fiber_desc, id),
    .fiber_owner = FIELD(struct vms_fiber_desc, owner),
    .fiber_ended = FIELD(struct vms_fiber_desc, ended),
    .fiber_joiner = FIELD(struct vms_fiber_desc, joiner),
    .fiber_wait = FIELD(struct vms_fiber_desc, wait),
    .fiber_wait_fd = FIELD(struct vms_fiber_desc, wait_fd),
    .slot_live = VMS_SLOT_LIVE,
    .task_fiber = VMS_TASK_FIBER,
    .wait_park = VMS_WAIT_PARK,
    .wait_sleep = VMS_WAIT_SLEEP,
    .wait_fd = VMS_WAIT_FD,
    .frame_size = VMS_SWITCH_FRAME_SIZE,
    .frame_nregs = NREGS(VMS_SWITCH_FRAME_REGS),
    .frame_sp = VMS_SWITCH_FRAME_SP,
    .frame_pc = VMS_SWITCH_FRAME_PC,
    .thread_pointer = VMS_THREAD_POINTER,
    .sched = &vms__debug_sched,
    .frame_regs = { VMS_SWITCH_FRAME_REGS },
};
