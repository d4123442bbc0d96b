/* SPDX-License-Identifier: MIT */
/*
 * Settings: built-in defaults, VMSTACK_* environment variables, validation,
 * and the one-time initialisation that probes the guard mechanism.
 */
#include "core/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <unistd.h>

int (*vms__thread_ready_hook)(void);

struct vms_global vms__g = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

void vms_config_defaults(vms_config *cfg)
{
    *cfg = (vms_config){
        .stack_size = (size_t)64 << 10,
        /*
         * Covers frames up to 64 KiB (a larger one can jump it).  A guard
         * costs address space only (madvise: no memory, no VMA): a million
         * 64 KiB stacks with their guards take 128 GiB of the reserve.
         */
        .guard_size = (size_t)64 << 10,
        .guard = VMS_GUARD_AUTO,
        .cache = 16,
        .pool = 256,
        .reserve = (size_t)256 << 30,
        .scrub = 0,
    };
}

/* "64K", "1M", "4096": powers of 1024; rejects junk, overflow and negatives. */
int vms__parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v;
    unsigned shift = 0;

    if (!s || *s < '0' || *s > '9')
        return -EINVAL;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno)
        return -EINVAL;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if (*end == 'i' && shift)
        end++;
    if ((*end == 'B' || *end == 'b') && shift)
        end++;
    if (*end || (shift && v > (~0ULL >> shift)))
        return -EINVAL;
    *out = (size_t)(v << shift);
    return 0;
}

static int env_size(const char *name, size_t *out)
{
    const char *v = secure_getenv(name);

    if (!v || !*v)
        return 0;
    if (vms__parse_size(v, out) < 0)
        return vms__fail(EINVAL, "%s=%s: not a size; use bytes with an optional K, M, G or T suffix, e.g. 64K",
                         name, v);
    return 0;
}

static int env_uint(const char *name, unsigned max, unsigned *out)
{
    const char *v = secure_getenv(name);
    char *end;
    unsigned long n;

    if (!v || !*v)
        return 0;
    errno = 0;
    n = strtoul(v, &end, 10);
    if (errno || *end || *v == '-' || n > max)
        return vms__fail(EINVAL, "%s=%s: expected a whole number from 0 to %u", name, v, max);
    *out = (unsigned)n;
    return 0;
}

int vms_config_from_env(vms_config *cfg)
{
    const char *g = secure_getenv("VMSTACK_GUARD");
    unsigned scrub = (unsigned)cfg->scrub;
    int rc;

    if ((rc = env_size("VMSTACK_STACK_SIZE", &cfg->stack_size)) ||
        (rc = env_size("VMSTACK_GUARD_SIZE", &cfg->guard_size)) ||
        (rc = env_size("VMSTACK_RESERVE", &cfg->reserve)) ||
        (rc = env_uint("VMSTACK_CACHE", VMS_MAX_CACHE, &cfg->cache)) ||
        (rc = env_uint("VMSTACK_POOL", 1u << 24, &cfg->pool)) ||
        (rc = env_uint("VMSTACK_SCRUB", 1, &scrub)))
        return rc;
    cfg->scrub = (int)scrub;
    if (g && *g) {
        if (!strcmp(g, "auto"))
            cfg->guard = VMS_GUARD_AUTO;
        else if (!strcmp(g, "madvise"))
            cfg->guard = VMS_GUARD_MADVISE;
        else if (!strcmp(g, "mprotect"))
            cfg->guard = VMS_GUARD_MPROTECT;
        else if (!strcmp(g, "none"))
            cfg->guard = VMS_GUARD_NONE;
        else
            return vms__fail(EINVAL, "VMSTACK_GUARD=%s: expected auto, madvise, mprotect or none", g);
    }
    return 0;
}

static size_t page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

int vms__config_check(const vms_config *cfg)
{
    size_t pg = page_size();

    if (cfg->stack_size % pg || cfg->stack_size < VMS_MIN_STACK || cfg->stack_size > VMS_MAX_STACK)
        return vms__fail(EINVAL, "stack size %zu: must be a multiple of the page size (%zu) from 16 KiB to 1 GiB",
                         cfg->stack_size, pg);
    if (cfg->guard != VMS_GUARD_NONE &&
        (cfg->guard_size % pg || cfg->guard_size < pg || cfg->guard_size > VMS_MAX_GUARD))
        return vms__fail(EINVAL, "guard size %zu: must be a multiple of the page size (%zu) from one page to 1 GiB",
                         cfg->guard_size, pg);
    if (cfg->cache > VMS_MAX_CACHE)
        return vms__fail(EINVAL, "cache %u: at most %u stacks per CPU", cfg->cache, VMS_MAX_CACHE);
    if ((unsigned)cfg->guard > VMS_GUARD_NONE)
        return vms__fail(EINVAL, "guard mode %d: not a vms_guard_mode", (int)cfg->guard);
    if (cfg->reserve < cfg->stack_size + 2 * cfg->guard_size || cfg->reserve % pg)
        return vms__fail(EINVAL, "reserve %zu: must be a page multiple large enough for one stack and its guards",
                         cfg->reserve);
    return 0;
}

/*
 * Valgrind gives its client far less address space than the kernel would
 * (tens of GiB), so the default reservation fails on every allocation
 * there.  It announces itself in LD_PRELOAD (its vgpreload_* libraries).
 */
#define VALGRIND_RESERVE ((size_t)4 << 30)

static bool under_valgrind(void)
{
    const char *p = getenv("LD_PRELOAD");

    return p && strstr(p, "/vgpreload_");
}

/*
 * Under a limit on address space (RLIMIT_AS, ulimit -v), which reserved
 * address space counts against, the default reservation fails too: each
 * stack size gets a share of the limit instead.  A program uses such a
 * reserve up sooner (ENOSPC from vms_stack_alloc; under 'vmstack run',
 * pthread_create then gives glibc's stack).  At least one stack fits.
 */
#define RLIMIT_AS_SHARE 16

static void fit_reserve(vms_config *cfg)
{
    vms_config d;
    struct rlimit rl;
    size_t share;

    vms_config_defaults(&d);
    if (cfg->reserve != d.reserve || secure_getenv("VMSTACK_RESERVE"))
        return;
    if (under_valgrind())
        cfg->reserve = VALGRIND_RESERVE;
    if (getrlimit(RLIMIT_AS, &rl) || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur / RLIMIT_AS_SHARE >= cfg->reserve)
        return;
    share = (size_t)(rl.rlim_cur / RLIMIT_AS_SHARE) & ~(page_size() - 1);
    cfg->reserve = share > cfg->stack_size + 2 * cfg->guard_size ? share : cfg->stack_size + 2 * cfg->guard_size;
}

static bool config_equal(const vms_config *a, const vms_config *b)
{
    return a->stack_size == b->stack_size && a->guard_size == b->guard_size &&
           a->guard == b->guard && a->cache == b->cache && a->pool == b->pool &&
           a->reserve == b->reserve && a->scrub == b->scrub;
}

static int init_locked(const vms_config *cfg)
{
    vms__g.cfg = *cfg;
    atomic_store(&vms__g.scrub, cfg->scrub != 0);
    if (cfg->guard == VMS_GUARD_NONE)
        vms__g.cfg.guard_size = 0;
    vms__g.page = page_size();
    vms__g.sigframe = vms__os_sigframe();
    vms__g.ncpu = (unsigned)get_nprocs_conf();
    if (vms__g.ncpu == 0)
        vms__g.ncpu = 1;
    vms__g.max_map_count = vms__os_max_map_count();
    vms__g.mode = vms__os_probe_guard(cfg->guard);
    if (vms__g.mode == VMS_GUARD_AUTO)
        return vms__fail(ENOMEM, "could not map two pages to probe the guard mechanism: out of memory");
    if (cfg->guard == VMS_GUARD_MADVISE && vms__g.mode != VMS_GUARD_MADVISE)
        return vms__fail(ENOTSUP, "VMSTACK_GUARD=madvise: MADV_GUARD_INSTALL does not work here (needs Linux >= 6.13); "
                                  "use auto or mprotect");
    atomic_store_explicit(&vms__g.ready, 1, memory_order_release);
    return 0;
}

/*
 * The program's own vms_init after `vmstack run` set the library up: its
 * settings apply from now on (new regions get its guard size and reserve;
 * its default size, pool and scrub hold at once), while the run's thread
 * and alternate stacks keep theirs.  The guard mode and the per-CPU cache
 * size are built into what exists already: they stay the run's.
 */
static int replace_locked(const vms_config *cfg)
{
    vms_config next = *cfg;

    /* auto is whichever guard the run found, unless that is none. */
    if ((cfg->guard != vms__g.cfg.guard && (cfg->guard != VMS_GUARD_AUTO || vms__g.mode == VMS_GUARD_NONE)) ||
        cfg->cache != vms__g.cfg.cache)
        return vms__fail(EBUSY, "under vmstack %s the guard mode and the cache size are set already (VMSTACK_GUARD, "
                                "VMSTACK_CACHE): set them in the environment instead", vms__g.run_command);
    next.guard = vms__g.cfg.guard;
    if (next.guard == VMS_GUARD_NONE)
        next.guard_size = 0;
    vms__g.cfg = next;
    atomic_store(&vms__g.scrub, cfg->scrub != 0);
    atomic_store(&vms__g.default_region, NULL); /* the default size or guard may be new */
    return 0;
}

int vms_init(const vms_config *user)
{
    vms_config cfg;
    int rc;

    if (user) {
        cfg = *user;
    } else {
        vms_config_defaults(&cfg);
        if ((rc = vms_config_from_env(&cfg)))
            return rc;
    }
    fit_reserve(&cfg);
    /* Settings that can never work are named as such, initialised already or not. */
    if ((rc = vms__config_check(&cfg)))
        return rc;
    pthread_mutex_lock(&vms__g.lock);
    if (atomic_load(&vms__g.ready)) {
        vms_config want = cfg;
        if (want.guard == VMS_GUARD_NONE)
            want.guard_size = 0;
        rc = config_equal(&want, &vms__g.cfg) ? 0
             : vms__g.provisional ? replace_locked(&cfg)
             : vms__fail(EBUSY, "vmstack is already initialised with other settings: call vms_init before the first allocation");
        vms__g.provisional = false;
    } else {
        rc = init_locked(&cfg);
    }
    pthread_mutex_unlock(&vms__g.lock);
    return rc;
}

int vms__init_provisional(const vms_config *cfg, const char *command)
{
    int rc = vms_init(cfg);

    pthread_mutex_lock(&vms__g.lock);
    vms__g.provisional = rc == 0;
    vms__g.run_command = command;
    pthread_mutex_unlock(&vms__g.lock);
    return rc;
}

int vms__ensure_init(void)
{
    if (atomic_load_explicit(&vms__g.ready, memory_order_acquire))
        return 0;
    return vms_init(NULL);
}

int vms_config_get(vms_config *cfg)
{
    int rc = vms__ensure_init();

    if (rc == 0) {
        *cfg = vms__g.cfg;
        cfg->scrub = atomic_load_explicit(&vms__g.scrub, memory_order_relaxed);
    }
    return rc;
}

void vms_set_scrub(int on)
{
    if (vms__ensure_init() == 0)
        atomic_store_explicit(&vms__g.scrub, on != 0, memory_order_relaxed);
}

vms_guard_mode vms_guard_mode_active(void)
{
    if (vms__ensure_init())
        return VMS_GUARD_AUTO;
    return vms__g.mode;
}

const char *vms_guard_mode_name(vms_guard_mode mode)
{
    switch (mode) {
    case VMS_GUARD_AUTO: return "auto";
    case VMS_GUARD_MADVISE: return "madvise";
    case VMS_GUARD_MPROTECT: return "mprotect";
    case VMS_GUARD_NONE: return "none";
    }
    return "unknown";
}
