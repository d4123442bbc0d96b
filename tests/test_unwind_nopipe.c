/* SPDX-License-Identifier: MIT */
/*
 * The overflow handler's set-up, libunwind's initialisation included,
 * leaves no descriptor open in the program (libunwind would open a pipe:
 * unwindpipe.c refuses it); the program's own pipe2 still works.
 */
#include "vmstack.h"
#include "check.h"

#include <fcntl.h>
#include <unistd.h>

/* Whether each of fds 0..63 is open, as a bit. */
static unsigned long long open_fds(void)
{
    unsigned long long bits = 0;

    for (int fd = 0; fd < 64; fd++)
        if (fcntl(fd, F_GETFD) >= 0)
            bits |= 1ULL << fd;
    return bits;
}

int main(void)
{
    unsigned long long before = open_fds(), after;
    vms_stack st;
    int fds[2];

    CHECK_EQ(vms_stack_alloc(&st, 0), 0); /* installs the handler: libunwind is set up */
    after = open_fds();
    if (after != before) {
        fprintf(stderr, "descriptors open before %#llx, after the set-up %#llx\n", before, after);
        return 1;
    }
    CHECK(pipe2(fds, O_CLOEXEC) == 0 && close(fds[0]) == 0 && close(fds[1]) == 0);
    vms_stack_free(&st);
    printf("no descriptor left open by the set-up; pipe2 works\n");
    return 0;
}
