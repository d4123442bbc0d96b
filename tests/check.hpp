// SPDX-License-Identifier: MIT
// What the C++ tests share: check.h's CHECK, and the count of live stacks.
#ifndef VMS_CHECK_HPP
#define VMS_CHECK_HPP

#include "check.h"
#include "vmstack.h"

#include <cstddef>

static inline std::size_t live_stacks()
{
    vms_stats s;

    vms_stats_get(&s);
    return s.live;
}

#endif
