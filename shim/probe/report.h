/* The pfsprobe/1 document (docs/probe-format.md), built on rank 0. */
#ifndef PFSPROBE_REPORT_H
#define PFSPROBE_REPORT_H

#include <stdint.h>

#include "grid.h"
#include "stats.h"

typedef struct probe_report probe_report;

typedef struct {
    const probe_target *target;
    const char *op, *pattern, *sharing;
    int p, m;
    int64_t request_size, requests_per_rank;
    int repetitions;
    const double *times;
} probe_cell;

probe_report *report_new(const char *mpi_version, const char *started, int ranks, int nodes, int ranks_per_node,
                         int servers, const char *backend);
int report_add_cell(probe_report *r, const probe_cell *c, probe_stats *st_out);
/* Writes atomically (temporary file, then rename) so a reader never sees half a document. "-" = stdout. */
int report_write(probe_report *r, const char *out, char *msg);
/* Checks early that the output can be written, so a long grid does not end in a lost result. */
int report_check_writable(const char *out, char *msg);
void report_free(probe_report *r);

#endif
