/* SPDX-License-Identifier: MIT */
/*
 * Code that is in no module, as a virtual machine's compiled code is: a
 * stub copied into an anonymous executable mapping takes a 64 KiB frame,
 * fills it with pointers into itself (as a JIT's frames hold its code's
 * addresses), and calls back into C from there.  Nothing describes how to
 * unwind the stub's frame.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

__attribute__((noinline)) static int jit_callee(int x)
{
    volatile char b[512];

    memset((char *)b, x, sizeof b);
    return b[x & 511];
}

int main(void)
{
    /*
     * push %rbp; mov %rsp,%rbp; push %rdi; sub $0x10000,%rsp; lea (%rsp),%rdi;
     * mov $0x2000,%ecx; movabs $CODE,%rax; rep stos %rax,(%rdi); mov -8(%rbp),%rax;
     * mov $7,%edi; call *%rax; leave; ret
     */
    static const uint8_t stub[] = {0x55, 0x48, 0x89, 0xe5, 0x57, 0x48, 0x81, 0xec, 0x00, 0x00, 0x01, 0x00,
                                   0x48, 0x8d, 0x3c, 0x24, 0xb9, 0x00, 0x20, 0x00, 0x00, 0x48, 0xb8, 0, 0, 0,
                                   0, 0, 0, 0, 0, 0xf3, 0x48, 0xab, 0x48, 0x8b, 0x45, 0xf8, 0xbf, 0x07, 0x00,
                                   0x00, 0x00, 0xff, 0xd0, 0xc9, 0xc3};
    uint8_t *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uintptr_t self;
    int (*run)(int (*)(int));

    if (code == MAP_FAILED) {
        perror("mmap PROT_EXEC");
        return 1;
    }
    memcpy(code, stub, sizeof stub);
    self = (uintptr_t)code + 1;
    memcpy(code + 23, &self, sizeof self);
    run = (int (*)(int (*)(int)))(void *)code;
    printf("jit: %d\n", run(jit_callee));
    return 0;
}
