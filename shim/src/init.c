/* MPI_Init / MPI_Init_thread (read the config, node placement, the trace epoch), MPI_Finalize (last
 * drains, the trace file, the stats file) and MPI_Abort (the shim's last words reach the job's log). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "pfs_common.h"
#include "shim_internal.h"

static char *g_job_id; /* PFSLAYOUT_SHIM_JOB, else the config's trace.job_id */

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
    /* The environment may move the trace (and turn it on) for one job, as PFSLAYOUT_SHIM_STATS moves the
     * stats: e.g. to a local directory for an MPI whose MPI-IO cannot reach the config's pvfs2: path. */
    const char *td = getenv("PFSLAYOUT_SHIM_TRACE");
    if (td && *td) {
        free(g_cfg.trace_dir);
        g_cfg.trace_dir = strdup(td);
        g_cfg.trace_enabled = g_cfg.trace_dir != NULL;
    }
    g_active = g_cfg.nrules > 0 || g_cfg.trace_enabled || g_cfg.route_prefix != NULL;
    /* One config serves every job of a policy: the job's name comes from the environment the operator
     * forwards to every rank (trace file names carry it). */
    const char *jid = getenv("PFSLAYOUT_SHIM_JOB");
    if (jid && *jid && !strchr(jid, '/') && strlen(jid) <= 128)
        g_job_id = strdup(jid);
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


static uint64_t g_trace_written = UINT64_MAX; /* record count at the last write; none yet */

/* A trace directory with a ROMIO prefix other than ufs: (`pvfs2:/mnt/orangefs/.pfslayout/traces/ns`) is
 * written through MPI-IO on MPI_COMM_SELF: the job's pods need no mount of the parallel file system, and
 * the operator collects the files from it after the job. ROMIO cannot rename, so the file is written in
 * place (truncated first); the operator reads traces only after the job has succeeded. The directory must
 * exist (the operator creates it with the policy's hints). */
static int write_mpiio(const char *path, const unsigned char *img, size_t len)
{
    MPI_File fh;
    int rc = PMPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    if (rc == MPI_SUCCESS) {
        rc = PMPI_File_set_size(fh, 0);
        size_t done = 0;
        while (rc == MPI_SUCCESS && done < len) { /* MPI counts are int: write in chunks below 1 GiB */
            int chunk = (int)(len - done < (1u << 30) ? len - done : (1u << 30));
            rc = PMPI_File_write_at(fh, (MPI_Offset)done, img + done, chunk, MPI_BYTE, MPI_STATUS_IGNORE);
            done += (size_t)chunk;
        }
        int rc2 = PMPI_File_close(&fh);
        if (rc == MPI_SUCCESS)
            rc = rc2;
    }
    return rc == MPI_SUCCESS ? 0 : -1;
}

/* a directory on a file system only MPI-IO reaches (a ROMIO prefix other than ufs:) */
static int via_mpiio(const char *dir)
{
    return pfs_romio_bare(dir) != dir && strncmp(dir, "ufs:", 4) != 0;
}

static int write_trace_mpiio(const char *job)
{
    char path[4096];
    pfs_trace_file_name(path, sizeof path, g_cfg.trace_dir, job, g_trace.rank);
    size_t len = 0;
    unsigned char *img = pfs_trace_image(&g_trace, &len);
    if (!img)
        return -1;
    int rc = write_mpiio(path, img, len);
    free(img);
    return rc;
}

/* The stats document goes where the trace goes: a POSIX directory (created if missing) or, with a ROMIO
 * prefix, a directory on the parallel file system written through MPI-IO (it must exist). */
static void write_stats(void)
{
    char path[PATH_MAX];
    const char *job = g_job_id ? g_job_id : g_cfg.job_id;
    if (job) /* one directory serves many jobs: the job's name keeps their files apart */
        snprintf(path, sizeof path, "%s/%s.stats.rank-%06d.json", g_stats_dir, job, g_world_rank);
    else
        snprintf(path, sizeof path, "%s/stats.rank-%06d.json", g_stats_dir, g_world_rank);
    json_t *doc = json_pack("{s:s, s:i, s:i, s:o}", "format", "pfsshim-stats/1", "rank", g_world_rank, "size",
                            g_world_size, "files", g_stats ? g_stats : json_array());
    g_stats = NULL;
    int rc = -1;
    if (doc && via_mpiio(g_stats_dir)) {
        char *text = json_dumps(doc, JSON_INDENT(1));
        if (text)
            rc = write_mpiio(path, (const unsigned char *)text, strlen(text));
        free(text);
    } else if (doc) {
        mkdir(g_stats_dir, 0777);
        rc = json_dump_file(doc, path, JSON_INDENT(1));
    }
    if (rc != 0)
        say("rank %d: cannot write %s: %s", g_world_rank, path,
            via_mpiio(g_stats_dir) ? "MPI-IO error (does the directory exist?)" : strerror(errno));
    json_decref(doc);
}

/* At the last close the trace is rewritten only when it has doubled since the last write, so a job that
 * opens and closes many files pays O(total) for these safety copies; MPI_Finalize always writes. */
void write_trace(int at_finalize)
{
    if (!g_trace_on)
        return;
    const uint64_t n = __atomic_load_n(&g_trace.n, __ATOMIC_RELAXED);
    if (g_trace_written != UINT64_MAX && (at_finalize ? n == g_trace_written : n < 2 * g_trace_written))
        return;
    const char *job = g_job_id ? g_job_id : g_cfg.job_id;
    const int mpiio = via_mpiio(g_cfg.trace_dir);
    if (mpiio ? write_trace_mpiio(job) != 0 : pfs_trace_write(&g_trace, g_cfg.trace_dir, job) != 0)
        say("rank %d: cannot write the trace into %s: %s", g_world_rank, g_cfg.trace_dir,
            mpiio ? "MPI-IO error (does the directory exist?)" : strerror(errno));
    else
        g_trace_written = n;
}


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
        if (g_stats_dir && g_world_rank >= 0)
            write_stats();
    }
    return PMPI_Finalize();
}

/* MPICH's Hydra stops forwarding the ranks' output once one calls MPI_Abort, so the line saying why a
 * write failed (report_io_error), written just before, was often missing from the job's log on every
 * rank. After such a line only: flush, and give the launcher's forwarding a moment before aborting. */
int MPI_Abort(MPI_Comm comm, int errorcode)
{
    if (__atomic_load_n(&g_said_io_error, __ATOMIC_RELAXED)) {
        fflush(NULL);
        const struct timespec moment = {.tv_sec = 0, .tv_nsec = 300L * 1000 * 1000};
        nanosleep(&moment, NULL);
    }
    return PMPI_Abort(comm, errorcode);
}
