/* Shared helpers for the MPI-IO test programs: fail loudly on any MPI error, FNV-1a checksums. */
#ifndef PFS_PROG_COMMON_H
#define PFS_PROG_COMMON_H
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* what failed, where and why: the message both checks below print before they leave */
static inline void mpi_failed(int rc, const char *file, int line, const char *call)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, call, msg);
}

#define OK(call)                                                                                               \
    do {                                                                                                       \
        int rc_ = (call);                                                                                      \
        if (rc_ != MPI_SUCCESS) {                                                                              \
            mpi_failed(rc_, __FILE__, __LINE__, #call);                                                        \
            MPI_Abort(MPI_COMM_WORLD, 3);                                                                      \
        }                                                                                                      \
    } while (0)

/* A failed (collective) open fails on every rank: leave through MPI_Finalize rather than MPI_Abort, so
 * the launcher forwards all of stderr (MPICH's hydra may drop output of an aborted job). */
#define OPEN_OR_EXIT(call)                                                                                     \
    do {                                                                                                       \
        int rc_ = (call);                                                                                      \
        if (rc_ != MPI_SUCCESS) {                                                                              \
            mpi_failed(rc_, __FILE__, __LINE__, #call);                                                        \
            MPI_Finalize();                                                                                    \
            exit(4);                                                                                           \
        }                                                                                                      \
    } while (0)

static inline uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
#define FNV_INIT 0xcbf29ce484222325ull

/* deterministic content: byte i of rank r's block k */
static inline void fill(unsigned char *buf, size_t n, int rank, int k)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)((i * 131u + (unsigned)rank * 17u + (unsigned)k * 7u + (i >> 8)) & 0xFF);
}

/* every rank's line, printed in rank order by rank 0 (stdout is what the tests compare) */
static inline void print_ordered(const char *line)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char mine[256] = {0};
    snprintf(mine, sizeof mine, "%s", line);
    char *all = rank == 0 ? malloc((size_t)size * 256) : NULL;
    MPI_Gather(mine, 256, MPI_CHAR, all, 256, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++)
            printf("%s\n", all + (size_t)r * 256);
        fflush(stdout);
        free(all);
    }
}
#endif
