/* Grid parsing and validation. Every error names the field (grid-file key or flag) and the fix, on one
 * line, because rank 0 prints it verbatim and the operator copies it into a status condition. */
#include "grid.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char msg[PROBE_MSG_LEN], const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(char msg[PROBE_MSG_LEN], const char *fmt, ...)
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

static int parse_layout(const char *s, probe_layout *out)
{
    if (strcmp(s, "1-DH") == 0) { *out = LAYOUT_1DH; return 0; }
    if (strcmp(s, "1-DV") == 0) { *out = LAYOUT_1DV; return 0; }
    if (strcmp(s, "2-D") == 0) { *out = LAYOUT_2D; return 0; }
    return -1;
}

static int parse_backend(const char *s, probe_backend_kind *out)
{
    if (strcmp(s, "posix") == 0) { *out = BACKEND_POSIX; return 0; }
    if (strcmp(s, "mpiio") == 0) { *out = BACKEND_MPIIO; return 0; }
    if (strcmp(s, "pvfs2") == 0) { *out = BACKEND_PVFS2; return 0; }
    return -1;
}

static int parse_placement(const char *s, probe_placement *out)
{
    if (strcmp(s, "packed") == 0) { *out = PLACEMENT_PACKED; return 0; }
    if (strcmp(s, "spread") == 0) { *out = PLACEMENT_SPREAD; return 0; }
    return -1;
}

/* Maps one word of a pattern/sharing/op list to its bit; 0 when unknown. */
static int word_bit(const char *field, const char *w)
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

static const char *word_choices(const char *field)
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

static int parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
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

/* ---------- JSON grid ---------- */

static int json_pos_int(json_t *v, const char *field, int64_t lo, int64_t hi, int64_t *out,
                        char msg[PROBE_MSG_LEN])
{
    if (!json_is_integer(v))
        return fail(msg, "grid.%s: must be an integer between %" PRId64 " and %" PRId64 "; fix the grid file",
                    field, lo, hi);
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return fail(msg, "grid.%s: must be between %" PRId64 " and %" PRId64 " (got %" JSON_INTEGER_FORMAT
                    "); fix the grid file", field, lo, hi, x);
    *out = x;
    return 0;
}

static int json_bool(json_t *v, const char *field, int *out, char msg[PROBE_MSG_LEN])
{
    if (!json_is_boolean(v))
        return fail(msg, "grid.%s: must be true or false; fix the grid file", field);
    *out = json_is_true(v);
    return 0;
}

static int json_word_list(json_t *v, const char *field, int *mask, char msg[PROBE_MSG_LEN])
{
    if (!json_is_array(v) || json_array_size(v) == 0)
        return fail(msg, "grid.%s: must be a non-empty list of %s; fix the grid file", field, word_choices(field));
    int m = 0;
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        int bit = json_is_string(e) ? word_bit(field, json_string_value(e)) : 0;
        if (!bit)
            return fail(msg, "grid.%s[%zu]: must be one of %s; fix the grid file", field, i, word_choices(field));
        if (m & bit)
            return fail(msg, "grid.%s[%zu]: \"%s\" is listed twice; list each value once", field, i,
                        json_string_value(e));
        m |= bit;
    }
    *mask = m;
    return 0;
}

static int json_int_list(json_t *v, const char *field, int64_t lo, int64_t hi, int64_t *out, int *n,
                         char msg[PROBE_MSG_LEN])
{
    if (!json_is_array(v) || json_array_size(v) == 0)
        return fail(msg, "grid.%s: must be a non-empty list of integers; fix the grid file", field);
    if (json_array_size(v) > PROBE_MAX_LIST)
        return fail(msg, "grid.%s: at most %d entries (got %zu); split the grid", field, PROBE_MAX_LIST,
                    json_array_size(v));
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        char f[64];
        snprintf(f, sizeof f, "%s[%zu]", field, i);
        if (json_pos_int(e, f, lo, hi, &out[i], msg))
            return -1;
        for (size_t j = 0; j < i; j++)
            if (out[j] == out[i])
                return fail(msg, "grid.%s: %" PRId64 " is listed twice; list each value once", f, out[i]);
    }
    *n = (int)json_array_size(v);
    return 0;
}

static int json_target(json_t *t, size_t i, probe_target *out, char msg[PROBE_MSG_LEN])
{
    if (!json_is_object(t))
        return fail(msg, "grid.targets[%zu]: must be an object {\"layout\", \"path\", \"g\"}; fix the grid file", i);
    memset(out, 0, sizeof(*out));
    const char *key;
    json_t *v;
    int have_layout = 0, have_path = 0;
    json_object_foreach(t, key, v) {
        if (strcmp(key, "layout") == 0) {
            if (!json_is_string(v) || parse_layout(json_string_value(v), &out->layout))
                return fail(msg, "grid.targets[%zu].layout: must be \"1-DH\", \"1-DV\" or \"2-D\"; fix the grid file", i);
            have_layout = 1;
        } else if (strcmp(key, "path") == 0) {
            if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) >= sizeof(out->path) - 256)
                return fail(msg, "grid.targets[%zu].path: must be a non-empty directory path; fix the grid file", i);
            strcpy(out->path, json_string_value(v));
            have_path = 1;
        } else if (strcmp(key, "g") == 0) {
            if (json_is_null(v))
                continue;
            int64_t g = 0;
            char f[64];
            snprintf(f, sizeof f, "targets[%zu].g", i);
            if (json_pos_int(v, f, 1, 1 << 20, &g, msg))
                return -1;
            out->g = (int)g;
        } else if (strcmp(key, "strip_size") == 0) {
            char f[64];
            snprintf(f, sizeof f, "targets[%zu].strip_size", i);
            if (json_pos_int(v, f, 1, INT64_C(1) << 40, &out->strip_size, msg))
                return -1;
        } else {
            return fail(msg, "grid.targets[%zu].%s: unknown field; use layout, path, g, strip_size", i, key);
        }
    }
    if (!have_layout)
        return fail(msg, "grid.targets[%zu].layout: missing; give \"1-DH\", \"1-DV\" or \"2-D\"", i);
    if (!have_path)
        return fail(msg, "grid.targets[%zu].path: missing; give the directory this layout is realised in", i);
    return 0;
}

static int one_word(const char *field, json_t *v, size_t i, const char *key, int *out, char msg[PROBE_MSG_LEN])
{
    int bit = json_is_string(v) ? word_bit(field, json_string_value(v)) : 0;
    if (!bit)
        return fail(msg, "grid.cells[%zu].%s: must be one of %s; fix the grid file", i, key, word_choices(field));
    *out = bit;
    return 0;
}

static int json_cell(json_t *c, size_t i, probe_cell_spec *out, char msg[PROBE_MSG_LEN])
{
    if (!json_is_object(c))
        return fail(msg, "grid.cells[%zu]: must be an object (see docs/probe.md); fix the grid file", i);
    memset(out, 0, sizeof(*out));
    out->sharing = SHARING_FPP;
    const char *key;
    json_t *v;
    int have = 0;
    enum { H_LAYOUT = 1, H_OP = 2, H_PATTERN = 4, H_P = 8, H_M = 16, H_S = 32, H_R = 64, H_REPS = 128 };
    json_object_foreach(c, key, v) {
        char f[64];
        snprintf(f, sizeof f, "cells[%zu].%s", i, key);
        int64_t x = 0;
        if (strcmp(key, "layout") == 0) {
            if (!json_is_string(v) || parse_layout(json_string_value(v), &out->layout))
                return fail(msg, "grid.%s: must be \"1-DH\", \"1-DV\" or \"2-D\"; fix the grid file", f);
            have |= H_LAYOUT;
        } else if (strcmp(key, "g") == 0) {
            if (json_is_null(v))
                continue;
            if (json_pos_int(v, f, 1, 1 << 20, &x, msg))
                return -1;
            out->g = (int)x;
        } else if (strcmp(key, "op") == 0) {
            if (one_word("ops", v, i, key, &out->op, msg)) return -1;
            have |= H_OP;
        } else if (strcmp(key, "pattern") == 0) {
            if (one_word("patterns", v, i, key, &out->pattern, msg)) return -1;
            have |= H_PATTERN;
        } else if (strcmp(key, "sharing") == 0) {
            if (one_word("sharing", v, i, key, &out->sharing, msg)) return -1;
        } else if (strcmp(key, "placement") == 0) {
            /* informational: the cell's m decides which ranks take part */
            probe_placement pl;
            if (!json_is_string(v) || parse_placement(json_string_value(v), &pl))
                return fail(msg, "grid.%s: must be \"packed\" or \"spread\"; fix the grid file", f);
        } else if (strcmp(key, "p") == 0) {
            if (json_pos_int(v, f, 1, 1 << 24, &x, msg)) return -1;
            out->p = (int)x;
            have |= H_P;
        } else if (strcmp(key, "m") == 0) {
            if (json_pos_int(v, f, 1, 1 << 24, &x, msg)) return -1;
            out->m = (int)x;
            have |= H_M;
        } else if (strcmp(key, "request_size") == 0) {
            if (json_pos_int(v, f, 1, INT64_C(1) << 30, &out->request_size, msg)) return -1;
            have |= H_S;
        } else if (strcmp(key, "requests_per_rank") == 0) {
            if (json_pos_int(v, f, 1, INT64_C(1) << 30, &out->requests_per_rank, msg)) return -1;
            have |= H_R;
        } else if (strcmp(key, "repetitions") == 0) {
            if (json_pos_int(v, f, 1, 100000, &x, msg)) return -1;
            out->repetitions = (int)x;
            have |= H_REPS;
        } else {
            return fail(msg, "grid.cells[%zu].%s: unknown field; a cell has layout, g, op, pattern, sharing, p, m, "
                        "request_size, requests_per_rank, repetitions, placement", i, key);
        }
    }
    static const char *const names[] = {"layout", "op", "pattern", "p", "m", "request_size",
                                        "requests_per_rank", "repetitions"};
    for (int b = 0; b < 8; b++)
        if (!(have & (1 << b)))
            return fail(msg, "grid.cells[%zu].%s: missing; every cell needs it", i, names[b]);
    if (out->m > out->p)
        return fail(msg, "grid.cells[%zu].m: %d is more than p=%d; m counts taking-part ranks on one node", i,
                    out->m, out->p);
    return 0;
}

int grid_from_json(probe_grid *g, const char *text, char msg[PROBE_MSG_LEN])
{
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return fail(msg, "grid: not valid JSON at line %d column %d (%s); fix the grid file", jerr.line,
                    jerr.column, jerr.text);
    int rc = -1;
    if (!json_is_object(root)) {
        fail(msg, "grid: must be a JSON object; see docs/probe.md for the grid format");
        goto out;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        int64_t x = 0;
        if (strcmp(key, "backend") == 0) {
            if (!json_is_string(v) || parse_backend(json_string_value(v), &g->backend)) {
                fail(msg, "grid.backend: must be \"posix\", \"mpiio\" or \"pvfs2\"; fix the grid file");
                goto out;
            }
        } else if (strcmp(key, "servers") == 0) {
            if (json_pos_int(v, key, 1, 1 << 20, &x, msg)) goto out;
            g->servers = (int)x;
        } else if (strcmp(key, "format") == 0) {
            if (!json_is_string(v) || strcmp(json_string_value(v), "pfsprobe-grid/1") != 0) {
                fail(msg, "grid.format: must be \"pfsprobe-grid/1\" (a designed cell list) or absent (a "
                     "cross-product grid); see docs/probe.md");
                goto out;
            }
        } else if (strcmp(key, "design") == 0) {
            /* the designer's identifiability report: informational */
        } else if (strcmp(key, "platform") == 0) {
            /* the designed grid's platform: its server count is the probe's n unless --servers says */
            json_t *n = json_is_object(v) ? json_object_get(v, "servers") : NULL;
            if (!n) {
                fail(msg, "grid.platform.servers: missing; a designed grid names its server count");
                goto out;
            }
            if (json_pos_int(n, "platform.servers", 1, 1 << 20, &x, msg)) goto out;
            g->servers = (int)x;
        } else if (strcmp(key, "cells") == 0) {
            if (!json_is_array(v) || json_array_size(v) == 0) {
                fail(msg, "grid.cells: must be a non-empty list of cells; fix the grid file");
                goto out;
            }
            free(g->cells);
            g->cells = calloc(json_array_size(v), sizeof(probe_cell_spec));
            if (!g->cells) {
                fail(msg, "grid.cells: out of memory");
                goto out;
            }
            size_t i;
            json_t *c;
            json_array_foreach(v, i, c) {
                if (json_cell(c, i, &g->cells[i], msg)) goto out;
            }
            g->n_cells = (int)json_array_size(v);
        } else if (strcmp(key, "targets") == 0) {
            if (!json_is_array(v) || json_array_size(v) == 0) {
                fail(msg, "grid.targets: must be a non-empty list of {\"layout\", \"path\"}; fix the grid file");
                goto out;
            }
            if (json_array_size(v) > PROBE_MAX_TARGETS) {
                fail(msg, "grid.targets: at most %d targets (got %zu); split the grid", PROBE_MAX_TARGETS,
                     json_array_size(v));
                goto out;
            }
            size_t i;
            json_t *t;
            json_array_foreach(v, i, t) {
                if (json_target(t, i, &g->targets[i], msg)) goto out;
            }
            g->n_targets = (int)json_array_size(v);
        } else if (strcmp(key, "request_sizes") == 0) {
            g->set_fields |= SET_SIZES;
            if (json_int_list(v, key, 1, INT64_C(1) << 30, g->sizes, &g->n_sizes, msg)) goto out;
        } else if (strcmp(key, "patterns") == 0 || strcmp(key, "sharing") == 0 || strcmp(key, "ops") == 0) {
            g->set_fields |= key[0] == 'p' ? SET_PATTERNS : key[0] == 's' ? SET_SHARING : SET_OPS;
            int *mask = key[0] == 'p' ? &g->patterns : key[0] == 's' ? &g->sharing : &g->ops;
            if (json_word_list(v, key, mask, msg)) goto out;
        } else if (strcmp(key, "procs") == 0) {
            g->set_fields |= SET_PROCS;
            int64_t tmp[PROBE_MAX_LIST];
            if (json_int_list(v, key, 1, 1 << 24, tmp, &g->n_procs, msg)) goto out;
            for (int i = 0; i < g->n_procs; i++) g->procs[i] = (int)tmp[i];
        } else if (strcmp(key, "placement") == 0) {
            g->set_fields |= SET_PLACEMENT;
            if (!json_is_string(v) || parse_placement(json_string_value(v), &g->placement)) {
                fail(msg, "grid.placement: must be \"packed\" or \"spread\"; fix the grid file");
                goto out;
            }
        } else if (strcmp(key, "repetitions") == 0) {
            g->set_fields |= SET_REPETITIONS;
            if (json_pos_int(v, key, 1, 100000, &x, msg)) goto out;
            g->repetitions = (int)x;
        } else if (strcmp(key, "requests_per_rank") == 0) {
            g->set_fields |= SET_REQUESTS;
            if (json_pos_int(v, key, 1, INT64_C(1) << 30, &g->requests_per_rank, msg)) goto out;
        } else if (strcmp(key, "seed") == 0) {
            if (json_pos_int(v, key, 0, INT64_MAX, &x, msg)) goto out;
            g->seed = (uint64_t)x;
        } else if (strcmp(key, "fsync") == 0) {
            if (json_bool(v, key, &g->fsync, msg)) goto out;
        } else if (strcmp(key, "direct") == 0) {
            if (json_bool(v, key, &g->direct, msg)) goto out;
        } else if (strcmp(key, "drop_caches") == 0) {
            if (json_bool(v, key, &g->drop_caches, msg)) goto out;
        } else if (strcmp(key, "keep") == 0) {
            if (json_bool(v, key, &g->keep, msg)) goto out;
        } else if (strcmp(key, "verify") == 0) {
            if (json_bool(v, key, &g->verify, msg)) goto out;
        } else {
            fail(msg, "grid.%s: unknown field; see docs/probe.md for the grid format", key);
            goto out;
        }
    }
    rc = 0;
out:
    json_decref(root);
    return rc;
}

/* ---------- flags ---------- */

void grid_usage(const char *prog)
{
    fprintf(stdout,
            "usage: %s [--grid FILE] [--target LAYOUT[:G]=DIR]... [options]\n"
            "Times a calibration grid of I/O cells and writes pfsprobe/1 JSON (docs/probe-format.md).\n"
            "  --grid FILE           grid JSON (docs/probe.md); the flags below override its fields\n"
            "  --target L[:G]=DIR    a directory realising layout L (1-DH, 1-DV, 2-D:G); repeatable\n"
            "  --backend B           posix | mpiio | pvfs2 (default posix)\n"
            "  --servers N           file servers behind the targets (default 1)\n"
            "  --sizes LIST          request sizes, e.g. 4K,64K,1M (default 64K)\n"
            "  --patterns LIST       sequential,random (default sequential)\n"
            "  --sharing LIST        file-per-process,shared (default file-per-process)\n"
            "  --ops LIST            write,read (default write,read)\n"
            "  --procs LIST          process counts p (default 1,2,4,... and the world size)\n"
            "  --placement P         packed (first p ranks) | spread (round-robin over nodes)\n"
            "  --repetitions N       timed repetitions per cell (default 5)\n"
            "  --requests N          requests per rank per repetition (default 16)\n"
            "  --seed N              seed of the random-offset permutation (default 1)\n"
            "  --no-fsync            do not sync at the end of a timed write repetition\n"
            "  --direct              posix only: open with O_DIRECT (sizes must be multiples of 4096)\n"
            "  --drop-caches         posix only: evict the files' pages before each read repetition\n"
            "  --verify              check read-back contents and file sizes after each group\n"
            "  --keep                keep the probe files\n"
            "  --out FILE            output file (default -: stdout)\n"
            "  --verbose             one progress line per cell on stderr\n"
            "backends built: posix mpiio%s\n",
            prog,
#ifdef PFSPROBE_HAVE_PVFS2
            " pvfs2"
#else
            " (pvfs2 needs -DORANGEFS_PREFIX)"
#endif
    );
}

const char *grid_file_arg(int argc, char **argv)
{
    for (int i = 1; i < argc - 1; i++)
        if (strcmp(argv[i], "--grid") == 0)
            return argv[i + 1];
    return NULL;
}

static int flag_word_list(const char *flag, const char *field, const char *val, int *mask, char msg[PROBE_MSG_LEN])
{
    char buf[1024];
    if (strlen(val) >= sizeof buf)
        return fail(msg, "%s: too long; list %s", flag, word_choices(field));
    strcpy(buf, val);
    int m = 0;
    char *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        int bit = word_bit(field, w);
        if (!bit)
            return fail(msg, "%s: \"%s\" is not one of %s", flag, w, word_choices(field));
        if (m & bit)
            return fail(msg, "%s: \"%s\" is listed twice; list each value once", flag, w);
        m |= bit;
    }
    if (!m)
        return fail(msg, "%s: empty; list %s", flag, word_choices(field));
    *mask = m;
    return 0;
}

static int flag_int_list(const char *flag, const char *val, int sizes, int64_t hi, int64_t *out, int *n,
                         char msg[PROBE_MSG_LEN])
{
    char buf[1024];
    if (strlen(val) >= sizeof buf)
        return fail(msg, "%s: too long", flag);
    strcpy(buf, val);
    int k = 0;
    char *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        int64_t x = -1;
        if (sizes) {
            x = parse_size(w);
        } else if (parse_int(w, 1, hi, &x)) {
            x = -1;
        }
        if (x < 1 || x > hi)
            return fail(msg, "%s: \"%s\" is not %s between 1 and %" PRId64, flag, w,
                        sizes ? "a size (bytes, or with K/M/G)" : "an integer", hi);
        if (k == PROBE_MAX_LIST)
            return fail(msg, "%s: at most %d entries; split the grid", flag, PROBE_MAX_LIST);
        for (int j = 0; j < k; j++)
            if (out[j] == x)
                return fail(msg, "%s: %s is listed twice; list each value once", flag, w);
        out[k++] = x;
    }
    if (!k)
        return fail(msg, "%s: empty; give a comma-separated list", flag);
    *n = k;
    return 0;
}

/* "2-D:4=/mnt/ofs/probe/2d" */
static int flag_target(const char *val, probe_target *t, char msg[PROBE_MSG_LEN])
{
    memset(t, 0, sizeof(*t));
    const char *eq = strchr(val, '=');
    if (!eq || eq == val || !eq[1])
        return fail(msg, "--target: \"%s\" is not LAYOUT[:G]=DIR; e.g. --target 2-D:2=/mnt/ofs/probe/2d", val);
    char spec[64];
    size_t len = (size_t)(eq - val);
    if (len >= sizeof spec)
        return fail(msg, "--target: layout \"%.*s\" is not 1-DH, 1-DV or 2-D:G", (int)len, val);
    memcpy(spec, val, len);
    spec[len] = 0;
    char *colon = strchr(spec, ':');
    if (colon) {
        *colon = 0;
        int64_t gv;
        if (parse_int(colon + 1, 1, 1 << 20, &gv))
            return fail(msg, "--target: group count \"%s\" in \"%s\" is not a positive integer", colon + 1, val);
        t->g = (int)gv;
    }
    if (parse_layout(spec, &t->layout))
        return fail(msg, "--target: layout \"%s\" is not 1-DH, 1-DV or 2-D:G", spec);
    if (strlen(eq + 1) >= sizeof(t->path) - 256)
        return fail(msg, "--target: path too long");
    strcpy(t->path, eq + 1);
    return 0;
}

static int needs_value(const char *a)
{
    static const char *const with_value[] = {"--grid", "--target", "--backend", "--servers", "--sizes",
                                             "--patterns", "--sharing", "--ops", "--procs", "--placement",
                                             "--repetitions", "--requests", "--seed", "--out", NULL};
    for (int i = 0; with_value[i]; i++)
        if (strcmp(a, with_value[i]) == 0)
            return 1;
    return 0;
}

int grid_parse_args(probe_grid *g, int argc, char **argv, const char *grid_text, char msg[PROBE_MSG_LEN])
{
    if (grid_text && grid_from_json(g, grid_text, msg))
        return -1;
    int flag_targets = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            return 1;
        /* "--requests --out x" is a forgotten value, not a request count of "--out" */
        if (needs_value(a) && (i + 1 >= argc || argv[i + 1][0] == '\0' || strncmp(argv[i + 1], "--", 2) == 0))
            return fail(msg, "%s: needs a value; see --help", a);
        const char *v = needs_value(a) ? argv[++i] : NULL;
        int64_t x = 0;
        if (strcmp(a, "--grid") == 0) {
            /* already applied by the caller */
        } else if (strcmp(a, "--target") == 0) {
            if (!flag_targets)
                g->n_targets = 0; /* flags replace the grid file's targets */
            flag_targets = 1;
            if (g->n_targets == PROBE_MAX_TARGETS)
                return fail(msg, "--target: at most %d targets; split the grid", PROBE_MAX_TARGETS);
            if (flag_target(v, &g->targets[g->n_targets], msg))
                return -1;
            g->n_targets++;
        } else if (strcmp(a, "--backend") == 0) {
            if (parse_backend(v, &g->backend))
                return fail(msg, "--backend: \"%s\" is not posix, mpiio or pvfs2", v);
        } else if (strcmp(a, "--servers") == 0) {
            if (parse_int(v, 1, 1 << 20, &x))
                return fail(msg, "--servers: \"%s\" is not a positive integer", v);
            g->servers = (int)x;
        } else if (strcmp(a, "--sizes") == 0) {
            g->set_fields |= SET_SIZES;
            if (flag_int_list(a, v, 1, INT64_C(1) << 30, g->sizes, &g->n_sizes, msg))
                return -1;
        } else if (strcmp(a, "--patterns") == 0) {
            g->set_fields |= SET_PATTERNS;
            if (flag_word_list(a, "patterns", v, &g->patterns, msg)) return -1;
        } else if (strcmp(a, "--sharing") == 0) {
            g->set_fields |= SET_SHARING;
            if (flag_word_list(a, "sharing", v, &g->sharing, msg)) return -1;
        } else if (strcmp(a, "--ops") == 0) {
            g->set_fields |= SET_OPS;
            if (flag_word_list(a, "ops", v, &g->ops, msg)) return -1;
        } else if (strcmp(a, "--procs") == 0) {
            g->set_fields |= SET_PROCS;
            int64_t tmp[PROBE_MAX_LIST];
            if (flag_int_list(a, v, 0, 1 << 24, tmp, &g->n_procs, msg))
                return -1;
            for (int k = 0; k < g->n_procs; k++) g->procs[k] = (int)tmp[k];
        } else if (strcmp(a, "--placement") == 0) {
            g->set_fields |= SET_PLACEMENT;
            if (parse_placement(v, &g->placement))
                return fail(msg, "--placement: \"%s\" is not packed or spread", v);
        } else if (strcmp(a, "--repetitions") == 0) {
            g->set_fields |= SET_REPETITIONS;
            if (parse_int(v, 1, 100000, &x))
                return fail(msg, "--repetitions: \"%s\" is not an integer between 1 and 100000", v);
            g->repetitions = (int)x;
        } else if (strcmp(a, "--requests") == 0) {
            g->set_fields |= SET_REQUESTS;
            if (parse_int(v, 1, INT64_C(1) << 30, &x))
                return fail(msg, "--requests: \"%s\" is not a positive integer", v);
            g->requests_per_rank = x;
        } else if (strcmp(a, "--seed") == 0) {
            if (parse_int(v, 0, INT64_MAX, &x))
                return fail(msg, "--seed: \"%s\" is not a non-negative integer", v);
            g->seed = (uint64_t)x;
        } else if (strcmp(a, "--out") == 0) {
            if (strlen(v) >= sizeof(g->out))
                return fail(msg, "--out: path too long");
            strcpy(g->out, v);
        } else if (strcmp(a, "--fsync") == 0) {
            g->fsync = 1;
        } else if (strcmp(a, "--no-fsync") == 0) {
            g->fsync = 0;
        } else if (strcmp(a, "--direct") == 0) {
            g->direct = 1;
        } else if (strcmp(a, "--drop-caches") == 0) {
            g->drop_caches = 1;
        } else if (strcmp(a, "--keep") == 0) {
            g->keep = 1;
        } else if (strcmp(a, "--verify") == 0) {
            g->verify = 1;
        } else if (strcmp(a, "--verbose") == 0) {
            g->verbose = 1;
        } else {
            return fail(msg, "%s: unknown option; see --help", a);
        }
    }
    return 0;
}

static int add_group(probe_grid *g, const probe_group *gr)
{
    if (g->n_groups % 64 == 0) {
        probe_group *n = realloc(g->groups, sizeof(probe_group) * (size_t)(g->n_groups + 64));
        if (!n)
            return -1;
        g->groups = n;
    }
    g->groups[g->n_groups++] = *gr;
    return 0;
}

static int find_target(const probe_grid *g, probe_layout layout, int gcount)
{
    for (int t = 0; t < g->n_targets; t++)
        if (g->targets[t].layout == layout && g->targets[t].g == gcount)
            return t;
    return -1;
}

/* Explicit cells become groups keyed by everything but pattern and op, in first-appearance order. */
static int groups_from_cells(probe_grid *g, int world_size, char msg[PROBE_MSG_LEN])
{
    static const char *const set_names[] = {"request_sizes (--sizes)", "patterns", "sharing", "ops", "procs",
                                            "placement", "repetitions", "requests_per_rank (--requests)"};
    for (int b = 0; b < 8; b++)
        if (g->set_fields & (1 << b))
            return fail(msg, "%s: the grid file lists explicit cells (pfsprobe-grid/1), which fix it per cell; "
                        "drop it", set_names[b]);
    for (int i = 0; i < g->n_cells; i++) {
        const probe_cell_spec *c = &g->cells[i];
        if (c->layout == LAYOUT_2D && c->g == 0)
            return fail(msg, "grid.cells[%d].g: 2-D needs a group count; fix the grid file", i);
        if (c->layout != LAYOUT_2D && c->g != 0)
            return fail(msg, "grid.cells[%d].g: only 2-D has a group count (layout %s); use null", i,
                        layout_name(c->layout));
        if (c->p > world_size)
            return fail(msg, "grid.cells[%d].p: %d exceeds the %d ranks launched; launch at least %d ranks", i,
                        c->p, world_size, c->p);
        int t = find_target(g, c->layout, c->g);
        if (t < 0) {
            if (c->layout == LAYOUT_2D)
                return fail(msg, "grid.cells[%d]: no target for layout 2-D g=%d; pass --target 2-D:%d=DIR", i, c->g,
                            c->g);
            return fail(msg, "grid.cells[%d]: no target for layout %s; pass --target %s=DIR", i,
                        layout_name(c->layout), layout_name(c->layout));
        }
        int k;
        for (k = 0; k < g->n_groups; k++) {
            probe_group *gr = &g->groups[k];
            if (gr->target == t && gr->shared == (c->sharing == SHARING_SHARED) && gr->p == c->p && gr->m == c->m &&
                gr->s == c->request_size && gr->r == c->requests_per_rank && gr->reps == c->repetitions)
                break;
        }
        if (k == g->n_groups) {
            probe_group gr = {t, c->sharing == SHARING_SHARED, c->p, c->m, c->request_size, c->requests_per_rank,
                              c->repetitions, 0, 0};
            if (add_group(g, &gr))
                return fail(msg, "grid.cells: out of memory");
        }
        probe_group *gr = &g->groups[k];
        if ((gr->patterns & c->pattern) && (gr->ops & c->op)) {
            /* Both bits already set can still be a new combination; look for the exact duplicate. */
            for (int j = 0; j < i; j++) {
                const probe_cell_spec *d = &g->cells[j];
                if (d->layout == c->layout && d->g == c->g && d->op == c->op && d->pattern == c->pattern &&
                    d->sharing == c->sharing && d->p == c->p && d->m == c->m && d->request_size == c->request_size &&
                    d->requests_per_rank == c->requests_per_rank && d->repetitions == c->repetitions)
                    return fail(msg, "grid.cells[%d]: repeats cells[%d]; list each cell once", i, j);
            }
        }
        gr->patterns |= c->pattern;
        gr->ops |= c->op;
    }
    return 0;
}

static int groups_from_product(probe_grid *g, int world_size, char msg[PROBE_MSG_LEN])
{
    if (g->n_procs == 0) {
        for (int p = 1; p < world_size; p *= 2)
            g->procs[g->n_procs++] = p;
        g->procs[g->n_procs++] = world_size;
    }
    for (int i = 0; i < g->n_procs; i++)
        if (g->procs[i] > world_size)
            return fail(msg, "procs: %d exceeds the %d ranks launched; launch at least %d ranks or drop it",
                        g->procs[i], world_size, g->procs[i]);
    for (int t = 0; t < g->n_targets; t++)
        for (int shared = 0; shared <= 1; shared++) {
            if (!(g->sharing & (shared ? SHARING_SHARED : SHARING_FPP)))
                continue;
            for (int k = 0; k < g->n_procs; k++)
                for (int si = 0; si < g->n_sizes; si++) {
                    probe_group gr = {t, shared, g->procs[k], 0, g->sizes[si], g->requests_per_rank, g->repetitions,
                                      g->patterns, g->ops};
                    if (add_group(g, &gr))
                        return fail(msg, "grid: out of memory");
                }
        }
    return 0;
}

int grid_validate(probe_grid *g, int world_size, char msg[PROBE_MSG_LEN])
{
    if (g->n_targets == 0)
        return fail(msg, "targets: none given; pass --target LAYOUT[:G]=DIR or a grid file with \"targets\"");
    for (int i = 0; i < g->n_targets; i++) {
        probe_target *t = &g->targets[i];
        if (t->layout == LAYOUT_2D && t->g == 0)
            return fail(msg, "targets[%d].g: 2-D needs a group count g; write 2-D:G=DIR or give \"g\"", i);
        if (t->layout != LAYOUT_2D && t->g != 0)
            return fail(msg, "targets[%d].g: only 2-D has a group count (layout %s); drop g", i,
                        layout_name(t->layout));
        /* pvfs2 learns n from the file system and checks g itself */
        if (t->g > g->servers && g->backend != BACKEND_PVFS2)
            return fail(msg, "targets[%d].g: %d groups exceed the %d servers; use g <= servers (--servers)", i,
                        t->g, g->servers);
        if (t->strip_size && g->backend != BACKEND_PVFS2)
            return fail(msg, "targets[%d].strip_size: only the pvfs2 backend sets strip sizes; set the "
                        "directory's layout hints instead", i);
        for (int j = 0; j < i; j++)
            if (g->targets[j].layout == t->layout && g->targets[j].g == t->g)
                return fail(msg, "targets[%d]: a second target for layout %s%s; give one directory per layout", i,
                            layout_name(t->layout), t->g ? " with this g" : "");
    }
    if (g->direct && g->backend != BACKEND_POSIX)
        return fail(msg, "direct: O_DIRECT is a posix-backend option (backend is %s); drop --direct",
                    backend_name(g->backend));
    if (g->drop_caches && g->backend != BACKEND_POSIX)
        return fail(msg, "drop_caches: only the posix backend can evict pages (backend is %s); drop --drop-caches",
                    backend_name(g->backend));
#ifndef PFSPROBE_HAVE_PVFS2
    if (g->backend == BACKEND_PVFS2)
        return fail(msg, "backend: pvfs2 is not built into this pfsprobe; rebuild with -DORANGEFS_PREFIX=<OrangeFS "
                    "install prefix> or use posix/mpiio");
#endif
    g->n_groups = 0;
    if (g->n_cells ? groups_from_cells(g, world_size, msg) : groups_from_product(g, world_size, msg))
        return -1;
    for (int k = 0; k < g->n_groups; k++) {
        const probe_group *gr = &g->groups[k];
        if (g->direct && gr->s % 4096)
            return fail(msg, "request_sizes: %" PRId64 " is not a multiple of 4096, which O_DIRECT needs; "
                        "use multiples of 4096 or drop --direct", gr->s);
        if (gr->r > INT64_MAX / gr->s / gr->p)
            return fail(msg, "requests_per_rank: %" PRId64 " requests of %" PRId64 " bytes overflow a file "
                        "offset; use fewer requests", gr->r, gr->s);
    }
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
