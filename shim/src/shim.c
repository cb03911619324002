/* libpfsshim: the cost-aware MPI-IO interposer (PMPI, LD_PRELOAD). See docs/shim.md.
 *
 * Every wrapper starts with one lookup of the MPI_File in a small open-addressing table; a file the
 * shim does not track (no config, no matching rule, no trace) goes straight to PMPI.
 * Hybrid (replica-set) files: the user's handle is replica 0's real handle; all data calls are sent to
 * replicas with explicit offsets, the shim owning the individual file pointer, so the replicas' own
 * pointers never matter and stay consistent by construction.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pfsshim.h"

/* ------------------------------------------------------------------------------------------ state */

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
    unsigned long deferred, forced_drains, sync_errors;
    uint64_t deferred_bytes;
} pfs_file;

static pfs_config g_cfg;
static int g_active;       /* a valid config with rules or a trace */
static int g_trace_on;
static pfs_trace g_trace;
static int g_world_rank = -1, g_world_size;
static int g_node_size = 1;   /* world ranks on this node (MPI_COMM_TYPE_SHARED) */
static int g_node_lowest;     /* lowest world rank on this node */
static int g_open_traced;
static int g_logged_user_hint;
static json_t *g_stats;    /* one object per closed replica-set file (stats file) */
static char *g_stats_dir;

#define TBL 1024
static struct {
    MPI_File key;
    pfs_file *val;
} g_tbl[TBL];
static int g_tbl_count;
static pthread_mutex_t g_tbl_mu = PTHREAD_MUTEX_INITIALIZER;
#define TOMB ((pfs_file *)(uintptr_t)1)

static inline size_t slot_of(MPI_File fh)
{
    uintptr_t k = 0;
    memcpy(&k, &fh, sizeof fh < sizeof k ? sizeof fh : sizeof k);
    return (size_t)((k >> 4) * 0x9E3779B97F4A7C15ull >> 54) & (TBL - 1);
}

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

static int tbl_insert(MPI_File fh, pfs_file *f)
{
    pthread_mutex_lock(&g_tbl_mu);
    for (size_t i = slot_of(fh), n = 0; n < TBL; i = (i + 1) & (TBL - 1), n++)
        if (!g_tbl[i].val || g_tbl[i].val == TOMB) {
            g_tbl[i].key = fh;
            g_tbl[i].val = f;
            g_tbl_count++;
            pthread_mutex_unlock(&g_tbl_mu);
            return 0;
        }
    pthread_mutex_unlock(&g_tbl_mu);
    return -1;
}

static void tbl_remove(MPI_File fh)
{
    pthread_mutex_lock(&g_tbl_mu);
    for (size_t i = slot_of(fh), n = 0; n < TBL && g_tbl[i].val; i = (i + 1) & (TBL - 1), n++)
        if (g_tbl[i].val != TOMB && g_tbl[i].key == fh) {
            g_tbl[i].val = TOMB;
            g_tbl_count--;
            break;
        }
    pthread_mutex_unlock(&g_tbl_mu);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "pfsshim: %s\n", line);
}

/* An error the shim raises itself goes through the file's error handler, as MPI's own errors do. */
static int file_error(MPI_File fh, int code)
{
    PMPI_File_call_errhandler(fh, code);
    return code;
}

/* ------------------------------------------------------------------------------------------ init */

static void release_dtype(pfs_qentry *e)
{
    MPI_Datatype dt;
    memcpy(&dt, e->dtype, sizeof dt);
    PMPI_Type_free(&dt);
    e->has_dtype = 0;
}

static void shim_init(void)
{
    PMPI_Comm_rank(MPI_COMM_WORLD, &g_world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &g_world_size);
    pfs_qentry_release = release_dtype;
    const char *path = getenv("PFSLAYOUT_SHIM_CONFIG");
    if (!path || !*path)
        return;
    char err[600];
    if (pfs_config_load(path, &g_cfg, err, sizeof err) != 0) {
        if (g_world_rank == 0)
            say("%s; the job runs without the shim (pass-through)", err);
        return;
    }
    g_active = g_cfg.nrules > 0 || g_cfg.trace_enabled;
    const char *sd = getenv("PFSLAYOUT_SHIM_STATS");
    if (sd && *sd)
        g_stats_dir = strdup(sd);
    else if (g_cfg.stats_dir)
        g_stats_dir = strdup(g_cfg.stats_dir);
    if (!g_active)
        return;
    /* node placement, for the trace header and for m of file-per-process replica sets */
    MPI_Comm node;
    g_node_lowest = g_world_rank;
    if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        PMPI_Comm_size(node, &g_node_size);
        PMPI_Allreduce(&g_world_rank, &g_node_lowest, 1, MPI_INT, MPI_MIN, node);
        PMPI_Comm_free(&node);
    }
    if (g_cfg.trace_enabled && pfs_trace_init(&g_trace, g_cfg.trace_max_records) == 0) {
        const int nsize = g_node_size, lowest = g_node_lowest;
        double epoch = pfs_now();
        PMPI_Bcast(&epoch, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        g_trace.rank = (uint32_t)g_world_rank;
        g_trace.comm_size = (uint32_t)g_world_size;
        g_trace.node_id = (uint32_t)lowest;
        g_trace.ranks_on_node = (uint32_t)nsize;
        g_trace.epoch = epoch;
        g_trace_on = 1;
    }
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        shim_init();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        shim_init();
    return rc;
}

/* ------------------------------------------------------------------------------------------ helpers */

static uint64_t g_trace_written = UINT64_MAX; /* record count at the last write; none yet */

/* At the last close the trace is rewritten only when it has doubled since the last write, so a job that
 * opens and closes many files pays O(total) for these safety copies; MPI_Finalize always writes. */
static void write_trace(int at_finalize)
{
    if (!g_trace_on)
        return;
    const uint64_t n = __atomic_load_n(&g_trace.n, __ATOMIC_RELAXED);
    if (g_trace_written != UINT64_MAX && (at_finalize ? n == g_trace_written : n < 2 * g_trace_written))
        return;
    if (pfs_trace_write(&g_trace, g_cfg.trace_dir, g_cfg.job_id) != 0)
        say("rank %d: cannot write the trace into %s: %s", g_world_rank, g_cfg.trace_dir, strerror(errno));
    else
        g_trace_written = n;
}

static int has_key(MPI_Info info, const char *key)
{
    int n = 0;
    if (info == MPI_INFO_NULL || PMPI_Info_get_nkeys(info, &n) != MPI_SUCCESS)
        return 0;
    char k[MPI_MAX_INFO_KEY + 1];
    for (int i = 0; i < n; i++)
        if (PMPI_Info_get_nthkey(info, i, k) == MPI_SUCCESS && strcmp(k, key) == 0)
            return 1;
    return 0;
}

/* user info + hints (earlier lists win over later ones; the user's own keys win over all) */
static MPI_Info merged_info(MPI_Info user, const char *path, const pfs_hint *h1, int n1, const pfs_hint *h2, int n2)
{
    MPI_Info out;
    if (user != MPI_INFO_NULL)
        PMPI_Info_dup(user, &out);
    else
        PMPI_Info_create(&out);
    const pfs_hint *lists[2] = {h1, h2};
    int counts[2] = {n1, n2};
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < counts[l]; i++) {
            const pfs_hint *h = &lists[l][i];
            if (has_key(user, h->key)) {
                if (!g_logged_user_hint && g_world_rank == 0)
                    say("%s: the application's own hint %s wins over the rule's %s=%s (logged once)", path,
                        h->key, h->key, h->value);
                g_logged_user_hint = 1;
                continue;
            }
            if (!has_key(out, h->key))
                PMPI_Info_set(out, h->key, h->value);
        }
    return out;
}

static char *absolute(const char *path)
{
    const char *c = strchr(path, ':'), *s = strchr(path, '/');
    size_t plen = c && (!s || c < s) ? (size_t)(c - path) + 1 : 0;
    const char *rest = path + plen;
    if (rest[0] == '/')
        return strdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return strdup(path);
    size_t n = plen + strlen(cwd) + 1 + strlen(rest) + 1;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%.*s%s/%s", (int)plen, path, cwd, rest);
    return out;
}

static void mkdirs_for(const char *file)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", file);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(buf, 0777);
            *p = '/';
        }
}

/* ------------------------------------------------------------------------------------------ stale markers */

/* The replica's POSIX path when the shim may use POSIX I/O on it (lazy_sync.posix), else NULL. */
static const char *rep_posix(const pfs_file *f, int r)
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
static void marker_create(pfs_file *f, int r)
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

static void marker_remove(const pfs_file *f, int r)
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

/* rank 0 of the file's communicator: 0 = open normally, 1 = refuse */
static int check_markers(pfs_file *f)
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
    if (clean < 0 || !f->all_posix) {
        char m[PATH_MAX + 16];
        marker_path(f, 0, m, sizeof m);
        say("%s: %s; refusing to open it (MPI_ERR_FILE) so stale data is never read. Recover a replica by hand, "
            "make the others copies of it, then delete the *.pfsstale files (first: %s)",
            f->logical, clean < 0 ? "every replica has a stale marker (a rank died before close)"
                                  : "a replica has a stale marker and repairing it needs POSIX access to the replicas "
                                  "(lazy_sync.posix is off or the backend has no POSIX path)",
            m);
        return 1;
    }
    const char *src = pfs_posix_path(f->rep_path[clean]);
    for (int r = 0; r < f->nrep; r++) {
        if (!marked[r])
            continue;
        if (copy_file(src, pfs_posix_path(f->rep_path[r])) != 0) {
            say("%s: repairing replica %d from replica %d failed: %s; refusing to open", f->logical, r, clean,
                strerror(errno));
            return 1;
        }
        marker_remove(f, r);
        say("%s: replica %d (%s) had a stale marker (a rank died before close); repaired it from replica %d",
            f->logical, r, f->rep_path[r], clean);
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ lazy sync */

static void posix_apply(void *ctx, pfs_qentry *e, int r)
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

static void drain(pfs_file *f)
{
    if (f->q_ready)
        pfs_syncq_drain(&f->q, any_apply, f);
}

/* ------------------------------------------------------------------------------------------ open / close */

static int open_hybrid(MPI_Comm comm, const char *filename, const pfs_rule *rule, const char *tail, int amode,
                       MPI_Info info, MPI_File *fh)
{
    pfs_file *f = calloc(1, sizeof *f);
    if (!f)
        return MPI_ERR_NO_MEM;
    int rc = MPI_SUCCESS;
    f->hybrid = 1;
    f->rule = rule;
    f->nrep = rule->nreplicas;
    f->logical = strdup(filename);
    f->all_posix = 1;
    f->writable = (amode & MPI_MODE_RDONLY) == 0;
    pthread_mutex_init(&f->mu, NULL);
    for (int r = 0; r < f->nrep; r++) {
        size_t n = strlen(rule->replicas[r].dir) + strlen(tail) + 1;
        f->rep_path[r] = malloc(n);
        snprintf(f->rep_path[r], n, "%s%s", rule->replicas[r].dir, tail);
        f->fd[r] = -1;
        if (!rep_posix(f, r))
            f->all_posix = 0;
        f->rep[r] = MPI_FILE_NULL;
    }
    PMPI_Comm_dup(comm, &f->comm);
    PMPI_Comm_rank(f->comm, &f->comm_rank);
    int refuse = 0;
    if (f->comm_rank == 0) {
        if (amode & MPI_MODE_CREATE)
            for (int r = 0; r < f->nrep; r++)
                if (pfs_posix_path(f->rep_path[r]))
                    mkdirs_for(pfs_posix_path(f->rep_path[r]));
        refuse = check_markers(f);
    }
    PMPI_Bcast(&refuse, 1, MPI_INT, 0, f->comm);
    if (refuse) {
        rc = file_error(MPI_FILE_NULL, MPI_ERR_FILE); /* open errors go to the default file handler */
        goto fail;
    }
    for (int r = 0; r < f->nrep; r++) {
        MPI_Info ri = info;
        int own = 0;
        if (amode & MPI_MODE_CREATE) {
            ri = merged_info(info, filename, rule->replicas[r].hints, rule->replicas[r].nhints, rule->hints,
                             rule->nhints);
            own = 1;
        }
        rc = PMPI_File_open(comm, f->rep_path[r], amode, ri, &f->rep[r]);
        if (own)
            PMPI_Info_free(&ri);
        if (rc != MPI_SUCCESS)
            goto fail;
        if (f->writable && f->nrep > 1 && rep_posix(f, r))
            f->fd[r] = open(rep_posix(f, r), O_WRONLY);
        if (f->writable && f->nrep > 1 && f->fd[r] < 0)
            f->all_posix = 0;
    }
    /* model inputs: p = processes sharing the file, m = of those, the ones on this node */
    int p = 1, m = 1;
    PMPI_Comm_size(f->comm, &p);
    const int per_process = p == 1 && g_world_size > 1;
    if (per_process)
        p = g_world_size; /* file per process (opened on a one-rank communicator): every rank is doing it */
    if (g_cfg.ranks_per_node > 0) {
        m = (int)g_cfg.ranks_per_node;
    } else if (per_process || p == g_world_size) {
        m = g_node_size; /* known since MPI_Init: spare the open one collective */
    } else {
        MPI_Comm node;
        if (PMPI_Comm_split_type(f->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
            PMPI_Comm_size(node, &m);
            PMPI_Comm_free(&node);
        }
    }
    pfs_router *rt = &f->router;
    rt->variant = g_cfg.variant;
    rt->params = g_cfg.params;
    rt->p = p;
    rt->m = m;
    rt->n = g_cfg.servers;
    rt->nrep = f->nrep;
    for (int r = 0; r < f->nrep; r++) {
        rt->layout[r] = rule->replicas[r].layout;
        rt->g[r] = rule->replicas[r].g;
        rt->strip[r] = rule->replicas[r].strip_size;
        rt->dfiles[r] = rule->replicas[r].datafiles;
    }
    f->etype_size = 1;
    f->view_contig = 1;
    if (amode & MPI_MODE_APPEND)
        PMPI_File_get_position(f->rep[0], &f->pos);
    if (pfs_syncq_init(&f->q, f->nrep, posix_apply, f,
                       g_cfg.lazy_background && f->writable && f->all_posix && f->nrep > 1) != 0) {
        rc = MPI_ERR_OTHER;
        goto fail;
    }
    f->q_ready = 1;
    f->user_fh = f->rep[0];
    if (g_trace_on)
        f->trace_id = pfs_trace_file_id(&g_trace, filename);
    if (tbl_insert(f->user_fh, f) != 0) {
        say("%s: more than %d files open under the shim; refusing the replica-set open", filename, TBL);
        rc = MPI_ERR_NO_MEM;
        goto fail;
    }
    if (g_trace_on)
        g_open_traced++;
    *fh = f->user_fh;
    return MPI_SUCCESS;
fail:
    if (f->q_ready)
        pfs_syncq_destroy(&f->q);
    for (int r = 0; r < f->nrep; r++) {
        if (f->rep[r] != MPI_FILE_NULL)
            PMPI_File_close(&f->rep[r]);
        if (f->fd[r] >= 0)
            close(f->fd[r]);
        free(f->rep_path[r]);
    }
    PMPI_Comm_free(&f->comm);
    free(f->logical);
    free(f);
    *fh = MPI_FILE_NULL;
    return rc;
}

int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh)
{
    if (!g_active)
        return PMPI_File_open(comm, filename, amode, info, fh);
    char *abs = absolute(filename);
    const char *tail = "";
    const pfs_rule *rule = abs ? pfs_config_match(&g_cfg, abs, &tail) : NULL;
    int rc;
    if (rule && rule->nreplicas && !(amode & MPI_MODE_SEQUENTIAL)) {
        rc = open_hybrid(comm, filename, rule, tail, amode, info, fh);
        free(abs);
        return rc;
    }
    if (rule && rule->nhints && (amode & MPI_MODE_CREATE)) {
        MPI_Info mi = merged_info(info, filename, rule->hints, rule->nhints, NULL, 0);
        rc = PMPI_File_open(comm, filename, amode, mi, fh);
        PMPI_Info_free(&mi);
    } else {
        rc = PMPI_File_open(comm, filename, amode, info, fh);
    }
    free(abs);
    if (rc == MPI_SUCCESS && g_trace_on) {
        pfs_file *f = calloc(1, sizeof *f);
        if (f) {
            f->user_fh = *fh;
            f->logical = strdup(filename);
            f->trace_id = pfs_trace_file_id(&g_trace, filename);
            if (tbl_insert(*fh, f) == 0)
                g_open_traced++;
            else {
                free(f->logical);
                free(f);
            }
        }
    }
    return rc;
}

/* per-file counters, kept until MPI_Finalize writes the stats file (jansson does the escaping) */
static void stats_append(const pfs_file *f)
{
    if (!g_stats_dir)
        return;
    if (!g_stats && !(g_stats = json_array()))
        return;
    json_t *reps = json_array();
    for (int r = 0; r < f->nrep; r++)
        json_array_append_new(reps, json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "path", f->rep_path[r], "layout",
                                              pfs_layout_name(f->router.layout[r]), "reads", (json_int_t)f->reads[r],
                                              "read_bytes", (json_int_t)f->read_bytes[r], "writes",
                                              (json_int_t)f->writes[r], "write_bytes", (json_int_t)f->write_bytes[r]));
    json_t *o = json_pack("{s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "path", f->logical,
                          "replicas", reps, "p", (json_int_t)f->router.p, "m", (json_int_t)f->router.m, "n",
                          (json_int_t)f->router.n, "deferred_updates", (json_int_t)f->deferred, "deferred_bytes",
                          (json_int_t)f->deferred_bytes, "applied_by_thread", (json_int_t)f->q.applied_thread,
                          "applied_by_drain", (json_int_t)f->q.applied_drain, "drains", (json_int_t)f->q.drains,
                          "forced_drains", (json_int_t)f->forced_drains, "coalesced", (json_int_t)f->q.coalesced,
                          "sync_errors", (json_int_t)f->sync_errors);
    if (o)
        json_array_append_new(g_stats, o);
}

int MPI_File_close(MPI_File *fh)
{
    pfs_file *f = lookup(*fh);
    if (!f)
        return PMPI_File_close(fh);
    tbl_remove(*fh);
    int rc = MPI_SUCCESS;
    if (f->hybrid) {
        pthread_mutex_lock(&f->mu);
        drain(f);
        unsigned long applied_thread = f->q.applied_thread, applied_drain = f->q.applied_drain, drains = f->q.drains,
                      coalesced = f->q.coalesced;
        pfs_syncq_destroy(&f->q);
        f->q.applied_thread = applied_thread;
        f->q.applied_drain = applied_drain;
        f->q.drains = drains;
        f->q.coalesced = coalesced;
        f->q_ready = 0;
        for (int r = 0; r < f->nrep; r++) {
            if (f->fd[r] >= 0)
                close(f->fd[r]); /* durability is MPI_File_sync's job, as without the shim */
            int rr = PMPI_File_close(&f->rep[r]);
            if (rr != MPI_SUCCESS)
                rc = rr;
        }
        /* every rank has drained and closed: the replicas are identical, the markers can go */
        int ok = rc == MPI_SUCCESS && f->sync_errors == 0, all_ok = 0;
        PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, f->comm);
        if (all_ok && f->comm_rank == 0)
            for (int r = 0; r < f->nrep; r++)
                marker_remove(f, r);
        stats_append(f);
        PMPI_Comm_free(&f->comm);
        pthread_mutex_unlock(&f->mu);
        pthread_mutex_destroy(&f->mu);
        for (int r = 0; r < f->nrep; r++)
            free(f->rep_path[r]);
        *fh = MPI_FILE_NULL;
    } else {
        rc = PMPI_File_close(fh);
    }
    free(f->logical);
    free(f);
    if (g_trace_on && --g_open_traced == 0)
        write_trace(0);
    return rc;
}

int MPI_File_delete(const char *filename, MPI_Info info)
{
    if (!g_active)
        return PMPI_File_delete(filename, info);
    char *abs = absolute(filename);
    const char *tail = "";
    const pfs_rule *rule = abs ? pfs_config_match(&g_cfg, abs, &tail) : NULL;
    if (!rule || !rule->nreplicas) {
        free(abs);
        return PMPI_File_delete(filename, info);
    }
    int rc = MPI_ERR_NO_SUCH_FILE, any = 0;
    for (int r = 0; r < rule->nreplicas; r++) {
        char path[PATH_MAX + 16];
        snprintf(path, sizeof path, "%s%s", rule->replicas[r].dir, tail);
        if (PMPI_File_delete(path, info) == MPI_SUCCESS)
            any = 1;
        const char *pp = pfs_posix_path(path);
        if (pp) {
            char m[PATH_MAX + 32];
            snprintf(m, sizeof m, "%s.pfsstale", pp);
            unlink(m);
        }
    }
    free(abs);
    if (any)
        rc = MPI_SUCCESS;
    return rc == MPI_SUCCESS ? rc : file_error(MPI_FILE_NULL, rc);
}

/* ------------------------------------------------------------------------------------------ data path */

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

static int contiguous_type(MPI_Datatype dt)
{
    int size;
    MPI_Aint lb, ext, tlb, text;
    PMPI_Type_size(dt, &size);
    PMPI_Type_get_extent(dt, &lb, &ext);
    PMPI_Type_get_true_extent(dt, &tlb, &text);
    return lb == 0 && tlb == 0 && (MPI_Aint)size == ext && ext == text;
}

/* the update owed to the other replicas: packed bytes for the POSIX thread when the view is a plain
 * byte range, otherwise a copy of the user's memory span replayed through MPI at the next sync point */
static pfs_qentry *make_entry(pfs_file *f, const void *buf, int count, MPI_Datatype dt, MPI_Offset o, uint64_t bytes,
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
    int r;
    if (kind & K_COLL) {
        /* every rank must pick the same replica: drain (docs/seeds.md §6 B2) and agree on the summed cost */
        drain(f);
        pfs_route(&f->router, lo, bytes, random, all, costs);
        double sum[PFS_MAX_REPLICAS];
        PMPI_Allreduce(costs, sum, f->nrep, MPI_DOUBLE, MPI_SUM, f->comm);
        r = 0;
        for (int i = 1; i < f->nrep; i++)
            if (sum[i] < sum[r])
                r = i;
    } else if (op == OP_READ) {
        unsigned clean = 0;
        for (int i = 0; i < f->nrep; i++)
            if (!pfs_syncq_dirty(&f->q, i, lo, hi))
                clean |= 1u << i;
        if (!clean) {
            drain(f);
            f->forced_drains++;
            clean = all;
        }
        r = pfs_route(&f->router, lo, bytes, random, clean, costs);
    } else {
        r = pfs_route(&f->router, lo, bytes, random, all, costs);
        if (pfs_syncq_dirty(&f->q, r, lo, hi)) {
            drain(f); /* an older update owed to r overlaps: apply it first so this write stays newest */
            f->forced_drains++;
        }
    }
    if (op == OP_WRITE && f->nrep > 1)
        for (int i = 0; i < f->nrep; i++)
            if (i != r && !f->marker_made[i])
                marker_create(f, i);
    int rc = call_pmpi(op, kind | K_EXPLICIT, f->rep[r], o, buf, count, dt, st, req);
    if (rc == MPI_SUCCESS) {
        if (op == OP_WRITE && f->nrep > 1 && bytes) {
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
    if (!f)
        return call_pmpi(op, kind, fh, off, buf, count, dt, st, req);
    if (f->hybrid)
        return hybrid_io(f, op, kind, off, buf, count, dt, st, req);
    return traced_io(f, op, kind, fh, off, buf, count, dt, st, req);
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

/* ------------------------------------------------------------------------------------------ pointer, view, size */

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

/* ------------------------------------------------------------------------------------------ finalize */

int MPI_Finalize(void)
{
    if (g_active) {
        /* files still open at finalize (an erroneous program): bring this rank's replicas up to date but
         * keep the markers, since other ranks' state is unknown */
        for (size_t i = 0; i < TBL; i++) {
            pfs_file *f = g_tbl[i].val;
            if (f && f != TOMB && f->hybrid && f->q_ready) {
                drain(f);
                pfs_syncq_destroy(&f->q);
                f->q_ready = 0;
            }
        }
        write_trace(1);
        if (g_stats_dir && g_world_rank >= 0) {
            char path[PATH_MAX];
            mkdir(g_stats_dir, 0777);
            snprintf(path, sizeof path, "%s/stats.rank-%06d.json", g_stats_dir, g_world_rank);
            json_t *doc = json_pack("{s:s, s:i, s:i, s:o}", "format", "pfsshim-stats/1", "rank", g_world_rank, "size",
                                    g_world_size, "files", g_stats ? g_stats : json_array());
            g_stats = NULL;
            if (!doc || json_dump_file(doc, path, JSON_INDENT(1)) != 0)
                say("rank %d: cannot write %s: %s", g_world_rank, path, strerror(errno));
            json_decref(doc);
        }
    }
    return PMPI_Finalize();
}
