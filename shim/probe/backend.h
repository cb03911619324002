/* One I/O path per backend. The runner drives cells through this table and never sees a file descriptor,
 * MPI_File or PVFS handle. Functions return 0 or -1 with one line in msg. */
#ifndef PFSPROBE_BACKEND_H
#define PFSPROBE_BACKEND_H

#include <mpi.h>
#include <stdint.h>

#include "grid.h"
#include "place.h"

typedef struct probe_file probe_file;

/* probe_place (place.h) says how a file should be laid out: the pvfs2 backend realises it per file; the
 * others ignore it (their target directories carry the layout). */

typedef struct {
    const char *name;
    /* 1 when open/sync/close of a shared file are collective (MPI-IO): a rank that failed must still
     * take part, and a half-opened shared file cannot be closed by some ranks alone. */
    int collective;
    /* Every rank, once. May correct g->servers (pvfs2 counts the file system's I/O servers). */
    int (*init)(probe_grid *g, char *msg);
    /* One rank per node; an existing directory is fine. */
    int (*prepare_dir)(const char *dir, char *msg);
    /* Collective over comm (MPI_COMM_SELF for file-per-process): a fresh, empty file. */
    int (*open)(const char *path, MPI_Comm comm, const probe_place *pl, int direct, probe_file **f, char *msg);
    int (*io)(probe_file *f, int write, void *buf, int64_t len, int64_t off, char *msg);
    /* Collective over the open's comm. */
    int (*sync)(probe_file *f, char *msg);
    /* Drop this file's cached pages (posix); NULL when the backend cannot. */
    int (*evict)(probe_file *f, char *msg);
    int (*size)(probe_file *f, int64_t *size, char *msg);
    /* Collective over the open's comm; frees f. */
    int (*close)(probe_file *f, char *msg);
    int (*remove)(const char *path, char *msg);
    void (*finalize)(void);
} probe_backend;

extern const probe_backend probe_backend_posix;
extern const probe_backend probe_backend_mpiio;
#ifdef PFSPROBE_HAVE_PVFS2
extern const probe_backend probe_backend_pvfs2;
#endif

#endif
