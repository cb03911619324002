/* pfsprobe's MPI-free core: quantiles as numpy computes them, offsets (every slot exactly once, the
 * random order a reproducible non-identity permutation), pvfs2 placement per layout, and grid parsing
 * with its one-line errors. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "grid.h"
#include "pattern.h"
#include "place.h"
#include "select.h"
#include "stats.h"

static int near(double a, double b)
{
    double d = a - b;
    return (d < 0 ? -d : d) <= 1e-12 * (1 + (b < 0 ? -b : b));
}

static void test_stats(void)
{
    /* numpy: np.percentile([4, 1, 3, 2, 10], [25, 50, 75]) = [2, 3, 4] */
    double t[] = {4, 1, 3, 2, 10};
    probe_stats st = stats_of(t, 5);
    CHECK(st.min == 1 && st.max == 10, "min %g max %g", st.min, st.max);
    CHECK(near(st.median, 3) && near(st.iqr, 2), "median %g iqr %g", st.median, st.iqr);
    /* np.percentile([0.5, 0.1, 0.2, 0.4], [25, 50, 75]) = [0.175, 0.3, 0.425] */
    double u[] = {0.5, 0.1, 0.2, 0.4};
    st = stats_of(u, 4);
    CHECK(near(st.median, 0.3) && near(st.iqr, 0.425 - 0.175), "median %g iqr %g", st.median, st.iqr);
    double one[] = {0.25};
    st = stats_of(one, 1);
    CHECK(st.median == 0.25 && st.iqr == 0 && st.min == 0.25 && st.max == 0.25, "single repetition");
    CHECK(t[0] == 4 && t[4] == 10, "stats_of must not reorder the caller's times");
}

/* Each slot of the file must be used exactly once across the ranks. */
static int covers_once(int64_t *offs, int64_t n, int64_t s)
{
    char *seen = calloc((size_t)n, 1);
    int ok = seen != NULL;
    for (int64_t i = 0; ok && i < n; i++) {
        if (offs[i] % s || offs[i] / s >= n || seen[offs[i] / s])
            ok = 0;
        else
            seen[offs[i] / s] = 1;
    }
    free(seen);
    return ok;
}

static void test_pattern(void)
{
    enum { R = 64, P = 4 };
    const int64_t s = 4096;
    int64_t a[R], b[R], all[R * P];
    CHECK(pattern_offsets(a, R, s, 0, 0, 0, 1, 1) == 0, "fpp sequential");
    CHECK(a[0] == 0 && a[1] == s && a[R - 1] == (R - 1) * s, "fpp sequential is slots 0..r");

    pattern_offsets(a, R, s, 0, 1, 2, P, 42);
    pattern_offsets(b, R, s, 0, 1, 2, P, 42);
    int same = 1, identity = 1;
    for (int i = 0; i < R; i++) {
        same &= a[i] == b[i];
        identity &= a[i] == i * s;
    }
    CHECK(same, "the same seed gives the same permutation");
    CHECK(!identity, "random offsets are not the sequential order");
    CHECK(covers_once(a, R, s), "fpp random is a permutation of the rank's slots");
    pattern_offsets(b, R, s, 0, 1, 3, P, 42);
    same = 1;
    for (int i = 0; i < R; i++)
        same &= a[i] == b[i];
    CHECK(!same, "ranks get different permutations");
    pattern_offsets(b, R, s, 0, 1, 2, P, 43);
    same = 1;
    for (int i = 0; i < R; i++)
        same &= a[i] == b[i];
    CHECK(!same, "another seed gives another permutation");

    for (int random = 0; random <= 1; random++) {
        for (int r = 0; r < P; r++)
            pattern_offsets(all + r * R, R, s, 1, random, r, P, 7);
        CHECK(covers_once(all, (int64_t)R * P, s), "shared %s: every slot of the file exactly once",
              random ? "random" : "sequential");
    }
    pattern_offsets(a, R, s, 1, 0, 1, P, 7);
    CHECK(a[0] == 1 * s && a[1] == (P + 1) * s, "shared sequential: request k of rank i is slot k*p+i");
}

static void test_place(void)
{
    int sv[16];
    int64_t strip;
    probe_place pl = {LAYOUT_1DV, 0, 0, 4, 5, 8, 65536, 0};
    CHECK(place_servers(&pl, 4, sv, &strip) == 1 && sv[0] == 1 && strip == 65536, "1-DV fpp rank 5 -> server 1");
    pl = (probe_place){LAYOUT_2D, 2, 0, 4, 3, 4, 65536, 0};
    int k = place_servers(&pl, 4, sv, &strip);
    CHECK(k == 2 && sv[0] == 2 && sv[1] == 3 && strip == 32768, "2-D g=2 rank 3 -> group 1 = servers 2,3");
    pl = (probe_place){LAYOUT_2D, 3, 0, 4, 2, 4, 60000, 0};
    k = place_servers(&pl, 4, sv, &strip);
    CHECK(k == 2 && sv[0] == 0 && sv[1] == 1 && strip == 28672,
          "2-D g=3 n=4: ceil(n/g)=2 servers, wrapping; strip floor(30000/4096)*4096");
    pl = (probe_place){LAYOUT_1DH, 0, 0, 4, 2, 4, 4096, 0};
    k = place_servers(&pl, 4, sv, &strip);
    CHECK(k == 4 && sv[0] == 2 && sv[3] == 1 && strip == 4096, "1-DH rank 2 -> all servers from 2, strip >= 4 KiB");
    pl = (probe_place){LAYOUT_1DH, 0, 0, 4, 0, 4, 4 << 20, 1};
    place_servers(&pl, 4, sv, &strip);
    CHECK(strip == 65536, "1-DH strip is at most 64 KiB");
    pl = (probe_place){LAYOUT_2D, 2, 0, 4, 3, 4, 65536, 1};
    k = place_servers(&pl, 4, sv, &strip);
    CHECK(k == 4 && sv[0] == 0 && sv[3] == 3 && strip == 32768, "shared 2-D: all n, strip (g/n)s");
    pl = (probe_place){LAYOUT_2D, 3, 0, 4, 1, 4, 60000, 1};
    k = place_servers(&pl, 4, sv, &strip);
    CHECK(k == 4 && strip == 40960, "shared 2-D g=3 n=4: strip floor(3*60000/4) aligned down to 4 KiB");
    pl = (probe_place){LAYOUT_1DV, 0, 0, 4, 0, 4, 1000, 1};
    k = place_servers(&pl, 4, sv, &strip);
    CHECK(k == 4 && strip == 4096, "shared 1-DV: all n, strip s rounded up to the 4 KiB minimum");
    pl = (probe_place){LAYOUT_1DV, 0, 1 << 20, 4, 0, 4, 65536, 1};
    place_servers(&pl, 4, sv, &strip);
    CHECK(strip == 1 << 20, "a target's strip_size overrides the derived strip");
}

static void test_select(void)
{
    /* 2 nodes x 4 ranks, launched round-robin by node (ranks 0,2,4,6 on node 0) to show that selection
     * follows the real placement, not rank numbers. */
    int node_of[8] = {0, 1, 0, 1, 0, 1, 0, 1}, local_of[8] = {0, 0, 1, 1, 2, 2, 3, 3};
    probe_topology t = {0, 8, 2, 4, node_of, local_of};
    int mem[8];
    CHECK(topology_select(&t, 4, 0, mem) == 2 && mem[0] == 0 && mem[3] == 3, "packed = ranks 0..p, m counted");
    CHECK(topology_select(&t, 3, 1, mem) == 2 && mem[0] == 0 && mem[1] == 1 && mem[2] == 2,
          "spread: local rank 0 of every node first");
    CHECK(topology_select_m(&t, 4, 4, mem) == 4 && mem[0] == 0 && mem[1] == 2 && mem[2] == 4 && mem[3] == 6,
          "m=4: node 0 filled with 4 ranks");
    CHECK(topology_select_m(&t, 6, 3, mem) == 3 && mem[3] == 1 && mem[5] == 5, "m=3: 3 ranks on each node");
    CHECK(topology_select_m(&t, 4, 1, mem) == -1, "p=4 with m=1 needs 4 nodes");
    CHECK(topology_select_m(&t, 4, 2, mem) == 2, "p=4 with m=2 fits on 2 nodes");
    int one_node[4] = {0, 0, 0, 0}, locals[4] = {0, 1, 2, 3};
    probe_topology u = {0, 4, 1, 4, one_node, locals};
    CHECK(topology_select(&u, 4, 1, mem) == 4 && topology_select_m(&u, 2, 1, mem) == -1, "one node: m = p");
}

/* Runs the parser as main() does: JSON, then flags, then validation; returns the error line or "". */
static const char *parse(probe_grid *g, const char *json, int argc, char **argv, int world)
{
    static char msg[PROBE_MSG_LEN];
    msg[0] = 0;
    grid_defaults(g);
    if (grid_parse_args(g, argc, argv, json, msg) == 0)
        grid_validate(g, world, msg);
    return msg;
}

static void test_grid(void)
{
    CHECK(parse_size("64K") == 65536 && parse_size("1M") == 1 << 20 && parse_size("64KiB") == 65536 &&
          parse_size("4096") == 4096, "sizes with suffixes");
    CHECK(parse_size("") < 0 && parse_size("abc") < 0 && parse_size("4Q") < 0 && parse_size("-1") < 0,
          "malformed sizes");

    probe_grid g;
    char *plain[] = {"pfsprobe", "--target", "1-DV=/d", "--target", "2-D:2=/e", "--servers", "4",
                     "--sizes", "4K,64K", "--sharing", "file-per-process,shared", NULL};
    const char *m = parse(&g, NULL, 11, plain, 4);
    CHECK(*m == 0, "valid flags: %s", m);
    /* 2 targets x 2 sharing x procs {1,2,4} x 2 sizes */
    CHECK(g.n_groups == 24 && g.n_procs == 3 && g.procs[2] == 4, "groups %d procs %d", g.n_groups, g.n_procs);
    CHECK(g.targets[1].layout == LAYOUT_2D && g.targets[1].g == 2, "2-D:2 target");
    grid_free(&g);

    char *override[] = {"pfsprobe", "--repetitions", "9", NULL};
    m = parse(&g, "{\"targets\": [{\"layout\": \"1-DH\", \"path\": \"/x\"}], \"repetitions\": 2, \"procs\": [2]}",
              3, override, 2);
    CHECK(*m == 0 && g.repetitions == 9 && g.n_groups == 1 && g.groups[0].p == 2, "flags override the file: %s", m);
    grid_free(&g);

    const char *designed =
        "{\"format\": \"pfsprobe-grid/1\", \"platform\": {\"servers\": 4, \"nodes\": 1, \"ranks_per_node\": 4},"
        " \"design\": {}, \"cells\": ["
        "{\"layout\": \"1-DV\", \"g\": null, \"op\": \"write\", \"pattern\": \"sequential\", \"p\": 2, \"m\": 2,"
        " \"request_size\": 4096, \"requests_per_rank\": 3, \"repetitions\": 2, \"placement\": \"packed\"},"
        "{\"layout\": \"1-DV\", \"g\": null, \"op\": \"read\", \"pattern\": \"random\", \"p\": 2, \"m\": 2,"
        " \"request_size\": 4096, \"requests_per_rank\": 3, \"repetitions\": 2},"
        "{\"layout\": \"1-DV\", \"g\": null, \"op\": \"read\", \"pattern\": \"random\", \"p\": 2, \"m\": 1,"
        " \"request_size\": 4096, \"requests_per_rank\": 3, \"repetitions\": 2}]}";
    char *tgt[] = {"pfsprobe", "--target", "1-DV=/d", NULL};
    m = parse(&g, designed, 3, tgt, 4);
    CHECK(*m == 0, "designed cells: %s", m);
    CHECK(g.servers == 4 && g.n_groups == 2, "servers %d groups %d", g.servers, g.n_groups);
    CHECK(g.n_groups == 2 && g.groups[0].ops == (OP_WRITE | OP_READ) &&
              g.groups[0].patterns == (PATTERN_SEQUENTIAL | PATTERN_RANDOM) && g.groups[1].m == 1,
          "cells differing only in op/pattern share a group");
    grid_free(&g);

    static const struct {
        const char *json;
        const char *flags[6];
        const char *expect;
    } bad[] = {
        {NULL, {"--target", "1-DV=/d", "--servers", "0"}, "--servers: \"0\" is not a positive integer"},
        {NULL, {"--target", "2-D=/d"}, "targets[0].g: 2-D needs a group count"},
        {NULL, {"--target", "1-DV:2=/d"}, "targets[0].g: only 2-D has a group count"},
        {NULL, {"--target", "1-DV=/d", "--target", "1-DV=/e"}, "targets[1]: a second target for layout 1-DV"},
        {NULL, {"--target", "1-DV=/d", "--procs", "8"}, "procs: 8 exceeds the 4 ranks launched"},
        {NULL, {"--target", "1-DV=/d", "--ops", "read,read"}, "--ops: \"read\" is listed twice"},
        {"[1, 2]", {NULL}, "grid: must be a JSON object"},
        {"{\"targets\": [{\"layout\": \"1-DV\", \"path\": \"/d\", \"colour\": 1}]}", {NULL},
         "grid.targets[0].colour: unknown field"},
        {"{\"targets\": [{\"layout\": \"1-DV\", \"path\": \"/d\"}], \"fsync\": 1}", {NULL},
         "grid.fsync: must be true or false"},
        {"{\"targets\": [{\"layout\": \"1-DV\", \"path\": \"/d\"}], \"format\": \"x/9\"}", {NULL},
         "grid.format: must be \"pfsprobe-grid/1\""},
        {"{\"targets\": [{\"layout\": \"1-DV\", \"path\": \"/d\"}], \"cells\": [{\"layout\": \"1-DV\", \"op\": "
         "\"read\", \"pattern\": \"random\", \"p\": 1, \"m\": 2, \"request_size\": 1, \"requests_per_rank\": 1, "
         "\"repetitions\": 1}]}", {NULL}, "grid.cells[0].m: 2 is more than p=1"},
        {"{\"targets\": [{\"layout\": \"1-DV\", \"path\": \"/d\"}], \"cells\": [{\"layout\": \"1-DV\", \"op\": "
         "\"read\", \"pattern\": \"random\", \"p\": 1, \"m\": 1, \"request_size\": 1, \"repetitions\": 1}]}",
         {NULL}, "grid.cells[0].requests_per_rank: missing"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *argv[8] = {"pfsprobe"};
        int argc = 1;
        for (int j = 0; j < 6 && bad[i].flags[j]; j++)
            argv[argc++] = (char *)bad[i].flags[j];
        m = parse(&g, bad[i].json, argc, argv, 4);
        CHECK(strstr(m, bad[i].expect) != NULL, "case %zu: got \"%s\", want \"%s\"", i, m, bad[i].expect);
        CHECK(strchr(m, '\n') == NULL, "case %zu: one line", i);
        grid_free(&g);
    }
}

int main(void)
{
    test_stats();
    test_pattern();
    test_place();
    test_select();
    test_grid();
    return check_done("test_probe_core");
}
