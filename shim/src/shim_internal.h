/* libpfsshim's MPI side, shared by its units (one job each):
 *   state.c      process-wide state from MPI_Init to MPI_Finalize, messages, errors
 *   filetable.c  MPI_File -> pfs_file table (the lookup itself is inline, below)
 *   markers.c    stale markers: create, remove, check and repair at open
 *   lazysync.c   the updates owed to the other replicas: build them, apply them (POSIX or MPI);
 *                whether a datatype is contiguous (the form of an update, and of a view)
 *   openclose.c  MPI_File_open/close/delete, creation hints, the stats of a closed file
 *   dataio.c     the twenty data calls: pass-through, traced, routed to a replica
 *   views.c      file pointer, view, size, sync, error handler on replica sets
 *   init.c       MPI_Init/MPI_Init_thread/MPI_Finalize, the trace file
 * The MPI-free core (config, cost model, routing decision, dirty ranges, queue, trace) is pfsshim.h.
 * Calls go one way, down this list's layers as darshan-runtime's do: the wrappers (openclose.c, dataio.c,
 * views.c, init.c) call the units below them (state, filetable, markers, lazysync) and the core, and
 * those never call a wrapper unit back.
 */
#ifndef PFSSHIM_INTERNAL_H
#define PFSSHIM_INTERNAL_H

#include <jansson.h>
#include <mpi.h>
#include <stdint.h>
#include <string.h>

#include "pfsshim.h"

/* Everything declared here is internal to libpfsshim.so: hidden, so names like drain() or say() cannot
 * clash with the application's own symbols once the library is preloaded into it. Only the MPI_*
 * wrappers (declared by mpi.h, outside this block) are exported. */
#pragma GCC visibility push(hidden)

typedef struct pfs_file {
    MPI_File user_fh;
    char *logical;
    uint32_t trace_id;
    int hybrid;
    /* hybrid only */
    const pfs_rule *rule;
    int nrep;
    MPI_File rep[PFS_MAX_REPLICAS];
    char *rep_path[PFS_MAX_REPLICAS];
    int fd[PFS_MAX_REPLICAS]; /* POSIX fd for lazy sync, -1 when the backend has no POSIX path */
    int all_posix, writable;
    MPI_Comm comm;
    int comm_rank;
    pfs_router router;
    pfs_syncq q;
    int q_ready;
    MPI_Offset pos;        /* individual file pointer, in etypes of the current view */
    MPI_Offset disp;
    int etype_size, view_contig;
    uint64_t last_end;     /* for sequential/random detection */
    int marker_made[PFS_MAX_REPLICAS];
    pthread_mutex_t mu;
    /* counters (stats file) */
    unsigned long reads[PFS_MAX_REPLICAS], writes[PFS_MAX_REPLICAS];
    uint64_t read_bytes[PFS_MAX_REPLICAS], write_bytes[PFS_MAX_REPLICAS];
    unsigned long deferred, forced_drains, sync_errors, alongside;
    uint64_t deferred_bytes, alongside_bytes;
} pfs_file;


/* ---------------------------------------------------------------- state.c */

extern pfs_config g_cfg;
extern int g_active; /* a valid config with rules or a trace */
extern int g_trace_on;
extern pfs_trace g_trace;
extern int g_world_rank, g_world_size;
extern int g_node_size;  /* world ranks on this node (MPI_COMM_TYPE_SHARED) */
extern int g_node_lowest;  /* lowest world rank on this node */
extern int g_open_traced;
extern int g_logged_user_hint;
extern json_t *g_stats;  /* one object per closed replica-set file (stats file) */
extern char *g_stats_dir;

void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An error the shim raises itself goes through the file's error handler, as MPI's own errors do. */
int file_error(MPI_File fh, int code);
/* One stderr line saying why a data-access call failed, in words (once per process and error class):
 * MPICH's text for a code from ROMIO's pvfs2 driver is at best its class's, which is all most programs print. */
void report_io_error(int is_write, const char *file, int code);
extern int g_said_io_error; /* report_io_error has written a line: MPI_Abort lets it reach the log */

/* ---------------------------------------------------------------- filetable.c */

#define TBL 1024
#define TOMB ((pfs_file *)(uintptr_t)1)
typedef struct {
    MPI_File key;
    pfs_file *val;
} pfs_slot;
extern pfs_slot g_tbl[TBL];
extern int g_tbl_count;

static inline size_t slot_of(MPI_File fh)
{
    uintptr_t k = 0;
    memcpy(&k, &fh, sizeof fh < sizeof k ? sizeof fh : sizeof k);
    return (size_t)((k >> 4) * 0x9E3779B97F4A7C15ull >> 54) & (TBL - 1);
}

/* One load and a branch when nothing is tracked: the whole pass-through cost of every wrapper. */
static inline pfs_file *lookup(MPI_File fh)
{
    if (__builtin_expect(!g_tbl_count, 1))
        return NULL;
    for (size_t i = slot_of(fh), n = 0; n < TBL; i = (i + 1) & (TBL - 1), n++) {
        if (!g_tbl[i].val)
            return NULL;
        if (g_tbl[i].val != TOMB && g_tbl[i].key == fh)
            return g_tbl[i].val;
    }
    return NULL;
}

int tbl_insert(MPI_File fh, pfs_file *f);
void tbl_remove(MPI_File fh);

/* ---------------------------------------------------------------- markers.c */

/* The replica's POSIX path when the shim may use POSIX I/O on it (lazy_sync.posix), else NULL. */
const char *rep_posix(const pfs_file *f, int r);
void marker_create(pfs_file *f, int r);
void marker_remove(const pfs_file *f, int r);
/* rank 0 of the file's communicator: 0 = open normally (after repairing), 1 = refuse */
int check_markers(pfs_file *f);

/* ---------------------------------------------------------------- lazysync.c */

/* 1 when dt is plain bytes from offset 0: a write of it is copied as is, a view of it is a byte range */
int contiguous_type(MPI_Datatype dt);
void posix_apply(void *ctx, pfs_qentry *e, int r);
void drain(pfs_file *f);
pfs_qentry *make_entry(pfs_file *f, const void *buf, int count, MPI_Datatype dt, MPI_Offset o, uint64_t bytes,
                       uint64_t lo, uint64_t hi);

/* ---------------------------------------------------------------- openclose.c */

MPI_Info merged_info(MPI_Info user, const char *path, const pfs_hint *h1, int n1, const pfs_hint *h2, int n2,
                     const pfs_hint *h3, int n3);

/* ---------------------------------------------------------------- init.c */

void write_trace(int at_finalize);

#pragma GCC visibility pop

#endif
