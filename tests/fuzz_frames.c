/* SPDX-License-Identifier: MIT */
/*
 * Fuzzing of checkstack's ELF and call-frame reader (frames_read: libelf,
 * libdw's CFI, the prologue decoder), which reads whatever binary a user
 * names.  One input is one file's bytes.
 *
 * Built two ways:
 *   - with clang and -DVMS_FUZZ=ON: a libFuzzer target (fuzz_frames_libfuzzer,
 *     run as 'fuzz_frames_libfuzzer -max_total_time=60 CORPUS_DIR');
 *   - always: a seeded mutation run, 'fuzz_frames SEED_RNG CASES FILE...',
 *     which the test suite runs in every configuration (ASan+UBSan
 *     included): each case is one of the files with a few bytes changed,
 *     a range overwritten or its end cut off.  A crash or a sanitizer
 *     report fails the test; a hang is cut by the test's timeout.
 */
#include "checkstack/frames.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long parsed; /* inputs frames_read took as a whole binary */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[256];
    struct frames fr;
    int fd = memfd_create("fuzz", MFD_CLOEXEC);

    if (fd < 0)
        return 0;
    if (write(fd, data, size) == (ssize_t)size) {
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        if (frames_read(&fr, path, err, sizeof err) == 0) {
            parsed++;
            frames_free(&fr);
        }
    }
    close(fd);
    return 0;
}

#ifndef VMS_LIBFUZZER
/* xorshift64*: the same cases for the same seed, on every machine. */
static uint64_t next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static void mutate(uint8_t *p, size_t *n, uint64_t *rng)
{
    switch (next(rng) % 4) {
    case 0: /* a few bytes anywhere */
    case 1:
        for (int k = 1 + (int)(next(rng) % 16); k > 0; k--)
            p[next(rng) % *n] = (uint8_t)next(rng);
        break;
    case 2: { /* a range overwritten with one value: zeroed or all-ones headers and tables */
        size_t at = next(rng) % *n, len = 1 + next(rng) % 256;
        memset(p + at, (int)(next(rng) & 1 ? 0xff : 0), at + len > *n ? *n - at : len);
        break;
    }
    default: /* cut short */
        *n = 1 + next(rng) % *n;
        break;
    }
}

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    uint8_t *p = NULL;
    long len;

    if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) ||
        !(p = malloc((size_t)len)) || fread(p, 1, (size_t)len, f) != (size_t)len) {
        fprintf(stderr, "fuzz_frames: cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    *n = (size_t)len;
    return p;
}

int main(int argc, char **argv)
{
    uint64_t rng;
    long cases;

    if (argc < 4 || (rng = strtoull(argv[1], NULL, 0)) == 0 || (cases = strtol(argv[2], NULL, 10)) <= 0) {
        fprintf(stderr, "usage: fuzz_frames SEED CASES FILE...  (SEED non-zero)\n");
        return 2;
    }
    for (long i = 0; i < cases; i++) {
        size_t n, len;
        uint8_t *seed = slurp(argv[3 + i % (argc - 3)], &n), *p = malloc(n);

        if (!p)
            return 1;
        memcpy(p, seed, n);
        len = n;
        mutate(p, &len, &rng);
        LLVMFuzzerTestOneInput(p, len);
        free(p);
        free(seed);
    }
    printf("fuzz_frames: %ld mutated files read without a crash, %ld of them as whole binaries\n", cases, parsed);
    /* A reader that refuses everything would test nothing. */
    return parsed > cases / 10 ? 0 : 1;
}
#endif
