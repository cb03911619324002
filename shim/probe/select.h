/* Which ranks take part in a cell, from where every rank runs; pure, so it is unit-tested with made-up
 * multi-node layouts that one machine cannot launch. */
#ifndef PFSPROBE_SELECT_H
#define PFSPROBE_SELECT_H

typedef struct {
    int rank, size;
    int nodes;           /* distinct shared-memory nodes */
    int ranks_per_node;  /* largest node */
    int *node_of;        /* node index (0..nodes) of every world rank */
    int *local_of;       /* rank within its node of every world rank */
} probe_topology;

/* The p world ranks that take part, in sub-communicator order: packed = ranks 0..p, spread = round-robin
 * over nodes (local rank 0 of every node first). `members` gets p entries; returns m, the largest number
 * of them on one node. */
int topology_select(const probe_topology *t, int p, int spread, int *members);

/* The p world ranks for a designed cell with exactly m of them on the busiest node: nodes are filled in
 * order, m ranks each (lowest local ranks first). Returns m, or -1 when this launch cannot do it. */
int topology_select_m(const probe_topology *t, int p, int m, int *members);

#endif
