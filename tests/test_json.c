/* SPDX-License-Identifier: MIT */
/*
 * The JSON writer: exact output for escapes, invalid UTF-8 (U+FFFD), NaN
 * and infinity (null), numbers and nesting; buffers far smaller than the
 * document; the sink's errors and unbalanced nesting reported.  The whole
 * document is also checked by a strict parser (python3) when one is there.
 */
#include "check.h"
#include "core/json.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <string.h>

struct out {
    char text[4096];
    size_t len;
    int fail_after; /* calls before the sink fails; -1: never */
};

static int sink(void *ctx, const char *p, size_t n)
{
    struct out *o = ctx;

    if (o->fail_after == 0)
        return -ENOSPC;
    if (o->fail_after > 0)
        o->fail_after--;
    CHECK(o->len + n < sizeof o->text);
    memcpy(o->text + o->len, p, n);
    o->len += n;
    o->text[o->len] = '\0';
    return 0;
}

static void expect_str(const char *in, size_t n, const char *want)
{
    char buf[64];
    struct out o = {.fail_after = -1};
    struct vms_json j;

    vms__json_init(&j, buf, sizeof buf, sink, &o, false);
    vms__json_strn(&j, in, n);
    CHECK_EQ(vms__json_end(&j), 0);
    if (strcmp(o.text, want)) {
        fprintf(stderr, "string %zu bytes: got %s, want %s\n", n, o.text, want);
        exit(1);
    }
}

static void expect_double(double v, const char *want)
{
    char buf[64];
    struct out o = {.fail_after = -1};
    struct vms_json j;

    vms__json_init(&j, buf, sizeof buf, sink, &o, false);
    vms__json_double(&j, v);
    CHECK_EQ(vms__json_end(&j), 0);
    if (strcmp(o.text, want)) {
        fprintf(stderr, "double %g: got %s, want %s\n", v, o.text, want);
        exit(1);
    }
}

#define STR(lit, want) expect_str(lit, sizeof lit - 1, want)

static void strings(void)
{
    STR("plain", "\"plain\"");
    STR("q\"b\\s/", "\"q\\\"b\\\\s/\"");
    STR("\n\t\x01\x1f\x7f", "\"\\u000a\\u0009\\u0001\\u001f\\u007f\"");
    STR("nul\0in", "\"nul\\u0000in\"");
    STR("\xc3\x83 \xe2\x82\xac \xf0\x9f\x98\x80", "\"\xc3\x83 \xe2\x82\xac \xf0\x9f\x98\x80\""); /* Ã € 😀 */
    /* A name cut inside a character: its first byte alone. */
    STR("abcdefghijklmn\xc3", "\"abcdefghijklmn\xef\xbf\xbd\"");
    STR("\xe2\x82", "\"\xef\xbf\xbd\xef\xbf\xbd\"");             /* truncated three-byte form */
    STR("\xc0\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\"");             /* overlong NUL */
    STR("\xed\xa0\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""); /* a surrogate */
    STR("\xf5\x80\x80\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""); /* past U+10FFFF */
    STR("\x83x", "\"\xef\xbf\xbdx\"");                           /* a lone continuation byte */
}

static void numbers(void)
{
    expect_double(NAN, "null");
    expect_double(INFINITY, "null");
    expect_double(-INFINITY, "null");
    expect_double(0, "0");
    expect_double(42, "42");
    expect_double(-3, "-3");
    expect_double(1.5, "1.5");
    expect_double(0.1, "0.1");
    expect_double(21.3, "21.3");
    expect_double(1e300, "1e+300");
    expect_double(1.0 / 3, "0.3333333333333333");
}

/* A document much larger than the writer's buffer, with every kind of value. */
static void document(void)
{
    char buf[64];
    static struct out o = {.fail_after = -1};
    struct vms_json j;
    FILE *py;

    vms__json_init(&j, buf, sizeof buf, sink, &o, true);
    vms__json_obj(&j);
    vms__json_key(&j, "ints");
    vms__json_arr(&j);
    vms__json_int(&j, LLONG_MIN);
    vms__json_int(&j, LLONG_MAX);
    vms__json_uint(&j, ULLONG_MAX);
    vms__json_arr_end(&j);
    vms__json_key(&j, "hex");
    vms__json_hex(&j, 0x7fffdeadbeefULL);
    vms__json_key(&j, "nan");
    vms__json_double(&j, NAN);
    vms__json_key(&j, "flags");
    vms__json_arr(&j);
    vms__json_bool(&j, true);
    vms__json_bool(&j, false);
    vms__json_null(&j);
    vms__json_str(&j, NULL);
    vms__json_arr_end(&j);
    vms__json_key(&j, "empty");
    vms__json_obj(&j);
    vms__json_obj_end(&j);
    vms__json_key(&j, "name \xc3");
    vms__json_str(&j, "abcdefghijklmn\xc3");
    vms__json_obj_end(&j);
    CHECK_EQ(vms__json_end(&j), 0);
    CHECK(strstr(o.text, "\"ints\": [\n    -9223372036854775808,\n    9223372036854775807,\n"
                         "    18446744073709551615\n  ]"));
    CHECK(strstr(o.text, "\"hex\": \"0x7fffdeadbeef\""));
    CHECK(strstr(o.text, "\"nan\": null"));
    CHECK(strstr(o.text, "\"empty\": {}"));
    if (!(py = popen("command -v python3 >/dev/null || exit 0; python3 -c '"
                     "import json, sys\n"
                     "def bad(c): raise ValueError(c)\n"
                     "d = json.loads(sys.stdin.buffer.read().decode(\"utf-8\"), parse_constant=bad)\n"
                     "assert d[\"nan\"] is None and d[\"name \\ufffd\"] == \"abcdefghijklmn\\ufffd\", d\n"
                     "assert d[\"ints\"][2] == 2**64 - 1 and d[\"flags\"] == [True, False, None, None], d'",
                     "w")))
        return;
    fwrite(o.text, 1, o.len, py);
    CHECK_EQ(pclose(py), 0);
}

static void errors(void)
{
    char buf[64];
    struct out o = {.fail_after = 1};
    struct vms_json j;

    /* The sink's first error is kept and returned. */
    vms__json_init(&j, buf, sizeof buf, sink, &o, false);
    vms__json_arr(&j);
    for (int i = 0; i < 100; i++)
        vms__json_str(&j, "0123456789");
    vms__json_arr_end(&j);
    CHECK_EQ(vms__json_end(&j), -ENOSPC);

    /* Unbalanced nesting. */
    o = (struct out){.fail_after = -1};
    vms__json_init(&j, buf, sizeof buf, sink, &o, false);
    vms__json_obj(&j);
    CHECK_EQ(vms__json_end(&j), -EINVAL);
    vms__json_init(&j, buf, sizeof buf, sink, &o, false);
    vms__json_arr_end(&j);
    CHECK_EQ(vms__json_end(&j), -EINVAL);
}

int main(void)
{
    strings();
    numbers();
    document();
    errors();
    printf("test_json: all passed\n");
    return 0;
}
