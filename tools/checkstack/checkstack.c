/* SPDX-License-Identifier: MIT */
/*
 * vmstack checkstack: the kernel's scripts/checkstack.pl for user-space
 * binaries.  Lists functions by static frame size, largest first, marks
 * dynamic frames, and flags frames that can jump over a stack guard.
 */
#include "cmd.h"
#include "frames.h"
#include "core/internal.h"
#include "core/json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SUB "checkstack"

struct opts {
    size_t min, guard;
    size_t max_frame;  /* 0: no limit */
    bool fail_clash;   /* --fail-on clash */
    bool json;
    char **paths;
    int npaths;
};

static void help(void)
{
    printf("usage: vmstack checkstack [--min BYTES] [--guard BYTES] [--max-frame BYTES]\n"
           "                          [--fail-on clash] [--json] BINARY...\n\n"
           "Static stack frame sizes of the functions of x86-64 executables and shared\n"
           "libraries, largest first, as the kernel's checkstack.pl.\n\n"
           "  --min BYTES        hide frames smaller than this (default 100); dynamic\n"
           "                     frames are always shown\n"
           "  --guard BYTES      guard size to check against (default vmstack's, 64K)\n"
           "  --max-frame BYTES  exit 1 if a function's frame is larger than BYTES\n"
           "  --fail-on clash    exit 1 if a frame is flagged clash\n"
           "  --json             one JSON object per binary (an array of them for several)\n\n"
           "Sizes take a K or M suffix.  FRAME counts the bytes from the caller's stack\n"
           "pointer down to the function's lowest one: return address, saved registers,\n"
           "locals and outgoing arguments, as GCC's -fstack-usage.  It comes from the\n"
           "call-frame information (.eh_frame or .debug_frame) and, after a frame\n"
           "pointer is set up, from decoding the prologue.\n\n"
           "Flags:\n"
           "  dynamic  the function moves the stack pointer by run-time amounts (alloca,\n"
           "           variable-length arrays); FRAME is its fixed part only\n"
           "  clash    FRAME exceeds the guard and the code does not probe its stack, so\n"
           "           it can jump over the guard into other memory (stack clash); build\n"
           "           with -fstack-clash-protection or use a larger guard\n"
           "  probed   the function touches its stack page by page (stack-clash probes)\n\n"
           "Every FDE of the call-frame information is analysed.  Names come from\n"
           ".symtab, .dynsym or the separate debug file (/usr/lib/debug/.build-id,\n"
           ".gnu_debuglink), else the address; C++ and Rust names are demangled; file:line\n"
           "follows when DWARF has it.  Functions without call-frame information\n"
           "(hand-written assembly) are left out.  Inlined functions count in their\n"
           "callers.  See vmstack-checkstack(1).\n");
}

enum { OPT_MIN = 256, OPT_GUARD, OPT_JSON, OPT_MAX_FRAME, OPT_FAIL_ON };

static const struct option checkstack_options[] = {
    {"min", required_argument, NULL, OPT_MIN},
    {"guard", required_argument, NULL, OPT_GUARD},
    {"json", no_argument, NULL, OPT_JSON},
    {"max-frame", required_argument, NULL, OPT_MAX_FRAME},
    {"fail-on", required_argument, NULL, OPT_FAIL_ON},
    {0},
};

static int size_arg(const char *opt, const char *val, size_t *out)
{
    if (vms__parse_size(val, out) < 0)
        return cmd_usage_error(SUB, "%s %s: not a size; use bytes with an optional K or M suffix", opt, val);
    return 0;
}

static int on_option(void *ctx, int opt, const char *v)
{
    struct opts *o = ctx;

    switch (opt) {
    case OPT_MIN:
        return size_arg("--min", v, &o->min);
    case OPT_GUARD:
        return size_arg("--guard", v, &o->guard);
    case OPT_JSON:
        o->json = true;
        return 0;
    case OPT_MAX_FRAME:
        if (size_arg("--max-frame", v, &o->max_frame))
            return CMD_USAGE;
        if (!o->max_frame)
            return cmd_usage_error(SUB, "--max-frame 0: give a positive number of bytes");
        return 0;
    case OPT_FAIL_ON:
        if (strcmp(v, "clash"))
            return cmd_usage_error(SUB, "--fail-on %s: the only condition is 'clash'", v);
        o->fail_clash = true;
        return 0;
    }
    return CMD_USAGE;
}

/* Options and BINARYs may come in any order. */
static int parse_args(int argc, char **argv, struct opts *o)
{
    const struct cmd_parser parser = { SUB, checkstack_options, false, on_option, o };
    vms_config cfg;
    int first, rc;

    vms_config_defaults(&cfg);
    *o = (struct opts){ .min = 100, .guard = cfg.guard_size };
    if ((rc = cmd_options(&parser, argc, argv, &first)))
        return rc;
    if (first == argc)
        return cmd_usage_error(SUB, "no BINARY given");
    o->paths = argv + first;
    o->npaths = argc - first;
    return 0;
}

static bool is_clash(const struct frame_fn *f, const struct opts *o)
{
    return f->frame > o->guard && !f->probes;
}

static bool shown(const struct frame_fn *f, const struct opts *o)
{
    return f->frame >= o->min || f->dynamic;
}

/* Largest first; equal frames by address. */
static int cmp_frame(const void *a, const void *b)
{
    const struct frame_fn *x = a, *y = b;

    if (x->frame != y->frame)
        return x->frame < y->frame ? 1 : -1;
    return (x->fn->addr > y->fn->addr) - (x->fn->addr < y->fn->addr);
}

static const char *module_name(const char *path)
{
    const char *slash = strrchr(path, '/');

    return slash ? slash + 1 : path;
}

static void print_text(const char *path, const struct frames *fr, const struct opts *o)
{
    size_t clashes = 0;

    printf("# %s: %zu functions (symbols from %s, frames from %s", path, fr->n, fr->elf.symtab, fr->cfi);
    if (fr->nocfi)
        printf("; %zu without call-frame information left out", fr->nocfi);
    printf("), guard %zu bytes", o->guard);
    if (o->min)
        printf(", fixed frames under %zu bytes not shown", o->min);
    printf("\n");
    printf("%-18s  %8s  %-14s  %s\n", "ADDRESS", "FRAME", "FLAGS", "FUNCTION [MODULE]");
    for (size_t i = 0; i < fr->n; i++) {
        const struct frame_fn *f = &fr->v[i];
        char flags[32], line[256];

        if (!shown(f, o))
            continue;
        snprintf(flags, sizeof flags, "%s%s%s", f->dynamic ? "dynamic " : "", is_clash(f, o) ? "clash " : "",
                 f->probes ? "probed " : "");
        if (*flags)
            flags[strlen(flags) - 1] = '\0';
        clashes += is_clash(f, o);
        printf("0x%016llx  %8lu  %-14s  %s [%s]", (unsigned long long)f->fn->addr, f->frame, flags,
               f->fn->name, module_name(path));
        if (elf_funcs_line(&fr->elf, f->fn->addr, line, sizeof line))
            printf(" %s", line);
        printf("\n");
    }
    if (clashes)
        printf("# %zu frame%s larger than the %zu-byte guard without stack probes (stack clash):"
               " build with -fstack-clash-protection or use a larger guard\n",
               clashes, clashes == 1 ? "" : "s", o->guard);
}

static void print_json(struct vms_json *j, const char *path, const struct frames *fr, const struct opts *o)
{
    vms__json_obj(j);
    vms__json_key_str(j, "binary", path);
    vms__json_key_str(j, "module", module_name(path));
    vms__json_key_str(j, "symbols", fr->elf.symtab);
    vms__json_key_str(j, "cfi", fr->cfi);
    vms__json_key_uint(j, "guard", o->guard);
    vms__json_key_uint(j, "min", o->min);
    vms__json_key_uint(j, "analysed", fr->n);
    vms__json_key_uint(j, "without_cfi", fr->nocfi);
    vms__json_key(j, "functions");
    vms__json_arr(j);
    for (size_t i = 0; i < fr->n; i++) {
        const struct frame_fn *f = &fr->v[i];
        char line[256];

        if (!shown(f, o))
            continue;
        vms__json_obj(j);
        vms__json_key_str(j, "name", f->fn->name);
        vms__json_key(j, "address");
        vms__json_hex(j, f->fn->addr);
        vms__json_key_uint(j, "frame", f->frame);
        vms__json_key_bool(j, "dynamic", f->dynamic);
        vms__json_key_bool(j, "clash", is_clash(f, o));
        vms__json_key_bool(j, "probes", f->probes);
        vms__json_key_str(j, "source",
                          elf_funcs_line(&fr->elf, f->fn->addr, line, sizeof line) ? line : NULL);
        vms__json_obj_end(j);
    }
    vms__json_arr_end(j);
    vms__json_obj_end(j);
}

/*
 * The CI checks over every function analysed, shown or not: one line on
 * stderr per broken limit.  True if the binary passes.
 */
static bool limits_hold(const char *path, const struct frames *fr, const struct opts *o)
{
    size_t big = 0, clashes = 0;
    const struct frame_fn *worst = NULL;

    for (size_t i = 0; i < fr->n; i++) {
        const struct frame_fn *f = &fr->v[i];
        if (o->max_frame && f->frame > o->max_frame) {
            big++;
            if (!worst || f->frame > worst->frame)
                worst = f;
        }
        clashes += is_clash(f, o);
    }
    if (big)
        fprintf(stderr, "vmstack %s: %s: %zu function%s with a frame above --max-frame %zu, the largest %s (%lu bytes)\n",
                SUB, path, big, big == 1 ? "" : "s", o->max_frame, worst->fn->name, worst->frame);
    if (o->fail_clash && clashes)
        fprintf(stderr, "vmstack %s: %s: %zu stack clash frame%s (--fail-on clash)\n", SUB, path, clashes,
                clashes == 1 ? "" : "s");
    return !big && !(o->fail_clash && clashes);
}

/*
 * Analyses and prints one binary: 0, or CMD_FAIL when it cannot be read
 * (after a one-line message) or breaks a --max-frame / --fail-on limit.
 */
static int check_one(struct vms_json *j, const char *path, const struct opts *o, bool *first)
{
    struct frames fr;
    char err[256];
    int rc;

    if (frames_read(&fr, path, err, sizeof err)) {
        fprintf(stderr, "vmstack %s: %s: %s\n", SUB, path, err);
        return CMD_FAIL;
    }
    qsort(fr.v, fr.n, sizeof *fr.v, cmp_frame);
    if (o->json) {
        print_json(j, path, &fr, o);
    } else {
        printf("%s", *first ? "" : "\n");
        print_text(path, &fr, o);
    }
    *first = false;
    rc = limits_hold(path, &fr, o) ? CMD_OK : CMD_FAIL;
    frames_free(&fr);
    return rc;
}

int cmd_checkstack(int argc, char **argv)
{
    struct opts o;
    struct vms_json j;
    char buf[4096];
    bool first = true;
    int rc;

    if ((rc = parse_args(argc, argv, &o)) == CMD_HELP) {
        help();
        return CMD_OK;
    }
    if (rc)
        return CMD_USAGE;
    vms__json_init(&j, buf, sizeof buf, vms__json_sink_file, stdout, true);
    if (o.json && o.npaths > 1)
        vms__json_arr(&j);
    for (int i = 0; i < o.npaths; i++)
        if (check_one(&j, o.paths[i], &o, &first))
            rc = CMD_FAIL;
    if (o.json && o.npaths > 1)
        vms__json_arr_end(&j);
    if (o.json && (!first || o.npaths > 1) && vms__json_end(&j)) {
        fprintf(stderr, "vmstack %s: cannot write the output: %s\n", SUB, strerror(errno));
        rc = CMD_FAIL;
    }
    return rc;
}
