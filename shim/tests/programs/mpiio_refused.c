/* Calls a replica set cannot support: a shared-file-pointer write and a split collective. Prints the
 * error class each returned (0 = success) from rank 0, then does a normal write so close has work.
 * With "delete", rank 0 then deletes PATH with MPI_File_delete.
 *   mpiio_refused PATH [delete] */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 2 && argc != 3)
        MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_File fh;
    OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    char buf[64] = "shared";
    int cls_shared = 0, cls_split = 0, rc;
    rc = MPI_File_write_shared(fh, buf, 8, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_Error_class(rc, &cls_shared);
    rc = MPI_File_write_all_begin(fh, buf, 8, MPI_BYTE);
    MPI_Error_class(rc, &cls_split);
    if (rc == MPI_SUCCESS)
        OK(MPI_File_write_all_end(fh, buf, MPI_STATUS_IGNORE));
    OK(MPI_File_write_at(fh, 100 + rank * 8, buf, 8, MPI_BYTE, MPI_STATUS_IGNORE));
    OK(MPI_File_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);
    if (argc == 3 && rank == 0)
        OK(MPI_File_delete(argv[1], MPI_INFO_NULL));
    if (rank == 0)
        printf("write_shared=%s split=%s\n",
               cls_shared == MPI_SUCCESS ? "ok" : cls_shared == MPI_ERR_UNSUPPORTED_OPERATION ? "unsupported" : "other",
               cls_split == MPI_SUCCESS ? "ok" : cls_split == MPI_ERR_UNSUPPORTED_OPERATION ? "unsupported" : "other");
    MPI_Finalize();
    return 0;
}
