/* SPDX-License-Identifier: MIT */
/*
 * For 'vmstack run' (test_run_same.sh): what sigaction reads back.  For
 * SIGSEGV, SIGBUS (which vmstack keeps for itself) and SIGILL, SIGUSR1
 * (which 'vmstack trace' moves to the alternate stack), handlers with and
 * without SA_ONSTACK, SA_SIGINFO, masks with SIGKILL in them, then SIG_IGN
 * and SIG_DFL: each read back is printed (handler, flags, mask, restorer),
 * and must be the same plain, under run and under trace.  Then a SIGSEGV
 * sent while ignored is dropped, and the process exits 0.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void handler(int sig)
{
    (void)sig;
}

static void action(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)si, (void)uc;
}

static void show(const char *what, int sig)
{
    struct sigaction sa;
    char mask[65] = {0};

    memset(&sa, 0x5a, sizeof sa);
    if (sigaction(sig, NULL, &sa)) {
        printf("%s %s: sigaction failed\\n", what, sigabbrev_np(sig));
        return;
    }
    for (int s = 1; s <= 64; s++)
        mask[s - 1] = sigismember(&sa.sa_mask, s) ? '1' : '0';
    printf("%s %s: %s flags %#x restorer %s mask %s\n", what, sigabbrev_np(sig),
           sa.sa_handler == SIG_DFL ? "SIG_DFL" : sa.sa_handler == SIG_IGN ? "SIG_IGN"
           : sa.sa_handler == handler ? "handler" : sa.sa_sigaction == action ? "action" : "other",
           (unsigned)sa.sa_flags, sa.sa_restorer ? "set" : "null", mask);
}

int main(void)
{
    static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGUSR1 };

    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        int sig = sigs[i];
        struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_RESTART };

        show("start", sig);
        sigemptyset(&sa.sa_mask);
        sigaddset(&sa.sa_mask, SIGUSR2);
        sigaddset(&sa.sa_mask, SIGKILL);
        sigaction(sig, &sa, NULL);
        show("handler", sig);
        sa.sa_sigaction = action;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
        sigfillset(&sa.sa_mask);
        sigaction(sig, &sa, NULL);
        show("onstack", sig);
        signal(sig, SIG_IGN);
        show("ignored", sig);
        signal(sig, SIG_DFL);
        show("default", sig);
    }
    signal(SIGSEGV, SIG_IGN);
    raise(SIGSEGV);
    kill(getpid(), SIGSEGV);
    puts("a sent SIGSEGV was ignored");
    return 0;
}
