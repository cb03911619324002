#include "runner.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pattern.h"

/* Wait for a request without spinning. The ranks outside a cell wait here (in probe_agree) while the
 * cell's ranks do their timed I/O; a blocking collective would busy-poll in MPICH and Open MPI, and on a
 * small node those spinning ranks take the CPU the measured ones need (message-heavy p = 1 cells ran
 * 2-3x slower in the lab). Sleeping between tests costs the waiters at most one nap of latency, always
 * outside the timed region (cells are bracketed by barriers of their own communicator). */
static void wait_politely(MPI_Request *req)
{
    int done = 0;
    long nap_ns = 1000;
    for (;;) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        struct timespec ts = {0, nap_ns};
        nanosleep(&ts, NULL);
        if (nap_ns < 1000000)
            nap_ns *= 2; /* quick answers stay quick; long waits settle at ~1 ms naps (~2% of a core) */
    }
}

int probe_agree(MPI_Comm world, int err, char *msg)
{
    int rank, size, mine, first;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    mine = err ? rank : size;
    MPI_Request req;
    MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, world, &req);
    wait_politely(&req);
    if (first == size)
        return 0;
    char buf[PROBE_MSG_LEN];
    if (rank == first) {
        if (rank == 0)
            snprintf(buf, sizeof buf, "%s", msg);
        else
            snprintf(buf, sizeof buf, "rank %d: %s", rank, msg);
    }
    MPI_Bcast(buf, PROBE_MSG_LEN, MPI_CHAR, first, world);
    memcpy(msg, buf, PROBE_MSG_LEN);
    msg[PROBE_MSG_LEN - 1] = '\0';
    return 1;
}

static void *aligned(size_t n)
{
    void *p = NULL;
    /* O_DIRECT wants page-aligned buffers; harmless otherwise. */
    if (posix_memalign(&p, 4096, n ? n : 1))
        return NULL;
    return p;
}

static void *must(void *p, MPI_Comm world)
{
    if (!p) {
        fprintf(stderr, "pfsprobe: out of memory\n");
        MPI_Abort(world, 1);
    }
    return p;
}

/* One (target, sharing, p, request size) group: its files are created once, every pattern/op cell runs
 * on them, then they are checked and removed. */
typedef struct {
    const probe_target *t;
    int shared, p, m, idx; /* idx: this rank's place among the p, or -1 */
    MPI_Comm sub;
    int64_t s, r;
    int reps, patterns, ops;
} group;

static int cell(probe_run *run, const group *gr, probe_file *f, char *wbuf, char *rbuf, const int64_t *offs,
                int write, double *times, int *err)
{
    const probe_grid *g = run->grid;
    int member = gr->idx >= 0;
    for (int rep = 0; rep < gr->reps; rep++) {
        if (!member)
            break;
        if (!write && g->drop_caches && run->be->evict && !*err && run->be->evict(f, run->msg))
            *err = 1;
        MPI_Barrier(gr->sub);
        double t0 = MPI_Wtime();
        for (int64_t i = 0; i < gr->r && !*err; i++)
            if (run->be->io(f, write, write ? wbuf : rbuf, gr->s, offs[i], run->msg))
                *err = 1;
        /* sync is collective for a shared MPI-IO file: a rank that failed still takes part. */
        if (write && g->fsync) {
            char m2[PROBE_MSG_LEN];
            if (run->be->sync(f, *err ? m2 : run->msg) && !*err)
                *err = 1;
        }
        double dt = MPI_Wtime() - t0, tmax = 0;
        MPI_Reduce(&dt, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, gr->sub);
        if (gr->idx == 0)
            times[rep] = tmax;
    }
    return probe_agree(run->world, *err, run->msg) ? -1 : 0;
}

static int run_group(probe_run *run, const group *gr)
{
    const probe_grid *g = run->grid;
    const probe_backend *be = run->be;
    int member = gr->idx >= 0, err = 0, failed = 0, rank = run->topo->rank;
    int64_t r = gr->r;
    char path[4400];
    if (gr->shared)
        snprintf(path, sizeof path, "%s/pfsprobe-shared-p%d-s%" PRId64, gr->t->path, gr->p, gr->s);
    else
        snprintf(path, sizeof path, "%s/pfsprobe-fpp-p%d-s%" PRId64 "-r%d", gr->t->path, gr->p, gr->s, gr->idx);

    char *wbuf = NULL, *rbuf = NULL;
    int64_t *offs = NULL;
    double *times = NULL;
    probe_file *f = NULL;
    if (member) {
        wbuf = must(aligned((size_t)gr->s), run->world);
        rbuf = must(aligned((size_t)gr->s), run->world);
        offs = must(malloc(sizeof(int64_t) * (size_t)r), run->world);
        times = must(calloc((size_t)gr->reps, sizeof(double)), run->world);
        for (int64_t i = 0; i < gr->s; i++)
            wbuf[i] = (char)(1 + i % 251); /* never 0, so a hole reads back as a mismatch */
        probe_place pl = {gr->t->layout, gr->t->g, gr->t->strip_size, g->servers, gr->idx, gr->p, gr->s, gr->shared};
        if (be->open(path, gr->shared ? gr->sub : MPI_COMM_SELF, &pl, g->direct, &f, run->msg))
            err = 1;
    }
    if (probe_agree(run->world, err, run->msg)) {
        /* Ranks whose open worked close again, unless closing is collective (MPI-IO shared files fail to
         * open on every rank together, so no rank holds a handle there). */
        char m2[PROBE_MSG_LEN];
        if (f && !(gr->shared && be->collective))
            be->close(f, m2);
        failed = 1;
        goto done;
    }

    /* Read-only grids still need data: write every slot once, untimed. */
    if (!(gr->ops & OP_WRITE) && member) {
        if (pattern_offsets(offs, r, gr->s, gr->shared, 0, gr->idx, gr->p, g->seed))
            must(NULL, run->world);
        for (int64_t i = 0; i < r && !err; i++)
            if (be->io(f, 1, wbuf, gr->s, offs[i], run->msg))
                err = 1;
        char m2[PROBE_MSG_LEN];
        if (be->sync(f, err ? m2 : run->msg) && !err)
            err = 1;
    }
    if (probe_agree(run->world, err, run->msg)) {
        failed = 1;
        goto close;
    }

    for (int random = 0; random <= 1; random++) {
        if (!(gr->patterns & (random ? PATTERN_RANDOM : PATTERN_SEQUENTIAL)))
            continue;
        if (member && pattern_offsets(offs, r, gr->s, gr->shared, random, gr->idx, gr->p, g->seed))
            must(NULL, run->world);
        for (int write = 1; write >= 0; write--) {
            if (!(gr->ops & (write ? OP_WRITE : OP_READ)))
                continue;
            if (cell(run, gr, f, wbuf, rbuf, offs, write, times, &err)) {
                failed = 1;
                goto close;
            }
            if (rank == 0) {
                probe_cell c = {gr->t, write ? "write" : "read", random ? "random" : "sequential",
                                gr->shared ? "shared" : "file-per-process", gr->p, gr->m, gr->s, r,
                                gr->reps, times};
                probe_stats st;
                report_add_cell(run->report, &c, &st);
                if (g->verbose)
                    fprintf(stderr, "pfsprobe: %s g=%d %s %s %s p=%d m=%d s=%" PRId64 ": median %.6f s\n",
                            layout_name(gr->t->layout), gr->t->g, c.sharing, c.op, c.pattern, gr->p, gr->m, gr->s,
                            st.median);
            }
        }
    }

    if (g->verify && member) {
        /* Every slot of the file must hold the written bytes: holes or misplaced requests read back wrong. */
        if (pattern_offsets(offs, r, gr->s, gr->shared, 0, gr->idx, gr->p, g->seed))
            must(NULL, run->world);
        for (int64_t i = 0; i < r && !err; i++) {
            if (be->io(f, 0, rbuf, gr->s, offs[i], run->msg)) {
                err = 1;
            } else if (memcmp(rbuf, wbuf, (size_t)gr->s) != 0) {
                snprintf(run->msg, PROBE_MSG_LEN, "verify %.160s: bytes at offset %" PRId64 " differ from what was written",
                         path, offs[i]);
                err = 1;
            }
        }
        int64_t want = gr->shared ? r * gr->s * gr->p : r * gr->s, got = -1;
        if (!err && (!gr->shared || gr->idx == 0)) {
            if (be->size(f, &got, run->msg)) {
                err = 1;
            } else if (got != want) {
                snprintf(run->msg, PROBE_MSG_LEN, "verify %.160s: size %" PRId64 " bytes, expected %" PRId64, path, got,
                         want);
                err = 1;
            }
        }
    }
    if (probe_agree(run->world, err, run->msg)) {
        failed = 1;
        goto close;
    }

close:
    /* Every rank arrives here with the same `failed`, so the collectives below still match. */
    if (member) {
        char m2[PROBE_MSG_LEN];
        if (be->close(f, failed || err ? m2 : run->msg) && !err && !failed)
            err = 1;
        f = NULL;
        MPI_Barrier(gr->sub);
        if (!g->keep && !err && !failed && (!gr->shared || gr->idx == 0) && be->remove(path, run->msg))
            err = 1;
    }
    if (failed) {
        char m2[PROBE_MSG_LEN] = "";
        probe_agree(run->world, 0, m2);
    } else if (probe_agree(run->world, err, run->msg)) {
        failed = 1;
    }
done:
    free(wbuf);
    free(rbuf);
    free(offs);
    free(times);
    return failed ? -1 : 0;
}

int run_grid(probe_run *run)
{
    const probe_grid *g = run->grid;
    const probe_topology *topo = run->topo;
    int err = 0;

    /* Every group's ranks are chosen up front (identically on all ranks), so an impossible placement is a
     * clear error before any I/O. */
    int *members = must(malloc(sizeof(int) * (size_t)topo->size), run->world);
    int *ms = must(calloc((size_t)g->n_groups, sizeof(int)), run->world);
    for (int k = 0; k < g->n_groups && !err; k++) {
        const probe_group *pg = &g->groups[k];
        ms[k] = pg->m ? topology_select_m(topo, pg->p, pg->m, members)
                      : topology_select(topo, pg->p, g->placement == PLACEMENT_SPREAD, members);
        if (ms[k] < 0) {
            snprintf(run->msg, PROBE_MSG_LEN, "grid.cells: p=%d with m=%d ranks on one node does not fit this "
                     "launch (%d nodes, at most %d ranks per node); launch to match the designed platform",
                     pg->p, pg->m, topo->nodes, topo->ranks_per_node);
            err = 1;
        }
    }
    if (probe_agree(run->world, err, run->msg)) {
        free(members);
        free(ms);
        return -2;
    }

    /* Directories: one rank per node creates them (node-local paths need one per node). */
    if (topo->local_of[topo->rank] == 0)
        for (int i = 0; i < g->n_targets && !err; i++)
            if (run->be->prepare_dir(g->targets[i].path, run->msg))
                err = 1;
    if (probe_agree(run->world, err, run->msg)) {
        free(members);
        free(ms);
        return -1;
    }

    int rc = 0;
    for (int k = 0; k < g->n_groups && !rc; k++) {
        const probe_group *pg = &g->groups[k];
        if (pg->m)
            topology_select_m(topo, pg->p, pg->m, members);
        else
            topology_select(topo, pg->p, g->placement == PLACEMENT_SPREAD, members);
        int idx = -1;
        for (int i = 0; i < pg->p; i++)
            if (members[i] == topo->rank)
                idx = i;
        group gr = {&g->targets[pg->target], pg->shared, pg->p, ms[k], idx, MPI_COMM_NULL, pg->s, pg->r,
                    pg->reps, pg->patterns, pg->ops};
        MPI_Comm_split(run->world, idx >= 0 ? 0 : MPI_UNDEFINED, idx, &gr.sub);
        rc = run_group(run, &gr);
        if (gr.sub != MPI_COMM_NULL)
            MPI_Comm_free(&gr.sub);
    }
    free(members);
    free(ms);
    return rc;
}
