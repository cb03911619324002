/* The updates a write owes to the other replicas of its set (docs/shim.md, "Thread and consistency
 * model"): built at the write (packed bytes for POSIX, the user's memory span and datatype for MPI
 * replay), applied by the queue's helper thread (POSIX) or by a drain in the calling thread (both). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "shim_internal.h"

/* A datatype that is one gap-free run of bytes from offset 0 (no lower bound, no holes, no padding).
 * It lives here, with the entries whose form it decides, rather than with MPI_File_set_view, which also
 * asks it (for view_contig): the wrapper units call down into this one and never the other way round. */
int contiguous_type(MPI_Datatype dt)
{
    int size;
    MPI_Aint lb, ext, tlb, text;
    PMPI_Type_size(dt, &size);
    PMPI_Type_get_extent(dt, &lb, &ext);
    PMPI_Type_get_true_extent(dt, &tlb, &text);
    return lb == 0 && tlb == 0 && (MPI_Aint)size == ext && ext == text;
}

void posix_apply(void *ctx, pfs_qentry *e, int r)
{
    pfs_file *f = ctx;
    int fd = f->fd[r];
    /* ROMIO's data-sieving writes lock with fcntl; taking the same lock keeps a read-modify-write by
     * another process from losing these bytes */
    struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = (off_t)e->byte_lo,
                       .l_len = (off_t)(e->byte_hi - e->byte_lo)};
    int locked = fcntl(fd, F_SETLKW, &lk) == 0;
    const char *p = e->data;
    size_t left = e->len;
    off_t off = (off_t)e->byte_lo;
    while (left) {
        ssize_t w = pwrite(fd, p, left, off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            __atomic_fetch_add(&f->sync_errors, 1, __ATOMIC_RELAXED);
            say("%s: lazy sync of replica %d failed: %s", f->logical, r, strerror(errno));
            break;
        }
        p += w;
        left -= (size_t)w;
        off += w;
    }
    if (locked) {
        lk.l_type = F_UNLCK;
        fcntl(fd, F_SETLK, &lk);
    }
}

static void any_apply(void *ctx, pfs_qentry *e, int r)
{
    pfs_file *f = ctx;
    if (e->kind == PFS_Q_POSIX) {
        posix_apply(ctx, e, r);
        return;
    }
    MPI_Datatype dt;
    memcpy(&dt, e->dtype, sizeof dt);
    if (PMPI_File_write_at(f->rep[r], e->etype_off, (char *)e->data - e->span_lb, e->count, dt,
                           MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        f->sync_errors++;
        say("%s: lazy sync of replica %d failed (MPI_File_write_at)", f->logical, r);
    }
}

void drain(pfs_file *f)
{
    if (f->q_ready)
        pfs_syncq_drain(&f->q, any_apply, f);
}


/* the update owed to the other replicas: packed bytes for the POSIX thread when the view is a plain
 * byte range, otherwise a copy of the user's memory span replayed through MPI at the next sync point */
pfs_qentry *make_entry(pfs_file *f, const void *buf, int count, MPI_Datatype dt, MPI_Offset o, uint64_t bytes,
                              uint64_t lo, uint64_t hi)
{
    pfs_qentry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->byte_lo = lo;
    e->byte_hi = hi;
    if (f->all_posix && f->view_contig) {
        e->kind = PFS_Q_POSIX;
        e->len = e->cap = (size_t)bytes;
        e->data = malloc(bytes ? bytes : 1);
        if (!e->data)
            goto oom;
        if (contiguous_type(dt)) {
            memcpy(e->data, buf, bytes);
        } else {
            int pos = 0;
            if (bytes > INT_MAX ||
                PMPI_Pack(buf, count, dt, e->data, (int)bytes, &pos, MPI_COMM_SELF) != MPI_SUCCESS)
                goto oom;
        }
        return e;
    }
    e->kind = PFS_Q_MPI;
    MPI_Aint lb, ext, tlb, text;
    PMPI_Type_get_extent(dt, &lb, &ext);
    PMPI_Type_get_true_extent(dt, &tlb, &text);
    size_t span = count > 0 ? (size_t)((count - 1) * ext + text) : 0;
    e->len = span;
    e->data = malloc(span ? span : 1);
    if (!e->data)
        goto oom;
    memcpy(e->data, (const char *)buf + tlb, span);
    e->span_lb = (long)tlb;
    e->etype_off = o;
    e->count = count;
    MPI_Datatype dup;
    if (PMPI_Type_dup(dt, &dup) != MPI_SUCCESS)
        goto oom;
    memcpy(e->dtype, &dup, sizeof dup);
    e->has_dtype = 1;
    return e;
oom:
    pfs_qentry_free(e);
    return NULL;
}
