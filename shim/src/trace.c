/* Per-rank binary trace, exactly docs/trace-format.md (v1): 64-byte header, 40-byte records, file table.
 * Records are appended lock-free into a preallocated buffer; the file is written in one go at the last
 * close / MPI_Finalize, so tracing costs no I/O during the run. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pfsshim.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the trace writer stores host-order records; docs/trace-format.md is little-endian"
#endif
_Static_assert(sizeof(pfs_trace_rec) == 40, "trace record must be 40 bytes (docs/trace-format.md)");

double pfs_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int pfs_trace_init(pfs_trace *t, uint64_t max_records)
{
    memset(t, 0, sizeof *t);
    /* Reserved up front so appends are lock-free; Linux backs untouched pages lazily, so an idle
     * trace costs address space, not memory. Halve the budget until the reservation succeeds. */
    while (max_records && !(t->recs = malloc(max_records * sizeof *t->recs)))
        max_records /= 2;
    t->cap = max_records;
    if (pthread_mutex_init(&t->mu, NULL) != 0)
        return -1;
    return 0;
}

void pfs_trace_free(pfs_trace *t)
{
    free(t->recs);
    for (uint32_t i = 0; i < t->npaths; i++)
        free(t->paths[i]);
    free(t->paths);
    pthread_mutex_destroy(&t->mu);
    memset(t, 0, sizeof *t);
}

uint32_t pfs_trace_file_id(pfs_trace *t, const char *path)
{
    pthread_mutex_lock(&t->mu);
    uint32_t id;
    for (id = 0; id < t->npaths; id++)
        if (strcmp(t->paths[id], path) == 0)
            goto out;
    if (t->npaths == t->path_cap) {
        uint32_t cap = t->path_cap ? t->path_cap * 2 : 16;
        char **np = realloc(t->paths, cap * sizeof *np);
        if (!np) {
            id = 0xFFFFFFFFu;
            goto out;
        }
        t->paths = np;
        t->path_cap = cap;
    }
    t->paths[id] = strdup(path);
    if (!t->paths[id]) {
        id = 0xFFFFFFFFu;
        goto out;
    }
    t->npaths++;
out:
    pthread_mutex_unlock(&t->mu);
    return id;
}

void pfs_trace_add(pfs_trace *t, const pfs_trace_rec *r)
{
    if (r->file_id == 0xFFFFFFFFu)
        return;
    uint64_t i = __atomic_fetch_add(&t->n, 1, __ATOMIC_RELAXED);
    if (i >= t->cap) {
        __atomic_fetch_add(&t->dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    t->recs[i] = *r;
}

static void put16(unsigned char *b, uint16_t v) { memcpy(b, &v, 2); }
static void put32(unsigned char *b, uint32_t v) { memcpy(b, &v, 4); }
static void put64(unsigned char *b, uint64_t v) { memcpy(b, &v, 8); }

/* The whole file (docs/trace-format.md) in one malloc'd buffer: the writer below and the MPI-IO writer
 * of init.c (traces written straight onto a parallel file system through ROMIO) share it. */
unsigned char *pfs_trace_image(const pfs_trace *t, size_t *len)
{
    uint64_t count = t->n < t->cap ? t->n : t->cap;
    uint64_t table_off = 64 + count * 40;
    size_t size = (size_t)table_off;
    for (uint32_t i = 0; i < t->npaths; i++)
        size += 8 + strlen(t->paths[i]);
    unsigned char *h = malloc(size);
    if (!h)
        return NULL;
    memset(h, 0, 64);
    memcpy(h, "PFSTRACE", 8);
    put16(h + 8, 1);
    put16(h + 10, 64);
    put16(h + 12, 40);
    put16(h + 14, t->dropped ? 1 : 0);
    put32(h + 16, t->rank);
    put32(h + 20, t->comm_size);
    put32(h + 24, t->node_id);
    put32(h + 28, t->ranks_on_node);
    put64(h + 32, count);
    put64(h + 40, table_off);
    memcpy(h + 48, &t->epoch, 8);
    put32(h + 56, t->npaths);
    put32(h + 60, t->dropped > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)t->dropped);
    if (count)
        memcpy(h + 64, t->recs, (size_t)count * 40);
    unsigned char *e = h + table_off;
    for (uint32_t i = 0; i < t->npaths; i++) {
        uint32_t plen = (uint32_t)strlen(t->paths[i]);
        put32(e, i);
        put32(e + 4, plen);
        memcpy(e + 8, t->paths[i], plen);
        e += 8 + plen;
    }
    *len = size;
    return h;
}

void pfs_trace_file_name(char *out, size_t cap, const char *dir, const char *job, uint32_t rank)
{
    snprintf(out, cap, "%s/%s.rank-%06u.pfstrace", dir, job ? job : "run", rank);
}

int pfs_trace_write(const pfs_trace *t, const char *dir, const char *job)
{
    char path[4096], tmp[4200];
    pfs_trace_file_name(path, sizeof path, dir, job, t->rank);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return -1;
    size_t len = 0;
    unsigned char *img = pfs_trace_image(t, &len);
    if (!img)
        return -1;
    FILE *f = fopen(tmp, "wb");
    int ok = f && fwrite(img, 1, len, f) == len;
    free(img);
    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok || rename(tmp, path) != 0) {
        int saved = errno;
        unlink(tmp);
        errno = saved;
        return -1;
    }
    return 0;
}
