#include "place.h"

#define ALIGN INT64_C(4096)
#define SMALL_STRIP INT64_C(65536) /* OrangeFS's default strip; the 1-DH upper bound */

/* hints.py _align: max(4096, floor(x / 4096) * 4096), then at most hi (0 = no bound). x is already the
 * floor of the true quotient, as Python's int(size) of the float quotient is for these magnitudes. */
static int64_t align_strip(int64_t x, int64_t hi)
{
    int64_t v = x / ALIGN * ALIGN;
    if (v < ALIGN)
        v = ALIGN;
    return hi > 0 && v > hi ? hi : v;
}

/* The twin of pfslayout.planner.hints.hints_for (operator/src/pfslayout/planner/hints.py): the datafile
 * count and strip the planner's directory hints give a file of this layout. Shared vectors:
 * operator/tests/vectors/classify-vectors.json (cases with a "planner" object), test_probe_place.c. */
int layout_realisation(probe_layout layout, int g, int n, int shared, int64_t s, int *datafiles, int64_t *strip)
{
    if (s < 1)
        s = 1; /* hints_for: max(int(s_common), 1) */
    if (n < 1)
        n = 1;
    if (g < 1)
        g = 1;
    if (layout == LAYOUT_DEFAULT) {
        /* what OrangeFS does with no hints: simple_stripe over every server, its 64 KiB default strip */
        *datafiles = n;
        *strip = SMALL_STRIP;
    } else if (layout == LAYOUT_1DH) {
        *datafiles = n;
        *strip = align_strip(s / n, SMALL_STRIP);
    } else if (layout == LAYOUT_1DV) {
        *datafiles = shared ? n : 1;
        *strip = shared ? align_strip(s, 0) : 0;
    } else {
        const int width = (n + g - 1) / g;
        *datafiles = shared ? n : width;
        *strip = shared ? align_strip(s * g / n, 0) : align_strip(s / width, 0);
    }
    return 0;
}

int place_servers(const probe_place *pl, int n, int *servers, int64_t *strip)
{
    int count;
    int64_t derived;
    layout_realisation(pl->layout, pl->g, n, pl->shared, pl->request_size, &count, &derived);
    int first = 0;
    if (!pl->shared) {
        /* count is this file's k servers: 1 (1-DV), ceil(n/g) (2-D, group idx mod g) or n (1-DH) */
        first = pl->layout == LAYOUT_2D ? (pl->idx % (pl->g > 0 ? pl->g : 1)) * count : pl->idx;
    }
    for (int j = 0; j < count; j++)
        servers[j] = (first + j) % n;
    /* a one-datafile file has no strip in the hints; any strip serves, so use the 1-DV shared one */
    if (!derived)
        derived = align_strip(pl->request_size > 0 ? pl->request_size : 1, 0);
    *strip = pl->strip_size ? pl->strip_size : derived;
    return count;
}
