/* SPDX-License-Identifier: MIT */
/*
 * The chains of a trace's text report, read back (chains.h).  A chain is
 * the task's line ("thread 'name' (tid N), start routine f: D of S stack
 * bytes deep..."), then its table:
 *       Depth    Size   Location    (N entries)
 *   1)  24256    1040   recurse+0x48/0x51 [prog] prog.c:20
 *      ... 18 more entries of the same 1040-byte frame
 * up to an empty line.  Recursion stays folded as the table folds it: one
 * row for the run, its size the run's.
 */
#include "preload/chains.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *vms__next_line(char **p)
{
    char *line = *p, *nl;

    if (!*line)
        return NULL;
    nl = strchr(line, '\n');
    if (nl) {
        *nl = '\0';
        *p = nl + 1;
    } else {
        *p = line + strlen(line);
    }
    return line;
}

/* ';' separates frames in folded stacks: never inside one. */
static void no_semicolons(char *s)
{
    for (; *s; s++)
        if (*s == ';')
            *s = ':';
}

/*
 * "thread 'name' (tid N)", "main thread 'name' (pid N)" or "fiber 'name'
 * (id N)" at the start of a task's line, into root; false for any other.
 */
static bool task_line(const char *line, char *root, size_t n)
{
    static const char *const kinds[] = { "thread '", "main thread '", "fiber '" };
    const char *id = NULL, *end;

    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0] && !id; i++)
        if (!strncmp(line, kinds[i], strlen(kinds[i])))
            id = strstr(line + strlen(kinds[i]), "' (");
    if (!id || !(end = strchr(id, ')')))
        return false;
    snprintf(root, n, "%.*s", (int)(end + 1 - line), line);
    no_semicolons(root);
    return true;
}

/* "function+0xOFF/0xSIZE [module] file:line", or "? (unknown...)", into r. */
static void location(const char *loc, struct chain_row *r)
{
    const char *mod = strstr(loc, " [");
    size_t len = mod ? (size_t)(mod - loc) : strlen(loc);

    /* The name may hold spaces (C++), not " ["; its offset is the last "+0x". */
    for (size_t k = len; k-- > 1;)
        if (!strncmp(loc + k, "+0x", 3)) {
            len = k;
            break;
        }
    if (strcspn(loc, "@") < len) /* a symbol's version: __libc_start_main@@GLIBC_2.34 */
        len = strcspn(loc, "@");
    if (!len || loc[0] == '?')
        snprintf(r->name, sizeof r->name, "[unknown]");
    else
        snprintf(r->name, sizeof r->name, "%.*s", (int)len, loc);
    no_semicolons(r->name);
    r->module[0] = r->place[0] = '\0';
    if (mod && strchr(mod, ']')) {
        const char *close = strchr(mod, ']');
        snprintf(r->module, sizeof r->module, "%.*s", (int)(close - mod - 2), mod + 2);
        if (close[1] == ' ')
            snprintf(r->place, sizeof r->place, "%s", close + 2);
    }
}

/* A row "  N)  DEPTH  SIZE  LOCATION" (SIZE "?" when unknown) into r; false for any other line. */
static bool table_row(const char *line, struct chain_row *r)
{
    char *end;

    while (isspace((unsigned char)*line))
        line++;
    if (!isdigit((unsigned char)*line) || !(line = strchr(line, ')')))
        return false;
    r->depth = strtoul(line + 1, &end, 10);
    if (end == line + 1)
        return false;
    line = end;
    r->size = strtoul(line, &end, 10);
    if (end == line) { /* "?": the last row of a chain cut short */
        end += strspn(end, " ");
        if (*end != '?')
            return false;
        end++;
    }
    r->count = 1;
    location(end + strspn(end, " "), r);
    return true;
}

static int push(struct chain *c, const struct chain_row *r)
{
    if (c->n == c->cap) {
        size_t cap = c->cap * 2 + 32;
        struct chain_row *rows = realloc(c->rows, cap * sizeof *rows);
        if (!rows)
            return -1;
        c->rows = rows;
        c->cap = cap;
    }
    c->rows[c->n++] = *r;
    return 0;
}

/*
 * The chain to on.  Its outermost frame's size is unknown when its callers
 * are (overwritten, or code without call-frame information): the bytes
 * from it to the stack's top go to a frame "[unknown callers]" above it,
 * so that the chain's rows still add up to its depth.
 */
static int deliver(struct chain *c, int (*on)(void *ctx, const struct chain *c), void *ctx)
{
    struct chain_row *last = c->n ? &c->rows[c->n - 1] : NULL;
    struct chain_row callers = { .name = "[unknown callers]", .count = 1 };

    if (!last)
        return 0;
    if (!last->size) {
        callers.depth = callers.size = last->depth;
        if (push(c, &callers))
            return -1;
    }
    return on(ctx, c);
}

int vms__chains_each(char *report, int (*on)(void *ctx, const struct chain *c), void *ctx)
{
    struct chain c = { .root = "" };
    struct chain_row r;
    enum { OUT, TASK, TABLE } at = OUT;
    char *line;
    int rc = 0;

    while (!rc && (line = vms__next_line(&report))) {
        unsigned long more, size;

        if (task_line(line, c.root, sizeof c.root)) {
            at = TASK;
            c.n = 0;
        } else if (at == TASK && strstr(line, "Depth") && strstr(line, "Size") && strstr(line, "Location")) {
            at = TABLE;
        } else if (at != TABLE) {
            continue;
        } else if (!*line) {
            rc = deliver(&c, on, ctx);
            at = OUT;
        } else if (c.n && sscanf(line, " ... %lu more entries of the same %lu-byte frame", &more, &size) == 2) {
            c.rows[c.n - 1].count += more;
            c.rows[c.n - 1].size += more * size;
        } else if (table_row(line, &r)) {
            rc = push(&c, &r);
        }
    }
    if (!rc && at == TABLE)
        rc = deliver(&c, on, ctx);
    free(c.rows);
    return rc;
}
