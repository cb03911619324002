#include "place.h"

int place_servers(const probe_place *pl, int n, int *servers, int64_t *strip)
{
    int k;
    if (pl->layout == LAYOUT_1DV)
        k = 1;
    else if (pl->layout == LAYOUT_2D)
        k = (n + pl->g - 1) / pl->g;
    else
        k = n;
    int first = 0;
    if (!pl->shared)
        first = pl->layout == LAYOUT_2D ? (pl->idx % pl->g) * k : pl->idx;
    int count = pl->shared ? n : k;
    for (int j = 0; j < count; j++)
        servers[j] = (first + j) % n;
    *strip = pl->strip_size ? pl->strip_size : (pl->request_size + k - 1) / k;
    return count;
}
