/* Request offsets of one rank in one cell. */
#ifndef PFSPROBE_PATTERN_H
#define PFSPROBE_PATTERN_H

#include <stdint.h>

/* Fills offs[0..r) with the byte offsets rank `idx` (0..p) of a cell uses, for r requests of s bytes.
 * file-per-process: slots 0..r in the rank's own file; shared: the file has p*r slots and, sequentially,
 * request i of rank idx is slot i*p+idx (IOR's segmented pattern with block = transfer size), so the
 * ranks together sweep the file front to back. random: the same slots in a fixed-seed permutation (a
 * permutation of all p*r slots for a shared file, dealt out r per rank), so each slot is used exactly
 * once and the result is reproducible. Returns 0, -1 on allocation failure. */
int pattern_offsets(int64_t *offs, int64_t r, int64_t s, int shared, int random, int idx, int p, uint64_t seed);

/* Deterministic 64-bit generator (splitmix64): the permutation must not depend on the C library. */
uint64_t pattern_next(uint64_t *state);

#endif
