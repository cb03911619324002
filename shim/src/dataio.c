/* The twenty data-access calls (read/write, _at, _all, nonblocking, shared and ordered) and the refused
 * split collectives. Untracked files go straight to PMPI; traced files get one record per call; on a
 * replica set the call goes, as an explicit-offset call, to the replica pfs_route_request chooses. */
#include <stdio.h>

#include "shim_internal.h"

enum { OP_READ = 1, OP_WRITE = 2 };
enum { K_EXPLICIT = 1, K_COLL = 2, K_NB = 4, K_SHARED = 8, K_ORDERED = 16 };

/* the 16 combinations of explicit/collective/nonblocking, for reads and writes */
static int call_pmpi(int op, int kind, MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype dt,
                     MPI_Status *st, MPI_Request *req)
{
    const int e = kind & K_EXPLICIT, c = kind & K_COLL, nb = kind & K_NB;
    if (kind & K_SHARED)
        return op == OP_READ ? (nb ? PMPI_File_iread_shared(fh, buf, count, dt, req)
                                   : PMPI_File_read_shared(fh, buf, count, dt, st))
                             : (nb ? PMPI_File_iwrite_shared(fh, buf, count, dt, req)
                                   : PMPI_File_write_shared(fh, buf, count, dt, st));
    if (kind & K_ORDERED)
        return op == OP_READ ? PMPI_File_read_ordered(fh, buf, count, dt, st)
                             : PMPI_File_write_ordered(fh, buf, count, dt, st);
    if (op == OP_READ) {
        if (nb) {
            if (e)
                return c ? PMPI_File_iread_at_all(fh, off, buf, count, dt, req)
                         : PMPI_File_iread_at(fh, off, buf, count, dt, req);
            return c ? PMPI_File_iread_all(fh, buf, count, dt, req) : PMPI_File_iread(fh, buf, count, dt, req);
        }
        if (e)
            return c ? PMPI_File_read_at_all(fh, off, buf, count, dt, st) : PMPI_File_read_at(fh, off, buf, count, dt, st);
        return c ? PMPI_File_read_all(fh, buf, count, dt, st) : PMPI_File_read(fh, buf, count, dt, st);
    }
    if (nb) {
        if (e)
            return c ? PMPI_File_iwrite_at_all(fh, off, buf, count, dt, req)
                     : PMPI_File_iwrite_at(fh, off, buf, count, dt, req);
        return c ? PMPI_File_iwrite_all(fh, buf, count, dt, req) : PMPI_File_iwrite(fh, buf, count, dt, req);
    }
    if (e)
        return c ? PMPI_File_write_at_all(fh, off, buf, count, dt, st) : PMPI_File_write_at(fh, off, buf, count, dt, st);
    return c ? PMPI_File_write_all(fh, buf, count, dt, st) : PMPI_File_write(fh, buf, count, dt, st);
}

static inline uint8_t trace_flags(int kind)
{
    return (uint8_t)(((kind & (K_COLL | K_ORDERED)) ? PFS_TR_COLLECTIVE : 0) | ((kind & K_NB) ? PFS_TR_NONBLOCKING : 0) |
                     ((kind & K_EXPLICIT) ? PFS_TR_EXPLICIT : 0));
}

/* a traced file that is not a replica set: the call as the application made it, plus one record */
static int traced_io(pfs_file *f, int op, int kind, MPI_File fh, MPI_Offset off, void *buf, int count,
                     MPI_Datatype dt, MPI_Status *st, MPI_Request *req)
{
    int tsize = 0;
    PMPI_Type_size(dt, &tsize);
    MPI_Offset pos = off, byte = 0;
    if (kind & (K_SHARED | K_ORDERED))
        PMPI_File_get_position_shared(fh, &pos); /* before the call: exact unless ranks race on it */
    else if (!(kind & K_EXPLICIT))
        PMPI_File_get_position(fh, &pos);
    PMPI_File_get_byte_offset(fh, pos, &byte);
    pfs_trace_rec rec = {.start = pfs_now() - g_trace.epoch, .offset = (uint64_t)byte,
                         .size = (uint64_t)count * (uint64_t)tsize, .file_id = f->trace_id, .op = (uint8_t)op,
                         .flags = trace_flags(kind), .replica = PFS_TR_NO_REPLICA};
    int rc = call_pmpi(op, kind, fh, off, buf, count, dt, st, req);
    rec.end = (kind & K_NB) ? rec.start : pfs_now() - g_trace.epoch;
    pfs_trace_add(&g_trace, &rec);
    return rc;
}

static void envelope(pfs_file *f, MPI_Offset o, MPI_Offset n_et, uint64_t *lo, uint64_t *hi)
{
    if (f->view_contig) {
        *lo = (uint64_t)(f->disp + o * f->etype_size);
        *hi = *lo + (uint64_t)(n_et * f->etype_size);
        return;
    }
    MPI_Offset a = 0, b = 0;
    PMPI_File_get_byte_offset(f->rep[0], o, &a);
    PMPI_File_get_byte_offset(f->rep[0], o + n_et, &b);
    *lo = (uint64_t)a;
    *hi = (uint64_t)(b > a ? b : a);
}

/* what pfs_route_request needs from a replica-set file: its queue's dirty ranges, a drain, and for
 * collective calls the sum of every rank's costs over the file's communicator */
static int replica_dirty(void *ctx, int replica, uint64_t lo, uint64_t hi)
{
    pfs_file *f = ctx;
    return pfs_syncq_dirty(&f->q, replica, lo, hi);
}

static void drain_file(void *ctx)
{
    drain(ctx);
}

static void agree_on_costs(void *ctx, const double *costs, double *sum, int n)
{
    pfs_file *f = ctx;
    PMPI_Allreduce(costs, sum, n, MPI_DOUBLE, MPI_SUM, f->comm);
}

static int hybrid_io(pfs_file *f, int op, int kind, MPI_Offset off, void *buf, int count, MPI_Datatype dt,
                     MPI_Status *st, MPI_Request *req)
{
    if (kind & (K_SHARED | K_ORDERED)) {
        if (op == OP_WRITE) {
            if (f->comm_rank == 0)
                say("%s: shared-file-pointer writes are not supported on a replica set (use explicit offsets or "
                    "individual file pointers); returning MPI_ERR_UNSUPPORTED_OPERATION", f->logical);
            return file_error(f->user_fh, MPI_ERR_UNSUPPORTED_OPERATION);
        }
        pthread_mutex_lock(&f->mu);
        drain(f); /* replica 0 carries the shared pointer; bring it up to date first */
        pthread_mutex_unlock(&f->mu);
        return g_trace_on ? traced_io(f, op, kind, f->rep[0], off, buf, count, dt, st, req)
                          : call_pmpi(op, kind, f->rep[0], off, buf, count, dt, st, req);
    }
    int tsize = 0;
    PMPI_Type_size(dt, &tsize);
    const uint64_t bytes = (uint64_t)count * (uint64_t)tsize;
    const double t0 = g_trace_on ? pfs_now() : 0;
    pthread_mutex_lock(&f->mu);
    const MPI_Offset o = (kind & K_EXPLICIT) ? off : f->pos;
    const MPI_Offset n_et = (MPI_Offset)(bytes / (uint64_t)f->etype_size);
    uint64_t lo, hi;
    envelope(f, o, n_et, &lo, &hi);
    const int random = lo != f->last_end;
    double costs[PFS_MAX_REPLICAS];
    const unsigned all = (1u << f->nrep) - 1;
    const pfs_route_env env = {.dirty = replica_dirty, .drain = drain_file, .agree = agree_on_costs, .ctx = f};
    const pfs_request_kind rk = (kind & K_COLL) ? PFS_REQ_COLLECTIVE : op == OP_READ ? PFS_REQ_READ : PFS_REQ_WRITE;
    int forced = 0;
    const int r = pfs_route_request(&f->router, rk, op == OP_WRITE, lo, hi, bytes, random, &env, costs, &forced);
    if (forced)
        f->forced_drains++;
    if (op == OP_WRITE && f->nrep > 1)
        for (int i = 0; i < f->nrep; i++)
            if (i != r && !f->marker_made[i])
                marker_create(f, i);
    /* MPI-only replicas (no POSIX path: pvfs2:) would be replayed one after another at the next drain;
     * an independent blocking write instead starts the other copies' writes first (iwrite_at, progressed
     * while this rank waits on its own write) so all copies move at once and nothing is owed after it */
    const int alongside = op == OP_WRITE && f->nrep > 1 && bytes && !f->all_posix && g_cfg.lazy_alongside &&
                          !(kind & (K_COLL | K_NB));
    MPI_Request others[PFS_MAX_REPLICAS];
    int nothers = 0;
    if (alongside) {
        for (int i = 0; i < f->nrep; i++)
            if (i != r && pfs_syncq_dirty(&f->q, i, lo, hi)) {
                drain(f); /* an older update to that copy overlaps: it must land first */
                f->forced_drains++;
                break;
            }
        for (int i = 0; i < f->nrep; i++)
            if (i != r && PMPI_File_iwrite_at(f->rep[i], o, buf, count, dt, &others[nothers]) == MPI_SUCCESS)
                nothers++;
            else if (i != r) {
                f->sync_errors++;
                say("%s: writing replica %d alongside failed (MPI_File_iwrite_at)", f->logical, i);
            }
    }
    int rc = call_pmpi(op, kind | K_EXPLICIT, f->rep[r], o, buf, count, dt, st, req);
    if (alongside) {
        MPI_Status sts[PFS_MAX_REPLICAS];
        if (PMPI_Waitall(nothers, others, sts) != MPI_SUCCESS) {
            f->sync_errors++;
            say("%s: a replica written alongside failed", f->logical);
        }
        f->alongside++;
        f->alongside_bytes += bytes * (uint64_t)nothers;
    }
    if (rc == MPI_SUCCESS) {
        if (op == OP_WRITE && f->nrep > 1 && bytes && !alongside) {
            pfs_qentry *e = make_entry(f, buf, count, dt, o, bytes, lo, hi);
            if (e) {
                e->mask = all & ~(1u << r);
                pfs_syncq_push(&f->q, e);
                f->deferred++;
                f->deferred_bytes += bytes;
                if (f->q.bytes > (size_t)g_cfg.queue_limit_bytes) {
                    drain(f);
                    f->forced_drains++;
                }
            } else {
                /* cannot defer: write the others now, so the set stays identical */
                for (int i = 0; i < f->nrep; i++)
                    if (i != r)
                        PMPI_File_write_at(f->rep[i], o, buf, count, dt, MPI_STATUS_IGNORE);
            }
        }
        if (op == OP_READ) {
            f->reads[r]++;
            f->read_bytes[r] += bytes;
        } else {
            f->writes[r]++;
            f->write_bytes[r] += bytes;
        }
        if (!(kind & K_EXPLICIT))
            f->pos = o + n_et;
        f->last_end = hi;
    }
    pthread_mutex_unlock(&f->mu);
    if (g_trace_on) {
        pfs_trace_rec rec = {.start = t0 - g_trace.epoch, .offset = lo, .size = bytes, .file_id = f->trace_id,
                             .op = (uint8_t)op, .flags = trace_flags(kind) | PFS_TR_ROUTED, .replica = (uint16_t)r};
        rec.end = (kind & K_NB) ? rec.start : pfs_now() - g_trace.epoch;
        pfs_trace_add(&g_trace, &rec);
    }
    return rc;
}

static inline int io(int op, int kind, MPI_File fh, MPI_Offset off, const void *cbuf, int count, MPI_Datatype dt,
                     MPI_Status *st, MPI_Request *req)
{
    void *buf = (void *)(uintptr_t)cbuf;
    pfs_file *f = lookup(fh);
    int rc = !f        ? call_pmpi(op, kind, fh, off, buf, count, dt, st, req)
             : f->hybrid ? hybrid_io(f, op, kind, off, buf, count, dt, st, req)
                         : traced_io(f, op, kind, fh, off, buf, count, dt, st, req);
    /* a nonblocking call's own failure only: the outcome of its I/O comes with MPI_Wait, not wrapped */
    if (rc != MPI_SUCCESS)
        report_io_error(op == OP_WRITE, f ? f->logical : NULL, rc);
    return rc;
}

/* The twenty data-access entry points differ only in direction (op, and whether the buffer is const), in an
 * explicit offset or the file pointer, and in completion: blocking calls fill an MPI_Status, nonblocking
 * ones hand back an MPI_Request. IO_ENTRY writes any of them; the eight names below are the combinations. */
#define IO_ENTRY(name, kind, op, buf_t, off_param, off, done_t, st, rq)                                        \
    int MPI_File_##name(MPI_File fh, off_param buf_t buf, int count, MPI_Datatype dt, done_t done)             \
    {                                                                                                          \
        return io(op, kind, fh, off, buf, count, dt, st, rq);                                                  \
    }
#define AT_OFF MPI_Offset off,
#define R(name, kind) IO_ENTRY(name, kind, OP_READ, void *, , 0, MPI_Status *, done, NULL)
#define RA(name, kind) IO_ENTRY(name, kind, OP_READ, void *, AT_OFF, off, MPI_Status *, done, NULL)
#define IR(name, kind) IO_ENTRY(name, kind, OP_READ, void *, , 0, MPI_Request *, NULL, done)
#define IRA(name, kind) IO_ENTRY(name, kind, OP_READ, void *, AT_OFF, off, MPI_Request *, NULL, done)
#define W(name, kind) IO_ENTRY(name, kind, OP_WRITE, const void *, , 0, MPI_Status *, done, NULL)
#define WA(name, kind) IO_ENTRY(name, kind, OP_WRITE, const void *, AT_OFF, off, MPI_Status *, done, NULL)
#define IW(name, kind) IO_ENTRY(name, kind, OP_WRITE, const void *, , 0, MPI_Request *, NULL, done)
#define IWA(name, kind) IO_ENTRY(name, kind, OP_WRITE, const void *, AT_OFF, off, MPI_Request *, NULL, done)

R(read, 0)
R(read_all, K_COLL)
RA(read_at, K_EXPLICIT)
RA(read_at_all, K_EXPLICIT | K_COLL)
IR(iread, K_NB)
IR(iread_all, K_NB | K_COLL)
IRA(iread_at, K_NB | K_EXPLICIT)
IRA(iread_at_all, K_NB | K_EXPLICIT | K_COLL)
W(write, 0)
W(write_all, K_COLL)
WA(write_at, K_EXPLICIT)
WA(write_at_all, K_EXPLICIT | K_COLL)
IW(iwrite, K_NB)
IW(iwrite_all, K_NB | K_COLL)
IWA(iwrite_at, K_NB | K_EXPLICIT)
IWA(iwrite_at_all, K_NB | K_EXPLICIT | K_COLL)
R(read_shared, K_SHARED)
R(read_ordered, K_ORDERED)
W(write_shared, K_SHARED)
W(write_ordered, K_ORDERED)
IR(iread_shared, K_SHARED | K_NB)
IW(iwrite_shared, K_SHARED | K_NB)

/* split collectives keep state inside the MPI library between begin and end; on a replica set they would
 * run on replica 0 with its own (unused) file pointer, so they are refused there rather than wrong */
static int split_refused(MPI_File fh)
{
    pfs_file *f = lookup(fh);
    if (!f || !f->hybrid)
        return 0;
    if (f->comm_rank == 0)
        say("%s: split collectives (*_begin/*_end) are not supported on a replica set; use the *_all or i*_all "
            "calls; returning MPI_ERR_UNSUPPORTED_OPERATION", f->logical);
    return 1;
}

int MPI_File_read_all_begin(MPI_File fh, void *buf, int count, MPI_Datatype dt)
{
    return split_refused(fh) ? file_error(fh, MPI_ERR_UNSUPPORTED_OPERATION) : PMPI_File_read_all_begin(fh, buf, count, dt);
}
int MPI_File_write_all_begin(MPI_File fh, const void *buf, int count, MPI_Datatype dt)
{
    return split_refused(fh) ? file_error(fh, MPI_ERR_UNSUPPORTED_OPERATION) : PMPI_File_write_all_begin(fh, buf, count, dt);
}
int MPI_File_read_at_all_begin(MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype dt)
{
    return split_refused(fh) ? file_error(fh, MPI_ERR_UNSUPPORTED_OPERATION) : PMPI_File_read_at_all_begin(fh, off, buf, count, dt);
}
int MPI_File_write_at_all_begin(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype dt)
{
    return split_refused(fh) ? file_error(fh, MPI_ERR_UNSUPPORTED_OPERATION) : PMPI_File_write_at_all_begin(fh, off, buf, count, dt);
}
