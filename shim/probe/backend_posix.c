/* posix backend: pread/pwrite on any local or mounted path. */
#define _GNU_SOURCE /* O_DIRECT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "pfs_common.h"

struct probe_file {
    int fd;
    MPI_Comm comm;
    char path[4352];
};

static int posix_init(probe_grid *g, char *msg)
{
    (void)g;
    (void)msg;
    return 0;
}

static int mkdir_p(const char *dir, char *msg)
{
    if (strlen(dir) >= 4096) {
        snprintf(msg, PROBE_MSG_LEN, "targets: path too long: %.160s", dir);
        return -1;
    }
    char failed[4096];
    if (pfs_mkdir_p(dir, failed, sizeof failed) != 0) {
        snprintf(msg, PROBE_MSG_LEN, "targets: cannot create directory %.160s (%.160s); create it or fix the path",
                 failed, strerror(errno));
        return -1;
    }
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
        snprintf(msg, PROBE_MSG_LEN, "targets: %.160s is not a directory; give a directory path", dir);
        return -1;
    }
    return 0;
}

static int posix_open(const char *path, MPI_Comm comm, const probe_place *pl, int direct, probe_file **out,
                      char *msg)
{
    (void)pl;
    int flags = O_RDWR | (direct ? O_DIRECT : 0);
    int me, ok = 1, fd = -1;
    MPI_Comm_rank(comm, &me);
    if (me == 0) {
        fd = open(path, flags | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) {
            snprintf(msg, PROBE_MSG_LEN, "targets: cannot create %.200s (%.100s)%s", path, strerror(errno),
                     direct && errno == EINVAL ? "; this file system refuses O_DIRECT, drop --direct" : "");
            ok = 0;
        }
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
    if (!ok) {
        if (me != 0)
            snprintf(msg, PROBE_MSG_LEN, "targets: cannot create %.160s", path);
        return -1;
    }
    if (me != 0) {
        fd = open(path, flags);
        if (fd < 0) {
            snprintf(msg, PROBE_MSG_LEN, "targets: cannot open %.160s (%.160s)", path, strerror(errno));
            return -1;
        }
    }
    probe_file *f = calloc(1, sizeof(*f));
    if (!f) {
        close(fd);
        snprintf(msg, PROBE_MSG_LEN, "out of memory");
        return -1;
    }
    f->fd = fd;
    f->comm = comm;
    snprintf(f->path, sizeof f->path, "%s", path);
    *out = f;
    return 0;
}

static int posix_io(probe_file *f, int write, void *buf, int64_t len, int64_t off, char *msg)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = write ? pwrite(f->fd, p, (size_t)len, off) : pread(f->fd, p, (size_t)len, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            snprintf(msg, PROBE_MSG_LEN, "%.160s %.160s at offset %lld: %.160s", write ? "write to" : "read from", f->path,
                     (long long)off, n < 0 ? strerror(errno) : "end of file before the request was complete");
            return -1;
        }
        p += n;
        off += n;
        len -= n;
    }
    return 0;
}

static int posix_sync(probe_file *f, char *msg)
{
    if (fsync(f->fd)) {
        snprintf(msg, PROBE_MSG_LEN, "fsync %.160s: %.160s", f->path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Clean pages are dropped by POSIX_FADV_DONTNEED, so write them back first. Needs no privilege, unlike
 * /proc/sys/vm/drop_caches, and touches only the probe's own files. */
static int posix_evict(probe_file *f, char *msg)
{
    if (fdatasync(f->fd)) {
        snprintf(msg, PROBE_MSG_LEN, "fdatasync %.160s: %.160s", f->path, strerror(errno));
        return -1;
    }
    int rc = posix_fadvise(f->fd, 0, 0, POSIX_FADV_DONTNEED);
    if (rc) {
        snprintf(msg, PROBE_MSG_LEN, "posix_fadvise %.160s: %.160s", f->path, strerror(rc));
        return -1;
    }
    return 0;
}

static int posix_size(probe_file *f, int64_t *size, char *msg)
{
    struct stat st;
    if (fstat(f->fd, &st)) {
        snprintf(msg, PROBE_MSG_LEN, "stat %.160s: %.160s", f->path, strerror(errno));
        return -1;
    }
    *size = st.st_size;
    return 0;
}

static int posix_close(probe_file *f, char *msg)
{
    int rc = close(f->fd);
    if (rc)
        snprintf(msg, PROBE_MSG_LEN, "close %.160s: %.160s", f->path, strerror(errno));
    free(f);
    return rc ? -1 : 0;
}

static int posix_remove(const char *path, char *msg)
{
    if (unlink(path) && errno != ENOENT) {
        snprintf(msg, PROBE_MSG_LEN, "remove %.160s: %.160s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static void posix_finalize(void) {}

const probe_backend probe_backend_posix = {
    .name = "posix",
    .collective = 0,
    .init = posix_init,
    .prepare_dir = mkdir_p,
    .open = posix_open,
    .io = posix_io,
    .sync = posix_sync,
    .evict = posix_evict,
    .size = posix_size,
    .close = posix_close,
    .remove = posix_remove,
    .finalize = posix_finalize,
};
