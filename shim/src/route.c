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

int pfs_route(const pfs_router *r, uint64_t offset, uint64_t size, int random, unsigned allowed,
              double *costs)
{
    int best = -1;
    double best_cost = 0;
    for (int i = 0; i < r->nrep; i++) {
        pfs_layout l = r->layout[i];
        long g = r->g[i];
        if (l == PFS_L_AUTO)
            pfs_classify(r->n, r->strip[i], r->dfiles[i], offset, size, &l, &g);
        pfs_cost c;
        if (pfs_cost_eval(r->variant, l, &r->params, r->p, r->n, r->m, g, (double)size, random, &c) != 0)
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
