/* The words and numbers of a calibration grid (layouts, backends, placements, pattern/sharing/op words,
 * sizes), its defaults and its release. Every error names the field (grid-file key or flag) and the fix,
 * on one line, because rank 0 prints it verbatim and the operator copies it into a status condition. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid_internal.h"

int fail(char msg[PROBE_MSG_LEN], const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, PROBE_MSG_LEN, fmt, ap);
    va_end(ap);
    return -1;
}

void grid_defaults(probe_grid *g)
{
    memset(g, 0, sizeof(*g));
    g->backend = BACKEND_POSIX;
    g->servers = 1;
    g->n_sizes = 1;
    g->sizes[0] = 65536;
    g->patterns = PATTERN_SEQUENTIAL;
    g->sharing = SHARING_FPP;
    g->ops = OP_WRITE | OP_READ;
    g->placement = PLACEMENT_PACKED;
    g->repetitions = 5;
    g->requests_per_rank = 16;
    g->seed = 1;
    g->fsync = 1;
    strcpy(g->out, "-");
}

const char *layout_name(probe_layout l)
{
    switch (l) {
    case LAYOUT_1DH: return "1-DH";
    case LAYOUT_1DV: return "1-DV";
    case LAYOUT_2D: return "2-D";
    case LAYOUT_DEFAULT: return "default";
    }
    return "?";
}

const char *backend_name(probe_backend_kind b)
{
    switch (b) {
    case BACKEND_POSIX: return "posix";
    case BACKEND_MPIIO: return "mpiio";
    case BACKEND_PVFS2: return "pvfs2";
    }
    return "?";
}

int parse_layout(const char *s, probe_layout *out)
{
    if (strcmp(s, "1-DH") == 0) { *out = LAYOUT_1DH; return 0; }
    if (strcmp(s, "1-DV") == 0) { *out = LAYOUT_1DV; return 0; }
    if (strcmp(s, "2-D") == 0) { *out = LAYOUT_2D; return 0; }
    if (strcmp(s, "default") == 0) { *out = LAYOUT_DEFAULT; return 0; }
    return -1;
}

int parse_backend(const char *s, probe_backend_kind *out)
{
    if (strcmp(s, "posix") == 0) { *out = BACKEND_POSIX; return 0; }
    if (strcmp(s, "mpiio") == 0) { *out = BACKEND_MPIIO; return 0; }
    if (strcmp(s, "pvfs2") == 0) { *out = BACKEND_PVFS2; return 0; }
    return -1;
}

int parse_placement(const char *s, probe_placement *out)
{
    if (strcmp(s, "packed") == 0) { *out = PLACEMENT_PACKED; return 0; }
    if (strcmp(s, "spread") == 0) { *out = PLACEMENT_SPREAD; return 0; }
    return -1;
}

/* Maps one word of a pattern/sharing/op list to its bit; 0 when unknown. */
int word_bit(const char *field, const char *w)
{
    if (strcmp(field, "patterns") == 0) {
        if (strcmp(w, "sequential") == 0) return PATTERN_SEQUENTIAL;
        if (strcmp(w, "random") == 0) return PATTERN_RANDOM;
    } else if (strcmp(field, "sharing") == 0) {
        if (strcmp(w, "file-per-process") == 0) return SHARING_FPP;
        if (strcmp(w, "shared") == 0) return SHARING_SHARED;
    } else if (strcmp(field, "ops") == 0) {
        if (strcmp(w, "write") == 0) return OP_WRITE;
        if (strcmp(w, "read") == 0) return OP_READ;
    }
    return 0;
}

const char *word_choices(const char *field)
{
    if (strcmp(field, "patterns") == 0) return "sequential, random";
    if (strcmp(field, "sharing") == 0) return "file-per-process, shared";
    return "write, read";
}

int64_t parse_size(const char *s)
{
    char *end = NULL;
    if (!s || !*s || !isdigit((unsigned char)s[0]))
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    uint64_t mult = 1;
    if (*end) {
        switch (*end) {
        case 'k': case 'K': mult = 1ull << 10; break;
        case 'm': case 'M': mult = 1ull << 20; break;
        case 'g': case 'G': mult = 1ull << 30; break;
        default: return -1;
        }
        end++;
        if (*end == 'i' && end[1] == 'B') end += 2; /* accept 64KiB */
        else if (*end == 'B') end++;
        if (*end)
            return -1;
    }
    if (v > (unsigned long long)(INT64_MAX / (int64_t)mult))
        return -1;
    return (int64_t)(v * mult);
}

int parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    if (!s || !*s)
        return -1;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

void grid_free(probe_grid *g)
{
    free(g->cells);
    free(g->groups);
    g->cells = NULL;
    g->groups = NULL;
    g->n_cells = g->n_groups = 0;
}
