#include "topology.h"

#include <stdlib.h>
#include <string.h>

int topology_init(probe_topology *t, MPI_Comm world)
{
    memset(t, 0, sizeof(*t));
    MPI_Comm_rank(world, &t->rank);
    MPI_Comm_size(world, &t->size);
    MPI_Comm node;
    MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, t->rank, MPI_INFO_NULL, &node);
    int local, node_size;
    MPI_Comm_rank(node, &local);
    MPI_Comm_size(node, &node_size);
    int leader = t->rank; /* world rank of the node's local rank 0 names the node */
    MPI_Bcast(&leader, 1, MPI_INT, 0, node);
    MPI_Comm_free(&node);

    int *leaders = malloc(sizeof(int) * (size_t)t->size);
    t->node_of = malloc(sizeof(int) * (size_t)t->size);
    t->local_of = malloc(sizeof(int) * (size_t)t->size);
    if (!leaders || !t->node_of || !t->local_of) {
        free(leaders);
        return -1;
    }
    MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, world);
    MPI_Allgather(&local, 1, MPI_INT, t->local_of, 1, MPI_INT, world);
    /* Node index = order of first appearance of its leader, identical on every rank. */
    t->nodes = 0;
    for (int r = 0; r < t->size; r++) {
        int idx = -1;
        for (int q = 0; q < r; q++)
            if (leaders[q] == leaders[r]) {
                idx = t->node_of[q];
                break;
            }
        t->node_of[r] = idx >= 0 ? idx : t->nodes++;
    }
    free(leaders);
    MPI_Allreduce(&node_size, &t->ranks_per_node, 1, MPI_INT, MPI_MAX, world);
    return 0;
}

void topology_free(probe_topology *t)
{
    free(t->node_of);
    free(t->local_of);
    t->node_of = t->local_of = NULL;
}

