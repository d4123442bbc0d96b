/* SPDX-License-Identifier: MIT */
/*
 * Frame sizes from call-frame information, as checkstack.pl gets them from
 * disassembly.  The CFI states, for every instruction, how to find the CFA
 * (the stack pointer before the call).  While the rule is "CFA = rsp + N",
 * N is exactly the stack in use at that instruction, so the largest N is
 * the frame.  Once a frame pointer is set up the rule becomes
 * "CFA = rbp + 16" and stops following rsp: then the prologue's own
 * instructions (pushes, "sub $N,%rsp", probe loops) are decoded from there.
 * A sweep over each function's instructions finds run-time stack-pointer
 * arithmetic (alloca, VLA: dynamic) and stack probes.
 */
#include "frames.h"

#include "a64insn.h"
#include "x86insn.h"

#include <dwarf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* DWARF register numbers of x86-64 (not the hardware numbers). */
enum { DWARF_RBP = 6, DWARF_RSP = 7 };

/* Instructions decoded after the frame pointer is set up, at most. */
#define PROLOGUE_MAX 64

/* The CFA rule of the CFI row that holds addr, if it is "register + offset". */
struct cfa_row {
    Dwarf_Addr start, end; /* addresses the row applies to */
    int reg;               /* DWARF register, or -1 for an expression */
    int64_t off;
};

static bool cfa_row_in(Dwarf_CFI *cfi, uint64_t addr, struct cfa_row *row)
{
    Dwarf_Frame *frame;
    Dwarf_Op *ops;
    size_t nops;

    if (!cfi || dwarf_cfi_addrframe(cfi, addr, &frame))
        return false;
    dwarf_frame_info(frame, &row->start, &row->end, NULL);
    row->reg = -1;
    if (!dwarf_frame_cfa(frame, &ops, &nops) && nops == 1) {
        if (ops[0].atom == DW_OP_bregx) {
            row->reg = (int)ops[0].number;
            row->off = (int64_t)ops[0].number2;
        } else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
            row->reg = ops[0].atom - DW_OP_breg0;
            row->off = (int64_t)ops[0].number;
        }
    }
    free(frame);
    return true;
}

static bool cfa_row(const struct frames *fr, uint64_t addr, struct cfa_row *row)
{
    return cfa_row_in(fr->eh, addr, row) || cfa_row_in(fr->dbg, addr, row);
}

/* ---- what an instruction does to the stack pointer ---- */

static bool is_sub_imm_rsp(const struct x86_insn *in)
{
    return in->map == 0 && !in->vex && in->rex_w && (in->op == 0x81 || in->op == 0x83) &&
           x86_rm_is_reg(in, X86_RSP) && (in->reg & 7) == 5;
}

/* A change of rsp by a constant: push, pop, add/sub $imm, lea N(%rsp). Sets *delta (negative: grows). */
static bool sp_adjust(const struct x86_insn *in, int64_t *delta)
{
    if (in->map != 0 || in->vex)
        return false;
    if ((in->op >= 0x50 && in->op <= 0x57) || in->op == 0x68 || in->op == 0x6a || in->op == 0x9c ||
        (in->op == 0xff && (in->reg & 7) == 6 && in->has_modrm)) {
        *delta = -8;
        return true;
    }
    if ((in->op >= 0x58 && in->op <= 0x5f) || in->op == 0x9d || (in->op == 0x8f && (in->reg & 7) == 0)) {
        *delta = 8;
        return true;
    }
    if (in->rex_w && (in->op == 0x81 || in->op == 0x83) && x86_rm_is_reg(in, X86_RSP) &&
        ((in->reg & 7) == 5 || (in->reg & 7) == 0)) {
        *delta = (in->reg & 7) == 5 ? -in->imm : in->imm;
        return true;
    }
    if (in->rex_w && in->op == 0x8d && in->reg == X86_RSP && x86_mem_base(in, X86_RSP) &&
        in->index == X86_NOREG) {
        *delta = in->disp;
        return true;
    }
    return false;
}

/*
 * rsp set from a value known only at run time: "sub %rax,%rsp" (GCC's
 * alloca and VLA), "mov %rax,%rsp" (Clang's), or a load of rsp.  Restoring
 * rsp from the frame pointer (epilogues) does not count.
 */
static bool sp_variable(const struct x86_insn *in)
{
    if (in->map != 0 || in->vex || !in->rex_w || !in->has_modrm)
        return false;
    switch (in->op) {
    case 0x29: case 0x01: /* sub/add reg, rsp */
        return x86_rm_is_reg(in, X86_RSP);
    case 0x2b: case 0x03: /* sub/add r/m, rsp */
        return in->reg == X86_RSP;
    case 0x89: /* mov reg, rsp */
        return x86_rm_is_reg(in, X86_RSP) && in->reg != X86_RBP && in->reg != X86_RSP;
    case 0x8b: /* mov r/m, rsp */
        return in->reg == X86_RSP && !(in->mod == 3 && (in->rm == X86_RBP || in->rm == X86_RSP));
    case 0x8d: /* lea, other than N(%rsp) and N(%rbp) */
        return in->reg == X86_RSP && !(in->base == X86_RBP && in->index == X86_NOREG) &&
               !(in->base == X86_RSP && in->index == X86_NOREG);
    case 0x87: /* xchg */
        return in->reg == X86_RSP || x86_rm_is_reg(in, X86_RSP);
    default:
        return false;
    }
}

/*
 * A stack probe: "orq $0,N(%rsp)" (GCC), "xorq $0,(%rsp)" (Clang, dynamic
 * allocations): read-modify-writes that change nothing but touch the page.
 * Clang probes fixed frames with "movq $0,(%rsp)" right after each
 * "sub $4096,%rsp"; elsewhere such a store is an ordinary one.
 */
static bool is_probe(const struct x86_insn *in, bool after_sub)
{
    if (in->map != 0 || in->vex || !x86_mem_base(in, X86_RSP) || in->imm != 0)
        return false;
    if ((in->op == 0x80 || in->op == 0x81 || in->op == 0x83) && ((in->reg & 7) == 1 || (in->reg & 7) == 6))
        return true;
    return after_sub && (in->op == 0xc6 || in->op == 0xc7) && (in->reg & 7) == 0 && in->disp == 0 &&
           in->index == X86_NOREG;
}

/* Calls, jumps, returns and restores of rsp end the prologue. */
static bool ends_prologue(const struct x86_insn *in)
{
    if (in->map != 0 || in->vex)
        return false;
    switch (in->op) {
    case 0xe8: case 0xe9: case 0xeb: case 0xc2: case 0xc3: case 0xc9: case 0xcc: case 0x8f:
        return true;
    case 0xff:
        return (in->reg & 7) >= 2 && (in->reg & 7) <= 5;
    default:
        return (in->op >= 0x58 && in->op <= 0x5f) || sp_variable(in);
    }
}

static bool is_jcc(const struct x86_insn *in)
{
    return !in->vex && ((in->map == 0 && in->op >= 0x70 && in->op <= 0x7f) ||
                        (in->map == 1 && in->op >= 0x80 && in->op <= 0x8f));
}

static bool is_cmp_r11_rsp(const struct x86_insn *in)
{
    return in->map == 0 && !in->vex && in->rex_w && (in->op == 0x39 || in->op == 0x3b) && in->mod == 3 &&
           ((in->reg == X86_R11 && in->rm == X86_RSP) || (in->reg == X86_RSP && in->rm == X86_R11));
}

/*
 * Probe loops move rsp down a page at a time until it equals a limit held
 * in r11: "lea -N(%rsp),%r11" (GCC) or "mov %rsp,%r11; sub $N,%r11" (Clang),
 * then "cmp %r11,%rsp" closes the loop.  Follows r11 in frame depth units
 * (bytes below the CFA); returns the new depth of rsp.
 */
static int64_t track_r11(const struct x86_insn *in, int64_t depth, int64_t *r11)
{
    if (in->map != 0 || in->vex || !in->rex_w || !in->has_modrm)
        return depth;
    if (in->op == 0x8d && in->reg == X86_R11 && x86_mem_base(in, X86_RSP) && in->index == X86_NOREG)
        *r11 = depth - in->disp;
    else if ((in->op == 0x89 && in->reg == X86_RSP && x86_rm_is_reg(in, X86_R11)) ||
             (in->op == 0x8b && in->reg == X86_R11 && x86_rm_is_reg(in, X86_RSP)))
        *r11 = depth;
    else if ((in->op == 0x81 || in->op == 0x83) && x86_rm_is_reg(in, X86_R11) && *r11 >= 0 &&
             ((in->reg & 7) == 5 || (in->reg & 7) == 0))
        *r11 += (in->reg & 7) == 5 ? in->imm : -in->imm;
    else if (is_cmp_r11_rsp(in) && *r11 >= 0)
        return *r11;
    return depth;
}

/*
 * The deepest rsp of a prologue that runs after "mov %rsp,%rbp", where the
 * CFI row starting at start says CFA = rbp + depth (so rsp is depth bytes
 * below the CFA there).  The only branch a prologue has is the one closing
 * a probe loop; any other starts the body (for instance the probe loop of
 * a variable-length array, which must not count as fixed frame).
 */
static int64_t prologue_depth(const struct elf_func *fn, uint64_t start, int64_t depth, const uint8_t **body)
{
    const uint8_t *p, *end;
    int64_t max = depth, r11 = -1, delta;
    bool loop_closed = false;
    struct x86_insn in;

    if (!fn->code || start < fn->addr || start >= fn->addr + fn->size)
        return depth;
    p = fn->code + (start - fn->addr);
    end = fn->code + fn->size;
    for (int i = 0; i < PROLOGUE_MAX && p < end; i++) {
        unsigned len = x86_decode(p, (size_t)(end - p), &in);

        if (!len || ends_prologue(&in) || (is_jcc(&in) && !loop_closed))
            break;
        loop_closed = is_cmp_r11_rsp(&in);
        if (sp_adjust(&in, &delta))
            depth -= delta;
        else
            depth = track_r11(&in, depth, &r11);
        if (depth > max)
            max = depth;
        p += len;
    }
    *body = p;
    return max;
}

/* ---- registers that hold a copy of rsp ---- */

static bool is_call(const struct x86_insn *in)
{
    return in->map == 0 && !in->vex && (in->op == 0xe8 || (in->op == 0xff && in->has_modrm && (in->reg & 7) == 2));
}

/* "mov %rsp,%reg": reg now holds the stack pointer; -1 if in is not such a copy. */
static int rsp_copy(const struct x86_insn *in)
{
    if (in->map != 0 || in->vex || !in->rex_w || !in->has_modrm || in->mod != 3)
        return -1;
    if (in->op == 0x89 && in->reg == X86_RSP && in->rm != X86_RSP)
        return in->rm;
    if (in->op == 0x8b && in->rm == X86_RSP && in->reg != X86_RSP)
        return in->reg;
    return -1;
}

/* "mov %reg,%rsp" from a register that still holds a copy: the stack pointer restored, not moved. */
static bool rsp_restore(const struct x86_insn *in, const bool *copy)
{
    if (in->map != 0 || in->vex || !in->rex_w || !in->has_modrm || in->mod != 3)
        return false;
    return (in->op == 0x89 && in->rm == X86_RSP && copy[in->reg & 15]) ||
           (in->op == 0x8b && in->reg == X86_RSP && copy[in->rm & 15]);
}

/* Forgets the copies an instruction may overwrite (conservatively: a copy forgotten is only "dynamic"). */
static void clobber(const struct x86_insn *in, bool *copy)
{
    static const uint8_t rm_dest[] = {0x01, 0x09, 0x11, 0x19, 0x21, 0x29, 0x31, 0x81, 0x83, 0x87, 0x89,
                                      0xc1, 0xc7, 0xd1, 0xd3, 0xf7, 0xff};
    static const uint8_t reg_dest[] = {0x03, 0x0b, 0x13, 0x1b, 0x23, 0x2b, 0x33, 0x63, 0x69, 0x6b, 0x87, 0x8b, 0x8d};

    if (is_call(in)) {
        /* A call: the caller-saved registers. */
        for (unsigned r = 0; r < 12; r++)
            if (r != X86_RBX && r != X86_RSP && r != X86_RBP)
                copy[r] = false;
        return;
    }
    if (in->map != 0 || in->vex || !in->has_modrm) {
        if (in->map == 0 && !in->vex && ((in->op >= 0x58 && in->op <= 0x5f) || (in->op >= 0xb8 && in->op <= 0xbf)))
            copy[in->op & 7] = copy[(in->op & 7) + 8] = false; /* pop, mov $imm: REX.B not known here */
        else if (in->map == 1 || in->vex)
            memset(copy, 0, 16 * sizeof *copy);
        return;
    }
    if (in->mod == 3 && memchr(rm_dest, in->op, sizeof rm_dest))
        copy[in->rm & 15] = false;
    if (memchr(reg_dest, in->op, sizeof reg_dest))
        copy[in->reg & 15] = false;
}

/* Ends a run of argument pushes: the frame is reset (leave, restores from rbp) or left (ret, jmp). */
static bool resets_pushes(const struct x86_insn *in)
{
    if (in->map != 0 || in->vex)
        return false;
    switch (in->op) {
    case 0xc9: case 0xc3: case 0xc2: case 0xe9: case 0xeb:
        return true;
    case 0x89: case 0x8b: case 0x8d:
        return in->rex_w && in->has_modrm && (in->op == 0x89 ? x86_rm_is_reg(in, X86_RSP) : in->reg == X86_RSP);
    case 0xff:
        return (in->reg & 7) == 4 || (in->reg & 7) == 5;
    default:
        return false;
    }
}

/*
 * Sweeps the whole function for run-time stack-pointer arithmetic and
 * probes.  Moving rsp back to a copy of it taken before ("mov %rsp,%r13"
 * ... "mov %r13,%rsp") is a restore, not a dynamic frame.  After body (the
 * end of a frame-pointer prologue; NULL when the CFI follows rsp through
 * the whole function), arguments pushed for calls are counted into the
 * frame, as -fstack-usage counts them: the CFI no longer says so there.
 */
static void sweep(struct frame_fn *f, const uint8_t *body)
{
    const struct elf_func *fn = f->fn;
    const uint8_t *p = fn->code, *end;
    bool after_sub = false, copy[16] = {false};
    int64_t pushed = 0, most = 0, delta;
    struct x86_insn in;
    unsigned len;
    int r;

    if (!p)
        return; /* no bytes in the file (a corrupt size must not make an end from NULL) */
    end = p + fn->size;
    for (; p < end && (len = x86_decode(p, (size_t)(end - p), &in)); p += len) {
        bool restore = rsp_restore(&in, copy);
        f->dynamic |= sp_variable(&in) && !restore;
        f->probes |= is_probe(&in, after_sub);
        after_sub = is_sub_imm_rsp(&in);
        if (body && p >= body) {
            if (restore || resets_pushes(&in))
                pushed = 0;
            else if (sp_adjust(&in, &delta))
                pushed = pushed - delta > 0 ? pushed - delta : 0;
            else if (is_call(&in) && pushed > most)
                most = pushed; /* what is pushed counts where a call takes it as arguments */
        }
        if ((r = rsp_copy(&in)) >= 0)
            copy[r] = true;
        else
            clobber(&in, copy);
    }
    f->frame += (unsigned long)most;
}

/*
 * Fills f from the CFI rows of its function; false if the function has no
 * CFI.  Prologues are decoded where the CFA moves from rsp to rbp within
 * the function, not where a function starts with rbp (split-off cold parts).
 */
static bool analyse(const struct frames *fr, struct frame_fn *f)
{
    const struct elf_func *fn = f->fn;
    uint64_t a = fn->addr, end = fn->addr + fn->size;
    int64_t max = 8; /* the return address */
    const uint8_t *body = NULL;
    struct cfa_row row;
    int prev;

    if (!cfa_row(fr, a, &row))
        return false;
    prev = row.reg;
    do {
        int64_t depth = row.off;

        /* Only the first switch to rbp is the prologue: later ones restore the CFI state after a ret. */
        if (row.reg == DWARF_RBP && prev == DWARF_RSP && !body)
            depth = prologue_depth(fn, row.start > a ? row.start : a, row.off, &body);
        if ((row.reg == DWARF_RSP || row.reg == DWARF_RBP) && depth > max)
            max = depth;
        prev = row.reg;
        a = row.end > a ? row.end : a + 1;
    } while (a < end && cfa_row(fr, a, &row));
    f->frame = (unsigned long)max;
    sweep(f, body);
    return true;
}

/*
 * aarch64: no return address is pushed, and -fstack-usage is the largest
 * CFA offset from sp.  Where the CFA follows x29 (alloca, VLA), the
 * prologue's own fixed frame is decoded.
 */
static bool analyse_a64(const struct frames *fr, struct frame_fn *f)
{
    const struct elf_func *fn = f->fn;
    uint64_t a = fn->addr, end = fn->addr + fn->size;
    int64_t max = 0;
    struct cfa_row row;

    if (!cfa_row(fr, a, &row))
        return false;
    do {
        int64_t depth = row.off;

        if (row.reg == A64_DWARF_FP) {
            int64_t p = a64_prologue_frame(fn->code, fn->size);
            depth = p > depth ? p : depth;
        }
        if ((row.reg == A64_DWARF_SP || row.reg == A64_DWARF_FP) && depth > max)
            max = depth;
        a = row.end > a ? row.end : a + 1;
    } while (a < end && cfa_row(fr, a, &row));
    f->frame = (unsigned long)max;
    a64_sweep(fn->code, fn->size, &f->dynamic, &f->probes);
    return true;
}

static int fail(struct frames *fr, char *err, size_t errlen, const char *msg)
{
    snprintf(err, errlen, "%s", msg);
    frames_free(fr);
    return -1;
}

static const char *check_kind(Elf *elf)
{
    GElf_Ehdr eh;

    if (!gelf_getehdr(elf, &eh))
        return "cannot read its ELF header";
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || (eh.e_machine != EM_X86_64 && eh.e_machine != EM_AARCH64))
        return "not an x86-64 or aarch64 ELF file (checkstack decodes their code only)";
    if (eh.e_type == ET_REL)
        return "is an object file: link it first (checkstack reads executables and shared libraries)";
    if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
        return "not an executable or shared library";
    return NULL;
}

int frames_read(struct frames *fr, const char *path, char *err, size_t errlen)
{
    const char *why;

    GElf_Ehdr eh;

    memset(fr, 0, sizeof *fr);
    if (elf_funcs_open(&fr->elf, path, err, errlen))
        return -1;
    if ((why = check_kind(fr->elf.elf)))
        return fail(fr, err, errlen, why);
    fr->a64 = gelf_getehdr(fr->elf.elf, &eh) && eh.e_machine == EM_AARCH64;
    fr->eh = dwarf_getcfi_elf(fr->elf.elf);
    fr->dw = dwarf_begin_elf(fr->elf.elf, DWARF_C_READ, NULL);
    fr->dbg = fr->dw ? dwarf_getcfi(fr->dw) : NULL;
    fr->cfi = fr->eh && fr->dbg ? ".eh_frame+.debug_frame" : fr->eh ? ".eh_frame" : ".debug_frame";
    fr->v = calloc(fr->elf.n, sizeof *fr->v);
    if (!fr->v)
        return fail(fr, err, errlen, "out of memory");
    for (size_t i = 0; i < fr->elf.n; i++) {
        fr->v[fr->n].fn = &fr->elf.v[i];
        if ((fr->a64 ? analyse_a64 : analyse)(fr, &fr->v[fr->n]))
            fr->n++;
        else
            fr->nocfi++;
    }
    if (!fr->n)
        return fail(fr, err, errlen, "has no call-frame information (.eh_frame/.debug_frame): "
                                     "rebuild with -fasynchronous-unwind-tables");
    return 0;
}

void frames_free(struct frames *fr)
{
    free(fr->v);
    if (fr->eh)
        dwarf_cfi_end(fr->eh);
    if (fr->dw)
        dwarf_end(fr->dw);
    if (fr->elf.elf)
        elf_funcs_close(&fr->elf);
    memset(fr, 0, sizeof *fr);
}
