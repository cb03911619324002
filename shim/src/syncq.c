/* Lazy replica synchronisation queue (docs/seeds.md §3.4, §6 B2).
 *
 * One FIFO per hybrid file. Entries are applied strictly in order and one at a time, by whichever side
 * holds the `busy` token: the background thread (POSIX entries only; it never calls MPI) or a thread
 * draining at a sync point (both kinds). Order matters because two queued writes may overlap.
 * A replica's dirty set is the union of the envelopes still owed to it; it is cleared when nothing is
 * owed any more (conservative: a replica is avoided for a range until its whole backlog is applied).
 */
#include <stdlib.h>
#include <string.h>

#include "pfsshim.h"

void (*pfs_qentry_release)(pfs_qentry *e); /* set by the shim: frees the MPI datatype of MPI entries */

void pfs_qentry_free(pfs_qentry *e)
{
    if (!e)
        return;
    if (e->has_dtype && pfs_qentry_release)
        pfs_qentry_release(e);
    free(e->data);
    free(e);
}

/* called with the lock held after e has been applied (or dropped) */
static void account(pfs_syncq *q, pfs_qentry *e)
{
    q->bytes -= e->len;
    for (int r = 0; r < q->nrep; r++)
        if ((e->mask >> r) & 1u) {
            if (q->pending[r] && --q->pending[r] == 0)
                pfs_ranges_clear(&q->dirty[r]);
        }
}

static pfs_qentry *pop(pfs_syncq *q)
{
    pfs_qentry *e = q->head;
    q->head = e->next;
    if (!q->head)
        q->tail = NULL;
    e->next = NULL;
    return e;
}

static void *worker(void *arg)
{
    pfs_syncq *q = arg;
    pthread_mutex_lock(&q->mu);
    while (!q->stop) {
        if (q->head && q->head->kind == PFS_Q_POSIX && !q->busy) {
            pfs_qentry *e = pop(q);
            q->busy = 1;
            pthread_mutex_unlock(&q->mu);
            for (int r = 0; r < q->nrep; r++)
                if ((e->mask >> r) & 1u)
                    q->posix_apply(q->ctx, e, r);
            pthread_mutex_lock(&q->mu);
            q->busy = 0;
            q->applied_thread++;
            account(q, e);
            pfs_qentry_free(e);
            pthread_cond_broadcast(&q->cv);
        } else {
            pthread_cond_wait(&q->cv, &q->mu);
        }
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

int pfs_syncq_init(pfs_syncq *q, int nrep, pfs_apply_fn posix_apply, void *ctx, int start_thread)
{
    memset(q, 0, sizeof *q);
    q->nrep = nrep;
    q->posix_apply = posix_apply;
    q->ctx = ctx;
    for (int r = 0; r < nrep; r++)
        pfs_ranges_init(&q->dirty[r]);
    if (pthread_mutex_init(&q->mu, NULL) != 0)
        return -1;
    if (pthread_cond_init(&q->cv, NULL) != 0)
        return -1;
    if (start_thread && posix_apply) {
        if (pthread_create(&q->thread, NULL, worker, q) != 0)
            return -1;
        q->thread_started = 1;
    }
    return 0;
}

/* with the lock held: append e to the tail entry if it simply continues it */
static int coalesce(pfs_syncq *q, pfs_qentry *e)
{
    pfs_qentry *t = q->tail;
    if (!t || t->kind != PFS_Q_POSIX || e->kind != PFS_Q_POSIX || t->mask != e->mask || t->byte_hi != e->byte_lo ||
        t->len + e->len > PFS_COALESCE_MAX || e->len != e->byte_hi - e->byte_lo)
        return 0;
    size_t cap = t->cap > t->len ? t->cap : t->len;
    if (cap == 0)
        cap = 1;
    if (t->len + e->len > cap) {
        while (cap < t->len + e->len)
            cap *= 2;
        void *nd = realloc(t->data, cap);
        if (!nd)
            return 0;
        t->data = nd;
        t->cap = cap;
    }
    memcpy((char *)t->data + t->len, e->data, e->len);
    t->len += e->len;
    t->byte_hi = e->byte_hi;
    return 1;
}

int pfs_syncq_push(pfs_syncq *q, pfs_qentry *e)
{
    int rc = 0;
    e->next = NULL;
    pthread_mutex_lock(&q->mu);
    if (coalesce(q, e)) {
        for (int r = 0; r < q->nrep; r++)
            if (((e->mask >> r) & 1u) && pfs_ranges_add(&q->dirty[r], e->byte_lo, e->byte_hi) != 0)
                rc = -1;
        q->bytes += e->len;
        q->coalesced++;
        pthread_mutex_unlock(&q->mu);
        pfs_qentry_free(e);
        return rc;
    }
    for (int r = 0; r < q->nrep; r++)
        if ((e->mask >> r) & 1u) {
            if (pfs_ranges_add(&q->dirty[r], e->byte_lo, e->byte_hi) != 0)
                rc = -1;
            q->pending[r]++;
        }
    if (q->tail)
        q->tail->next = e;
    else
        q->head = e;
    q->tail = e;
    q->bytes += e->len;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return rc;
}

int pfs_syncq_dirty(pfs_syncq *q, int r, uint64_t lo, uint64_t hi)
{
    pthread_mutex_lock(&q->mu);
    int d = q->pending[r] && pfs_ranges_overlaps(&q->dirty[r], lo, hi);
    pthread_mutex_unlock(&q->mu);
    return d;
}

void pfs_syncq_drain(pfs_syncq *q, pfs_apply_fn apply, void *ctx)
{
    pthread_mutex_lock(&q->mu);
    q->drains++;
    for (;;) {
        while (q->busy)
            pthread_cond_wait(&q->cv, &q->mu);
        if (!q->head)
            break;
        pfs_qentry *e = pop(q);
        q->busy = 1;
        pthread_mutex_unlock(&q->mu);
        for (int r = 0; r < q->nrep; r++)
            if ((e->mask >> r) & 1u)
                apply(ctx, e, r);
        pthread_mutex_lock(&q->mu);
        q->busy = 0;
        q->applied_drain++;
        account(q, e);
        pfs_qentry_free(e);
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
}

void pfs_syncq_destroy(pfs_syncq *q)
{
    pthread_mutex_lock(&q->mu);
    q->stop = 1;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    if (q->thread_started)
        pthread_join(q->thread, NULL);
    q->thread_started = 0;
    while (q->head)
        pfs_qentry_free(pop(q));
    for (int r = 0; r < q->nrep; r++)
        pfs_ranges_free(&q->dirty[r]);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
}
