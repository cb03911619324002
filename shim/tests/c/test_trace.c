/* The trace writer against docs/trace-format.md: header fields at their documented offsets, 40-byte
 * records, the file table, and the dropped-records flag when the buffer limit is hit. */
#include <stdlib.h>

#include "check.h"
#include "pfsshim.h"

static uint16_t u16(const unsigned char *b) { return (uint16_t)(b[0] | b[1] << 8); }
static uint32_t u32(const unsigned char *b) { return (uint32_t)u16(b) | (uint32_t)u16(b + 2) << 16; }
static uint64_t u64(const unsigned char *b) { return (uint64_t)u32(b) | (uint64_t)u32(b + 4) << 32; }
static double f64(const unsigned char *b)
{
    uint64_t v = u64(b);
    double d;
    memcpy(&d, &v, 8);
    return d;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *buf = malloc(1 << 20);
    *len = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/tmp/pfsshim-trace-test";
    pfs_trace t;
    CHECK(pfs_trace_init(&t, 3) == 0, "init");
    t.rank = 5;
    t.comm_size = 8;
    t.node_id = 4;
    t.ranks_on_node = 4;
    t.epoch = 1700000000.25;
    uint32_t a = pfs_trace_file_id(&t, "/data/a.dat"), b = pfs_trace_file_id(&t, "/data/b\xc3\xa9.dat");
    CHECK(a == 0 && b == 1 && pfs_trace_file_id(&t, "/data/a.dat") == 0, "file ids are stable per path");
    pfs_trace_rec r1 = {.start = 0.5, .end = 0.75, .offset = 4096, .size = 65536, .file_id = b, .op = 2,
                        .flags = PFS_TR_COLLECTIVE | PFS_TR_ROUTED, .replica = 2};
    pfs_trace_rec r2 = {.start = 1.0, .end = 1.0, .offset = 1ull << 40, .size = 1, .file_id = a, .op = 1,
                        .flags = PFS_TR_NONBLOCKING | PFS_TR_EXPLICIT, .replica = PFS_TR_NO_REPLICA};
    pfs_trace_add(&t, &r1);
    pfs_trace_add(&t, &r2);
    pfs_trace_add(&t, &r2);
    pfs_trace_add(&t, &r2); /* over the limit of 3 */
    pfs_trace_add(&t, &r2);
    CHECK(pfs_trace_write(&t, dir, "job-1") == 0, "write");
    char path[512];
    snprintf(path, sizeof path, "%s/job-1.rank-000005.pfstrace", dir);
    size_t len = 0;
    unsigned char *d = slurp(path, &len);
    CHECK(d != NULL, "cannot read %s", path);
    if (!d)
        return check_done("test_trace");
    CHECK(memcmp(d, "PFSTRACE", 8) == 0, "magic");
    CHECK(u16(d + 8) == 1 && u16(d + 10) == 64 && u16(d + 12) == 40, "version/header_size/record_size");
    CHECK(u16(d + 14) == 1, "flags bit 0: records dropped");
    CHECK(u32(d + 16) == 5 && u32(d + 20) == 8 && u32(d + 24) == 4 && u32(d + 28) == 4, "rank/size/node");
    CHECK(u64(d + 32) == 3, "record_count %llu", (unsigned long long)u64(d + 32));
    CHECK(u64(d + 40) == 64 + 3 * 40, "file_table_offset");
    CHECK(f64(d + 48) == 1700000000.25, "epoch");
    CHECK(u32(d + 56) == 2 && u32(d + 60) == 2, "file_count / dropped");
    const unsigned char *rec = d + 64;
    CHECK(f64(rec) == 0.5 && f64(rec + 8) == 0.75 && u64(rec + 16) == 4096 && u64(rec + 24) == 65536, "rec0 times");
    CHECK(u32(rec + 32) == 1 && rec[36] == 2 && rec[37] == 9 && u16(rec + 38) == 2, "rec0 id/op/flags/replica");
    rec += 40;
    CHECK(u64(rec + 16) == 1ull << 40 && rec[36] == 1 && rec[37] == 6 && u16(rec + 38) == 0xFFFF, "rec1");
    const unsigned char *ft = d + 64 + 3 * 40;
    CHECK(u32(ft) == 0 && u32(ft + 4) == 11 && memcmp(ft + 8, "/data/a.dat", 11) == 0, "table entry 0");
    ft += 8 + 11;
    CHECK(u32(ft) == 1 && u32(ft + 4) == 13 && memcmp(ft + 8, "/data/b\xc3\xa9.dat", 13) == 0, "table entry 1 (UTF-8)");
    CHECK(len == (size_t)(ft + 8 + 13 - d), "no trailing bytes: %zu", len);
    free(d);
    pfs_trace_free(&t);

    /* an empty trace is still a valid file */
    CHECK(pfs_trace_init(&t, 10) == 0, "init 2");
    CHECK(pfs_trace_write(&t, dir, "empty") == 0, "write empty");
    snprintf(path, sizeof path, "%s/empty.rank-000000.pfstrace", dir);
    d = slurp(path, &len);
    CHECK(d && len == 64 && u64(d + 32) == 0 && u16(d + 14) == 0, "empty trace is a bare header");
    free(d);
    pfs_trace_free(&t);
    return check_done("test_trace");
}
