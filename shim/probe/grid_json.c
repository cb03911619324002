/* The grid file (JSON): a cross-product grid or a designed cell list (pfsprobe-grid/1), applied onto a
 * probe_grid. */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid_internal.h"
#include "pfs_common.h"

static int json_pos_int(json_t *v, const char *field, int64_t lo, int64_t hi, int64_t *out,
                        char msg[PROBE_MSG_LEN])
{
    switch (pfs_json_int(v, lo, hi, out)) {
    case PFS_JSON_OK:
        return 0;
    case PFS_JSON_WRONG_TYPE:
        return fail(msg, "grid.%s: must be an integer between %" PRId64 " and %" PRId64 "; fix the grid file",
                    field, lo, hi);
    default:
        return fail(msg, "grid.%s: must be between %" PRId64 " and %" PRId64 " (got %" JSON_INTEGER_FORMAT
                    "); fix the grid file", field, lo, hi, json_integer_value(v));
    }
}

static int json_bool(json_t *v, const char *field, int *out, char msg[PROBE_MSG_LEN])
{
    if (pfs_json_bool(v, out) != PFS_JSON_OK)
        return fail(msg, "grid.%s: must be true or false; fix the grid file", field);
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
                return fail(msg, "grid.targets[%zu].layout: must be \"1-DH\", \"1-DV\", \"2-D\" or \"default\"; fix the grid file", i);
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
        return fail(msg, "grid.targets[%zu].layout: missing; give \"1-DH\", \"1-DV\", \"2-D\" or \"default\"", i);
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
                return fail(msg, "grid.%s: must be \"1-DH\", \"1-DV\", \"2-D\" or \"default\"; fix the grid file", f);
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
