/* SPDX-License-Identifier: MIT */
/*
 * Boost.Context, timed from C for 'vmstack bench peers' (peers_boost.cpp):
 * the same work as vmstack's spawn and switch benchmarks, on Boost's own
 * stack allocators and context switch.  Built only when CMake finds
 * Boost.Context (VMS_HAVE_BOOST_CONTEXT).
 */
#ifndef VMS_PEERS_BOOST_H
#define VMS_PEERS_BOOST_H

#ifdef __cplusplus
extern "C" {
#endif

#define PEERS_STACK (64 << 10) /* bytes of every peer's stack */
#define PEERS_TOUCH 256        /* bytes each spawned body writes */

enum peers_boost_stack {
    PEERS_FIXEDSIZE, /* malloc'd, no guard */
    PEERS_POOLED,    /* boost::pool of malloc'd stacks, no guard */
    PEERS_PROTECTED  /* mmap + mprotect'ed guard page per stack */
};

/* callcc spawn + run + exit, iters times; elapsed ns. */
double peers_boost_spawn(enum peers_boost_stack kind, long iters);
/* jump_fcontext ping-pong, iters switches in all; elapsed ns. */
double peers_boost_switch(long iters);

/*
 * The vmstack calls of vmstack.hpp, handed to the module by the command,
 * so that the module uses the command's own vmstack (one instance in the
 * process) without the command exporting the API: exported from the
 * executable, it would take the place of the preload library's own when
 * 'vmstack trace' runs the vmstack binary.  A call through one of these
 * costs what a call into libvmstack.so through its PLT does.
 */
#include "vmstack.h"

struct peers_vms_api {
    const char *(*last_error)(void);
    int (*on_stack)(const void *, vms_stack *);
    int (*stack_alloc)(vms_stack *, size_t);
    int (*stack_free)(vms_stack *);
    int (*stack_free_sp)(void *);
    int (*stack_set_name)(const vms_stack *, const char *);
    int (*stack_on_overflow)(const vms_stack *, vms_stack_overflow_fn, void *);
    int (*thread_attach)(void);
    int (*stack_alloc_opts)(vms_stack *, const vms_stack_opts *);
};
void peers_instr_init(const struct peers_vms_api *api);

/*
 * 'vmstack bench instructions' (peers_instr.cpp): iters operations of one
 * path, vmstack's side (nonzero) or the peer's, untimed.  0, or -1 when
 * the path is not built (Boost.Fiber not found).
 */
int peers_instr_callcc(int vmstack_side, long iters); /* spawn + run + exit */
int peers_instr_resume(int vmstack_side, long iters); /* one resume, there and back */
int peers_instr_fiber(int vmstack_side, long iters);  /* Boost.Fiber spawn + join */

#ifdef __cplusplus
}
#endif

#endif
