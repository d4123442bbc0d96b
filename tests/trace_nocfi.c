/* SPDX-License-Identifier: MIT */
/*
 * Code without call-frame information inside a module, as V8's
 * interpreter and builtins are inside node's binary: nocfi_enter, written
 * in assembly with no CFI directives, calls itself NEST times, each
 * keeping a frame pointer, then calls a C function that recurses some
 * 100 KiB deep and blocks there.  Unwinding from the deep frames reaches
 * nocfi_enter, where libunwind can only guess the caller; the guess is
 * nocfi_enter again.  The main thread exits while that thread blocks, so
 * the report shows the tripwires' chain of a running thread.  With the
 * argument "ended" the recursion returns and the thread is joined: the
 * report shows the chain read from its dead stack, which joins the
 * tripwires'.  With "skip", nocfi_enter's callee is instead one 64 KiB
 * frame that writes its lowest bytes only, past every tripwire: no
 * tripwire sees the deepest chain, which only the dead stack holds.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NEST 8
#define LEVELS 100

void nocfi_enter(void (*fn)(void), long nest);

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl nocfi_enter\n"
        ".hidden nocfi_enter\n"
        ".type nocfi_enter, @function\n"
        "nocfi_enter:\n"
        "    push %rbp\n"
        "    mov %rsp, %rbp\n"
        "    test %rsi, %rsi\n"
        "    jz 1f\n"
        "    dec %rsi\n"
        "    call nocfi_enter\n"
        "    jmp 2f\n"
        "1:  call *%rdi\n"
        "2:  pop %rbp\n"
        "    ret\n"
        ".size nocfi_enter, .-nocfi_enter\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl nocfi_enter\n"
        ".hidden nocfi_enter\n"
        ".type nocfi_enter, %function\n"
        "nocfi_enter:\n"
        "    stp x29, x30, [sp, #-16]!\n"
        "    mov x29, sp\n"
        "    cbz x1, 1f\n"
        "    sub x1, x1, #1\n"
        "    bl nocfi_enter\n"
        "    b 2f\n"
        "1:  blr x0\n"
        "2:  ldp x29, x30, [sp], #16\n"
        "    ret\n"
        ".size nocfi_enter, .-nocfi_enter\n");
#else
#error "nocfi_enter is written for x86-64 and aarch64"
#endif

static sem_t deep_reached;
static int ends; /* the deepest call returns */

__attribute__((noinline)) static int nocfi_deep(int n)
{
    volatile char b[1000];

    memset((char *)b, n, sizeof b);
    if (n == 0) {
        sem_post(&deep_reached);
        while (!ends)
            pause();
        return 0;
    }
    return nocfi_deep(n - 1) + b[n % sizeof b];
}

static void deep(void)
{
    nocfi_deep(LEVELS);
}

__attribute__((noinline)) static void skip(void)
{
    volatile char b[65536];

    b[0] = 1; /* the lowest byte only: no page above it is touched */
    sem_post(&deep_reached + (b[0] - 1));
}

static void *thread(void *arg)
{
    nocfi_enter(arg ? skip : deep, NEST);
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t t;

    bool skips = argc > 1 && !strcmp(argv[1], "skip");

    ends = skips || (argc > 1 && !strcmp(argv[1], "ended"));
    sem_init(&deep_reached, 0, 0);
    if (pthread_create(&t, NULL, thread, skips ? &t : NULL)) {
        fprintf(stderr, "pthread_create failed\n");
        return 1;
    }
    while (sem_wait(&deep_reached))
        ;
    if (ends)
        pthread_join(t, NULL);
    printf("nocfi: %s\n", skips ? "skipped" : ends ? "ended" : "deep");
    return 0;
}
