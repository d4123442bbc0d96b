/* SPDX-License-Identifier: MIT */
/*
 * The command's messages to stderr (cmd.h): each formatted into static
 * memory and written with one write(2).  'vmstack run'
 * may run on a 16 KiB stack it cannot raise (a hard limit), with less than
 * half of it left to its calls, and fprintf to stderr, which is
 * unbuffered, formats into an 8 KiB buffer on the stack.  The command has
 * one thread: the static buffers are not shared.
 */
#include "cmd.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

/* Room for two paths and the words around them. */
static char line[3 * 4096], reason[2 * 4096];

/* fmt into out, cut to fit with its last character a newline when newline is set. */
static void format(char *out, size_t n, bool newline, const char *fmt, va_list ap)
{
    int len = vsnprintf(out, n, fmt, ap);

    if (len < 0)
        out[0] = '\0';
    else if ((size_t)len >= n && newline)
        out[n - 2] = '\n';
}

static void write_line(const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(2, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

void cmd_say(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    format(line, sizeof line, true, fmt, ap);
    va_end(ap);
    write_line(line, strlen(line));
}

int cmd_usage_error(const char *sub, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    format(reason, sizeof reason, false, fmt, ap);
    va_end(ap);
    cmd_say("vmstack %s: %s (see 'vmstack %s --help')\n", sub, reason, sub);
    return CMD_USAGE;
}
