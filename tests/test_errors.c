/* SPDX-License-Identifier: MIT */
/*
 * Bad input gets a clear error and changes nothing: invalid sizes, foreign
 * pointers, double frees and stale handles, bad VMSTACK_* settings,
 * re-initialisation with other settings, and a full reservation.
 */
#include "check.h"
#include "vmstack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void expect(int rc, int err, const char *msg_part)
{
    if (rc != -err || !strstr(vms_last_error(), msg_part)) {
        fprintf(stderr, "expected -%d with \"%s\", got %d: \"%s\"\n", err, msg_part, rc, vms_last_error());
        exit(1);
    }
}

static void bad_sizes(void)
{
    vms_stack st;

    expect(vms_stack_alloc(&st, ((size_t)1 << 30) + 1), EINVAL, "at most 1 GiB");
    expect(vms_stack_alloc(&st, (size_t)2 << 30), EINVAL, "at most 1 GiB");
}

static void bad_frees(void)
{
    vms_stack st, copy, other, forged;
    char local[64];

    CHECK_EQ(vms_stack_alloc(&st, 0), 0);
    copy = st;
    forged = st;
    forged.base = local;
    expect(vms_stack_free(&forged), EINVAL, "is not a vmstack stack");
    forged = st;
    forged.id += 1;
    expect(vms_stack_free(&forged), EINVAL, "is not a vmstack stack");
    CHECK_EQ(vms_stack_free(&st), 0);
    expect(vms_stack_free(&st), EALREADY, "was already freed: double free or stale handle");
    /* The slot is handed out again (thread cache): the old handle is stale, not the new owner's. */
    CHECK_EQ(vms_stack_alloc(&other, 0), 0);
    CHECK(other.base == copy.base && other.gen != copy.gen);
    expect(vms_stack_free(&copy), EALREADY, "already freed");
    CHECK(vms_on_stack((char *)other.base + 100, NULL) == 1);
    CHECK_EQ(vms_stack_free(&other), 0);
}

static void on_stack(void)
{
    vms_stack st, found;
    char *heap = malloc(16);

    CHECK_EQ(vms_stack_alloc(&st, 0), 0);
    CHECK_EQ(vms_on_stack((char *)vms_stack_top(&st) - 1, &found), 1);
    CHECK(found.base == st.base && found.gen == st.gen && found.id == st.id);
    CHECK_EQ(vms_on_stack(st.base, NULL), 1);
    CHECK_EQ(vms_on_stack((char *)st.base - 1, NULL), 0);    /* its guard */
    CHECK_EQ(vms_on_stack(heap, NULL), 0);
    CHECK_EQ(vms_on_stack(&found, NULL), 0);                 /* the thread's own stack */
    CHECK_EQ(vms_stack_free(&st), 0);
    CHECK_EQ(vms_on_stack(st.base, NULL), 0);                /* freed */
    free(heap);
}

/* Runs fn in a child with one environment variable set; fn exits 0 if all went as expected. */
static void in_child_with_env(const char *name, const char *value, void (*fn)(void))
{
    int status;
    pid_t pid = fork();

    if (pid == 0) {
        setenv(name, value, 1);
        fn();
        _exit(0);
    }
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status)) {
        fprintf(stderr, "with %s=%s: child failed\n", name, value);
        exit(1);
    }
}

static void bad_stack_env(void)
{
    vms_stack st;

    expect(vms_init(NULL), EINVAL, "VMSTACK_STACK_SIZE=12x: not a size");
    expect(vms_stack_alloc(&st, 0), EINVAL, "VMSTACK_STACK_SIZE=12x");
}

static void bad_guard_env(void)
{
    expect(vms_init(NULL), EINVAL, "VMSTACK_GUARD=maybe: expected auto, madvise, mprotect or none");
}

static void bad_guard_size_env(void)
{
    expect(vms_init(NULL), EINVAL, "guard size 5000: must be a multiple of the page size");
}

static void bad_cache_env(void)
{
    expect(vms_init(NULL), EINVAL, "VMSTACK_CACHE=1000: expected a whole number from 0 to 64");
}

static void small_reserve(void)
{
    vms_stack st[64];
    int n = 0, rc;

    CHECK_EQ(vms_init(NULL), 0);
    while ((rc = vms_stack_alloc(&st[n], 0)) == 0)
        CHECK(++n < 64);
    expect(rc, ENOSPC, "raise VMSTACK_RESERVE");
    CHECK(n > 0);
    CHECK_EQ(vms_stack_free(&st[0]), 0);
    CHECK_EQ(vms_stack_alloc(&st[0], 0), 0);
}

static void reinit(void)
{
    vms_config cfg;

    CHECK_EQ(vms_init(NULL), 0);
    CHECK_EQ(vms_init(NULL), 0);                     /* same settings: fine */
    CHECK_EQ(vms_config_get(&cfg), 0);
    cfg.stack_size *= 2;
    expect(vms_init(&cfg), EBUSY, "already initialised with other settings");
}

int main(void)
{
    in_child_with_env("VMSTACK_STACK_SIZE", "12x", bad_stack_env);
    in_child_with_env("VMSTACK_GUARD", "maybe", bad_guard_env);
    in_child_with_env("VMSTACK_GUARD_SIZE", "5000", bad_guard_size_env);
    in_child_with_env("VMSTACK_CACHE", "1000", bad_cache_env);
    in_child_with_env("VMSTACK_RESERVE", "1M", small_reserve);
    reinit();
    bad_sizes();
    bad_frees();
    on_stack();
    printf("all bad inputs rejected with clear errors\n");
    return 0;
}
