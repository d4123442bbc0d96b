/* SPDX-License-Identifier: MIT */
/*
 * Rust names (demangle.h): the v0 scheme ("_R...", RFC 2603: rustc 1.95's
 * standard library has it, and programs built with -C
 * symbol-mangling-version=v0) and the legacy one ("_ZN...17h<hash>E").
 * Written as rustc-demangle prints them in its alternate form ({:#}):
 * without crate disambiguators and hashes.  No Debian package has a C
 * library for it (libiberty is LGPL and static), so it is here: a
 * recursive-descent reader into a bounded buffer, with no allocation, no
 * lock and a depth limit, so that the overflow report can call it from
 * its signal handler with its small stack.  A name it cannot read is
 * left as it is.
 */
#include "core/demangle.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define RUST_MAX_DEPTH 64 /* nesting of paths and types; each level is one small frame */

struct rd {
    const char *s; /* the symbol after "_R" */
    size_t n, pos;
    char *out;
    size_t cap, len; /* len may pass cap: what did not fit is counted, not written */
    int depth;
    uint64_t binders; /* lifetimes bound by the enclosing for<...> */
    bool bad;
};

static void put_n(struct rd *r, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++, r->len++)
        if (r->out && r->len + 1 < r->cap)
            r->out[r->len] = p[i];
}

static void put(struct rd *r, const char *p)
{
    put_n(r, p, strlen(p));
}

static void put_u64(struct rd *r, uint64_t v)
{
    char d[24];
    size_t i = sizeof d;

    do
        d[--i] = (char)('0' + v % 10);
    while ((v /= 10) && i);
    put_n(r, d + i, sizeof d - i);
}

static char peek(const struct rd *r)
{
    return r->pos < r->n ? r->s[r->pos] : '\0';
}

static bool eat(struct rd *r, char c)
{
    if (peek(r) != c)
        return false;
    r->pos++;
    return true;
}

static void fail(struct rd *r)
{
    r->bad = true;
    r->pos = r->n; /* every reader stops at the end */
}

/* <base-62-number>: "_" is 0, digits then "_" are the number plus one. */
static uint64_t base62(struct rd *r)
{
    uint64_t v = 0;
    char c;

    if (eat(r, '_'))
        return 0;
    while ((c = peek(r)) && c != '_') {
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'z' ? c - 'a' + 10
              : c >= 'A' && c <= 'Z' ? c - 'A' + 36 : -1;
        if (d < 0 || v > (UINT64_MAX - 62) / 62) {
            fail(r);
            return 0;
        }
        v = v * 62 + (uint64_t)d;
        r->pos++;
    }
    if (!eat(r, '_') || v == UINT64_MAX)
        fail(r);
    return v + 1;
}

/* ["s" <base-62-number>]: the disambiguator, 0 when absent. */
static uint64_t disambiguator(struct rd *r)
{
    return eat(r, 's') ? base62(r) + 1 : 0;
}

static uint64_t decimal(struct rd *r)
{
    uint64_t v = 0;

    if (peek(r) < '0' || peek(r) > '9')
        fail(r);
    if (peek(r) == '0') {
        r->pos++;
        return 0;
    }
    while (peek(r) >= '0' && peek(r) <= '9') {
        if (v > UINT64_MAX / 10 - 1) {
            fail(r);
            return 0;
        }
        v = v * 10 + (uint64_t)(peek(r) - '0');
        r->pos++;
    }
    return v;
}

/* <undisambiguated-identifier>: its bytes (s + *len), punycode told by *puny. */
static const char *ident(struct rd *r, size_t *len, bool *puny)
{
    uint64_t n;
    const char *p;

    *puny = eat(r, 'u');
    n = decimal(r);
    eat(r, '_');
    if (r->bad || n > r->n - r->pos) {
        fail(r);
        *len = 0;
        return "";
    }
    p = r->s + r->pos;
    r->pos += n;
    *len = (size_t)n;
    return p;
}

/* An identifier as written; punycode (non-ASCII names) as rustc-demangle shows what it cannot decode. */
static void put_ident(struct rd *r, const char *p, size_t n, bool puny)
{
    if (puny)
        put(r, "punycode{");
    put_n(r, p, n);
    if (puny)
        put(r, "}");
}

static void path(struct rd *r, bool value);
static void type(struct rd *r);

/*
 * Reads what a back-reference ("B" <base-62-number>, an offset from the
 * start after "_R") points at with reader, then goes on after it.
 */
static void backref(struct rd *r, void (*reader)(struct rd *, bool), bool arg)
{
    size_t back = r->pos - 1, at = (size_t)base62(r), resume = r->pos;

    if (r->bad || at >= back) { /* only backwards: no loop */
        fail(r);
        return;
    }
    r->pos = at;
    reader(r, arg);
    if (!r->bad)
        r->pos = resume;
}

static void type_as_reader(struct rd *r, bool unused)
{
    (void)unused;
    type(r);
}

static void lifetime(struct rd *r, uint64_t i)
{
    if (i == 0) {
        put(r, "'_");
    } else if (i <= r->binders) {
        uint64_t d = r->binders - i;
        char name[3] = { '\'', (char)('a' + d % 26), '\0' };
        put(r, name);
        if (d >= 26)
            put_u64(r, d / 26);
    } else {
        fail(r);
    }
}

/* [<binder>]: "for<'a, 'b> " and the lifetimes it binds. */
static uint64_t binder(struct rd *r)
{
    uint64_t n = eat(r, 'G') ? base62(r) + 1 : 0;

    if (!n)
        return 0;
    put(r, "for<");
    for (uint64_t i = 0; i < n && !r->bad; i++) {
        if (i)
            put(r, ", ");
        r->binders++;
        lifetime(r, 1);
    }
    put(r, "> ");
    return n;
}

/* <const-data> of an integer, bool or char type: the value as Rust writes it (past 64 bits: in hex). */
static void const_data(struct rd *r, char ty)
{
    bool neg = eat(r, 'n');
    const char *hex = r->s + r->pos;
    size_t digits = strspn(hex, "0123456789abcdef");
    uint64_t v = 0;

    r->pos += digits;
    if (!eat(r, '_')) {
        fail(r);
        return;
    }
    for (size_t i = 0; i < digits && digits <= 16; i++)
        v = v << 4 | (uint64_t)(hex[i] <= '9' ? hex[i] - '0' : hex[i] - 'a' + 10);
    if (ty == 'b') {
        put(r, v == 1 && digits == 1 ? "true" : v == 0 && digits <= 1 ? "false" : "?");
    } else if (ty == 'c') {
        if (digits > 16 || v < ' ' || v > '~' || v == '\'' || v == '\\') {
            fail(r); /* what is not printable ASCII: not read */
            return;
        }
        put_n(r, (char[]){ '\'', (char)v, '\'' }, 3);
    } else {
        if (neg)
            put(r, "-");
        if (digits > 16) {
            put(r, "0x");
            put_n(r, hex, digits);
        } else {
            put_u64(r, v);
        }
    }
}

static void konst(struct rd *r, bool unused)
{
    char ty;

    (void)unused;
    if (++r->depth > RUST_MAX_DEPTH)
        {
            fail(r);
            return;
        }
    if (eat(r, 'p')) {
        put(r, "_");
    } else if (eat(r, 'B')) {
        backref(r, konst, false);
    } else if ((ty = peek(r)) && strchr("hstmyojaslxnibc", ty)) {
        r->pos++;
        const_data(r, ty);
    } else {
        fail(r); /* str and structural constants: not read */
    }
    r->depth--;
}

static void generic_arg(struct rd *r)
{
    if (eat(r, 'L'))
        lifetime(r, base62(r));
    else if (eat(r, 'K'))
        konst(r, false);
    else
        type(r);
}

/* {<generic-arg>} "E", written "<a, b>" (after "::" in a value path). */
static void generic_args(struct rd *r)
{
    put(r, "<");
    for (int i = 0; !r->bad && !eat(r, 'E'); i++) {
        if (i)
            put(r, ", ");
        generic_arg(r);
    }
    put(r, ">");
}

static const char *basic_type(char c)
{
    static const char *const names[26] = {
        ['a' - 'a'] = "i8",    ['b' - 'a'] = "bool", ['c' - 'a'] = "char",  ['d' - 'a'] = "f64",
        ['e' - 'a'] = "str",   ['f' - 'a'] = "f32",  ['h' - 'a'] = "u8",    ['i' - 'a'] = "isize",
        ['j' - 'a'] = "usize", ['l' - 'a'] = "i32",  ['m' - 'a'] = "u32",   ['n' - 'a'] = "i128",
        ['o' - 'a'] = "u128",  ['s' - 'a'] = "i16",  ['t' - 'a'] = "u16",   ['u' - 'a'] = "()",
        ['v' - 'a'] = "...",   ['x' - 'a'] = "i64",  ['y' - 'a'] = "u64",   ['z' - 'a'] = "!",
        ['p' - 'a'] = "_",
    };

    return c >= 'a' && c <= 'z' ? names[c - 'a'] : NULL;
}

/* <fn-sig>: [<binder>] ["U"] ["K" <abi>] {<type>} "E" <type>. */
static void fn_sig(struct rd *r)
{
    uint64_t bound = r->binders;

    binder(r);
    if (eat(r, 'U'))
        put(r, "unsafe ");
    if (eat(r, 'K')) {
        put(r, "extern \"");
        if (eat(r, 'C')) {
            put(r, "C");
        } else {
            size_t n;
            bool puny;
            const char *abi = ident(r, &n, &puny);
            for (size_t i = 0; i < n; i++)
                put_n(r, abi[i] == '_' ? "-" : abi + i, 1);
        }
        put(r, "\" ");
    }
    put(r, "fn(");
    for (int i = 0; !r->bad && !eat(r, 'E'); i++) {
        if (i)
            put(r, ", ");
        type(r);
    }
    put(r, ")");
    if (eat(r, 'u')) {
        /* returns (): written as nothing */
    } else {
        put(r, " -> ");
        type(r);
    }
    r->binders = bound;
}

/*
 * A dyn trait's path, written without its closing ">" when it has generic
 * arguments (directly or behind a back-reference): Trait<A, Item = T>
 * has the trait's own arguments and its bindings in one "<...>".  Whether
 * it is left open.
 */
static bool dyn_trait_path(struct rd *r)
{
    size_t at = r->pos, resume = 0;

    if (eat(r, 'B')) {
        size_t to = (size_t)base62(r);
        if (r->bad || to >= at || r->s[to] != 'I') {
            r->pos = at;
            path(r, false);
            return false;
        }
        resume = r->pos;
        r->pos = to;
    }
    if (!eat(r, 'I')) {
        path(r, false);
        return false;
    }
    path(r, false);
    put(r, "<");
    for (int k = 0; !r->bad && !eat(r, 'E'); k++) {
        if (k)
            put(r, ", ");
        generic_arg(r);
    }
    if (resume && !r->bad)
        r->pos = resume;
    return true;
}

/* <dyn-bounds>: [<binder>] {<path> {"p" <ident> <type>}} "E", then its lifetime. */
static void dyn_bounds(struct rd *r)
{
    uint64_t bound = r->binders;

    put(r, "dyn ");
    binder(r);
    for (int i = 0; !r->bad && !eat(r, 'E'); i++) {
        bool open = false;
        if (i)
            put(r, " + ");
        open = dyn_trait_path(r);
        while (!r->bad && eat(r, 'p')) {
            size_t n;
            bool puny;
            const char *name = ident(r, &n, &puny);
            put(r, open ? ", " : "<");
            open = true;
            put_ident(r, name, n, puny);
            put(r, " = ");
            type(r);
        }
        if (open)
            put(r, ">");
    }
    r->binders = bound;
    if (eat(r, 'L')) {
        uint64_t l = base62(r);
        if (l) {
            put(r, " + ");
            lifetime(r, l);
        }
    }
}

static void type(struct rd *r)
{
    const char *basic = basic_type(peek(r));
    char c = peek(r);

    if (++r->depth > RUST_MAX_DEPTH)
        {
            fail(r);
            return;
        }
    if (basic) {
        r->pos++;
        put(r, basic);
    } else if (eat(r, 'R') || eat(r, 'Q')) {
        put(r, "&");
        if (eat(r, 'L')) {
            uint64_t l = base62(r);
            if (l) {
                lifetime(r, l);
                put(r, " ");
            }
        }
        if (c == 'Q')
            put(r, "mut ");
        type(r);
    } else if (eat(r, 'P') || eat(r, 'O')) {
        put(r, c == 'P' ? "*const " : "*mut ");
        type(r);
    } else if (eat(r, 'A') || eat(r, 'S')) {
        put(r, "[");
        type(r);
        if (c == 'A') {
            put(r, "; ");
            konst(r, false);
        }
        put(r, "]");
    } else if (eat(r, 'T')) {
        int i = 0;
        put(r, "(");
        for (; !r->bad && !eat(r, 'E'); i++) {
            if (i)
                put(r, ", ");
            type(r);
        }
        put(r, i == 1 ? ",)" : ")");
    } else if (eat(r, 'F')) {
        fn_sig(r);
    } else if (eat(r, 'D')) {
        dyn_bounds(r);
    } else if (eat(r, 'B')) {
        backref(r, type_as_reader, false);
    } else {
        path(r, false);
    }
    r->depth--;
}

/* "N" <namespace> <path> <identifier>: "::name", or "::{closure#N}" for a special namespace. */
static void nested(struct rd *r, bool value)
{
    char ns = peek(r);
    uint64_t dis;
    size_t n;
    bool puny;
    const char *name;

    if (!ns)
        {
            fail(r);
            return;
        }
    r->pos++;
    path(r, value);
    dis = disambiguator(r);
    name = ident(r, &n, &puny);
    if (ns >= 'a' && ns <= 'z') {
        if (n) { /* a tuple struct's constructor has no name of its own */
            put(r, "::");
            put_ident(r, name, n, puny);
        }
        return;
    }
    if (ns < 'A' || ns > 'Z')
        {
            fail(r);
            return;
        }
    put(r, "::{");
    put(r, ns == 'C' ? "closure" : ns == 'S' ? "shim" : (char[]){ ns, '\0' });
    if (n) {
        put(r, ":");
        put_ident(r, name, n, puny);
    }
    put(r, "#");
    put_u64(r, dis);
    put(r, "}");
}

static void path_as_reader(struct rd *r, bool value)
{
    path(r, value);
}

/* <path>; value: the path of a value, whose generic arguments follow "::" (turbofish). */
static void path(struct rd *r, bool value)
{
    size_t n;
    bool puny;
    const char *name;

    if (++r->depth > RUST_MAX_DEPTH)
        {
            fail(r);
            return;
        }
    if (eat(r, 'C')) {
        disambiguator(r);
        name = ident(r, &n, &puny);
        put_ident(r, name, n, puny);
    } else if (eat(r, 'N')) {
        nested(r, value);
    } else if (eat(r, 'M') || eat(r, 'X')) {
        bool trait = r->s[r->pos - 1] == 'X';
        size_t mark = r->len;
        disambiguator(r);
        path(r, false); /* the impl's own path: read, not written */
        r->len = mark;
        put(r, "<");
        type(r);
        if (trait) {
            put(r, " as ");
            path(r, false);
        }
        put(r, ">");
    } else if (eat(r, 'Y')) {
        put(r, "<");
        type(r);
        put(r, " as ");
        path(r, false);
        put(r, ">");
    } else if (eat(r, 'I')) {
        path(r, value);
        if (value)
            put(r, "::");
        generic_args(r);
    } else if (eat(r, 'B')) {
        backref(r, path_as_reader, value);
    } else {
        fail(r);
    }
    r->depth--;
}

/* What follows the name: ".0" (a static's index) is kept, LLVM's ".llvm.HEX" dropped, as rustc-demangle does. */
static void suffix(struct rd *r)
{
    const char *rest = r->s + r->pos, *llvm = strstr(rest, ".llvm.");

    if (llvm && llvm[6] && strspn(llvm + 6, "0123456789ABCDEF@") == strlen(llvm + 6))
        put_n(r, rest, (size_t)(llvm - rest));
    else
        put(r, rest);
}

/* "_R" [<decimal-number>] <path> [<instantiating-crate>] [".suffix"]. */
static bool v0(const char *name, char *buf, size_t cap)
{
    struct rd r = { .s = name + 2, .n = strlen(name + 2), .out = buf, .cap = cap };

    if (peek(&r) >= '0' && peek(&r) <= '9')
        return false; /* a later version of the scheme */
    path(&r, true);
    if (!r.bad && peek(&r) && peek(&r) != '.') {
        /* The instantiating crate: not written, but must be a whole path. */
        size_t mark = r.len;
        path(&r, false);
        r.len = mark;
    }
    if (r.bad || (peek(&r) && peek(&r) != '.'))
        return false;
    suffix(&r);
    buf[r.len < cap ? r.len : cap - 1] = '\0';
    return true;
}

/* The legacy scheme's "$..$" escapes and ".." of one path element. */
static void legacy_element(struct rd *r, const char *p, size_t n)
{
    static const struct { const char *code, *text; } escapes[] = {
        { "$SP$", "@" }, { "$BP$", "*" }, { "$RF$", "&" }, { "$LT$", "<" }, { "$GT$", ">" },
        { "$LP$", "(" }, { "$RP$", ")" }, { "$C$", "," },
    };
    size_t i = 0;

    if (n > 1 && p[0] == '_' && p[1] == '$')
        i = 1;
    while (i < n) {
        size_t k, len;
        if (p[i] == '.' && i + 1 < n && p[i + 1] == '.') {
            put(r, "::");
            i += 2;
            continue;
        }
        if (p[i] != '$') {
            put_n(r, p + i, 1);
            i++;
            continue;
        }
        for (k = 0; k < sizeof escapes / sizeof escapes[0]; k++)
            if (n - i >= (len = strlen(escapes[k].code)) && !memcmp(p + i, escapes[k].code, len))
                break;
        if (k < sizeof escapes / sizeof escapes[0]) {
            put(r, escapes[k].text);
            i += len;
        } else if (n - i >= 5 && p[i + 1] == 'u' && memchr(p + i + 2, '$', n - i - 2)) {
            /* "$u7e$": a character by its hex code, printable ASCII only */
            unsigned v = 0;
            size_t j = i + 2;
            for (; p[j] != '$'; j++)
                v = v * 16 + (unsigned)(p[j] >= 'a' ? p[j] - 'a' + 10 : p[j] - '0');
            if (v < ' ' || v > '~') {
                r->bad = true;
                return;
            }
            put_n(r, (char[]){ (char)v }, 1);
            i = j + 1;
        } else {
            r->bad = true;
            return;
        }
    }
}

static bool is_hash(const char *p, size_t n)
{
    if (n != 17 || p[0] != 'h')
        return false;
    for (size_t i = 1; i < n; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return false;
    return true;
}

/* "_ZN" {<length><element>} "E", the last element "h" and 16 hex digits: Rust's, not C++'s. */
static bool legacy(const char *name, char *buf, size_t cap)
{
    struct rd r = { .s = name + 3, .n = strlen(name + 3), .out = buf, .cap = cap };
    bool first = true, hashed = false;

    while (!r.bad && peek(&r) >= '1' && peek(&r) <= '9') {
        uint64_t n = decimal(&r);
        const char *p = r.s + r.pos;
        if (n > r.n - r.pos)
            return false;
        r.pos += n;
        if (peek(&r) == 'E' && is_hash(p, n)) {
            hashed = true;
            break;
        }
        if (!first)
            put(&r, "::");
        first = false;
        legacy_element(&r, p, n);
    }
    if (r.bad || first || !hashed || !eat(&r, 'E') || (peek(&r) && peek(&r) != '.'))
        return false;
    suffix(&r);
    buf[r.len < cap ? r.len : cap - 1] = '\0';
    return true;
}

const char *vms__demangle_rust(const char *name, char *buf, size_t cap)
{
    if (!name || cap == 0)
        return name;
    if (!strncmp(name, "_R", 2) && v0(name, buf, cap))
        return buf;
    if (!strncmp(name, "_ZN", 3) && legacy(name, buf, cap))
        return buf;
    return name;
}
