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

/* Fills servers[] (indices 0..n, at most n entries) and *strip; returns the number of servers.
 * file-per-process: 1-DV one server, rank i on server i mod n; 2-D the ceil(n/g) servers of group i mod g
 * (wrapping when g does not divide n); 1-DH all n servers, starting at server i mod n. shared: all n
 * servers, with a strip of s (1-DV), ceil(s/ceil(n/g)) (2-D) or ceil(s/n) (1-DH), so each request touches
 * 1, ceil(n/g) or n servers. A per-process file's strip is ceil(s/k) over its k servers. */
int place_servers(const probe_place *pl, int n, int *servers, int64_t *strip);

#endif
