/* File pointer, view, size, sync and error handler on a replica set: the shim owns the individual file
 * pointer; view, size and sync reach every replica (after a drain where queued updates matter). */
#include "shim_internal.h"

int MPI_File_seek(MPI_File fh, MPI_Offset off, int whence)
{
    pfs_file *f = lookup(fh);
    if (!f || !f->hybrid)
        return PMPI_File_seek(fh, off, whence);
    pthread_mutex_lock(&f->mu);
    int rc = MPI_SUCCESS;
    MPI_Offset np = f->pos;
    if (whence == MPI_SEEK_SET) {
        np = off;
    } else if (whence == MPI_SEEK_CUR) {
        np = f->pos + off;
    } else if (whence == MPI_SEEK_END) {
        drain(f); /* replica 0 must hold every write before it can tell where the end is */
        rc = PMPI_File_seek(f->rep[0], off, MPI_SEEK_END);
        if (rc == MPI_SUCCESS)
            rc = PMPI_File_get_position(f->rep[0], &np);
    } else {
        rc = MPI_ERR_ARG;
    }
    if (rc == MPI_SUCCESS && np < 0)
        rc = MPI_ERR_ARG;
    if (rc == MPI_SUCCESS)
        f->pos = np;
    pthread_mutex_unlock(&f->mu);
    return rc;
}

int MPI_File_get_position(MPI_File fh, MPI_Offset *off)
{
    pfs_file *f = lookup(fh);
    if (!f || !f->hybrid)
        return PMPI_File_get_position(fh, off);
    pthread_mutex_lock(&f->mu);
    *off = f->pos;
    pthread_mutex_unlock(&f->mu);
    return MPI_SUCCESS;
}

int MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, const char *datarep,
                      MPI_Info info)
{
    pfs_file *f = lookup(fh);
    if (!f || !f->hybrid)
        return PMPI_File_set_view(fh, disp, etype, filetype, datarep, info);
    pthread_mutex_lock(&f->mu);
    drain(f); /* queued MPI replays are expressed in the old view */
    int rc = MPI_SUCCESS;
    for (int r = 0; r < f->nrep && rc == MPI_SUCCESS; r++)
        rc = PMPI_File_set_view(f->rep[r], disp, etype, filetype, datarep, info);
    if (rc == MPI_SUCCESS) {
        int es = 1;
        PMPI_Type_size(etype, &es);
        f->etype_size = es > 0 ? es : 1;
        f->disp = disp;
        f->pos = 0;
        f->view_contig = contiguous_type(etype) && contiguous_type(filetype) && strcmp(datarep, "native") == 0;
    }
    pthread_mutex_unlock(&f->mu);
    return rc;
}

int MPI_File_get_size(MPI_File fh, MPI_Offset *size)
{
    pfs_file *f = lookup(fh);
    if (!f || !f->hybrid)
        return PMPI_File_get_size(fh, size);
    /* each write reached at least one replica, and owed updates only copy those writes: the logical size
     * is the largest replica, with no need to drain */
    MPI_Offset best = 0;
    for (int r = 0; r < f->nrep; r++) {
        MPI_Offset s = 0;
        int rc = PMPI_File_get_size(f->rep[r], &s);
        if (rc != MPI_SUCCESS)
            return rc;
        if (s > best)
            best = s;
    }
    *size = best;
    return MPI_SUCCESS;
}

static int all_replicas(MPI_File fh, int (*fn)(MPI_File, MPI_Offset), MPI_Offset arg, int *handled)
{
    pfs_file *f = lookup(fh);
    *handled = f && f->hybrid;
    if (!*handled)
        return MPI_SUCCESS;
    pthread_mutex_lock(&f->mu);
    drain(f);
    int rc = MPI_SUCCESS;
    for (int r = 0; r < f->nrep && rc == MPI_SUCCESS; r++)
        rc = fn(f->rep[r], arg);
    pthread_mutex_unlock(&f->mu);
    return rc;
}

int MPI_File_set_size(MPI_File fh, MPI_Offset size)
{
    int handled, rc = all_replicas(fh, PMPI_File_set_size, size, &handled);
    return handled ? rc : PMPI_File_set_size(fh, size);
}

int MPI_File_preallocate(MPI_File fh, MPI_Offset size)
{
    int handled, rc = all_replicas(fh, PMPI_File_preallocate, size, &handled);
    return handled ? rc : PMPI_File_preallocate(fh, size);
}

/* every replica gets the application's error handler, so an error on the replica that served a call
 * is handled as the application asked (not only errors on replica 0, the handle it holds) */
int MPI_File_set_errhandler(MPI_File fh, MPI_Errhandler eh)
{
    pfs_file *f = lookup(fh);
    if (!f || !f->hybrid)
        return PMPI_File_set_errhandler(fh, eh);
    int rc = MPI_SUCCESS;
    for (int r = 0; r < f->nrep && rc == MPI_SUCCESS; r++)
        rc = PMPI_File_set_errhandler(f->rep[r], eh);
    return rc;
}

int MPI_File_sync(MPI_File fh)
{
    pfs_file *f = lookup(fh);
    if (!f || !f->hybrid)
        return PMPI_File_sync(fh);
    pthread_mutex_lock(&f->mu);
    drain(f);
    int rc = MPI_SUCCESS;
    for (int r = 0; r < f->nrep; r++) {
        int rr = PMPI_File_sync(f->rep[r]);
        if (rr != MPI_SUCCESS)
            rc = rr;
    }
    pthread_mutex_unlock(&f->mu);
    return rc;
}
