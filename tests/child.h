/* SPDX-License-Identifier: MIT */
/*
 * For tests of things that may end a process: run a function in a forked
 * child with its stderr captured, get its wait status and its text, and
 * match the text line by line with extended regular expressions.
 */
#ifndef VMS_CHILD_H
#define VMS_CHILD_H

#include "check.h"

#include <regex.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

struct child {
    int status;   /* as from waitpid */
    char *text;   /* the child's stderr, NUL-terminated; free() it */
    size_t len;
};

/* Runs fn(arg) in a child (no core dumps), which exits 0 when fn returns; logs its text. */
static inline void child_run(struct child *c, void (*fn)(void *), void *arg)
{
    int fd[2];
    size_t cap = 1 << 16;
    pid_t pid;

    CHECK(pipe(fd) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);
        close(fd[0]);
        dup2(fd[1], 2);
        close(fd[1]);
        fn(arg);
        _exit(0);
    }
    close(fd[1]);
    c->text = malloc(cap);
    c->len = 0;
    CHECK(c->text);
    for (;;) {
        ssize_t n;
        if (c->len + 1 == cap) {
            cap *= 2;
            c->text = realloc(c->text, cap);
            CHECK(c->text);
        }
        n = read(fd[0], c->text + c->len, cap - 1 - c->len);
        if (n <= 0)
            break;
        c->len += (size_t)n;
    }
    c->text[c->len] = 0;
    close(fd[0]);
    CHECK(waitpid(pid, &c->status, 0) == pid);
    /* In the test's log, for whoever reads it. */
    printf("--- child (status 0x%x):\n%s---\n", c->status, c->text);
    fflush(stdout);
}

static inline int child_signal(const struct child *c)
{
    return WIFSIGNALED(c->status) ? WTERMSIG(c->status) : 0;
}

static inline int child_exit(const struct child *c)
{
    return WIFEXITED(c->status) ? WEXITSTATUS(c->status) : -1;
}

/* Does the whole line [s, s + n) match the extended regex re? */
static inline int line_matches(const char *s, size_t n, const char *re)
{
    regex_t rx;
    char line[4096];
    int ok;

    if (n >= sizeof line)
        n = sizeof line - 1;
    memcpy(line, s, n);
    line[n] = 0;
    CHECK(regcomp(&rx, re, REG_EXTENDED | REG_NOSUB) == 0);
    ok = regexec(&rx, line, 0, NULL, 0) == 0;
    regfree(&rx);
    return ok;
}

/* The number of lines of text that match re. */
static inline int count_lines(const char *text, const char *re)
{
    int n = 0;

    for (const char *s = text; *s;) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        n += line_matches(s, len, re);
        s += len + (e != NULL);
    }
    return n;
}

/* The line after *pos, advancing *pos; NULL at the end. */
static inline const char *next_line(const char **pos, size_t *len)
{
    const char *s = *pos, *e;

    if (!*s)
        return NULL;
    e = strchr(s, '\n');
    *len = e ? (size_t)(e - s) : strlen(s);
    *pos = s + *len + (e != NULL);
    return s;
}

/* Prints the text and fails, saying what was expected. */
#define CHECK_TEXT(cond, text, what)                                                        \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "%s:%d: %s; the child's stderr was:\n%s\n", __FILE__, __LINE__, \
                    what, text);                                                            \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

#define HEX "0x[0-9a-f]+"
#define DEC "[0-9]+"
/* What a call trace's frame line may end with: the file:line of modules built with -g. */
#define LINE "( [^ ]+:" DEC ")?"

/*
 * Checks one overflow report in text, the one whose first line is the
 * index-th "BUG:" line: its lines in order, all of them exact apart from
 * numbers, names and the call-trace entries (task_re, top_frame_re: the
 * second line and the first trace line; outcome_re: the last line).
 * Returns the start of the text after the report.
 */
static inline const char *check_report(const char *text, int index, const char *task_re, const char *top_frame_re,
                                       const char *outcome_re)
{
    const char *pos = text, *s;
    size_t n;
    int seen = -1, frames = 0;

    while ((s = next_line(&pos, &n)))
        if (line_matches(s, n, "^vmstack: BUG: stack guard page was hit at " HEX " \\(stack is " HEX "\\.\\." HEX
                               "\\)$") &&
            ++seen == index)
            break;
    CHECK_TEXT(s, text, "no such overflow report");
    s = next_line(&pos, &n);
    CHECK_TEXT(s && line_matches(s, n, task_re), text, "task line");
    s = next_line(&pos, &n);
    CHECK_TEXT(s && line_matches(s, n, "^vmstack: stack " DEC " KiB, guard " DEC " KiB at " HEX "\\.\\." HEX
                                       "; sp is " DEC " bytes below the top$"),
               text, "stack line");
    s = next_line(&pos, &n);
    CHECK_TEXT(s && line_matches(s, n, "^vmstack: ip " HEX " sp " HEX " bp " HEX "$"), text, "register line");
    s = next_line(&pos, &n);
    CHECK_TEXT(s && line_matches(s, n, "^vmstack: Call Trace:$"), text, "Call Trace line");
    s = next_line(&pos, &n);
    CHECK_TEXT(s && line_matches(s, n, top_frame_re), text, "first frame of the call trace");
    while ((s = next_line(&pos, &n)) &&
           line_matches(s, n, "^vmstack:  (\\[<" HEX ">\\] .*|\\.\\.\\. " DEC " more frames? of .*|\\.\\.\\. " DEC
                              " frames not shown \\.\\.\\.)$"))
        frames++;
    CHECK_TEXT(frames > 0, text, "more than one trace line");
    CHECK_TEXT(s && line_matches(s, n, outcome_re), text, "last line of the report");
    return pos;
}

#endif
