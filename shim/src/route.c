/* Replica choice for one request: the lowest modelled cost among the replicas allowed (clean for the
 * range). Allocation-free; R cost evaluations of a handful of flops each (shim/bench measures it). */
#include "pfsshim.h"

/* docs/seeds.md §3.2 (ours): a shared-file replica with strip S over D datafiles behaves, for a request at
 * (off, s), like the layout given by how many servers the request touches. */
void pfs_classify(long n, long strip, long datafiles, uint64_t off, uint64_t size, pfs_layout *l, long *g)
{
    const uint64_t S = (uint64_t)(strip > 0 ? strip : 0);
    const uint64_t D = (uint64_t)(datafiles > 0 ? datafiles : n);
    uint64_t k = S ? ((off % S) + size + S - 1) / S : D;
    if (k < 1)
        k = 1;
    if (k > D)
        k = D;
    if (k == 1) {
        *l = PFS_L_1DV;
        *g = 0;
    } else if (k >= (uint64_t)n) {
        *l = PFS_L_1DH;
        *g = 0;
    } else {
        *l = PFS_L_2D;
        *g = n / (long)k;
        if (*g < 1)
            *g = 1;
    }
}

int pfs_route(const pfs_router *r, int write, uint64_t offset, uint64_t size, int random, unsigned allowed,
              double *costs)
{
    pfs_params prm; /* the five the request's operation is costed with (on the stack: no allocation) */
    pfs_params_for_op(&r->params, write, &prm);
    int best = -1;
    double best_cost = 0;
    for (int i = 0; i < r->nrep; i++) {
        pfs_layout l = r->layout[i];
        long g = r->g[i];
        if (l == PFS_L_AUTO)
            pfs_classify(r->n, r->strip[i], r->dfiles[i], offset, size, &l, &g);
        pfs_cost c;
        if (pfs_cost_eval(r->variant, l, &prm, r->p, r->n, r->m, g, (double)size, random, &c) != 0)
            c.total = 1e300; /* unroutable inputs never win, but the replica stays usable as a last resort */
        costs[i] = c.total;
        /* strict '<' keeps the first minimum, as the seeds' loop does (docs/seeds.md §6 B5) */
        if (((allowed >> i) & 1u) && (best < 0 || c.total < best_cost)) {
            best = i;
            best_cost = c.total;
        }
    }
    return best;
}

int pfs_route_request(const pfs_router *r, pfs_request_kind kind, int write, uint64_t lo, uint64_t hi, uint64_t bytes,
                      int random, const pfs_route_env *env, double *costs, int *forced_drain)
{
    const unsigned all = (1u << r->nrep) - 1;
    *forced_drain = 0;
    if (kind == PFS_REQ_COLLECTIVE) {
        /* every rank must pick the same replica: drain (docs/seeds.md §6 B2) and agree on the summed cost */
        env->drain(env->ctx);
        pfs_route(r, write, lo, bytes, random, all, costs);
        double sum[PFS_MAX_REPLICAS];
        env->agree(env->ctx, costs, sum, r->nrep);
        int best = 0;
        for (int i = 1; i < r->nrep; i++)
            if (sum[i] < sum[best])
                best = i;
        return best;
    }
    if (kind == PFS_REQ_READ) {
        unsigned clean = 0;
        for (int i = 0; i < r->nrep; i++)
            if (!env->dirty(env->ctx, i, lo, hi))
                clean |= 1u << i;
        if (!clean) {
            /* a dirty replica is never read: bring them all up to date first */
            env->drain(env->ctx);
            *forced_drain = 1;
            clean = all;
        }
        return pfs_route(r, write, lo, bytes, random, clean, costs);
    }
    const int best = pfs_route(r, write, lo, bytes, random, all, costs);
    if (env->dirty(env->ctx, best, lo, hi)) {
        /* an older update owed to that replica overlaps: apply it first so this write stays newest */
        env->drain(env->ctx);
        *forced_drain = 1;
    }
    return best;
}
