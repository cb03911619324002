/* Routing micro-benchmark: ns per replica choice (3 replicas, corrected model, varying sizes/offsets).
 * Prints one JSON line; shim/bench/bench_shim.py reports it. Not a test: no timing assertions. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pfsshim.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 10000000;
    pfs_router r = {.variant = PFS_V_CORRECTED,
                    .params = {0.0003, 1.0 / (120 << 20), 0.0001, 0.0003, 1.0 / (120 << 20), PFS_PARAM_UNSET,
                               PFS_PARAM_UNSET},
                    .p = 4, .n = 4, .m = 4, .nrep = 3,
                    .layout = {PFS_L_1DH, PFS_L_2D, PFS_L_1DV}, .g = {0, 2, 0}};
    double costs[PFS_MAX_REPLICAS];
    unsigned long hist[PFS_MAX_REPLICAS] = {0};
    double t0 = now();
    for (long i = 0; i < iters; i++) {
        uint64_t size = 4096u << (i & 7);
        int best = pfs_route(&r, 0, (uint64_t)i * 4096, size, (int)(i & 1), 7u, costs);
        hist[best]++;
    }
    double dt = now() - t0;
    printf("{\"iterations\": %ld, \"ns_per_route\": %.2f, \"chosen\": [%lu, %lu, %lu]}\n", iters, dt / iters * 1e9,
           hist[0], hist[1], hist[2]);
    return 0;
}
