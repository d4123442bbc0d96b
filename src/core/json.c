/* SPDX-License-Identifier: MIT */
/*
 * The JSON writer (see json.h): a caller's buffer, flushed through the
 * caller's sink.  Integers are formatted by hand so that the preload can
 * write its table in a signal; only doubles go through snprintf.
 */
#include "core/json.h"
#include "core/internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

void vms__json_flush(struct vms_json *j)
{
    int rc;

    if (j->len && !j->err && (rc = j->sink(j->ctx, j->buf, j->len)) < 0)
        j->err = rc;
    j->len = 0;
}

static void put(struct vms_json *j, const char *p, size_t n)
{
    while (n) {
        size_t room = j->cap - j->len, k = n < room ? n : room;

        for (size_t i = 0; i < k; i++)
            j->buf[j->len + i] = p[i];
        j->len += k;
        p += k;
        n -= k;
        if (j->len == j->cap)
            vms__json_flush(j);
    }
}

static void putc_(struct vms_json *j, char c)
{
    put(j, &c, 1);
}

static void puts_(struct vms_json *j, const char *s)
{
    size_t n = 0;

    while (s[n])
        n++;
    put(j, s, n);
}

/* Before any value or key: the comma and the indentation its place needs. */
static void member(struct vms_json *j)
{
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (j->need_comma[j->depth])
        putc_(j, ',');
    j->need_comma[j->depth] = true;
    if (j->pretty && j->depth) {
        putc_(j, '\n');
        for (unsigned i = 0; i < j->depth; i++)
            put(j, "  ", 2);
    }
}

void vms__json_init(struct vms_json *j, char *buf, size_t cap, vms_json_sink sink, void *ctx, bool pretty)
{
    *j = (struct vms_json){.buf = buf, .cap = cap, .sink = sink, .ctx = ctx, .pretty = pretty};
}

int vms__json_end(struct vms_json *j)
{
    if (j->depth && !j->err)
        j->err = -EINVAL;
    if (j->pretty)
        putc_(j, '\n');
    vms__json_flush(j);
    return j->err;
}

static void open_(struct vms_json *j, char c)
{
    member(j);
    putc_(j, c);
    if (j->depth == VMS_JSON_MAX_DEPTH) {
        j->err = j->err ? j->err : -EINVAL;
        return;
    }
    j->need_comma[++j->depth] = false;
}

static void close_(struct vms_json *j, char c)
{
    bool had_members = j->need_comma[j->depth];

    if (!j->depth) {
        j->err = j->err ? j->err : -EINVAL;
        return;
    }
    j->depth--;
    if (j->pretty && had_members) {
        putc_(j, '\n');
        for (unsigned i = 0; i < j->depth; i++)
            put(j, "  ", 2);
    }
    putc_(j, c);
}

void vms__json_obj(struct vms_json *j)
{
    open_(j, '{');
}

void vms__json_obj_end(struct vms_json *j)
{
    close_(j, '}');
}

void vms__json_arr(struct vms_json *j)
{
    open_(j, '[');
}

void vms__json_arr_end(struct vms_json *j)
{
    close_(j, ']');
}

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t len;
    unsigned cp;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        len = 2, cp = s[0] & 0x1f;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        len = 3, cp = s[0] & 0x0f;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        len = 4, cp = s[0] & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    /* Overlong forms, surrogates and code points past U+10FFFF are not UTF-8. */
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

static void string(struct vms_json *j, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;

    putc_(j, '"');
    for (size_t i = 0; i < n;) {
        size_t k = utf8_len(p + i, n - i);
        unsigned char c = p[i];

        if (!k) {
            put(j, "\xef\xbf\xbd", 3); /* U+FFFD */
            i++;
        } else if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            put(j, e, 2);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            put(j, e, 6);
            i++;
        } else {
            put(j, s + i, k);
            i += k;
        }
    }
    putc_(j, '"');
}

void vms__json_key(struct vms_json *j, const char *key)
{
    size_t n = 0;

    member(j);
    while (key[n])
        n++;
    string(j, key, n);
    putc_(j, ':');
    if (j->pretty)
        putc_(j, ' ');
    j->after_key = true;
}

void vms__json_strn(struct vms_json *j, const char *s, size_t n)
{
    member(j);
    string(j, s, n);
}

void vms__json_str(struct vms_json *j, const char *s)
{
    size_t n = 0;

    if (!s) {
        vms__json_null(j);
        return;
    }
    while (s[n])
        n++;
    vms__json_strn(j, s, n);
}

static void digits(struct vms_json *j, unsigned long long v, bool neg)
{
    char t[24];
    size_t i = sizeof t;

    do
        t[--i] = (char)('0' + v % 10);
    while ((v /= 10));
    if (neg)
        t[--i] = '-';
    put(j, t + i, sizeof t - i);
}

void vms__json_int(struct vms_json *j, long long v)
{
    member(j);
    digits(j, v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v, v < 0);
}

void vms__json_uint(struct vms_json *j, unsigned long long v)
{
    member(j);
    digits(j, v, false);
}

void vms__json_hex(struct vms_json *j, uint64_t v)
{
    static const char hex[] = "0123456789abcdef";
    char t[20];
    size_t i = sizeof t;

    do
        t[--i] = hex[v & 15];
    while ((v >>= 4));
    t[--i] = 'x';
    t[--i] = '0';
    member(j);
    putc_(j, '"');
    put(j, t + i, sizeof t - i);
    putc_(j, '"');
}

void vms__json_double(struct vms_json *j, double v)
{
    char t[40];
    int n = 0;

    if (!isfinite(v)) {
        vms__json_null(j);
        return;
    }
    if (v == (double)(long long)v && fabs(v) < 1e15) {
        vms__json_int(j, (long long)v);
        return;
    }
    /* The shortest form that reads back as the same double. */
    for (int prec = 1; prec <= 17; prec++) {
        n = snprintf(t, sizeof t, "%.*g", prec, v);
        if (n <= 0 || (size_t)n >= sizeof t || strtod(t, NULL) == v)
            break;
    }
    member(j);
    if (n > 0 && (size_t)n < sizeof t)
        put(j, t, (size_t)n);
    else
        puts_(j, "null");
}

void vms__json_bool(struct vms_json *j, bool v)
{
    member(j);
    puts_(j, v ? "true" : "false");
}

void vms__json_null(struct vms_json *j)
{
    member(j);
    puts_(j, "null");
}

void vms__json_key_str(struct vms_json *j, const char *key, const char *s)
{
    vms__json_key(j, key);
    vms__json_str(j, s);
}

void vms__json_key_uint(struct vms_json *j, const char *key, unsigned long long v)
{
    vms__json_key(j, key);
    vms__json_uint(j, v);
}

void vms__json_key_bool(struct vms_json *j, const char *key, bool v)
{
    vms__json_key(j, key);
    vms__json_bool(j, v);
}

int vms__json_sink_fd(void *ctx, const char *p, size_t n)
{
    return vms__os_write_all(*(int *)ctx, p, n);
}

int vms__json_sink_file(void *ctx, const char *p, size_t n)
{
    return fwrite(p, 1, n, (FILE *)ctx) == n ? 0 : -EIO;
}
