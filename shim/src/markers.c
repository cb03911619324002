/* Stale markers (docs/shim.md, "Stale markers"): `<replica>.pfsstale` exists while a replica may lack
 * writes the others have. Created before the first update that makes a replica lag, removed after every
 * rank closed cleanly, checked (and repaired from an unmarked replica) by rank 0 at the next open. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "shim_internal.h"

const char *rep_posix(const pfs_file *f, int r)
{
    return g_cfg.lazy_posix ? pfs_posix_path(f->rep_path[r]) : NULL;
}

static void marker_path(const pfs_file *f, int r, char *out, size_t n)
{
    const char *pp = pfs_posix_path(f->rep_path[r]);
    snprintf(out, n, "%s.pfsstale", pp ? pp : f->rep_path[r]);
}

/* The shim's own MPI-IO on marker files must never trip the application's default file error handler
 * (a missing marker is the normal case): swap in MPI_ERRORS_RETURN around it. */
static MPI_Errhandler quiet_begin(void)
{
    MPI_Errhandler old;
    PMPI_File_get_errhandler(MPI_FILE_NULL, &old);
    PMPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    return old;
}

static void quiet_end(MPI_Errhandler old)
{
    PMPI_File_set_errhandler(MPI_FILE_NULL, old);
    PMPI_Errhandler_free(&old);
}

static int marker_exists(const pfs_file *f, int r)
{
    char m[PATH_MAX + 16];
    marker_path(f, r, m, sizeof m);
    if (rep_posix(f, r))
        return access(m, F_OK) == 0;
    MPI_File t;
    MPI_Errhandler old = quiet_begin();
    int found = PMPI_File_open(MPI_COMM_SELF, m, MPI_MODE_RDONLY, MPI_INFO_NULL, &t) == MPI_SUCCESS;
    if (found)
        PMPI_File_close(&t);
    quiet_end(old);
    return found;
}

/* Written before the first update that makes replica r lag; removed only after a clean close by every
 * rank. A replica with no marker therefore received every write directly. */
void marker_create(pfs_file *f, int r)
{
    char m[PATH_MAX + 16], body[PATH_MAX + 256], host[256] = "?";
    marker_path(f, r, m, sizeof m);
    gethostname(host, sizeof host - 1);
    int len = snprintf(body, sizeof body,
                       "pfsshim stale marker v1\nlogical=%s\nreplica=%d\nreplica_path=%s\nrank=%d\nhost=%s\npid=%ld\n"
                       "time=%.3f\nmeaning=this replica may lack writes that other replicas have; the shim repairs it "
                       "from an unmarked replica at the next open\n",
                       f->logical, r, f->rep_path[r], g_world_rank, host, (long)getpid(), pfs_now());
    if (rep_posix(f, r)) {
        int fd = open(m, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            ssize_t w = write(fd, body, (size_t)len);
            (void)w;
            fsync(fd);
            close(fd);
        } else {
            say("%s: cannot create stale marker %s: %s", f->logical, m, strerror(errno));
        }
    } else {
        MPI_File t;
        MPI_Errhandler old = quiet_begin();
        if (PMPI_File_open(MPI_COMM_SELF, m, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &t) == MPI_SUCCESS) {
            PMPI_File_set_size(t, 0);
            PMPI_File_write_at(t, 0, body, len, MPI_CHAR, MPI_STATUS_IGNORE);
            PMPI_File_sync(t);
            PMPI_File_close(&t);
        } else {
            say("%s: cannot create stale marker %s through MPI-IO", f->logical, m);
        }
        quiet_end(old);
    }
    f->marker_made[r] = 1;
}

void marker_remove(const pfs_file *f, int r)
{
    char m[PATH_MAX + 16];
    marker_path(f, r, m, sizeof m);
    if (rep_posix(f, r)) {
        unlink(m);
    } else if (marker_exists(f, r)) {
        MPI_Errhandler old = quiet_begin();
        PMPI_File_delete(m, MPI_INFO_NULL);
        quiet_end(old);
    }
}

static int copy_file(const char *src, const char *dst)
{
    int in = open(src, O_RDONLY), out = -1, rc = -1;
    if (in < 0)
        return -1;
    out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0)
        goto done;
    static char buf[1 << 20];
    for (;;) {
        ssize_t k = read(in, buf, sizeof buf);
        if (k < 0)
            goto done;
        if (k == 0)
            break;
        for (ssize_t w = 0; w < k;) {
            ssize_t x = write(out, buf + w, (size_t)(k - w));
            if (x < 0)
                goto done;
            w += x;
        }
    }
    rc = fsync(out);
done:
    if (out >= 0 && close(out) != 0)
        rc = -1;
    close(in);
    return rc;
}

/* The same copy through MPI-IO on MPI_COMM_SELF, for replicas reached only through ROMIO (pvfs2:, or
 * lazy_sync.posix off): the destination is opened without truncation, so a replica keeps the layout it
 * was created with, and sized to the source before the copy. */
static int copy_mpiio(const char *src, const char *dst)
{
    static char buf[1 << 20];
    MPI_File in = MPI_FILE_NULL, out = MPI_FILE_NULL;
    MPI_Errhandler old = quiet_begin(); /* files opened now inherit MPI_ERRORS_RETURN */
    MPI_Offset size = 0;
    int rc = -1;
    if (PMPI_File_open(MPI_COMM_SELF, src, MPI_MODE_RDONLY, MPI_INFO_NULL, &in) != MPI_SUCCESS ||
        PMPI_File_open(MPI_COMM_SELF, dst, MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &out) != MPI_SUCCESS ||
        PMPI_File_get_size(in, &size) != MPI_SUCCESS || PMPI_File_set_size(out, size) != MPI_SUCCESS)
        goto done;
    for (MPI_Offset off = 0; off < size;) {
        int n = size - off < (MPI_Offset)sizeof buf ? (int)(size - off) : (int)sizeof buf, got = 0, put = 0;
        MPI_Status st;
        if (PMPI_File_read_at(in, off, buf, n, MPI_BYTE, &st) != MPI_SUCCESS)
            goto done;
        PMPI_Get_count(&st, MPI_BYTE, &got);
        if (got <= 0) /* the source shrank under us: never leave a copy that looks complete */
            goto done;
        if (PMPI_File_write_at(out, off, buf, got, MPI_BYTE, &st) != MPI_SUCCESS)
            goto done;
        PMPI_Get_count(&st, MPI_BYTE, &put);
        if (put != got)
            goto done;
        off += got;
    }
    rc = PMPI_File_sync(out) == MPI_SUCCESS ? 0 : -1;
done:
    if (out != MPI_FILE_NULL && PMPI_File_close(&out) != MPI_SUCCESS)
        rc = -1;
    if (in != MPI_FILE_NULL)
        PMPI_File_close(&in);
    quiet_end(old);
    return rc;
}

int check_markers(pfs_file *f)
{
    int marked[PFS_MAX_REPLICAS], nmarked = 0, clean = -1;
    for (int r = 0; r < f->nrep; r++) {
        marked[r] = marker_exists(f, r);
        nmarked += marked[r];
        if (!marked[r] && clean < 0)
            clean = r;
    }
    if (!nmarked)
        return 0;
    if (clean < 0) {
        char m[PATH_MAX + 16];
        marker_path(f, 0, m, sizeof m);
        say("%s: every replica has a stale marker (a rank died before close); refusing to open it (MPI_ERR_FILE) "
            "so stale data is never read. Recover a replica by hand, make the others copies of it, then delete the "
            "*.pfsstale files (first: %s)",
            f->logical, m);
        return 1;
    }
    for (int r = 0; r < f->nrep; r++) {
        if (!marked[r])
            continue;
        /* POSIX where both ends have a path (lazy_sync.posix), else ROMIO: both copy every byte */
        const int posix = rep_posix(f, clean) && rep_posix(f, r);
        if (posix ? copy_file(rep_posix(f, clean), rep_posix(f, r)) != 0
                  : copy_mpiio(f->rep_path[clean], f->rep_path[r]) != 0) {
            say("%s: repairing replica %d from replica %d %s failed%s%s; refusing to open", f->logical, r, clean,
                posix ? "with POSIX I/O" : "through MPI-IO", posix ? ": " : "", posix ? strerror(errno) : "");
            return 1;
        }
        marker_remove(f, r);
        say("%s: replica %d (%s) had a stale marker (a rank died before close); repaired it from replica %d %s",
            f->logical, r, f->rep_path[r], clean, posix ? "with POSIX I/O" : "through MPI-IO");
    }
    return 0;
}
