/* SPDX-License-Identifier: MIT */
/*
 * The x86-64 decoder behind checkstack: the instructions whose operands
 * checkstack reads, decoded field by field, then instruction lengths
 * against objdump over whole binaries (this test itself and the files given
 * as arguments), when objdump is installed.
 */
#include "check.h"
#include "checkstack/x86insn.h"

#include <stdbool.h>
#include <string.h>

struct known {
    const char *what;
    uint8_t bytes[15];
    unsigned len;
    uint8_t op, reg, rm, base;
    int64_t imm, disp;
};

static const struct known cases[] = {
    { "push %rbp", { 0x55 }, 1, 0x55, 0, 0, X86_NOREG, 0, 0 },
    { "push %r12", { 0x41, 0x54 }, 2, 0x54, 0, 0, X86_NOREG, 0, 0 },
    { "sub $0x58,%rsp", { 0x48, 0x83, 0xec, 0x58 }, 4, 0x83, 5, X86_RSP, X86_NOREG, 0x58, 0 },
    { "sub $0x4e20,%rsp", { 0x48, 0x81, 0xec, 0x20, 0x4e, 0, 0 }, 7, 0x81, 5, X86_RSP, X86_NOREG, 0x4e20, 0 },
    { "add $-128,%rsp", { 0x48, 0x83, 0xc4, 0x80 }, 4, 0x83, 0, X86_RSP, X86_NOREG, -128, 0 },
    { "sub %rax,%rsp", { 0x48, 0x29, 0xc4 }, 3, 0x29, X86_RAX, X86_RSP, X86_NOREG, 0, 0 },
    { "mov %rbx,%rsp", { 0x48, 0x89, 0xdc }, 3, 0x89, X86_RBX, X86_RSP, X86_NOREG, 0, 0 },
    { "orq $0,(%rsp)", { 0x48, 0x83, 0x0c, 0x24, 0x00 }, 5, 0x83, 1, X86_RSP, X86_RSP, 0, 0 },
    { "orq $0,0xff8(%rsp)", { 0x48, 0x83, 0x8c, 0x24, 0xf8, 0x0f, 0, 0, 0 }, 9, 0x83, 1, X86_RSP, X86_RSP, 0, 0xff8 },
    { "movq $0,(%rsp)", { 0x48, 0xc7, 0x04, 0x24, 0, 0, 0, 0 }, 8, 0xc7, 0, X86_RSP, X86_RSP, 0, 0 },
    { "lea -0x4000(%rsp),%r11", { 0x4c, 0x8d, 0x9c, 0x24, 0x00, 0xc0, 0xff, 0xff }, 8, 0x8d, X86_R11, X86_RSP, X86_RSP,
      0, -0x4000 },
    { "cmp %r11,%rsp", { 0x4c, 0x39, 0xdc }, 3, 0x39, X86_R11, X86_RSP, X86_NOREG, 0, 0 },
    { "mov 0x10(%rip),%rax", { 0x48, 0x8b, 0x05, 0x10, 0, 0, 0 }, 7, 0x8b, X86_RAX, 5, X86_NOREG, 0, 0x10 },
    { "movabs $imm64,%rax", { 0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8 }, 10, 0xb8, 0, 0, X86_NOREG, 0x0807060504030201, 0 },
    { "mov $imm16,%ax", { 0x66, 0xb8, 0x34, 0x12 }, 4, 0xb8, 0, 0, X86_NOREG, 0x1234, 0 },
    { "endbr64", { 0xf3, 0x0f, 0x1e, 0xfa }, 4, 0x1e, 7, 2, X86_NOREG, 0, 0 },
    { "vpxor %ymm0,%ymm0,%ymm0", { 0xc5, 0xfd, 0xef, 0xc0 }, 4, 0xef, 0, 0, X86_NOREG, 0, 0 },
    { "vmovdqu64 0x40(%rsi),%zmm1", { 0x62, 0xf1, 0xfe, 0x48, 0x6f, 0x4e, 0x01 }, 7, 0x6f, 1, 6, X86_RSI, 0, 1 },
    { "pshufd $0x1b,%xmm1,%xmm0", { 0x66, 0x0f, 0x70, 0xc1, 0x1b }, 5, 0x70, 0, 1, X86_NOREG, 0x1b, 0 },
    { "enter $0x10,$0", { 0xc8, 0x10, 0x00, 0x00 }, 4, 0xc8, 0, 0, X86_NOREG, 0x10, 0 },
};

static void check_known(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct known *k = &cases[i];
        struct x86_insn in;

        fprintf(stderr, "decoding %s\n", k->what);
        CHECK_EQ(x86_decode(k->bytes, k->len, &in), k->len);
        CHECK_EQ(in.op, k->op);
        if (in.has_modrm) {
            CHECK_EQ(in.reg, k->reg);
            CHECK_EQ(in.rm, k->rm);
            CHECK_EQ(in.base, k->base);
            CHECK_EQ(in.disp, k->disp);
        }
        CHECK_EQ(in.imm, k->imm);
        CHECK_EQ(x86_decode(k->bytes, k->len - 1, &in), 0); /* cut short */
    }
}

/* Compares lengths with every instruction objdump prints; returns how many it compared. */
static long check_objdump(const char *path)
{
    char cmd[4096], line[1024];
    long n = 0, bad = 0;
    FILE *f;

    snprintf(cmd, sizeof cmd, "objdump -d --insn-width=16 '%s' 2>/dev/null", path);
    f = popen(cmd, "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        char *bytes = strstr(line, ":\t"), *tab;
        uint8_t b[16];
        unsigned k = 0, v;
        int used;
        struct x86_insn in;

        if (!bytes || !(tab = strchr(bytes + 2, '\t')) || strstr(tab, "(bad)") || strstr(tab, "rex."))
            continue; /* not an instruction line, or bytes objdump cannot decode either */
        *tab = '\0';
        for (char *s = bytes + 2; k < sizeof b && sscanf(s, "%x%n", &v, &used) == 1; s += used)
            b[k++] = (uint8_t)v;
        n++;
        if (x86_decode(b, k, &in) != k && bad++ < 10)
            fprintf(stderr, "%s: length %u, objdump %u: %s %s", path, x86_decode(b, k, &in), k, bytes + 2,
                    tab + 1);
    }
    pclose(f);
    CHECK_EQ(bad, 0);
    return n;
}

int main(int argc, char **argv)
{
    check_known();
    if (system("objdump --version >/dev/null 2>&1")) {
        printf("objdump not found: comparison skipped\n");
        return 0;
    }
    CHECK(check_objdump("/proc/self/exe") > 1000);
    for (int i = 1; i < argc; i++) {
        long n = check_objdump(argv[i]);

        CHECK(n > 0);
        printf("%s: %ld instructions agree with objdump\n", argv[i], n);
    }
    printf("x86 decoder ok\n");
    return 0;
}
