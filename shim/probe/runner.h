/* Runs the grid: every world rank calls run_grid; ranks outside a cell's p wait at the agreement points,
 * so all ranks pass the same collectives in the same order and leave together on an error. */
#ifndef PFSPROBE_RUNNER_H
#define PFSPROBE_RUNNER_H

#include <mpi.h>

#include "backend.h"
#include "grid.h"
#include "report.h"
#include "topology.h"

typedef struct {
    const probe_grid *grid;
    const probe_backend *be;
    const probe_topology *topo;
    MPI_Comm world;
    probe_report *report; /* rank 0 only */
    char msg[PROBE_MSG_LEN];
} probe_run;

/* Returns 0; -2 when the grid cannot be placed on this launch (bad input); -1 after an I/O error on any
 * rank. On failure run->msg holds the first failing rank's line on every rank. */
int run_grid(probe_run *run);

/* Agreement point: returns 1 on every rank if any rank passed err != 0, and copies the lowest failing
 * rank's msg to all ranks. */
int probe_agree(MPI_Comm world, int err, char *msg);

#endif
