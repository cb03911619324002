/* mpiio backend: independent explicit-offset MPI-IO, so ROMIO's file-system drivers (ufs, pvfs2:, ...)
 * do the I/O exactly as an application's MPI_File_write_at would. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "pfs_common.h"

extern const probe_backend probe_backend_posix;

struct probe_file {
    MPI_File fh;
    char path[4352];
};

static void mpi_msg(char *msg, const char *what, const char *path, int rc)
{
    char err[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, err, &len);
    err[len] = 0;
    snprintf(msg, PROBE_MSG_LEN, "%.160s %.160s: %.160s", what, path, err);
}

static int mpiio_init(probe_grid *g, char *msg)
{
    (void)g;
    (void)msg;
    return 0;
}

/* "pvfs2:/mnt/ofs/x" names a ROMIO driver: the directory lives in that file system, which the operator
 * prepares (with its layout hints); only plain paths are created here. */
static int mpiio_prepare_dir(const char *dir, char *msg)
{
    if (pfs_romio_prefix_len(dir) > 0)
        return 0;
    return probe_backend_posix.prepare_dir(dir, msg);
}

static int mpiio_open(const char *path, MPI_Comm comm, const probe_place *pl, int direct, probe_file **out,
                      char *msg)
{
    (void)pl;
    (void)direct;
    int me;
    MPI_Comm_rank(comm, &me);
    if (me == 0)
        MPI_File_delete(path, MPI_INFO_NULL); /* a fresh file; a missing one is fine */
    MPI_Barrier(comm);
    probe_file *f = calloc(1, sizeof(*f));
    if (!f) {
        snprintf(msg, PROBE_MSG_LEN, "out of memory");
        return -1;
    }
    snprintf(f->path, sizeof f->path, "%s", path);
    int rc = MPI_File_open(comm, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &f->fh);
    if (rc != MPI_SUCCESS) {
        mpi_msg(msg, "targets: cannot open", path, rc);
        free(f);
        return -1;
    }
    *out = f;
    return 0;
}

static int mpiio_io(probe_file *f, int write, void *buf, int64_t len, int64_t off, char *msg)
{
    MPI_Status st;
    int rc = write ? MPI_File_write_at(f->fh, (MPI_Offset)off, buf, (int)len, MPI_BYTE, &st)
                   : MPI_File_read_at(f->fh, (MPI_Offset)off, buf, (int)len, MPI_BYTE, &st);
    if (rc != MPI_SUCCESS) {
        mpi_msg(msg, write ? "write to" : "read from", f->path, rc);
        return -1;
    }
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    if (count != (int)len) {
        snprintf(msg, PROBE_MSG_LEN, "%.160s %.160s at offset %lld: %d of %lld bytes", write ? "write to" : "read from",
                 f->path, (long long)off, count, (long long)len);
        return -1;
    }
    return 0;
}

static int mpiio_sync(probe_file *f, char *msg)
{
    int rc = MPI_File_sync(f->fh);
    if (rc != MPI_SUCCESS) {
        mpi_msg(msg, "sync", f->path, rc);
        return -1;
    }
    return 0;
}

static int mpiio_size(probe_file *f, int64_t *size, char *msg)
{
    MPI_Offset s = 0;
    int rc = MPI_File_get_size(f->fh, &s);
    if (rc != MPI_SUCCESS) {
        mpi_msg(msg, "size of", f->path, rc);
        return -1;
    }
    *size = (int64_t)s;
    return 0;
}

static int mpiio_close(probe_file *f, char *msg)
{
    int rc = MPI_File_close(&f->fh);
    if (rc != MPI_SUCCESS)
        mpi_msg(msg, "close", f->path, rc);
    free(f);
    return rc == MPI_SUCCESS ? 0 : -1;
}

static int mpiio_remove(const char *path, char *msg)
{
    int rc = MPI_File_delete(path, MPI_INFO_NULL);
    if (rc != MPI_SUCCESS) {
        mpi_msg(msg, "remove", path, rc);
        return -1;
    }
    return 0;
}

static void mpiio_finalize(void) {}

const probe_backend probe_backend_mpiio = {
    .name = "mpiio",
    .collective = 1,
    .init = mpiio_init,
    .prepare_dir = mpiio_prepare_dir,
    .open = mpiio_open,
    .io = mpiio_io,
    .sync = mpiio_sync,
    .evict = NULL,
    .size = mpiio_size,
    .close = mpiio_close,
    .remove = mpiio_remove,
    .finalize = mpiio_finalize,
};
