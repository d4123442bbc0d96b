/* SPDX-License-Identifier: MIT */
/*
 * 'vmstack run [options] -- PROG ARGS': runs an unmodified, dynamically
 * linked program with libvmstack-preload.so preloaded.  The options reach
 * the preload library as VMSTACK_RUN_* variables (src/preload/preload.h).
 * A wrapper in the manner of env and nice: it checks everything it can,
 * then execs the program, which keeps this process's pid, parent, signals
 * and status.  What must outlive the program (the table after a fatal
 * signal) is the preload's keeper's (src/preload/keeper.c).  Its own
 * failures exit as env's do: 125 when vmstack fails or is used wrongly,
 * 126 when the program is found but cannot run, 127 when it is not found.
 *
 * The preload library is looked for next to the vmstack binary (the build
 * tree) and then at VMS_PRELOAD_REL relative to it (the installed layout,
 * BINDIR/../LIBDIR/vmstack), both from /proc/self/exe.
 */
#include "run.h"
#include "core/internal.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/lib-names.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define PRELOAD_NAME "libvmstack-preload.so"
#define RUN_DEFAULT_GUARD "64K"

/* The command its messages name: "run", or "trace", which runs its program here (run_args.sub). */
static const char *sub = "run";

static void help(void)
{
    printf("usage: vmstack run [OPTIONS] [--] PROG [ARGS...]\n\n"
           "Runs an unmodified, dynamically linked program with guarded thread stacks:\n"
           "every thread made by pthread_create runs on a vmstack stack (or keeps the\n"
           "stack it brings, reported as \"user stack\"), every thread and the main one\n"
           "get an alternate signal stack, and a stack overflow in any of them gives\n"
           "an overflow report before the process dies by SIGSEGV.  At exit a table\n"
           "shows each thread's peak stack use.  The program replaces this process\n"
           "(same pid, same parent, same signals); the exit status is the program's,\n"
           "or 125 when vmstack fails or is used wrongly, 126 when PROG is found but\n"
           "cannot run, 127 when it is not found.\n\n"
           "Options:\n"
           "  --guard SIZE          guard below each thread stack (default " RUN_DEFAULT_GUARD ")\n"
           "  --stack-size SIZE     stack size of threads that ask for none (default:\n"
           "                        glibc's, from ulimit -s); find the smallest safe one\n"
           "  --json                the table as JSON\n"
           "  --output FILE         the table replaces FILE (default: stderr)\n"
           "  -q, --quiet           no table on stderr at exit unless an overflow was\n"
           "                        reported (--output, --plot, --folded still written)\n"
           "  --report-signal SIG   also print the table on signal SIG (e.g. USR1); the\n"
           "                        program only, not the processes it starts\n"
           "  --allow-unprotected   run a setuid, setgid or file-capability program\n"
           "                        anyway, without vmstack (the dynamic loader ignores\n"
           "                        LD_PRELOAD in secure-execution mode)\n"
           "  --plot FILE.png|.svg  also draw each thread's peak as a share of its\n"
           "                        stack with gnuplot, as PNG or SVG by FILE's name\n\n"
           "SIZE takes a K, M or G suffix and is a multiple of the page size.  Every\n"
           "VMSTACK_* variable of the environment is checked before the program starts.\n"
           "man vmstack-run(1) has the details.\n");
}

/*
 * Without --guard: the user's VMSTACK_GUARD_SIZE when set, else the run's
 * default.  It goes to the preload library as its own variable, so that a
 * program that uses vmstack itself keeps its own configuration.
 */
static const char *guard_default(void)
{
    const char *v = getenv("VMSTACK_GUARD_SIZE");

    return v && *v ? v : RUN_DEFAULT_GUARD;
}

/* ---- checking the options ---- */

static int check_size(const char *opt, const char *v, size_t min, size_t max)
{
    size_t n, pg = (size_t)sysconf(_SC_PAGESIZE);

    if (vms__parse_size(v, &n))
        return cmd_usage_error(sub, "%s %s: not a size (bytes with an optional K, M or G suffix)", opt, v);
    if (n % pg || n < min || n > max)
        return cmd_usage_error(sub, "%s %s: must be a multiple of %zu from %zu KiB to %zu MiB", opt, v, pg,
                               min >> 10, max >> 20);
    return 0;
}

static int parse_signal(const char *s)
{
    char *end;
    long n;

    if (!strncmp(s, "SIG", 3))
        s += 3;
    for (int sig = 1; sig < NSIG; sig++) {
        const char *abbrev = sigabbrev_np(sig);
        if (abbrev && !strcmp(abbrev, s))
            return sig;
    }
    n = strtol(s, &end, 10);
    return *s && !*end && n > 0 && n < NSIG ? (int)n : -1;
}

static int check_signal(struct run_args *a, const char *v)
{
    (void)a;
    int sig = parse_signal(v);

    if (sig < 0)
        return cmd_usage_error(sub, "--report-signal %s: not a signal name or number", v);
    if (sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS)
        return cmd_usage_error(sub, "--report-signal %s: cannot be caught or is taken for overflows", v);
    return 0;
}

/*
 * The absolute path FILE (of option opt) will have, after checking that
 * its directory takes new files (FILE is replaced by a rename), or, for
 * what is not a regular file (/dev/stdout, a FIFO), that it can be
 * written.
 */
static int check_file(const char *opt, const char *v, char *abs, size_t n)
{
    static char dir[PATH_MAX]; /* not on the stack, as cmd_run's paths */
    const char *slash = strrchr(v, '/');
    struct stat sb;

    if (!*v || (slash && !slash[1]))
        return cmd_usage_error(sub, "%s '%s': not a file name", opt, v);
    if (stat(v, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        if (S_ISDIR(sb.st_mode) || access(v, W_OK))
            return cmd_usage_error(sub, "%s %s: cannot be written", opt, v);
        return (size_t)snprintf(abs, n, "%s", v) < n ? 0 : cmd_usage_error(sub, "%s %s: path too long", opt, v);
    }
    if (v[0] == '/')
        snprintf(dir, sizeof dir, "%.*s", slash == v ? 1 : (int)(slash - v), v);
    else if (!getcwd(dir, sizeof dir))
        return cmd_usage_error(sub, "%s %s: cannot tell the current directory", opt, v);
    else if (slash)
        snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/%.*s", (int)(slash - v), v);
    if (access(dir, W_OK | X_OK))
        return cmd_usage_error(sub, "%s %s: cannot create files in %s: %s", opt, v, dir, strerror(errno));
    if ((size_t)(v[0] == '/' ? snprintf(abs, n, "%s", v) : snprintf(abs, n, "%s/%s", dir, slash ? slash + 1 : v)) >= n)
        return cmd_usage_error(sub, "%s %s: path too long", opt, v);
    return 0;
}

/* --plot: 0 if FILE's name says a format gnuplot draws (.png, .svg) and gnuplot is on PATH, else the usage error. */
static int gnuplot_ready(struct run_args *a, const char *v)
{
    size_t n = strlen(v);

    (void)a;
    if (n <= 4 || (strcasecmp(v + n - 4, ".png") && strcasecmp(v + n - 4, ".svg")))
        return cmd_usage_error(sub, "--plot %s: the picture's format comes from its name: FILE.png or FILE.svg", v);
    if (cmd_on_path("gnuplot"))
        return 0;
    return cmd_usage_error(sub, "--plot needs gnuplot, which is not on PATH (Debian: apt-get install gnuplot-nox)");
}

static int check_guard(struct run_args *a, const char *v)
{
    (void)a;
    return check_size("--guard", v, (size_t)sysconf(_SC_PAGESIZE), VMS_MAX_GUARD);
}

static int check_stack_size(struct run_args *a, const char *v)
{
    (void)a;
    return check_size("--stack-size", v, VMS_MIN_STACK, VMS_MAX_STACK);
}

/* run's options, which trace has too. */
static const struct run_option run_options[] = {
    RUN_ARG("guard", RUN_OPT_GUARD, guard, check_guard),
    RUN_ARG("stack-size", RUN_OPT_STACK_SIZE, stack_size, check_stack_size),
    RUN_FLAG("json", RUN_OPT_JSON, json),
    RUN_ARG("output", 'o', output, NULL),
    RUN_ARG("report-signal", RUN_OPT_REPORT_SIGNAL, report_signal, check_signal),
    RUN_FLAG("allow-unprotected", RUN_OPT_ALLOW_UNPROTECTED, allow_unprotected),
    RUN_ARG("plot", RUN_OPT_PLOT, plot, gnuplot_ready),
    RUN_FLAG("quiet", 'q', quiet),
    {{0}, 0, NULL},
};

static const struct run_option *find_option(const struct run_option *t, int val)
{
    for (; t->opt.name; t++)
        if (t->opt.val == val)
            return t;
    return NULL;
}

static int on_option(void *ctx, int opt, const char *v)
{
    struct run_args *a = ctx;
    const struct run_option *o = find_option(run_options, opt);

    if (!o && (o = find_option(trace_options, opt)) && !a->trace)
        return cmd_usage_error(sub, "--%s is an option of 'vmstack trace'", o->opt.name);
    if (!o)
        return CMD_USAGE;
    if (o->opt.has_arg)
        *(const char **)((char *)a + o->field) = v;
    else
        *(bool *)((char *)a + o->field) = true;
    return o->check ? o->check(a, v) : 0;
}

/* run's options, then trace's: getopt's table, of at most max entries with the zero one. */
static void all_options(struct option *out, size_t max)
{
    size_t n = 0;

    for (const struct run_option *o = run_options; o->opt.name && n < max - 1; o++)
        out[n++] = o->opt;
    for (const struct run_option *o = trace_options; o->opt.name && n < max - 1; o++)
        out[n++] = o->opt;
    out[n] = (struct option){0};
}

static int parse(int argc, char **argv, struct run_args *a)
{
    struct option longopts[24];
    const struct cmd_parser parser = { sub, longopts, true, on_option, a };
    int rc;

    all_options(longopts, sizeof longopts / sizeof longopts[0]);
    rc = cmd_options(&parser, argc, argv, &a->prog);
    if (rc == CMD_HELP)
        a->help = true;
    else if (rc)
        return rc;
    else if (a->prog >= argc)
        return cmd_usage_error(sub, "no program given");
    else if (a->json && (a->folded || a->flamegraph))
        return cmd_usage_error(sub, "%s reads the text report: not with --json", a->folded ? "--folded" : "--flamegraph");
    return 0;
}

/* ---- checking the environment ---- */

/*
 * The library's settings from VMSTACK_* variables, checked here, before
 * the program starts: the preload library could only run the program
 * without vmstack (and say so) when one is wrong.  Each variable alone on
 * the defaults first, so that the message names the one that is wrong.
 */
static const char *const config_vars[] = {
    "VMSTACK_STACK_SIZE", "VMSTACK_GUARD_SIZE", "VMSTACK_GUARD", "VMSTACK_RESERVE",
    "VMSTACK_CACHE",      "VMSTACK_POOL",       "VMSTACK_SCRUB",
};

static int check_config_var(const char *name, const char *sub)
{
    const char *v = getenv(name);
    vms_config cfg;
    char *saved[sizeof config_vars / sizeof config_vars[0]];
    int rc = 0;

    if (!v)
        return 0;
    /* Only this variable set: the others' values must not be blamed on it. */
    for (size_t i = 0; i < sizeof config_vars / sizeof config_vars[0]; i++) {
        const char *o = getenv(config_vars[i]);
        saved[i] = o && strcmp(config_vars[i], name) ? strdup(o) : NULL;
        if (saved[i])
            unsetenv(config_vars[i]);
    }
    vms_config_defaults(&cfg);
    if (vms_config_from_env(&cfg) || vms__config_check(&cfg)) {
        const char *why = vms_last_error();
        /* The library's sentence may already start with NAME=VALUE. */
        rc = strncmp(why, name, strlen(name)) ? cmd_usage_error(sub, "%s=%s: %s", name, v, why)
                                              : cmd_usage_error(sub, "%s", why);
    }
    for (size_t i = 0; i < sizeof config_vars / sizeof config_vars[0]; i++)
        if (saved[i]) {
            setenv(config_vars[i], saved[i], 1);
            free(saved[i]);
        }
    return rc;
}

static int check_environment(const char *sub)
{
    vms_config cfg;
    int rc;

    for (size_t i = 0; i < sizeof config_vars / sizeof config_vars[0]; i++)
        if ((rc = check_config_var(config_vars[i], sub)))
            return rc;
    vms_config_defaults(&cfg);
    if (vms_config_from_env(&cfg) || vms__config_check(&cfg))
        return cmd_usage_error(sub, "the VMSTACK_* settings do not fit together: %s", vms_last_error());
    return 0;
}

/*
 * Why the program would run in secure-execution mode (AT_SECURE), in which
 * the dynamic loader ignores LD_PRELOAD, so that it would run without
 * vmstack, silently; NULL when it would not: a set-user-ID or
 * set-group-ID file that changes our ids, or file capabilities (the
 * security.capability attribute), which give AT_SECURE to anyone but root.
 */
static const char *secure_execution(const char *path)
{
    struct stat sb;

    if (stat(path, &sb))
        return NULL;
    if ((sb.st_mode & S_ISUID) && sb.st_uid != geteuid())
        return "is set-user-ID";
    if ((sb.st_mode & S_ISGID) && sb.st_gid != getegid())
        return "is set-group-ID";
    if (geteuid() != 0 && getxattr(path, "security.capability", NULL, 0) > 0)
        return "has file capabilities (security.capability)";
    return NULL;
}

/* ---- checking the program ---- */

/* 0 if path is a file this process may execute, else why not, as execve would say. */
static int runnable(const char *path)
{
    struct stat sb;

    if (stat(path, &sb))
        return errno;
    if (S_ISDIR(sb.st_mode))
        return EISDIR;
    if (!S_ISREG(sb.st_mode) || access(path, X_OK))
        return EACCES;
    return 0;
}

/*
 * PROG as given when it has a slash, else the first executable PROG in
 * PATH, into out: 0, or why not (as execvp: a PROG found but not
 * executable is EACCES, none at all ENOENT).
 */
static int find_program(const char *prog, char *out, size_t n)
{
    const char *path = getenv("PATH");
    int why = ENOENT, err;

    if (strchr(prog, '/')) {
        snprintf(out, n, "%s", prog);
        return runnable(out);
    }
    for (const char *p = path && *path ? path : "/usr/local/bin:/usr/bin:/bin"; *p;) {
        size_t len = strcspn(p, ":");
        snprintf(out, n, "%.*s%s%s", (int)len, p, len ? "/" : "", prog);
        if (!(err = runnable(out)))
            return 0;
        if (err != ENOENT && err != ENOTDIR)
            why = err;
        p += len + (p[len] == ':');
    }
    snprintf(out, n, "%s", prog);
    return why;
}

#if defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#define NOT_HOST "is not an arm64 program: the preload library cannot load into it"
#else
#define HOST_MACHINE EM_X86_64
#define NOT_HOST "is not an x86-64 program: the preload library cannot load into it"
#endif

/* NULL if path is a dynamically linked ELF program of this machine, else why not. */
static const char *elf_problem(int fd)
{
    Elf64_Ehdr eh;

    if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG))
        return "is neither an ELF program nor a #! script";
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != HOST_MACHINE)
        return NOT_HOST;
    for (int i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (Elf64_Off)i * eh.e_phentsize)) != (ssize_t)sizeof ph)
            break;
        if (ph.p_type == PT_INTERP)
            return NULL;
    }
    return "is not dynamically linked: LD_PRELOAD cannot reach it";
}

static const char script_answer[] = "is a #! script"; /* file_problem's answer for a script: its interpreter is next */

/*
 * NULL if the file at path is a program the preload library can load into,
 * script_answer (its interpreter's path in interp) for a script, else why not.
 * path may be interp: it is not read after the file is opened.
 */
static const char *file_problem(const char *path, char *interp, size_t n)
{
    char buf[256], *start;
    const char *why;
    ssize_t got;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return "cannot be read";
    got = pread(fd, buf, sizeof buf - 1, 0);
    if (got < 2 || buf[0] != '#' || buf[1] != '!') {
        why = elf_problem(fd);
        close(fd);
        return why;
    }
    close(fd);
    buf[got] = '\0';
    start = buf + 2 + strspn(buf + 2, " \t");
    start[strcspn(start, " \t\n")] = '\0';
    if (start[0] != '/')
        return "is a script without a usable #! interpreter";
    snprintf(interp, n, "%s", start);
    return script_answer;
}

/* The program the kernel runs for path: path itself, or the last #! interpreter (program_problem checked). */
static char program_run[PATH_MAX];

/* NULL if the program can run under the preload library: ELF checked, a script's interpreter too. */
static const char *program_problem(const char *path)
{
    /* Not on the stack: vmstack run may have 16 KiB. */
    static char interp[256], why_interp[sizeof interp + 256];
    const char *why = file_problem(path, interp, sizeof interp);

    snprintf(program_run, sizeof program_run, "%s", why == script_answer ? interp : path);

    for (int depth = 0; why == script_answer; depth++) {
        if (depth == 5) /* deeper than the kernel follows interpreters */
            return "is a script without a usable #! interpreter";
        snprintf(program_run, sizeof program_run, "%s", interp);
        if ((why = file_problem(interp, interp, sizeof interp)) && why != script_answer) {
            snprintf(why_interp, sizeof why_interp, "is a script whose interpreter %s cannot run under vmstack %s: "
                     "it %s", interp, sub, why);
            return why_interp;
        }
    }
    return why;
}

/* ---- the environment of the program ---- */

/* The file offset of virtual address v, from the PT_LOAD that holds it; 0 if none does. */
static off_t file_offset(int fd, const Elf64_Ehdr *eh, Elf64_Addr v)
{
    for (int i = 0; i < eh->e_phnum; i++) {
        Elf64_Phdr ph;
        if (pread(fd, &ph, sizeof ph, (off_t)(eh->e_phoff + (Elf64_Off)i * eh->e_phentsize)) != (ssize_t)sizeof ph)
            return 0;
        if (ph.p_type == PT_LOAD && v >= ph.p_vaddr && v - ph.p_vaddr < ph.p_filesz)
            return (off_t)(v - ph.p_vaddr + ph.p_offset);
    }
    return 0;
}

/* Whether a DT_NEEDED name is a sanitizer runtime that insists on being the first library. */
static bool sanitizer_name(const char *name)
{
    static const char *const runtimes[] = { "libasan.so", "libhwasan.so", "libtsan.so", "liblsan.so" };

    for (size_t i = 0; i < sizeof runtimes / sizeof runtimes[0]; i++)
        if (!strncmp(name, runtimes[i], strlen(runtimes[i])))
            return true;
    return false;
}

/*
 * The first string of a DT_NEEDED or DT_SONAME (tag) entry of the ELF file
 * at path that match accepts, into name; false when none does.
 */
static bool dynamic_name(const char *path, Elf64_Sxword tag, bool (*match)(const char *), char *name, size_t n)
{
    Elf64_Ehdr eh;
    Elf64_Phdr ph;
    Elf64_Dyn d;
    Elf64_Addr strtab = 0;
    off_t dyn = 0, str;
    size_t ndyn = 0;
    bool found = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return false;
    if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
        eh.e_ident[EI_CLASS] != ELFCLASS64)
        goto out;
    for (int i = 0; i < eh.e_phnum && !dyn; i++)
        if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (Elf64_Off)i * eh.e_phentsize)) == (ssize_t)sizeof ph &&
            ph.p_type == PT_DYNAMIC) {
            dyn = (off_t)ph.p_offset;
            ndyn = ph.p_filesz / sizeof d;
        }
    for (size_t i = 0; i < ndyn && pread(fd, &d, sizeof d, dyn + (off_t)(i * sizeof d)) == (ssize_t)sizeof d &&
                       d.d_tag != DT_NULL; i++)
        if (d.d_tag == DT_STRTAB)
            strtab = d.d_un.d_ptr;
    if (!strtab || !(str = file_offset(fd, &eh, strtab)))
        goto out;
    for (size_t i = 0; i < ndyn && !found && pread(fd, &d, sizeof d, dyn + (off_t)(i * sizeof d)) == (ssize_t)sizeof d &&
                       d.d_tag != DT_NULL; i++) {
        ssize_t got;
        if (d.d_tag != tag || (got = pread(fd, name, n - 1, str + (off_t)d.d_un.d_val)) <= 0)
            continue;
        name[got] = '\0';
        found = strlen(name) < n - 1 && match(name);
    }
out:
    close(fd);
    return found;
}

/*
 * The sanitizer runtime path's program needs (gcc links libasan.so), into
 * name; false when none.  Such a runtime refuses to start unless it comes
 * before every other library, so it goes first in LD_PRELOAD, ahead of ours.
 */
static bool sanitizer_runtime(const char *path, char *name, size_t n)
{
    return dynamic_name(path, DT_NEEDED, sanitizer_name, name, n);
}

/* Whether a library name is glibc's C or threads library, which define the calls we interpose. */
static bool libc_name(const char *name)
{
    return !strcmp(name, LIBC_SO) || !strcmp(name, LIBPTHREAD_SO);
}

/*
 * Whether an LD_PRELOAD entry is glibc itself, by its file name or, for a
 * path, by its DT_SONAME (libc-2.31.so, a copy under another name).
 */
static bool preloads_libc(const char *entry)
{
    const char *base = strrchr(entry, '/');
    char soname[64];

    return libc_name(base ? base + 1 : entry) ||
           (base && dynamic_name(entry, DT_SONAME, libc_name, soname, sizeof soname));
}

/*
 * LD_PRELOAD: a sanitizer runtime the program needs, then what the
 * environment already preloads, in its order, then ours: a library
 * preloaded on purpose (a sanitizer's runtime, an interposer) keeps its
 * place before ours, as it has without vmstack.  glibc itself preloaded
 * (LD_PRELOAD=libc.so.6) is not such a library: coming before ours it
 * would answer the program's pthread calls and leave ours nothing to call
 * on to, so ours goes right before it.
 */
static char *preload_list(const char *path, const char *preload)
{
    const char *old = getenv("LD_PRELOAD");
    char runtime[64], *ld, *copy, *entry, *save = NULL;
    bool first = sanitizer_runtime(path, runtime, sizeof runtime) && !(old && strstr(old, runtime));
    bool placed = false;
    size_t len = strlen(runtime) + (old ? strlen(old) : 0) + strlen(preload) + 3;

    if (!(ld = calloc(len, 1)) || !(copy = strdup(old ? old : ""))) {
        free(ld);
        return NULL;
    }
    if (first)
        strcat(ld, runtime);
    /* The dynamic loader's separators: spaces and colons; empty entries are none. */
    for (entry = strtok_r(copy, " :", &save); entry; entry = strtok_r(NULL, " :", &save)) {
        if (!placed && preloads_libc(entry)) {
            strcat(strcat(ld, *ld ? ":" : ""), preload);
            placed = true;
        }
        strcat(strcat(ld, *ld ? ":" : ""), entry);
    }
    if (!placed)
        strcat(strcat(ld, *ld ? ":" : ""), preload);
    free(copy);
    return ld;
}

/* Sets name to v, or unsets it for NULL: nothing inherited stands for an option not given. */
static int set_or_unset(const char *name, const char *v)
{
    return v ? setenv(name, v, 1) : unsetenv(name);
}

/*
 * trace's settings, for the tracer (src/preload/tracepreload.c): set by
 * trace only, as a run leaves alone what it does not use.
 */
static int set_trace_env(const struct run_args *a)
{
    char frame[32];

    snprintf(frame, sizeof frame, "%zu", a->warn_frame_bytes);
    return setenv("VMSTACK_TRACE_WARN_FRAME", frame, 1) |
           setenv("VMSTACK_TRACE_WARN_DEPTH", a->warn_depth ? a->warn_depth : "0", 1) |
           setenv("VMSTACK_TRACE_ALL_LINES", a->all_lines ? "1" : "0", 1) |
           setenv("VMSTACK_TRACE_MAX_TASKS", a->max_tasks ? a->max_tasks : "0", 1);
}

/* The environment the preload library reads its options from: the one place that makes it. */
static int set_env(const struct run_args *a, const char *path, const char *preload)
{
    char *ld, pid[24], sig[16];
    int rc;

    if (!(ld = preload_list(path, preload)))
        return -1;
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    snprintf(sig, sizeof sig, "%d", a->report_signal ? parse_signal(a->report_signal) : 0);
    /* Tracing is the command's, not inherited: a 'vmstack run' in a traced program's process tree runs. */
    rc = setenv("LD_PRELOAD", ld, 1) | setenv("VMSTACK_RUN_PID", pid, 1) |
         (a->trace ? setenv("VMSTACK_RUN_TRACE", "1", 1) | set_trace_env(a) : unsetenv("VMSTACK_RUN_TRACE")) |
         setenv("VMSTACK_RUN_JSON", a->json ? "1" : "0", 1) | set_or_unset("VMSTACK_RUN_QUIET", a->quiet ? "1" : NULL) |
         setenv("VMSTACK_RUN_GUARD_SIZE", a->guard ? a->guard : guard_default(), 1) |
         set_or_unset("VMSTACK_RUN_STACK_SIZE", a->stack_size) |
         set_or_unset("VMSTACK_RUN_OUTPUT", a->output) | set_or_unset("VMSTACK_RUN_PLOT", a->plot) |
         set_or_unset("VMSTACK_RUN_FOLDED", a->folded) | set_or_unset("VMSTACK_RUN_FLAMEGRAPH", a->flamegraph) |
         set_or_unset("VMSTACK_RUN_REPORT_SIGNAL", a->report_signal ? sig : NULL);
    free(ld);
    return rc;
}

/*
 * Preloading a library costs the dynamic loader more stack than a tiny
 * RLIMIT_STACK leaves once the kernel's random offset of the stack top
 * (up to 8 KiB) and the environment are taken: under 'ulimit -s 16',
 * libm preloaded fails now and then, and every time with a few KiB of
 * environment.  vmstack run raises its soft limit first thing, for its
 * own sake (its checks, its messages); the program starts with
 * it, and the library puts the program's own back before the program runs
 * (src/preload/stacklimit.c).  A hard limit that small cannot be raised:
 * that is said, once, since the loader may then kill the program before
 * vmstack runs.
 */
#define LOADER_STACK ((rlim_t)64 << 10)

static struct rlimit program_stack; /* the limit the program gets back */
static bool stack_known, stack_raised;

static void raise_stack_limit(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_STACK, &program_stack))
        return;
    stack_known = true;
    if (program_stack.rlim_cur >= LOADER_STACK || program_stack.rlim_max <= program_stack.rlim_cur)
        return;
    rl = program_stack;
    rl.rlim_cur = rl.rlim_max < LOADER_STACK ? rl.rlim_max : LOADER_STACK;
    stack_raised = setrlimit(RLIMIT_STACK, &rl) == 0;
}

/* The program's own limit, for the library to put back; -1 when the environment cannot take it. */
static int pass_stack_limit(const char *path)
{
    char num[24];

    if (stack_known && program_stack.rlim_max < LOADER_STACK)
        cmd_say("vmstack %s: the hard stack limit (%llu bytes) is below the %llu the dynamic loader may need to "
                "preload vmstack into %s: it may die before it starts; raise it with 'ulimit -H -s'\n", sub,
                (unsigned long long)program_stack.rlim_max, (unsigned long long)LOADER_STACK, path);
    if (!stack_raised)
        return unsetenv("VMSTACK_RUN_STACK_LIMIT");
    snprintf(num, sizeof num, "%llu", (unsigned long long)program_stack.rlim_cur);
    return setenv("VMSTACK_RUN_STACK_LIMIT", num, 1);
}

/* The wrappers' exit statuses (env, nice, timeout): PROG not found, found but not runnable, our own failure. */
enum { RUN_NOT_FOUND = 127, RUN_CANNOT_RUN = 126, RUN_FAILED = 125 };

static int cannot_exec(const char *path, int err)
{
    cmd_say("vmstack %s: cannot run %s: %s\n", sub, path, strerror(err));
    return err == ENOENT || err == ENOTDIR ? RUN_NOT_FOUND : RUN_CANNOT_RUN;
}

/* Without vmstack, after a line that says so: the loader would ignore it. */
static int run_unprotected(const struct run_args *a, char **argv, const char *path, const char *why)
{
    if (!a->allow_unprotected) {
        cmd_usage_error(sub, "%s %s: it runs in secure-execution mode, where the dynamic loader ignores vmstack; "
                             "--allow-unprotected runs it without vmstack", path, why);
        return RUN_CANNOT_RUN;
    }
    cmd_say("vmstack %s: %s %s: it runs without vmstack\n", sub, path, why);
    if (stack_raised)
        setrlimit(RLIMIT_STACK, &program_stack);
    execv(path, argv + a->prog);
    return cannot_exec(path, errno);
}

/*
 * The files the options name, as absolute paths: the program may change
 * its directory.  "-" (stdout) stays, where the option takes it.
 */
static int check_files(struct run_args *a)
{
    static char output[PATH_MAX], plot[PATH_MAX], folded[PATH_MAX], flamegraph[PATH_MAX];
    int rc = 0;

    if (a->output && !(rc = check_file("--output", a->output, output, sizeof output)))
        a->output = output;
    if (!rc && a->plot && !(rc = check_file("--plot", a->plot, plot, sizeof plot)))
        a->plot = plot;
    if (!rc && a->folded && strcmp(a->folded, "-") && !(rc = check_file("--folded", a->folded, folded, sizeof folded)))
        a->folded = folded;
    if (!rc && a->flamegraph && strcmp(a->flamegraph, "-") &&
        !(rc = check_file("--flamegraph", a->flamegraph, flamegraph, sizeof flamegraph)))
        a->flamegraph = flamegraph;
    return rc;
}

static int run_program(int argc, char **argv, struct run_args *a, void (*help)(void))
{
    /* Not on the stack: 'vmstack run' must run under 'ulimit -s 16' as the program would. */
    static char path[PATH_MAX], preload[PATH_MAX];
    const char *why;
    int rc;

    raise_stack_limit();
    if ((rc = parse(argc, argv, a)))
        return rc;
    if (a->help) {
        help();
        return CMD_OK;
    }
    if ((rc = check_files(a)))
        return rc;
    if ((rc = find_program(argv[a->prog], path, sizeof path)))
        return cannot_exec(path, rc);
    if ((why = program_problem(path))) {
        cmd_say("vmstack %s: %s %s\n", sub, path, why);
        return RUN_CANNOT_RUN;
    }
    if ((rc = check_environment(sub)))
        return rc;
    if ((why = secure_execution(path)))
        return run_unprotected(a, argv, path, why);
    /* A script runs its interpreter: a set-id one runs in secure-execution mode too. */
    if (strcmp(program_run, path) && (why = secure_execution(program_run))) {
        static char whose[sizeof program_run + 64];
        snprintf(whose, sizeof whose, "is a script whose interpreter %s %s", program_run, why);
        return run_unprotected(a, argv, path, whose);
    }
    if (!cmd_find_lib(PRELOAD_NAME, preload, sizeof preload)) {
        cmd_say("vmstack %s: " PRELOAD_NAME " is neither next to the vmstack binary nor in its "
                "install directory (" VMS_PRELOAD_REL " from the binary): reinstall vmstack\n", sub);
        return CMD_FAIL;
    }
    if (strpbrk(preload, ": ")) {
        cmd_say("vmstack %s: %s: LD_PRELOAD cannot hold a path with ':' or ' '\n", sub, preload);
        return CMD_FAIL;
    }
    if (set_env(a, path, preload) || pass_stack_limit(path)) {
        cmd_say("vmstack %s: out of memory for the environment\n", sub);
        return CMD_FAIL;
    }
    fflush(NULL);
    execv(path, argv + a->prog);
    return cannot_exec(path, errno);
}

int run_main(int argc, char **argv, struct run_args *a, void (*help)(void))
{
    int rc;

    sub = a->sub;
    rc = run_program(argc, argv, a, help);
    return rc == CMD_OK || rc >= RUN_FAILED ? rc : RUN_FAILED;
}

int cmd_run(int argc, char **argv)
{
    struct run_args a = { .sub = "run" };

    return run_main(argc, argv, &a, help);
}
