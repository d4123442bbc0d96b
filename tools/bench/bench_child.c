/* SPDX-License-Identifier: MIT */
/*
 * Benchmark variants in child processes.  vmstack's settings are read once
 * per process, so a variant with other VMSTACK_* settings (the cache off,
 * the mprotect guard mode) runs in 'vmstack bench --child WORKER', a
 * re-execution of this very binary with those settings in its environment.
 * The child answers requests line by line over two pipes: the parent sends
 * an argument, the child runs its worker and sends back the figure.
 */
#include "bench.h"
#include "cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct worker {
    const char *name;
    double (*run)(long arg);
};

static const struct worker workers[] = {
    { "cache", bench_cache_worker },
    { "cache2", bench_cache2_worker },
    { "burst", bench_burst_worker },
    { "ceiling", bench_scale_ceiling_worker },
    { "runload", bench_run_worker },
    { "traceload", bench_trace_worker }, /* bench trace */
    { "tracedeep", bench_trace_deep_worker }, /* bench trace */
};

static const struct worker *find_worker(const char *name)
{
    for (size_t i = 0; i < sizeof workers / sizeof workers[0]; i++)
        if (!strcmp(workers[i].name, name))
            return &workers[i];
    return NULL;
}

/* Whether environment entry e sets a variable that one of env's entries names. */
static int overridden(const char *e, const char *const *env)
{
    for (; *env; env++) {
        size_t n = strcspn(*env, "=");
        if (!strncmp(e, *env, n) && e[n] == '=')
            return 1;
    }
    return 0;
}

/* Our environment with env applied; built before fork, as setenv after it is not safe. */
static char **child_env(const char *const *env)
{
    size_t n = 0, k = 0, extra = 0;
    char **out;

    while (environ[n])
        n++;
    while (env[extra])
        extra++;
    if (!(out = calloc(n + extra + 1, sizeof *out)))
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (!overridden(environ[i], env))
            out[k++] = environ[i];
    for (size_t i = 0; i < extra; i++)
        if (env[i][strcspn(env[i], "=") + 1])
            out[k++] = (char *)env[i];
    return out;
}

int bench_child_start(struct bench_child *c, const char *worker, const char *const *env)
{
    char *argv[] = { "vmstack", "bench", "--child", (char *)worker, NULL };
    char **envp = child_env(env);
    posix_spawn_file_actions_t fa;
    int down[2], up[2], rc;
    pid_t pid;

    if (!envp || pipe2(down, O_CLOEXEC) || pipe2(up, O_CLOEXEC)) {
        fprintf(stderr, "vmstack bench: cannot start a child process: %s\n", strerror(errno));
        free(envp);
        return -1;
    }
    /*
     * posix_spawn, not fork: it shares the address space until the exec, so
     * it works even when this process has mapped more than fork could
     * account for (after a million stacks).
     */
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, down[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, up[1], STDOUT_FILENO);
    fflush(NULL);
    rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    close(down[0]);
    close(up[1]);
    if (rc) {
        fprintf(stderr, "vmstack bench: cannot start a child process: %s\n", strerror(rc));
        close(down[1]);
        close(up[0]);
        return -1;
    }
    c->pid = pid;
    c->to = fdopen(down[1], "w");
    c->from = fdopen(up[0], "r");
    return c->to && c->from ? 0 : -1;
}

double bench_child_ask(struct bench_child *c, long arg)
{
    double v;

    if (fprintf(c->to, "%ld\n", arg) < 0 || fflush(c->to) || fscanf(c->from, "%lf", &v) != 1) {
        fprintf(stderr, "vmstack bench: child process (pid %d) did not answer\n", c->pid);
        return -1;
    }
    return v;
}

void bench_child_stop(struct bench_child *c)
{
    int status;

    if (c->to)
        fclose(c->to);
    if (c->from)
        fclose(c->from);
    c->to = c->from = NULL;
    if (c->pid > 0)
        waitpid(c->pid, &status, 0);
    c->pid = 0;
}

int bench_child_main(const char *name)
{
    const struct worker *w = find_worker(name);
    long arg;

    if (!w)
        return cmd_usage_error("bench", "no child worker named '%s'", name);
    while (scanf("%ld", &arg) == 1) {
        printf("%.17g\n", w->run(arg));
        fflush(stdout);
    }
    return CMD_OK;
}

double bench_exec_timed(const char *path, char *const argv[], long n, double *cpu_ns)
{
    struct rusage ru;
    char req[32];
    int in[2], status, len = snprintf(req, sizeof req, "%ld\n", n);
    double t0 = bench_now_ns();
    pid_t pid;

    if (pipe2(in, O_CLOEXEC))
        return -1;
    if (write(in[1], req, (size_t)len) != len) /* fits the pipe: no reader needed yet */
        return -1;
    close(in[1]);
    fflush(NULL);
    if ((pid = fork()) == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(in[0], STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        execv(path, argv);
        _exit(127);
    }
    close(in[0]);
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
        return -1;
    *cpu_ns = ((double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec) * 1e9 +
              ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e3;
    return bench_now_ns() - t0;
}
