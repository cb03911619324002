/* The routing decision of a replica-set request (pfs_route_request), driven without MPI: a real lazy-sync
 * queue supplies the dirty ranges, the test supplies the drain and the collective agreement.
 *
 * The property under test: a dirty replica is never read. Thousands of random writes and reads (each write
 * leaves the other replicas owing it, as the shim does) check after every read that the replica chosen is
 * clean for the request's byte range, that it is the cheapest clean one, and that a drain happened exactly
 * when no replica was clean. Writes drain first when their replica owes an overlapping update; collective
 * calls drain and every rank picks the replica with the lowest summed cost. Every request is costed with its
 * operation's parameters (a write's own e_write/beta_write when set). */
#include <stdlib.h>

#include "check.h"
#include "pfsshim.h"

#define NREP 3

typedef struct {
    pfs_syncq q;
    int drains;
    /* collective calls: the costs of the other simulated ranks, added to the caller's */
    int nothers;
    double others[8][PFS_MAX_REPLICAS];
} env_state;

static void no_apply(void *ctx, pfs_qentry *e, int r)
{
    (void)ctx;
    (void)e;
    (void)r;
}

static int dirty(void *ctx, int r, uint64_t lo, uint64_t hi)
{
    return pfs_syncq_dirty(&((env_state *)ctx)->q, r, lo, hi);
}

static void drain(void *ctx)
{
    env_state *s = ctx;
    pfs_syncq_drain(&s->q, no_apply, NULL);
    s->drains++;
}

static void agree(void *ctx, const double *costs, double *sum, int n)
{
    env_state *s = ctx;
    for (int i = 0; i < n; i++) {
        sum[i] = costs[i];
        for (int k = 0; k < s->nothers; k++)
            sum[i] += s->others[k][i];
    }
}

static pfs_router router(void)
{
    /* 16 servers, p = 8 on one node each: 1-DH, 2-D (g = 8) and 1-DV copies, Ethernet seeds */
    pfs_router r = {.variant = PFS_V_CORRECTED,
                    .params = {0.0003, 1.0 / (120.0 * 1048576), 0.0001, 0.0003, 1.0 / (120.0 * 1048576),
                               PFS_PARAM_UNSET, PFS_PARAM_UNSET},
                    .p = 8, .n = 16, .m = 1, .nrep = NREP,
                    .layout = {PFS_L_1DH, PFS_L_2D, PFS_L_1DV}, .g = {0, 8, 0}};
    return r;
}

static void owe(env_state *s, int served, uint64_t lo, uint64_t hi)
{
    pfs_qentry *e = calloc(1, sizeof *e);
    e->kind = PFS_Q_MPI; /* never picked up by a thread: only drains apply it */
    e->mask = ((1u << NREP) - 1) & ~(1u << served);
    e->byte_lo = lo;
    e->byte_hi = hi;
    pfs_syncq_push(&s->q, e);
}

static void test_dirty_replica_never_read(void)
{
    const pfs_router rt = router();
    const pfs_route_env env_fns = {.dirty = dirty, .drain = drain, .agree = agree};
    env_state s = {0};
    CHECK(pfs_syncq_init(&s.q, NREP, NULL, NULL, 0) == 0, "queue");
    pfs_route_env env = env_fns;
    env.ctx = &s;
    srand(12345);
    int reads = 0, forced_reads = 0, clean_choices = 0;
    for (int step = 0; step < 20000; step++) {
        const uint64_t lo = (uint64_t)(rand() % 4096) * 4096;
        const uint64_t size = (uint64_t)(1 + rand() % 64) * 4096 * (rand() % 4 == 0 ? 64 : 1);
        const uint64_t hi = lo + size;
        const int random = rand() & 1;
        double costs[PFS_MAX_REPLICAS];
        int forced = -1;
        if (rand() % 3 == 0) {
            int before = s.drains;
            int r = pfs_route_request(&rt, PFS_REQ_WRITE, 1, lo, hi, size, random, &env, costs, &forced);
            CHECK(r >= 0 && r < NREP, "write replica %d", r);
            CHECK(!dirty(&s, r, lo, hi), "step %d: the written replica still owes an overlapping update", step);
            CHECK(forced == (s.drains > before), "step %d: forced flag", step);
            owe(&s, r, lo, hi);
            continue;
        }
        int was_dirty[NREP], any_clean = 0;
        for (int i = 0; i < NREP; i++) {
            was_dirty[i] = dirty(&s, i, lo, hi);
            any_clean |= !was_dirty[i];
        }
        const int before = s.drains;
        const int r = pfs_route_request(&rt, PFS_REQ_READ, 0, lo, hi, size, random, &env, costs, &forced);
        reads++;
        CHECK(r >= 0 && r < NREP, "read replica %d", r);
        CHECK(!dirty(&s, r, lo, hi), "step %d: read from replica %d, which is dirty for [%llu, %llu)", step, r,
              (unsigned long long)lo, (unsigned long long)hi);
        CHECK(forced == !any_clean && (s.drains > before) == !any_clean,
              "step %d: a drain must happen exactly when no replica is clean", step);
        if (any_clean) {
            clean_choices++;
            CHECK(!was_dirty[r], "step %d: chose replica %d that was dirty although another was clean", step, r);
            for (int i = 0; i < NREP; i++)
                CHECK(was_dirty[i] || costs[r] <= costs[i], "step %d: replica %d is clean and cheaper", step, i);
        } else {
            forced_reads++;
        }
        if (step % 997 == 0)
            drain(&s); /* a sync point now and then, as MPI_File_sync would */
    }
    CHECK(reads > 10000 && forced_reads > 0 && clean_choices > forced_reads, "the walk exercised both paths "
          "(reads %d, forced %d, clean %d)", reads, forced_reads, clean_choices);
    pfs_syncq_destroy(&s.q);
}

static void test_collective_agreement(void)
{
    const pfs_router rt = router();
    env_state s = {0};
    CHECK(pfs_syncq_init(&s.q, NREP, NULL, NULL, 0) == 0, "queue");
    pfs_route_env env = {.dirty = dirty, .drain = drain, .agree = agree, .ctx = &s};
    /* four ranks with very different requests: each alone might prefer another replica */
    const uint64_t sizes[4] = {4096, 1 << 20, 64 << 20, 256 << 10};
    double per_rank[4][PFS_MAX_REPLICAS];
    for (int k = 0; k < 4; k++)
        pfs_route(&rt, 0, 0, sizes[k], 0, (1u << NREP) - 1, per_rank[k]);
    int want = 0;
    double total[NREP] = {0};
    for (int i = 0; i < NREP; i++)
        for (int k = 0; k < 4; k++)
            total[i] += per_rank[k][i];
    for (int i = 1; i < NREP; i++)
        if (total[i] < total[want])
            want = i;
    for (int me = 0; me < 4; me++) {
        owe(&s, 0, 0, 1 << 20); /* something queued: a collective call drains it first */
        s.nothers = 0;
        for (int k = 0; k < 4; k++)
            if (k != me) {
                for (int i = 0; i < NREP; i++)
                    s.others[s.nothers][i] = per_rank[k][i];
                s.nothers++;
            }
        double costs[PFS_MAX_REPLICAS];
        int forced = -1;
        const int before = s.drains;
        int r = pfs_route_request(&rt, PFS_REQ_COLLECTIVE, 0, 0, sizes[me], sizes[me], 0, &env, costs, &forced);
        CHECK(r == want, "rank %d chose replica %d, the summed costs say %d", me, r, want);
        CHECK(s.drains == before + 1 && forced == 0, "a collective call drains (not counted as forced)");
        CHECK(!dirty(&s, 1, 0, 1 << 20) && !dirty(&s, 2, 0, 1 << 20), "nothing owed after the drain");
    }
    pfs_syncq_destroy(&s.q);
}

static void test_write_to_a_replica_that_owes_an_overlap_drains_first(void)
{
    const pfs_router rt = router();
    env_state s = {0};
    CHECK(pfs_syncq_init(&s.q, NREP, NULL, NULL, 0) == 0, "queue");
    pfs_route_env env = {.dirty = dirty, .drain = drain, .agree = agree, .ctx = &s};
    double costs[PFS_MAX_REPLICAS];
    int forced = -1;
    const int r = pfs_route_request(&rt, PFS_REQ_WRITE, 1, 0, 1 << 20, 1 << 20, 0, &env, costs, &forced);
    CHECK(forced == 0 && s.drains == 0, "nothing owed: no drain");
    owe(&s, (r + 1) % NREP, 0, 1 << 20); /* r now owes [0, 1 MiB) */
    int r3 = pfs_route_request(&rt, PFS_REQ_WRITE, 1, 0, 1 << 20, 1 << 20, 0, &env, costs, &forced);
    CHECK(r3 == r && forced == 1 && !dirty(&s, r, 0, 1 << 20), "overlapping owed update applied first");
    owe(&s, (r + 1) % NREP, 8 << 20, 9 << 20);
    r3 = pfs_route_request(&rt, PFS_REQ_WRITE, 1, 0, 1 << 20, 1 << 20, 0, &env, costs, &forced);
    CHECK(r3 == r && forced == 0, "an owed update elsewhere in the file does not force a drain");
    pfs_syncq_destroy(&s.q);
}

/* Requests are costed with the parameters of their operation (pfs_params_for_op): reads with e and beta,
 * writes with e_write and beta_write, a collective call with those of its operation. Here a write pays a
 * dear connection and nothing per byte, so writes prefer the layout with the fewest connections (1-DV)
 * while reads of the same request prefer 2-D (docs/seeds.md §2.9 row 1). */
static void test_costs_follow_the_operation(void)
{
    pfs_router rt = router();
    rt.params.e_write = 0.01;
    rt.params.beta_write = 0.0;
    pfs_params rp, wp;
    pfs_params_for_op(&rt.params, 0, &rp);
    pfs_params_for_op(&rt.params, 1, &wp);
    const uint64_t size = 256 << 10;
    double cr[PFS_MAX_REPLICAS], cw[PFS_MAX_REPLICAS];
    const int best_r = pfs_route(&rt, 0, 0, size, 1, (1u << NREP) - 1, cr);
    const int best_w = pfs_route(&rt, 1, 0, size, 1, (1u << NREP) - 1, cw);
    for (int i = 0; i < NREP; i++) {
        pfs_cost r, w;
        pfs_cost_eval(rt.variant, rt.layout[i], &rp, rt.p, rt.n, rt.m, rt.g[i], (double)size, 1, &r);
        pfs_cost_eval(rt.variant, rt.layout[i], &wp, rt.p, rt.n, rt.m, rt.g[i], (double)size, 1, &w);
        CHECK(cr[i] == r.total && cw[i] == w.total, "replica %d: read %g (want %g), write %g (want %g)", i, cr[i],
              r.total, cw[i], w.total);
    }
    CHECK(best_r == 1 && best_w == 2, "reads prefer 2-D, writes 1-DV: got %d and %d", best_r, best_w);

    env_state s = {0};
    CHECK(pfs_syncq_init(&s.q, NREP, NULL, NULL, 0) == 0, "queue");
    pfs_route_env env = {.dirty = dirty, .drain = drain, .agree = agree, .ctx = &s};
    double costs[PFS_MAX_REPLICAS];
    int forced = -1;
    CHECK(pfs_route_request(&rt, PFS_REQ_READ, 0, 0, size, size, 1, &env, costs, &forced) == best_r &&
              costs[0] == cr[0], "an independent read uses the read parameters");
    CHECK(pfs_route_request(&rt, PFS_REQ_WRITE, 1, 0, size, size, 1, &env, costs, &forced) == best_w &&
              costs[0] == cw[0], "an independent write uses the write parameters");
    CHECK(pfs_route_request(&rt, PFS_REQ_COLLECTIVE, 0, 0, size, size, 1, &env, costs, &forced) == best_r &&
              costs[0] == cr[0], "a collective read uses the read parameters");
    CHECK(pfs_route_request(&rt, PFS_REQ_COLLECTIVE, 1, 0, size, size, 1, &env, costs, &forced) == best_w &&
              costs[0] == cw[0], "a collective write uses the write parameters");
    /* unset write terms: both operations cost alike */
    rt.params.e_write = rt.params.beta_write = PFS_PARAM_UNSET;
    pfs_route(&rt, 1, 0, size, 1, (1u << NREP) - 1, cw);
    for (int i = 0; i < NREP; i++)
        CHECK(cw[i] == cr[i], "replica %d: unset write terms must cost a write as a read", i);
    pfs_syncq_destroy(&s.q);
}

int main(void)
{
    test_dirty_replica_never_read();
    test_collective_agreement();
    test_write_to_a_replica_that_owes_an_overlap_drains_first();
    test_costs_follow_the_operation();
    return check_done("test_route_request");
}
