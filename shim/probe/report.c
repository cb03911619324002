#include "report.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PFSPROBE_VERSION "0.1.0"

struct probe_report {
    json_t *root;
    json_t *cells;
};

probe_report *report_new(const char *mpi_version, const char *started, int ranks, int nodes, int ranks_per_node,
                         int servers, const char *backend)
{
    probe_report *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->cells = json_array();
    r->root = json_pack("{s:s, s:{s:s, s:s, s:s}, s:s, s:{s:i, s:i, s:i, s:i, s:s}, s:o}",
                        "format", "pfsprobe/1",
                        "tool", "name", "pfsprobe", "version", PFSPROBE_VERSION, "mpi", mpi_version,
                        "started", started,
                        "platform", "ranks", ranks, "nodes", nodes, "ranks_per_node", ranks_per_node,
                        "servers", servers, "backend", backend,
                        "cells", r->cells);  /* stolen: root owns the array, r->cells borrows it */
    if (!r->root) {
        free(r);
        return NULL;
    }
    return r;
}

int report_add_cell(probe_report *r, const probe_cell *c, probe_stats *st_out)
{
    json_t *times = json_array();
    for (int i = 0; i < c->repetitions; i++)
        json_array_append_new(times, json_real(c->times[i]));
    probe_stats st = stats_of(c->times, c->repetitions);
    json_t *g = c->target->layout == LAYOUT_2D ? json_integer(c->target->g) : json_null();
    json_t *cell = json_pack("{s:s, s:o, s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:I, s:i, s:o, s:f, s:f, s:f, s:f}",
                             "layout", layout_name(c->target->layout),
                             "g", g,
                             "target", c->target->path,
                             "op", c->op,
                             "pattern", c->pattern,
                             "sharing", c->sharing,
                             "p", c->p,
                             "m", c->m,
                             "request_size", (json_int_t)c->request_size,
                             "requests_per_rank", (json_int_t)c->requests_per_rank,
                             "repetitions", c->repetitions,
                             "times", times,
                             "median", st.median,
                             "min", st.min,
                             "max", st.max,
                             "iqr", st.iqr);
    if (!cell)
        return -1;
    if (st_out)
        *st_out = st;
    return json_array_append_new(r->cells, cell);
}

int report_check_writable(const char *out, char *msg)
{
    if (strcmp(out, "-") == 0)
        return 0;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(msg, PROBE_MSG_LEN, "--out: cannot write %s (%s); give a writable path", out, strerror(errno));
        return -1;
    }
    fclose(f);
    unlink(tmp);
    return 0;
}

int report_write(probe_report *r, const char *out, char *msg)
{
    size_t flags = JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9);
    if (strcmp(out, "-") == 0) {
        if (json_dumpf(r->root, stdout, flags) || fputc('\n', stdout) == EOF || fflush(stdout)) {
            snprintf(msg, PROBE_MSG_LEN, "--out: cannot write to stdout");
            return -1;
        }
        return 0;
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    if (json_dump_file(r->root, tmp, flags) || rename(tmp, out)) {
        snprintf(msg, PROBE_MSG_LEN, "--out: cannot write %s (%s); give a writable path", out, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

void report_free(probe_report *r)
{
    if (!r)
        return;
    json_decref(r->root);
    free(r);
}
