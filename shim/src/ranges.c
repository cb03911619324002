/* Per-replica dirty byte ranges: sorted, disjoint, coalesced half-open intervals in two arrays.
 * Queries are a binary search (no allocation on the routing path); insertion merges in place. */
#include <stdlib.h>
#include <string.h>

#include "pfsshim.h"

void pfs_ranges_init(pfs_ranges *r) { memset(r, 0, sizeof *r); }

void pfs_ranges_free(pfs_ranges *r)
{
    free(r->lo);
    free(r->hi);
    memset(r, 0, sizeof *r);
}

void pfs_ranges_clear(pfs_ranges *r) { r->n = 0; }

/* first index whose hi >= lo (a range ending exactly at lo touches it and coalesces) */
static size_t first_touching(const pfs_ranges *r, uint64_t lo)
{
    size_t a = 0, b = r->n;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (r->hi[mid] < lo)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

int pfs_ranges_add(pfs_ranges *r, uint64_t lo, uint64_t hi)
{
    if (hi <= lo)
        return 0;
    size_t i = first_touching(r, lo);
    size_t j = i; /* ranges [i, j) touch [lo, hi) and are merged into one */
    while (j < r->n && r->lo[j] <= hi)
        j++;
    if (j > i) {
        if (r->lo[i] < lo)
            lo = r->lo[i];
        if (r->hi[j - 1] > hi)
            hi = r->hi[j - 1];
        r->lo[i] = lo;
        r->hi[i] = hi;
        memmove(r->lo + i + 1, r->lo + j, (r->n - j) * sizeof *r->lo);
        memmove(r->hi + i + 1, r->hi + j, (r->n - j) * sizeof *r->hi);
        r->n -= j - i - 1;
        return 0;
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        uint64_t *nlo = realloc(r->lo, cap * sizeof *nlo);
        if (!nlo)
            return -1;
        r->lo = nlo;
        uint64_t *nhi = realloc(r->hi, cap * sizeof *nhi);
        if (!nhi)
            return -1;
        r->hi = nhi;
        r->cap = cap;
    }
    memmove(r->lo + i + 1, r->lo + i, (r->n - i) * sizeof *r->lo);
    memmove(r->hi + i + 1, r->hi + i, (r->n - i) * sizeof *r->hi);
    r->lo[i] = lo;
    r->hi[i] = hi;
    r->n++;
    return 0;
}

int pfs_ranges_overlaps(const pfs_ranges *r, uint64_t lo, uint64_t hi)
{
    if (hi <= lo || r->n == 0)
        return 0;
    /* first range with hi > lo; it overlaps iff it starts before hi */
    size_t a = 0, b = r->n;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (r->hi[mid] <= lo)
            a = mid + 1;
        else
            b = mid;
    }
    return a < r->n && r->lo[a] < hi;
}

uint64_t pfs_ranges_bytes(const pfs_ranges *r)
{
    uint64_t t = 0;
    for (size_t i = 0; i < r->n; i++)
        t += r->hi[i] - r->lo[i];
    return t;
}
