/* SPDX-License-Identifier: MIT */
/*
 * 'vmstack trace --flamegraph FILE.svg': every task's deepest chain as a
 * flame graph in one self-contained SVG file that any browser opens, with
 * no tool of its own (Debian packages no flamegraph.pl).  Each task is a
 * column rooted at the task ("thread 'name' (tid N)"), its frames stacked
 * from the outermost up; a frame's width is the bytes of the stack from
 * its top down to the task's deepest point, so the columns' widths are
 * the tasks' depths.  A short script in the file fits the names into
 * their boxes, zooms on a click (a click on the bottom bar or "Reset
 * zoom" goes back), searches by regular expression ("Search", Ctrl-F) and
 * shows the frame under the pointer in the bar below; FILE.svg?zoom=NAME
 * opens zoomed on the first frame called NAME, FILE.svg?s=RE searched; each frame's
 * tooltip (its <title>) gives its depth, size and file:line.  Names from
 * the program are escaped and reach the script as attribute data only.
 */
#include "preload/chains.h"
#include "preload/outfile.h"
#include "preload/preload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FG_WIDTH 1200  /* the image's width in pixels */
#define FG_PAD 10      /* left and right margins */
#define FG_ROW 16      /* a frame's height */
#define FG_TOP 60      /* title, buttons */
#define FG_BOTTOM 40   /* the details bar */

/* The frames of every chain, to lay out once the widths are known. */
struct layout {
    struct chain *chains;
    size_t n, cap;
    unsigned long total; /* bytes of all chains */
    size_t levels;       /* rows of the tallest column: its frames and its root */
};

/* s as XML text or attribute value: the markup characters escaped; what is not ASCII as '?'. */
static void put_xml(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default: fputc(c < ' ' || c > '~' ? '?' : c, f);
        }
    }
}

/* A warm colour from the name, as flame graphs have: the same function, the same colour. */
static void colour(char *out, size_t n, const char *name)
{
    unsigned h = 2166136261u;

    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    if (!strcmp(name, "[unknown]") || !strcmp(name, "[unknown callers]"))
        snprintf(out, n, "rgb(190,190,190)");
    else
        snprintf(out, n, "rgb(%u,%u,%u)", 205 + h % 50, 80 + (h >> 8) % 130, 40 + (h >> 16) % 50);
}

/* Keeps a copy of each chain: the width of the whole is known only after the last. */
static int collect(void *ctx, const struct chain *c)
{
    struct layout *l = ctx;
    struct chain copy = *c;
    unsigned long bytes = 0;

    if (l->n == l->cap) {
        size_t cap = l->cap * 2 + 8;
        struct chain *more = realloc(l->chains, cap * sizeof *more);
        if (!more)
            return -1;
        l->chains = more;
        l->cap = cap;
    }
    if (!(copy.rows = malloc(c->n * sizeof *c->rows)))
        return -1;
    memcpy(copy.rows, c->rows, c->n * sizeof *c->rows);
    copy.cap = c->n;
    for (size_t i = 0; i < c->n; i++)
        bytes += c->rows[i].size;
    if (!bytes) {
        free(copy.rows);
        return 0;
    }
    l->chains[l->n++] = copy;
    l->total += bytes;
    if (c->n + 1 > l->levels)
        l->levels = c->n + 1;
    return 0;
}

/* One frame: its box at (x, level) bytes wide, its name for the script, its tooltip. */
struct box {
    unsigned long x, w;
    size_t level;
    const char *name, *fill;
    unsigned long count;
};

static void put_box(FILE *f, const struct layout *l, const struct box *b, const struct chain_row *r)
{
    double scale = (double)(FG_WIDTH - 2 * FG_PAD) / (double)l->total;
    double y = FG_TOP + (double)(l->levels - b->level) * FG_ROW;

    fprintf(f, "<g class=\"f\" data-x=\"%lu\" data-w=\"%lu\" data-l=\"%zu\" data-n=\"", b->x, b->w, b->level);
    put_xml(f, b->name);
    if (b->count > 1)
        fprintf(f, " [x%lu]", b->count);
    fprintf(f, "\"><title>");
    put_xml(f, b->name);
    if (r) {
        fprintf(f, "\ndepth %lu bytes, size %lu bytes", r->depth, r->size);
        if (r->count > 1)
            fprintf(f, " (%lu frames of %lu bytes: recursion)", r->count, r->size / r->count);
        fprintf(f, ", %lu bytes from here down\n", b->w);
        put_xml(f, *r->place ? r->place : "no file:line (a module without -g)");
        if (*r->module) {
            fputs(" [", f);
            put_xml(f, r->module);
            fputc(']', f);
        }
    } else {
        fprintf(f, "\n%lu bytes deep", b->w);
    }
    fprintf(f, "</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" rx=\"2\"/>"
               "<text x=\"%.2f\" y=\"%.1f\"></text></g>\n",
            FG_PAD + (double)b->x * scale, y, (double)b->w * scale, FG_ROW - 1, b->fill,
            FG_PAD + (double)b->x * scale + 3, y + FG_ROW - 4);
}

/* A chain's column from x: the task at the bottom, then its frames, the outermost first; x after it. */
static unsigned long put_column(FILE *f, const struct layout *l, const struct chain *c, unsigned long x)
{
    unsigned long total = 0, below;
    char fill[32];
    struct box b = { .x = x, .level = 1, .name = c->root, .fill = "rgb(120,160,220)", .count = 1 };

    for (size_t i = 0; i < c->n; i++)
        total += c->rows[i].size;
    b.w = below = total;
    put_box(f, l, &b, NULL);
    for (size_t i = c->n; i-- > 0;) {
        const struct chain_row *r = &c->rows[i];
        colour(fill, sizeof fill, r->name);
        b = (struct box){ .x = x, .w = below, .level = c->n - i + 1, .name = r->name, .fill = fill,
                          .count = r->count };
        put_box(f, l, &b, r);
        below -= r->size;
    }
    return x + total;
}

/*
 * The script: labels fitted to their boxes (a monospace font's width per
 * character), zoom, search, details.  Frames are <g class="f"> with their
 * geometry in bytes (data-x, data-w) and level (data-l, 0 the whole), so
 * that a zoom is a recomputation, as flamegraph.pl's.
 */
static const char script[] =
    "var W = %d, PAD = %d, CH = 7.2, frames = [], zoomed = null, details, matched;\n"
    "function fit(f) {\n"
    "  var n = Math.floor((parseFloat(f.r.getAttribute('width')) - 6) / CH);\n"
    "  f.t.textContent = n < 3 ? '' : f.name.length <= n ? f.name : f.name.substring(0, n - 2) + '..';\n"
    "}\n"
    "function place(f, x, w, show) {\n"
    "  f.g.style.display = show ? '' : 'none';\n"
    "  if (!show) return;\n"
    "  f.r.setAttribute('x', x.toFixed(2)); f.r.setAttribute('width', Math.max(w, 0.1).toFixed(2));\n"
    "  f.t.setAttribute('x', (x + 3).toFixed(2)); fit(f);\n"
    "}\n"
    "function zoom(z) {\n"
    "  zoomed = z;\n"
    "  var s = (W - 2 * PAD) / z.w;\n"
    "  frames.forEach(function (f) {\n"
    "    var inside = f.x >= z.x && f.x + f.w <= z.x + z.w, below = f.x <= z.x && f.x + f.w >= z.x + z.w;\n"
    "    if (f.l >= z.l && inside) place(f, PAD + (f.x - z.x) * s, f.w * s, true);\n"
    "    else if (f.l < z.l && below) place(f, PAD, W - 2 * PAD, true);\n"
    "    else place(f, 0, 0, false);\n"
    "  });\n"
    "  document.getElementById('unzoom').style.opacity = z === frames[0] ? 0.3 : 1;\n"
    "}\n"
    "function search(re) {\n"
    "  var r, bytes = 0, end = -1;\n"
    "  try { r = re ? new RegExp(re) : null; } catch (e) { matched.textContent = 'bad expression'; return; }\n"
    "  frames.forEach(function (f) {\n"
    "    var hit = r && f.l > 0 && r.test(f.name);\n"
    "    f.r.setAttribute('fill', hit ? 'rgb(230,0,230)' : f.fill);\n"
    "    if (hit && f.x >= end) { bytes += f.w; end = f.x + f.w; }\n"
    "  });\n"
    "  matched.textContent = r ? 'Matched: ' + (100 * bytes / frames[0].w).toFixed(1) + '%%' : '';\n"
    "}\n"
    "function ask() { search(window.prompt('Search (regular expression)', '')); }\n"
    "function init() {\n"
    "  details = document.getElementById('details'); matched = document.getElementById('matched');\n"
    "  var gs = document.querySelectorAll('g.f');\n"
    "  for (var i = 0; i < gs.length; i++) {\n"
    "    var g = gs[i], f = { g: g, r: g.querySelector('rect'), t: g.querySelector('text'),\n"
    "      x: +g.getAttribute('data-x'), w: +g.getAttribute('data-w'), l: +g.getAttribute('data-l'),\n"
    "      name: g.getAttribute('data-n') };\n"
    "    f.fill = f.r.getAttribute('fill');\n"
    "    frames.push(f);\n"
    "    g.addEventListener('click', (function (f) { return function () { zoom(f); }; })(f));\n"
    "    g.addEventListener('mouseover', (function (f) { return function () {\n"
    "      details.textContent = f.g.querySelector('title').textContent.replace(/\\n/g, '; '); }; })(f));\n"
    "    g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
    "  }\n"
    "  document.getElementById('unzoom').addEventListener('click', function () { zoom(frames[0]); });\n"
    "  document.getElementById('search').addEventListener('click', ask);\n"
    "  window.addEventListener('keydown', function (e) {\n"
    "    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); ask(); }\n"
    "    if (e.key === 'Escape') search(null);\n"
    "  });\n"
    "  var q = new URLSearchParams(window.location.search), z = q.get('zoom');\n"
    "  zoom(frames.filter(function (f) { return f.name === z; })[0] || frames[0]);\n"
    "  if (q.get('s')) search(q.get('s'));\n"
    "  document.documentElement.setAttribute('data-drawn', frames.length);\n"
    "}\n"
    "window.addEventListener('load', init);\n";

static void put_svg(FILE *f, const struct layout *l, const char *prog)
{
    int height = FG_TOP + (int)(l->levels + 1) * FG_ROW + FG_BOTTOM;
    struct box all = { .x = 0, .w = l->total, .level = 0, .name = "all tasks", .fill = "rgb(160,160,160)", .count = 1 };
    unsigned long x = 0;

    fprintf(f, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
               "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "xmlns=\"http://www.w3.org/2000/svg\">\n"
               "<style>text { font-family: monospace; font-size: 12px; fill: rgb(0,0,0); }\n"
               "g.f { cursor: pointer; } g.f:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }\n"
               "#title { font-size: 17px; } .button { cursor: pointer; fill: rgb(0,0,160); }</style>\n"
               "<script type=\"text/ecmascript\"><![CDATA[\n",
            FG_WIDTH, height, FG_WIDTH, height);
    fprintf(f, script, FG_WIDTH, FG_PAD);
    fprintf(f, "]]></script>\n<rect width=\"100%%\" height=\"100%%\" fill=\"rgb(250,250,240)\"/>\n"
               "<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">Deepest stacks of ", FG_WIDTH / 2);
    put_xml(f, prog);
    fprintf(f, " (vmstack trace): widths are bytes of stack</text>\n"
               "<text id=\"unzoom\" class=\"button\" x=\"%d\" y=\"48\">Reset zoom</text>\n"
               "<text id=\"search\" class=\"button\" x=\"%d\" y=\"48\" text-anchor=\"end\">Search</text>\n"
               "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n"
               "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n",
            FG_PAD, FG_WIDTH - FG_PAD, FG_WIDTH - FG_PAD, height - 12, FG_PAD, height - 12);
    put_box(f, l, &all, NULL);
    for (size_t i = 0; i < l->n; i++)
        x = put_column(f, l, &l->chains[i], x);
    fprintf(f, "</svg>\n");
}

int vms__flamegraph_write(char *report, const char *path, const char *prog)
{
    struct layout l = { 0 };
    char *text = NULL;
    size_t len = 0;
    FILE *out = NULL;
    int rc = vms__chains_each(report, collect, &l);

    if (!rc && l.n && (out = open_memstream(&text, &len))) {
        put_svg(out, &l, prog);
        rc = fclose(out) ? -1 : 0;
    } else if (!rc && l.n) {
        rc = -1;
    }
    if (rc)
        vms__out_printf("vmstack trace: cannot write --flamegraph %s: out of memory\n", path);
    else if (!l.n)
        vms__out_printf("vmstack trace: --flamegraph: no chain in the report: no flame graph\n");
    else
        rc = vms__run_write_output("trace", path, text, len, vms__out_printf);
    for (size_t i = 0; i < l.n; i++)
        free(l.chains[i].rows);
    free(l.chains);
    free(text);
    return rc || !l.n ? -1 : 0;
}
