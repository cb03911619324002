/* Read-your-own-writes across request sizes, with no sync in between: each rank writes its 1 MiB region
 * as 256 × 4 KiB, reads it back as one 1 MiB request, rewrites it as one 1 MiB request and reads that
 * back as 256 × 4 KiB. On a replica set the two sizes prefer different replicas, so each read lands on
 * a range the preferred replica still owes: the dirty ranges must steer it to a clean copy.
 *   mpiio_rw PATH */
#include "common.h"

#define SMALL 4096
#define BIG (1 << 20)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 2)
        MPI_Abort(MPI_COMM_WORLD, 2);
    unsigned char *buf = malloc(BIG), *rd = malloc(BIG);
    MPI_File fh;
    OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    const MPI_Offset base = (MPI_Offset)rank * BIG;
    for (int k = 0; k < BIG / SMALL; k++) {
        fill(buf, SMALL, rank, k);
        OK(MPI_File_write_at(fh, base + (MPI_Offset)k * SMALL, buf, SMALL, MPI_BYTE, MPI_STATUS_IGNORE));
    }
    OK(MPI_File_read_at(fh, base, rd, BIG, MPI_BYTE, MPI_STATUS_IGNORE));
    uint64_t h1 = fnv1a(FNV_INIT, rd, BIG);
    fill(buf, BIG, rank, 999);
    OK(MPI_File_write_at(fh, base, buf, BIG, MPI_BYTE, MPI_STATUS_IGNORE));
    uint64_t h2 = FNV_INIT;
    for (int k = 0; k < BIG / SMALL; k++) {
        OK(MPI_File_read_at(fh, base + (MPI_Offset)k * SMALL, rd, SMALL, MPI_BYTE, MPI_STATUS_IGNORE));
        h2 = fnv1a(h2, rd, SMALL);
    }
    OK(MPI_File_close(&fh));
    char line[128];
    snprintf(line, sizeof line, "rank %d: small-then-big %016llx big-then-small %016llx", rank,
             (unsigned long long)h1, (unsigned long long)h2);
    print_ordered(line);
    free(buf);
    free(rd);
    MPI_Finalize();
    return 0;
}
