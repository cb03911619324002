/* Fixed-size independent requests, to check routing against the cost model: each rank writes COUNT
 * blocks of SIZE bytes with MPI_File_write_at (interleaved by rank), syncs, then reads them back with
 * MPI_File_read_at and prints a checksum. With "fpp", every rank uses its own file PATH.<rank> opened on
 * MPI_COMM_SELF instead (file per process, the IOR -F pattern).
 *   mpiio_route PATH SIZE COUNT [fpp] */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc != 4 && !(argc == 5 && argv[4][0] == 'f')) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiio_route PATH SIZE COUNT [fpp]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int S = atoi(argv[2]), N = atoi(argv[3]), fpp = argc == 5;
    unsigned char *buf = malloc((size_t)S);
    MPI_File fh;
    char path[4096];
    if (fpp)
        snprintf(path, sizeof path, "%s.%d", argv[1], rank);
    else
        snprintf(path, sizeof path, "%s", argv[1]);
    /* shared file: blocks interleaved by rank; file per process: the same offsets in one's own file */
    const int stride = fpp ? 1 : np, me = fpp ? 0 : rank, other = fpp ? 0 : (rank + 1) % np;
    OPEN_OR_EXIT(MPI_File_open(fpp ? MPI_COMM_SELF : MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    for (int k = 0; k < N; k++) {
        fill(buf, (size_t)S, rank, k);
        OK(MPI_File_write_at(fh, ((MPI_Offset)k * stride + me) * S, buf, S, MPI_BYTE, MPI_STATUS_IGNORE));
    }
    OK(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    OK(MPI_File_sync(fh));
    uint64_t h = FNV_INIT;
    for (int k = 0; k < N; k++) {
        OK(MPI_File_read_at(fh, ((MPI_Offset)k * stride + other) * S, buf, S, MPI_BYTE, MPI_STATUS_IGNORE));
        h = fnv1a(h, buf, (size_t)S);
    }
    OK(MPI_File_close(&fh));
    char line[128];
    snprintf(line, sizeof line, "rank %d: read %016llx", rank, (unsigned long long)h);
    print_ordered(line);
    free(buf);
    MPI_Finalize();
    return 0;
}
