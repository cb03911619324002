#include "pattern.h"

#include <stdlib.h>

uint64_t pattern_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Unbiased draw from [0, bound). */
static uint64_t below(uint64_t *state, uint64_t bound)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t x;
    do {
        x = pattern_next(state);
    } while (x >= limit);
    return x % bound;
}

static void shuffle(int64_t *a, int64_t n, uint64_t seed)
{
    uint64_t st = seed;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)below(&st, (uint64_t)i + 1);
        int64_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

int pattern_offsets(int64_t *offs, int64_t r, int64_t s, int shared, int random, int idx, int p, uint64_t seed)
{
    if (!shared) {
        for (int64_t i = 0; i < r; i++)
            offs[i] = i;
        if (random)
            shuffle(offs, r, seed ^ (0xA5A5A5A5ull * (uint64_t)(idx + 1)));
    } else if (!random) {
        for (int64_t i = 0; i < r; i++)
            offs[i] = i * p + idx;
    } else {
        /* Every rank builds the same permutation of all slots and keeps its share. */
        int64_t total = r * p;
        int64_t *all = malloc(sizeof(int64_t) * (size_t)total);
        if (!all)
            return -1;
        for (int64_t i = 0; i < total; i++)
            all[i] = i;
        shuffle(all, total, seed);
        for (int64_t i = 0; i < r; i++)
            offs[i] = all[(int64_t)idx * r + i];
        free(all);
    }
    for (int64_t i = 0; i < r; i++)
        offs[i] *= s;
    return 0;
}
