/* SPDX-License-Identifier: MIT */
/*
 * pac-ret in the fiber switch (aarch64): a suspended fiber's saved return
 * address, overwritten with the address of another function, is jumped to
 * on resume unless the switch signed it.  Built with pac-ret
 * (VMS_BRANCH_PROTECTION) on a processor with pointer authentication, the
 * resume's authentication fails and the process dies of SIGSEGV (the
 * corrupted address faults on ret; qemu 7.2 -cpu max) or, with FEAT_FPAC,
 * SIGILL (the autiasp itself traps); elsewhere the hijack succeeds, which
 * shows the overwrite hit the slot the resume returns through.  The same
 * write of the saved value itself resumes the fiber as usual.  vmstack
 * reports nothing (no stack overflow).  Each case runs in a child made
 * with _Fork: under qemu-user 7.2 the child of fork() hangs.
 *
 *   test_pac_switch [SIGNAL]   SIGNAL: the one signal the tampered resume
 *                              must die of where the switch signs
 *                              (without: SIGSEGV or SIGILL)
 */
#include "arch/arch.h"
#include "check.h"
#include "task/task.h"

#include <signal.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define HIJACKED 77 /* the exit status of a resume that went where the overwrite said */

static vms_fiber victim_fiber;
static struct vms_fiber_desc *victim;
static bool tamper;

/* Where the resume returns to: the saved frame's program-counter entry, as the arch layer describes it. */
static uintptr_t *ra_slot(const struct vms_fiber_desc *f)
{
    static const struct {
        const char *name;
        uint32_t offset, size;
    } regs[] = { VMS_SWITCH_FRAME_REGS };

    for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++)
        if (!strcmp(regs[i].name, VMS_SWITCH_FRAME_PC))
            return (uintptr_t *)((char *)f->sp + regs[i].offset);
    CHECK(!"no program counter in the saved frame");
    return NULL;
}

__attribute__((noreturn, noinline)) static void hijacked(void)
{
    _exit(HIJACKED);
}

static void *victim_main(void *arg)
{
    (void)arg;
    victim = vms__fiber_current();
    CHECK_EQ(vms_fiber_park(), 0);
    return (void *)1;
}

/* Runs while the victim is parked: its saved context is on its stack. */
static void *tamperer_main(void *arg)
{
    uintptr_t *slot = ra_slot(victim);

    (void)arg;
    *(volatile uintptr_t *)slot = tamper ? (uintptr_t)hijacked : *slot;
    CHECK_EQ(vms_fiber_wake(victim_fiber), 0);
    return NULL;
}

static void victim_run(void)
{
    vms_fiber t;
    vms_fiber_status st;

    CHECK_EQ(vms_fiber_spawn(&victim_fiber, victim_main, NULL, &(vms_fiber_opts){.name = "victim"}), 0);
    CHECK_EQ(vms_fiber_spawn(&t, tamperer_main, NULL, &(vms_fiber_opts){.name = "tamperer"}), 0);
    CHECK_EQ(vms_run(), 0);
    CHECK_EQ(vms_fiber_join(victim_fiber, &st), 0);
    CHECK_EQ(st.end, VMS_FIBER_RETURNED);
    CHECK_EQ((intptr_t)st.result, 1);
    CHECK_EQ(vms_fiber_join(t, &st), 0);
    _exit(0);
}

/* The wait status of victim_run in a child; its stderr must have no vmstack report (qemu-user may add its own line). */
static int run_child(bool tampered)
{
    int fd[2], status;
    char text[512];
    ssize_t n;
    pid_t pid;

    tamper = tampered;
    fflush(NULL);
    CHECK(pipe(fd) == 0);
    pid = _Fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);
        close(fd[0]);
        dup2(fd[1], 2);
        victim_run();
    }
    close(fd[1]);
    n = read(fd[0], text, sizeof text - 1);
    text[n > 0 ? n : 0] = 0;
    close(fd[0]);
    CHECK(waitpid(pid, &status, 0) == pid);
    printf("%s: status 0x%x, stderr \"%s\"\n", tampered ? "tampered" : "rewritten", status, text);
    CHECK(!strstr(text, "vmstack"));
    return status;
}

static int signal_named(const char *name)
{
    static const struct {
        const char *name;
        int sig;
    } sigs[] = { {"SIGILL", SIGILL}, {"SIGSEGV", SIGSEGV} };

    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        if (!strcmp(sigs[i].name, name))
            return sigs[i].sig;
    fprintf(stderr, "unknown signal %s\n", name);
    exit(2);
}

int main(int argc, char **argv)
{
    int fault = argc > 1 ? signal_named(argv[1]) : 0, status;
#if defined(__ARM_FEATURE_PAC_DEFAULT)
    bool signs = getauxval(AT_HWCAP) & HWCAP_PACA;
#else
    bool signs = false;
#endif

    printf("the switch signs return addresses: %s\n", signs ? "yes" : "no");
    status = run_child(false);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    status = run_child(true);
    if (signs)
        CHECK(WIFSIGNALED(status) && (fault ? WTERMSIG(status) == fault
                                            : WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGILL));
    else
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == HIJACKED);
    printf("ok\n");
    return 0;
}
