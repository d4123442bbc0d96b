/* SPDX-License-Identifier: MIT */
/* For fiber tests whose switch away must find little stack left. */
#ifndef VMS_TEST_ROOM_H
#define VMS_TEST_ROOM_H

#include "check.h"
#include "vmstack.h"

#include <alloca.h>
#include <stddef.h>

/*
 * Leaves about room bytes of the current fiber's stack below the caller's
 * frame: alloca in the caller, so that what it calls next starts there.
 */
#define LEAVE_ROOM(room)                                                          \
    do {                                                                          \
        vms_stack st_;                                                            \
        char *sp_ = (char *)__builtin_frame_address(0);                           \
        size_t left_;                                                             \
        volatile char *pad_;                                                      \
                                                                                  \
        CHECK_EQ(vms_fiber_stack(vms_fiber_current(), &st_), 0);                  \
        left_ = (size_t)(sp_ - (char *)st_.base);                                 \
        pad_ = alloca(left_ > (room) + 512 ? left_ - (room) - 512 : 16);          \
        pad_[0] = 0;                                                              \
    } while (0)

#endif
