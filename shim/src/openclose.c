/* MPI_File_open, MPI_File_close and MPI_File_delete: rule matching, creation hints, opening every replica
 * of a replica set (after the stale-marker check) and the router's model inputs, and at close the last
 * drain, the markers' removal and the file's stats. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pfs_common.h"
#include "shim_internal.h"

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
MPI_Info merged_info(MPI_Info user, const char *path, const pfs_hint *h1, int n1, const pfs_hint *h2, int n2,
                     const pfs_hint *h3, int n3)
{
    MPI_Info out;
    if (user != MPI_INFO_NULL)
        PMPI_Info_dup(user, &out);
    else
        PMPI_Info_create(&out);
    const pfs_hint *lists[3] = {h1, h2, h3};
    int counts[3] = {n1, n2, n3};
    for (int l = 0; l < 3; l++)
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

/* ROMIO's pvfs2 driver creates the file on these servers (images/build/mpich-patches/0005-…); other
 * drivers and MPIs ignore the key */
#define SERVER_LIST_HINT "romio_pvfs2_server_list"

/* A file-per-process create under a spread rule (a communicator of one process): file k = world rank +
 * world size × this process's earlier creates under the rule, so the ranks' files take the servers in
 * turn, round after round (docs/shim-config.md, "spread"). 1 with the list in out, 0 when the open is
 * collective (a shared file: its datafiles are on every server anyway) or the list does not fit. */
static int spread_servers(MPI_Comm comm, const pfs_rule *rule, char *out, size_t len)
{
    int size = 0;
    if (PMPI_Comm_size(comm, &size) != MPI_SUCCESS || size != 1)
        return 0;
    /* the rule is const to matchers; its counter is this process's own (g_cfg's rules are not const) */
    long c = __atomic_fetch_add(&((pfs_rule *)rule)->spread_creates, 1, __ATOMIC_RELAXED);
    long k = (long)g_world_rank + (long)g_world_size * c;
    if (pfs_spread_list(k, rule->spread, g_cfg.servers, out, len) == 0)
        return 1;
    say("%s: %ld datafiles over %ld servers do not fit in one MPI_Info value; the file system places this "
        "file", rule->prefix, rule->spread, g_cfg.servers);
    return 0;
}

static char *absolute(const char *path)
{
    const size_t plen = pfs_romio_prefix_len(path);
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

/* the replica's parent directories; a failure shows up as the open's own error */
static void mkdirs_for(const char *file)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", file);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return;
    *slash = 0;
    pfs_mkdir_p(dir, NULL, 0);
}

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
        char path[PATH_MAX + 32];
        f->fd[r] = -1;
        f->rep[r] = MPI_FILE_NULL;
        if (pfs_replica_path(&rule->replicas[r], tail, path, sizeof path) != 0 || !(f->rep_path[r] = strdup(path))) {
            say("%s: replica %d's path is too long", filename, r);
            for (int q = 0; q < r; q++)
                free(f->rep_path[q]);
            pthread_mutex_destroy(&f->mu);
            free(f->logical);
            free(f);
            return file_error(MPI_FILE_NULL, MPI_ERR_BAD_FILE);
        }
        if (!rep_posix(f, r))
            f->all_posix = 0;
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
                             rule->nhints, rule->coll, rule->ncoll);
            own = 1;
        } else if (rule->ncoll) {
            ri = merged_info(info, filename, rule->coll, rule->ncoll, NULL, 0, NULL, 0);
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

/* `route`: a plain path under route.path (absolute, or relative to the working directory) is opened with
 * route.prefix, so ROMIO uses that driver (pvfs2:) although nothing is mounted there; paths that carry a
 * prefix already, and paths elsewhere, are left as the program wrote them. */
static const char *routed(const char *filename, char *buf, size_t n)
{
    if (!g_cfg.route_prefix || pfs_romio_prefix_len(filename))
        return filename;
    char *abs = absolute(filename);
    const char *out = filename;
    const size_t len = strlen(g_cfg.route_path);
    if (abs && strncmp(abs, g_cfg.route_path, len) == 0 &&
        (abs[len] == '/' || abs[len] == 0 || (len == 1 && g_cfg.route_path[0] == '/')) &&
        (size_t)snprintf(buf, n, "%s%s", g_cfg.route_prefix, abs) < n)
        out = buf;
    free(abs);
    return out;
}

int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh)
{
    if (!g_active)
        return PMPI_File_open(comm, filename, amode, info, fh);
    char rbuf[PATH_MAX + 32];
    filename = routed(filename, rbuf, sizeof rbuf);
    char *abs = absolute(filename);
    const char *tail = "";
    const pfs_rule *rule = abs ? pfs_config_match(&g_cfg, abs, &tail) : NULL;
    int rc;
    if (rule && rule->nreplicas && !(amode & MPI_MODE_SEQUENTIAL)) {
        rc = open_hybrid(comm, filename, rule, tail, amode, info, fh);
        free(abs);
        return rc;
    }
    const int create = (amode & MPI_MODE_CREATE) != 0;
    char servers[MPI_MAX_INFO_VAL + 1];
    const int spread = rule && rule->spread && create && spread_servers(comm, rule, servers, sizeof servers);
    if (rule && ((rule->nhints && create) || rule->ncoll || spread)) {
        /* stripe hints only matter at create; collective-buffering hints at every open */
        MPI_Info mi = merged_info(info, filename, create ? rule->hints : NULL, create ? rule->nhints : 0,
                                  rule->coll, rule->ncoll, NULL, 0);
        if (spread && !has_key(info, SERVER_LIST_HINT))
            PMPI_Info_set(mi, SERVER_LIST_HINT, servers);
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
    json_t *o = json_pack("{s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "path", f->logical,
                          "replicas", reps, "p", (json_int_t)f->router.p, "m", (json_int_t)f->router.m, "n",
                          (json_int_t)f->router.n, "deferred_updates", (json_int_t)f->deferred, "deferred_bytes",
                          (json_int_t)f->deferred_bytes, "applied_by_thread", (json_int_t)f->q.applied_thread,
                          "applied_by_drain", (json_int_t)f->q.applied_drain, "drains", (json_int_t)f->q.drains,
                          "forced_drains", (json_int_t)f->forced_drains, "coalesced", (json_int_t)f->q.coalesced,
                          "sync_errors", (json_int_t)f->sync_errors, "alongside_writes", (json_int_t)f->alongside,
                          "alongside_bytes", (json_int_t)f->alongside_bytes);
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
    char rbuf[PATH_MAX + 32];
    filename = routed(filename, rbuf, sizeof rbuf);
    char *abs = absolute(filename);
    const char *tail = "";
    const pfs_rule *rule = abs ? pfs_config_match(&g_cfg, abs, &tail) : NULL;
    if (!rule || !rule->nreplicas) {
        free(abs);
        return PMPI_File_delete(filename, info);
    }
    int rc = MPI_ERR_NO_SUCH_FILE, any = 0;
    for (int r = 0; r < rule->nreplicas; r++) {
        char path[PATH_MAX + 32];
        if (pfs_replica_path(&rule->replicas[r], tail, path, sizeof path) != 0)
            continue;
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
