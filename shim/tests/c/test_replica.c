/* Replica bookkeeping: dirty byte ranges, the lazy-sync queue (FIFO order, background thread, drain,
 * dirty sets cleared once nothing is owed) and the routing decision (cost argmin, ties, clean mask). */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "pfsshim.h"

static void test_ranges(void)
{
    pfs_ranges r;
    pfs_ranges_init(&r);
    CHECK(!pfs_ranges_overlaps(&r, 0, 100), "empty set overlaps");
    pfs_ranges_add(&r, 100, 200);
    pfs_ranges_add(&r, 300, 400);
    CHECK(r.n == 2, "two ranges, got %zu", r.n);
    CHECK(pfs_ranges_overlaps(&r, 150, 160), "inside");
    CHECK(pfs_ranges_overlaps(&r, 0, 101), "straddles start");
    CHECK(!pfs_ranges_overlaps(&r, 0, 100), "half-open: [0,100) does not touch [100,200)");
    CHECK(!pfs_ranges_overlaps(&r, 200, 300), "gap between ranges");
    CHECK(pfs_ranges_overlaps(&r, 199, 301), "spans the gap");
    CHECK(!pfs_ranges_overlaps(&r, 150, 150), "empty query");
    pfs_ranges_add(&r, 200, 300); /* touching both: coalesces everything */
    CHECK(r.n == 1 && r.lo[0] == 100 && r.hi[0] == 400, "coalesce touching, got n=%zu", r.n);
    pfs_ranges_add(&r, 0, 50);
    pfs_ranges_add(&r, 1000, 1100);
    pfs_ranges_add(&r, 500, 600);
    CHECK(r.n == 4 && r.lo[0] == 0 && r.lo[2] == 500 && r.lo[3] == 1000, "sorted insert");
    pfs_ranges_add(&r, 40, 1050); /* swallows the middle ones */
    CHECK(r.n == 1 && r.lo[0] == 0 && r.hi[0] == 1100, "merge many, got n=%zu", r.n);
    CHECK(pfs_ranges_bytes(&r) == 1100, "bytes");
    pfs_ranges_add(&r, 5, 5);
    CHECK(r.n == 1, "empty add ignored");
    /* many disjoint ranges (growth past the first allocation), in reverse order */
    pfs_ranges_clear(&r);
    for (int i = 999; i >= 0; i--)
        pfs_ranges_add(&r, (uint64_t)i * 10, (uint64_t)i * 10 + 5);
    CHECK(r.n == 1000, "1000 disjoint ranges, got %zu", r.n);
    int sorted = 1;
    for (size_t i = 1; i < r.n; i++)
        sorted &= r.lo[i] > r.hi[i - 1];
    CHECK(sorted, "ranges stay sorted and disjoint");
    CHECK(pfs_ranges_overlaps(&r, 5004, 5006) && !pfs_ranges_overlaps(&r, 5005, 5010), "binary search");
    pfs_ranges_free(&r);
}

/* a fake replica store: the queue applies entries into per-replica byte arrays */
#define FSZ (PFS_COALESCE_MAX + 4096)
typedef struct {
    unsigned char file[3][FSZ];
    int order[64], norder;
    pthread_mutex_t mu;
    int slow;
} store;

static void apply(void *ctx, pfs_qentry *e, int r)
{
    store *s = ctx;
    if (s->slow)
        usleep(2000);
    pthread_mutex_lock(&s->mu);
    memcpy(s->file[r] + e->byte_lo, e->data, e->len);
    if (r == 1 && s->norder < 64)
        s->order[s->norder++] = (int)e->etype_off;
    pthread_mutex_unlock(&s->mu);
}

static pfs_qentry *entry(uint64_t off, size_t len, unsigned char fill, unsigned mask, int seq, pfs_qkind kind)
{
    pfs_qentry *e = calloc(1, sizeof *e);
    e->kind = kind;
    e->mask = mask;
    e->byte_lo = off;
    e->byte_hi = off + len;
    e->len = len;
    e->data = malloc(len);
    memset(e->data, fill, len);
    e->etype_off = seq;
    return e;
}

static void test_queue(int with_thread)
{
    store *s = calloc(1, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->slow = with_thread;
    pfs_syncq q;
    CHECK(pfs_syncq_init(&q, 3, apply, s, with_thread) == 0, "init");
    /* replica 0 got the writes directly; 1 and 2 are owed them. Overlapping writes: order matters. */
    pfs_syncq_push(&q, entry(0, 100, 'a', 6, 0, PFS_Q_POSIX));
    pfs_syncq_push(&q, entry(50, 100, 'b', 6, 1, PFS_Q_POSIX));
    pfs_syncq_push(&q, entry(1000, 10, 'c', 2, 2, PFS_Q_MPI)); /* only replica 1 owed; MPI kind */
    pfs_syncq_push(&q, entry(60, 10, 'd', 6, 3, PFS_Q_POSIX));
    CHECK(q.pending[1] == 4 && q.pending[2] == 3 && q.pending[0] == 0, "pending counts");
    if (!with_thread) {
        CHECK(pfs_syncq_dirty(&q, 1, 0, 1) && pfs_syncq_dirty(&q, 1, 1005, 1006), "replica 1 dirty");
        CHECK(!pfs_syncq_dirty(&q, 2, 1000, 1010), "replica 2 not owed the MPI entry");
        CHECK(!pfs_syncq_dirty(&q, 0, 0, FSZ), "replica 0 clean");
        CHECK(!pfs_syncq_dirty(&q, 1, 150, 1000), "gap is clean");
        CHECK(q.bytes == 220, "queued bytes %zu", q.bytes);
    } else {
        /* the thread applies POSIX entries but must stop at the MPI entry (only a sync point may) */
        for (int i = 0; i < 200 && q.applied_thread < 2; i++)
            usleep(5000);
        usleep(20000);
        CHECK(q.applied_thread == 2, "thread applied the 2 POSIX entries ahead of the MPI one, got %lu",
              q.applied_thread);
        CHECK(q.head && q.head->kind == PFS_Q_MPI, "thread stopped at the MPI entry");
        CHECK(pfs_syncq_dirty(&q, 1, 0, 1), "replica 1 still owed entries -> still dirty");
    }
    pfs_syncq_drain(&q, apply, s);
    CHECK(q.head == NULL && q.bytes == 0, "drained");
    for (int r = 1; r < 3; r++) {
        CHECK(!pfs_syncq_dirty(&q, r, 0, FSZ), "replica %d clean after drain", r);
        CHECK(q.pending[r] == 0, "replica %d nothing pending", r);
    }
    CHECK(s->file[1][0] == 'a' && s->file[1][55] == 'b' && s->file[1][65] == 'd' && s->file[1][149] == 'b',
          "FIFO order preserved for overlapping writes");
    CHECK(s->file[2][65] == 'd' && s->file[2][1005] == 0 && s->file[1][1005] == 'c', "mask respected");
    CHECK(s->norder == 4 && s->order[0] == 0 && s->order[1] == 1 && s->order[2] == 2 && s->order[3] == 3,
          "applied strictly in order");
    /* after a drain the queue is reusable */
    pfs_syncq_push(&q, entry(0, 10, 'z', 4, 9, PFS_Q_POSIX));
    pfs_syncq_drain(&q, apply, s);
    CHECK(s->file[2][0] == 'z' && s->file[1][0] == 'a', "second round");
    pfs_syncq_push(&q, entry(0, 10, 'y', 4, 10, PFS_Q_POSIX));
    pfs_syncq_destroy(&q); /* leftovers freed, not applied (a dying rank leaves stale markers instead) */
    if (!with_thread)
        CHECK(s->file[2][0] == 'z', "destroy does not apply");
    free(s);
}

static void test_coalesce(void)
{
    store *s = calloc(1, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    pfs_syncq q;
    CHECK(pfs_syncq_init(&q, 3, apply, s, 0) == 0, "init");
    /* sequential 100-byte writes owed to replicas 1 and 2 become one entry */
    for (int i = 0; i < 5; i++)
        pfs_syncq_push(&q, entry((uint64_t)i * 100, 100, (unsigned char)('a' + i), 6, i, PFS_Q_POSIX));
    CHECK(q.head == q.tail && q.head->len == 500 && q.head->byte_lo == 0 && q.head->byte_hi == 500,
          "5 sequential writes coalesced into one entry");
    CHECK(q.coalesced == 4 && q.pending[1] == 1 && q.bytes == 500, "counters after coalescing");
    CHECK(pfs_syncq_dirty(&q, 2, 450, 460) && !pfs_syncq_dirty(&q, 2, 500, 600), "dirty covers the merged range");
    pfs_syncq_push(&q, entry(500, 10, 'x', 2, 9, PFS_Q_POSIX));   /* other replicas: new entry */
    pfs_syncq_push(&q, entry(700, 10, 'y', 2, 10, PFS_Q_POSIX));  /* gap: new entry */
    pfs_syncq_push(&q, entry(710, 10, 'z', 2, 11, PFS_Q_MPI));    /* MPI kind: new entry */
    CHECK(q.coalesced == 4 && q.pending[1] == 4 && q.pending[2] == 1, "no coalescing across mask, gap or kind");
    /* growth past the first allocation, then the size cap starts a new entry */
    pfs_syncq_push(&q, entry(720, 10, 'w', 2, 12, PFS_Q_POSIX));
    pfs_syncq_push(&q, entry(730, PFS_COALESCE_MAX - 20, 'v', 2, 13, PFS_Q_POSIX));
    CHECK(q.tail->len == PFS_COALESCE_MAX - 10 && q.coalesced == 5, "grown to just under the cap");
    pfs_syncq_push(&q, entry(720 + PFS_COALESCE_MAX - 10, 20, 'u', 2, 14, PFS_Q_POSIX));
    CHECK(q.coalesced == 5 && q.tail->len == 20, "the cap starts a new entry");
    pfs_syncq_drain(&q, apply, s);
    CHECK(memcmp(s->file[2], "aaaa", 4) == 0 && s->file[2][150] == 'b' && s->file[2][499] == 'e' &&
              s->file[2][500] == 0, "merged data applied at the right offsets");
    CHECK(s->file[1][505] == 'x' && s->file[1][705] == 'y' && s->file[1][725] == 'w' && s->file[1][2000] == 'v',
          "the rest applied");
    pfs_syncq_destroy(&q);
    free(s);
}

static void test_route(void)
{
    pfs_router r = {.variant = PFS_V_CORRECTED,
                    .params = {0.0003, 1.0 / (120 << 20), 0.0001, 0.0003, 1.0 / (120 << 20), PFS_PARAM_UNSET,
                               PFS_PARAM_UNSET},
                    .p = 8, .n = 16, .m = 1, .nrep = 3,
                    .layout = {PFS_L_1DH, PFS_L_1DV, PFS_L_2D}, .g = {0, 0, 8}};
    double c[PFS_MAX_REPLICAS];
    /* docs/seeds.md §2.9 row 1 (p=8, n=16, g=8, m=1, 256 KiB random): 2-D 4.025 < 1-DV 4.7667 < 1-DH ms */
    int best = pfs_route(&r, 0, 12345, 256 << 10, 1, 7, c);
    CHECK(best == 2, "2-D expected, got %d (costs %g %g %g)", best, c[0], c[1], c[2]);
    pfs_cost want;
    pfs_cost_eval(PFS_V_CORRECTED, PFS_L_1DV, &r.params, 8, 16, 1, 0, 256 << 10, 1, &want);
    CHECK(c[1] == want.total, "costs[] holds each replica's model cost");
    CHECK(pfs_route(&r, 0, 0, 256 << 10, 1, 3, c) == 1, "2-D dirty -> next cheapest clean (1-DV)");
    CHECK(pfs_route(&r, 0, 0, 256 << 10, 1, 1, c) == 0, "only 1-DH clean");
    CHECK(pfs_route(&r, 0, 0, 256 << 10, 1, 0, c) == -1, "nothing allowed");
    /* ties keep the lowest index */
    pfs_router t = r;
    t.layout[0] = t.layout[1] = t.layout[2] = PFS_L_1DV;
    CHECK(pfs_route(&t, 0, 0, 4096, 0, 7, c) == 0, "tie -> index 0");
    CHECK(pfs_route(&t, 0, 0, 4096, 0, 6, c) == 1, "tie among allowed -> lowest allowed");
    /* by-strip classification (docs/seeds.md §3.2): 16 servers, 16 KiB / 256 KiB / 4 MiB strips */
    pfs_router a = r;
    a.layout[0] = a.layout[1] = a.layout[2] = PFS_L_AUTO;
    a.strip[0] = 16 << 10;
    a.strip[1] = 256 << 10;
    a.strip[2] = 4 << 20;
    a.dfiles[0] = a.dfiles[1] = a.dfiles[2] = 16;
    pfs_route(&a, 0, 0, 1 << 20, 0, 7, c);
    pfs_cost dh, twod, dv;
    pfs_cost_eval(PFS_V_CORRECTED, PFS_L_1DH, &a.params, 8, 16, 1, 0, 1 << 20, 0, &dh);   /* 64 strips >= 16 */
    pfs_cost_eval(PFS_V_CORRECTED, PFS_L_2D, &a.params, 8, 16, 1, 4, 1 << 20, 0, &twod);  /* 4 servers: g=4 */
    pfs_cost_eval(PFS_V_CORRECTED, PFS_L_1DV, &a.params, 8, 16, 1, 0, 1 << 20, 0, &dv);   /* inside one strip */
    CHECK(c[0] == dh.total && c[1] == twod.total && c[2] == dv.total, "auto classification %g %g %g vs %g %g %g",
          c[0], c[1], c[2], dh.total, twod.total, dv.total);
    pfs_route(&a, 0, (4 << 20) - 10, 20, 0, 7, c); /* straddles a 4 MiB boundary: 2 servers -> 2-D g=8 */
    pfs_cost_eval(PFS_V_CORRECTED, PFS_L_2D, &a.params, 8, 16, 1, 8, 20, 0, &twod);
    CHECK(c[2] == twod.total, "straddling request classified as 2-D");
    /* the printed variant is selectable and differs where the seeds' table does (docs/seeds.md §2.9 row 4) */
    pfs_router p1 = {.variant = PFS_V_PRINTED, .params = r.params, .p = 1, .n = 16, .m = 1, .nrep = 2,
                     .layout = {PFS_L_1DV, PFS_L_1DH}};
    CHECK(pfs_route(&p1, 0, 0, 4096, 1, 3, c) == 1, "printed: 1-DH wins at p=1, 4 KiB");
    p1.variant = PFS_V_CORRECTED;
    CHECK(pfs_route(&p1, 0, 0, 4096, 1, 3, c) == 0, "corrected: 1-DV wins at p=1, 4 KiB");
}

int main(void)
{
    test_ranges();
    test_queue(0);
    test_queue(1);
    test_coalesce();
    test_route();
    return check_done("test_replica");
}
