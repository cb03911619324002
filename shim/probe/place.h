/* Which servers and strip size realise a layout for one file (the pvfs2 backend's placement), kept
 * apart from libpvfs2 so it is unit-tested without OrangeFS. */
#ifndef PFSPROBE_PLACE_H
#define PFSPROBE_PLACE_H

#include <stdint.h>

#include "grid.h"

typedef struct {
    probe_layout layout;
    int g;
    int64_t strip_size; /* 0 = derive */
    int servers;
    int idx;            /* this rank's index among the p taking part */
    int p;
    int64_t request_size;
    int shared;
} probe_place;

/* The datafile count and strip (0 = none) that realise a layout for one file of request size s on n
 * servers: exactly the planner's directory-hint rule, pfslayout.planner.hints.hints_for (its twin), with
 * A(x) = max(4096, floor(x/4096)*4096):
 *   1-DH:  n datafiles, strip min(A(floor(s/n)), 65536)
 *   1-DV:  file-per-process 1 datafile, no strip; shared n datafiles, strip A(s)
 *   2-D:   file-per-process ceil(n/g) datafiles, strip A(floor(s/ceil(n/g))); shared n datafiles,
 *          strip A(floor(s*g/n))
 *   default: n datafiles, strip 65536 (OrangeFS's own layout; the pvfs2 backend passes none at create)
 * Returns 0. */
int layout_realisation(probe_layout layout, int g, int n, int shared, int64_t s, int *datafiles, int64_t *strip);

/* Fills servers[] (indices 0..n, at most n entries) and *strip; returns the number of servers, which is
 * layout_realisation's datafile count. file-per-process: 1-DV one server, rank i on server i mod n; 2-D the
 * ceil(n/g) servers of group i mod g (wrapping when g does not divide n); 1-DH all n servers, starting at
 * server i mod n. shared: all n servers from server 0. The strip is layout_realisation's (a 1-DV
 * per-process file, which has none, gets A(s)); a target's strip_size overrides it. */
int place_servers(const probe_place *pl, int n, int *servers, int64_t *strip);

#endif
