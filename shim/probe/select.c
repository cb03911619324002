#include "select.h"

#include <stdlib.h>

int topology_select(const probe_topology *t, int p, int spread, int *members)
{
    int k = 0;
    if (!spread) {
        for (int r = 0; r < p; r++)
            members[k++] = r;
    } else {
        for (int local = 0; k < p && local < t->size; local++)
            for (int node = 0; node < t->nodes && k < p; node++)
                for (int r = 0; r < t->size; r++)
                    if (t->node_of[r] == node && t->local_of[r] == local) {
                        members[k++] = r;
                        break;
                    }
    }
    int *count = calloc((size_t)t->nodes, sizeof(int));
    if (!count)
        return -1;
    int m = 0;
    for (int i = 0; i < k; i++) {
        int c = ++count[t->node_of[members[i]]];
        m = c > m ? c : m;
    }
    free(count);
    return m;
}

int topology_select_m(const probe_topology *t, int p, int m, int *members)
{
    int k = 0;
    for (int node = 0; node < t->nodes && k < p; node++)
        for (int local = 0; local < m && k < p; local++)
            for (int r = 0; r < t->size; r++)
                if (t->node_of[r] == node && t->local_of[r] == local) {
                    members[k++] = r;
                    break;
                }
    if (k < p)
        return -1;
    int *count = calloc((size_t)t->nodes, sizeof(int));
    if (!count)
        return -1;
    int got = 0;
    for (int i = 0; i < k; i++) {
        int c = ++count[t->node_of[members[i]]];
        got = c > got ? c : got;
    }
    free(count);
    return got == m ? m : -1;
}
