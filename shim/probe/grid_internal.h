/* What the grid units share (grid.c: the words and numbers of a grid; grid_json.c: the grid file;
 * grid_args.c: the flags; grid_expand.c: validation and expansion into groups). Not part of pfsprobe's
 * interface: grid.h is. */
#ifndef PFSPROBE_GRID_INTERNAL_H
#define PFSPROBE_GRID_INTERNAL_H

#include <stdint.h>

#include "grid.h"

/* Writes one line into msg and returns -1 (every error names its field and the fix). */
int fail(char msg[PROBE_MSG_LEN], const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int parse_layout(const char *s, probe_layout *out);
int parse_backend(const char *s, probe_backend_kind *out);
int parse_placement(const char *s, probe_placement *out);
/* One word of a patterns/sharing/ops list to its bit; 0 when unknown. */
int word_bit(const char *field, const char *w);
const char *word_choices(const char *field);
/* A decimal integer in [lo, hi]; -1 when malformed or out of range. */
int parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out);

#endif
