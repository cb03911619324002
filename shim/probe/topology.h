/* Where the ranks run: nodes, and which ranks take part in a cell with p processes. */
#ifndef PFSPROBE_TOPOLOGY_H
#define PFSPROBE_TOPOLOGY_H

#include <mpi.h>

#include "select.h"

int topology_init(probe_topology *t, MPI_Comm world);
void topology_free(probe_topology *t);

#endif
