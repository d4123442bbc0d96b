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

#ifdef __cplusplus
}
#endif

#endif
