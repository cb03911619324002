/* Minimal assertion helpers for the C unit tests: count failures, report them all, exit non-zero. */
#ifndef PFS_CHECK_H
#define PFS_CHECK_H
#include <stdio.h>
#include <string.h>

static int check_failures, check_count;

#define CHECK(cond, ...)                                                                                       \
    do {                                                                                                       \
        check_count++;                                                                                         \
        if (!(cond)) {                                                                                         \
            check_failures++;                                                                                  \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);                            \
            fprintf(stderr, __VA_ARGS__);                                                                      \
            fputc('\n', stderr);                                                                               \
        }                                                                                                      \
    } while (0)

static inline int check_done(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    return check_failures ? 1 : 0;
}
#endif
