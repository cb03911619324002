/* The shim benchmark's workload: every rank writes COUNT requests of SIZE bytes to a shared file
 * (interleaved by rank, MPI_File_write_at), syncs, reads them all back (MPI_File_read_at) and closes.
 * Rank 0 prints one JSON line with the slowest rank's seconds in the requests alone, the sync, open +
 * close, and all of them (a loop of MPI_File_get_position calls, untimed there, gives getpos_ns).
 *   bench_io PATH SIZE COUNT */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc != 4) {
        if (rank == 0)
            fprintf(stderr, "usage: bench_io PATH SIZE COUNT\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int S = atoi(argv[2]), N = atoi(argv[3]);
    unsigned char *buf = malloc((size_t)S);
    fill(buf, (size_t)S, rank, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_File fh;
    OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    double t1 = MPI_Wtime();
    for (int k = 0; k < N; k++)
        OK(MPI_File_write_at(fh, ((MPI_Offset)k * np + rank) * S, buf, S, MPI_BYTE, MPI_STATUS_IGNORE));
    double t2 = MPI_Wtime();
    OK(MPI_File_sync(fh));
    double t3 = MPI_Wtime();
    /* a call the shim passes straight through on an untracked file: its per-call cost in isolation */
    const int NPOS = 200000;
    MPI_Offset where = 0;
    double tp0 = MPI_Wtime();
    for (int i = 0; i < NPOS; i++)
        MPI_File_get_position(fh, &where);
    double getpos_ns = (MPI_Wtime() - tp0) / NPOS * 1e9;
    MPI_Barrier(MPI_COMM_WORLD);
    double t4 = MPI_Wtime();
    for (int k = 0; k < N; k++)
        OK(MPI_File_read_at(fh, ((MPI_Offset)k * np + rank) * S, buf, S, MPI_BYTE, MPI_STATUS_IGNORE));
    double t5 = MPI_Wtime();
    OK(MPI_File_close(&fh));
    double t6 = MPI_Wtime();
    /* requests only (writes + reads), the sync, open + close, and everything timed */
    double mine[4] = {(t2 - t1) + (t5 - t4), t3 - t2, (t1 - t0) + (t6 - t5), (t3 - t0) + (t6 - t4)}, worst[4];
    MPI_Reduce(mine, worst, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("{\"ranks\": %d, \"size\": %d, \"count\": %d, \"requests_s\": %.6f, \"sync_s\": %.6f, "
               "\"open_close_s\": %.6f, \"total_s\": %.6f, \"getpos_ns\": %.2f}\n",
               np, S, N, worst[0], worst[1], worst[2], worst[3], getpos_ns);
    free(buf);
    MPI_Finalize();
    return 0;
}
