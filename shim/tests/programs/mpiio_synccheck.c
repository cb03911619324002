/* "At MPI_File_sync all replicas are identical": every rank writes COUNT interleaved 4 KiB blocks, then
 * MPI_File_sync + barrier, then rank 0 compares the given replica files byte by byte with plain POSIX
 * reads while the file is still open; twice (a second round of writes overwrites half the blocks).
 *   mpiio_synccheck PATH COUNT REPLICA_PATH... */
#include <string.h>

#include "common.h"

static void compare(int round, int n, char **paths)
{
    long size0 = -1;
    unsigned char *first = NULL;
    for (int i = 0; i < n; i++) {
        FILE *f = fopen(paths[i], "rb");
        if (!f) {
            printf("round %d: cannot open %s\n", round, paths[i]);
            return;
        }
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fseek(f, 0, SEEK_SET);
        unsigned char *data = malloc((size_t)size + 1);
        size_t got = fread(data, 1, (size_t)size, f);
        fclose(f);
        if (i == 0) {
            size0 = size;
            first = data;
            continue;
        }
        if (size != size0 || got != (size_t)size || memcmp(data, first, (size_t)size) != 0) {
            printf("round %d: %s differs from %s\n", round, paths[i], paths[0]);
            free(data);
            free(first);
            return;
        }
        free(data);
    }
    printf("round %d: %d replicas identical, %ld bytes\n", round, n, size0);
    free(first);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc < 4)
        MPI_Abort(MPI_COMM_WORLD, 2);
    const int B = 4096, N = atoi(argv[2]);
    unsigned char buf[4096];
    MPI_File fh;
    OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    for (int round = 1; round <= 2; round++) {
        for (int k = 0; k < N; k += round) {
            fill(buf, (size_t)B, rank, k * round);
            OK(MPI_File_write_at(fh, ((MPI_Offset)k * np + rank) * B, buf, B, MPI_BYTE, MPI_STATUS_IGNORE));
        }
        OK(MPI_File_sync(fh));
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            compare(round, argc - 3, argv + 3);
        fflush(stdout);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    OK(MPI_File_close(&fh));
    MPI_Finalize();
    return 0;
}
