/* Validation of the combined grid against the world size, and its expansion into the groups the runner
 * executes (files created once per group, then every pattern/op timed on them). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid_internal.h"

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
        if (t->strip_size && t->layout == LAYOUT_DEFAULT)
            return fail(msg, "targets[%d].strip_size: the default layout is the file system's own; drop strip_size", i);
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
