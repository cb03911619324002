/* A stand-in for Darshan in the injection test (Darshan itself has no package or archive here): a PMPI
 * interposer, preloaded by the user's job, counting one MPI-IO call (MPI_File_open, which the shim also
 * wraps) and one call the shim does not wrap (MPI_Barrier). At exit every MPI process prints its counts:
 * with the shim first in LD_PRELOAD, as the operator injects it, MPI_File_open reaches the shim and is
 * not seen here, while MPI_Barrier is — the order docs/shim.md describes for Darshan. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

static long file_opens, barriers;

int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh)
{
    file_opens++;
    return PMPI_File_open(comm, filename, amode, info, fh);
}

int MPI_Barrier(MPI_Comm comm)
{
    barriers++;
    return PMPI_Barrier(comm);
}

__attribute__((destructor)) static void report(void)
{
    int finalized = 0;
    PMPI_Finalized(&finalized); /* only MPI processes report, not mpiexec */
    if (finalized)
        fprintf(stderr, "countio: pid %d MPI_File_open %ld MPI_Barrier %ld\n", (int)getpid(), file_opens, barriers);
}
