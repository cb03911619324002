/* The table from the application's MPI_File to the shim's pfs_file: 1024 open-addressing slots, written
 * under a mutex (open/close), read without one (every wrapper, see lookup() in shim_internal.h). */
#include <pthread.h>

#include "shim_internal.h"

pfs_slot g_tbl[TBL];
int g_tbl_count;
static pthread_mutex_t g_tbl_mu = PTHREAD_MUTEX_INITIALIZER;

int tbl_insert(MPI_File fh, pfs_file *f)
{
    pthread_mutex_lock(&g_tbl_mu);
    for (size_t i = slot_of(fh), n = 0; n < TBL; i = (i + 1) & (TBL - 1), n++)
        if (!g_tbl[i].val || g_tbl[i].val == TOMB) {
            g_tbl[i].key = fh;
            g_tbl[i].val = f;
            g_tbl_count++;
            pthread_mutex_unlock(&g_tbl_mu);
            return 0;
        }
    pthread_mutex_unlock(&g_tbl_mu);
    return -1;
}

void tbl_remove(MPI_File fh)
{
    pthread_mutex_lock(&g_tbl_mu);
    for (size_t i = slot_of(fh), n = 0; n < TBL && g_tbl[i].val; i = (i + 1) & (TBL - 1), n++)
        if (g_tbl[i].val != TOMB && g_tbl[i].key == fh) {
            g_tbl[i].val = TOMB;
            g_tbl_count--;
            break;
        }
    pthread_mutex_unlock(&g_tbl_mu);
}
