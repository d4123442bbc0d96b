/* SPDX-License-Identifier: MIT */
/*
 * The JSON writer: one for the library, the preload and the tools.
 *
 * It allocates nothing and calls nothing that is not async-signal-safe
 * itself: text goes into a buffer the caller provides (on its stack, say)
 * and out through the caller's sink whenever the buffer fills, so it serves
 * the preload's table at exit and in a signal as well as the tools' stdout.
 * Strings are escaped (quotes, backslash, control characters) and bytes
 * that are not valid UTF-8 become U+FFFD, so a name cut in the middle of a
 * character still gives a document a strict parser takes; NaN and infinity
 * are written as null.  Commas are placed by the writer: callers only say
 * where objects, arrays, keys and values begin.
 */
#ifndef VMS_JSON_H
#define VMS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define VMS_JSON_MAX_DEPTH 32

/*
 * Where full buffers go: returns 0, or a negative errno that the writer
 * keeps (the first one) and reports from vms__json_end.
 */
typedef int (*vms_json_sink)(void *ctx, const char *p, size_t n);

struct vms_json {
    char *buf;
    size_t cap, len;
    vms_json_sink sink;
    void *ctx;
    int err;                  /* first error of the sink, or of the nesting */
    unsigned depth;
    bool pretty;              /* a newline and two spaces per level before each member */
    bool need_comma[VMS_JSON_MAX_DEPTH + 1];
    bool after_key;           /* a key was written: the value follows without a comma */
};

/* pre: buf has cap >= 64 bytes and outlives the writer; sink not NULL. */
void vms__json_init(struct vms_json *j, char *buf, size_t cap, vms_json_sink sink, void *ctx, bool pretty);
/* Flushes what is left; 0, or the first error (sink's, or -EINVAL for unbalanced nesting). */
int vms__json_end(struct vms_json *j);

/* Sends what is buffered to the sink now (before a fork, or between parts written over time). */
void vms__json_flush(struct vms_json *j);

void vms__json_obj(struct vms_json *j);      /* { */
void vms__json_obj_end(struct vms_json *j);  /* } */
void vms__json_arr(struct vms_json *j);      /* [ */
void vms__json_arr_end(struct vms_json *j);  /* ] */
void vms__json_key(struct vms_json *j, const char *key);

void vms__json_str(struct vms_json *j, const char *s);            /* NULL: null */
void vms__json_strn(struct vms_json *j, const char *s, size_t n); /* n bytes, NULs included */
void vms__json_int(struct vms_json *j, long long v);
void vms__json_uint(struct vms_json *j, unsigned long long v);
void vms__json_hex(struct vms_json *j, uint64_t v);               /* as a string "0x..." */
void vms__json_double(struct vms_json *j, double v);              /* NaN, inf: null */
void vms__json_bool(struct vms_json *j, bool v);
void vms__json_null(struct vms_json *j);
/* A member: its key, then its value. */
void vms__json_key_str(struct vms_json *j, const char *key, const char *s);
void vms__json_key_uint(struct vms_json *j, const char *key, unsigned long long v);
void vms__json_key_bool(struct vms_json *j, const char *key, bool v);

/* Sinks: to a descriptor with write(2) (async-signal-safe; ctx is an int *), and to a FILE *. */
int vms__json_sink_fd(void *ctx, const char *p, size_t n);
int vms__json_sink_file(void *ctx, const char *p, size_t n);

#endif
