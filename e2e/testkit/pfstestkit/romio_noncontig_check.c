/* romio_noncontig_check PATH [COUNT]: ROMIO's pvfs2 driver, contiguous memory through a noncontiguous file view.
 * Each of the P ranks sees every P-th int of the file (view: vector(COUNT, 1, P) of MPI_INT displaced by
 * rank ints), writes COUNT ints from a contiguous buffer, reads them back through the same view, and
 * rank 0 also reads the whole file through the default view. COUNT > 128 (default 1000) spans several of
 * the driver's 64-piece lists. Prints "No Errors", or the first wrong int and where it is; exit 1 then.
 * Issue 38 (images/build/mpich-patches/0002-romio-pvfs2-noncontig.patch); built and run by pfstestkit.romio_suite. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, np, i, count = argc > 2 ? atoi(argv[2]) : 1000, bad = -1, anybad;
    MPI_File fh;
    MPI_Datatype ftype;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int *buf = malloc(sizeof(int) * count * np), *back = malloc(sizeof(int) * count * np);
    for (i = 0; i < count; i++) buf[i] = rank + np * i;   /* = the int's index in the file */
    MPI_Type_vector(count, 1, np, MPI_INT, &ftype);
    MPI_Type_commit(&ftype);
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh)) {
        fprintf(stderr, "cannot open %s\n", argv[1]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_File_set_view(fh, rank * sizeof(int), MPI_INT, ftype, "native", MPI_INFO_NULL);
    MPI_File_write_at(fh, 0, buf, count, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < count; i++) back[i] = -1;
    MPI_File_read_at(fh, 0, back, count, MPI_INT, MPI_STATUS_IGNORE);
    for (i = 0; i < count && bad < 0; i++)
        if (back[i] != buf[i]) {
            bad = i;
            printf("rank %d: view read: int %d (byte %d of the file) is %d, should be %d\n",
                   rank, i, (int) sizeof(int) * (rank + np * i), back[i], buf[i]);
        }
    MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    if (rank == 0) {
        for (i = 0; i < count * np; i++) back[i] = -1;
        MPI_File_read_at(fh, 0, back, count * np, MPI_INT, MPI_STATUS_IGNORE);
        for (i = 0; i < count * np; i++)
            if (back[i] != i) {
                bad = i;
                printf("whole-file read: byte %d is int %d, should be %d\n", (int) sizeof(int) * i, back[i], i);
                break;
            }
    }
    MPI_File_close(&fh);
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && anybad < 0) printf(" No Errors\n");
    MPI_Finalize();
    return anybad >= 0;
}
