/* The shim config parser (docs/shim-config.md): a full valid config, defaults, rule matching, and every
 * kind of malformed input, each of which must give one line naming the field. */
#include <stdlib.h>

#include "check.h"
#include "pfsshim.h"

static const char *VALID =
    "{\"format\": \"pfsshim-config/1\","
    " \"params\": {\"e\": 0.0003, \"v\": 7.9e-9, \"alpha_seq\": 0.0001, \"alpha_rand\": 0.0003, \"beta\": 7.9e-9},"
    " \"variant\": \"printed\", \"servers\": 4, \"ranks_per_node\": 2,"
    " \"rules\": ["
    "  {\"path\": \"/data/ior/\", \"hints\": {\"striping_unit\": 65536, \"striping_factor\": 4, \"romio_cb_write\": \"enable\"}},"
    "  {\"path\": \"/data\", \"hints\": {\"cb_nodes\": 2}},"
    "  {\"path\": \"ufs:/data/tile\", \"hints\": {\"cb_buffer_size\": 1048576}, \"replicas\": ["
    "    {\"dir\": \"/data/r/1dh\", \"layout\": \"1-DH\", \"strip_size\": 16384, \"datafiles\": 4},"
    "    {\"dir\": \"/data/r/2d\", \"layout\": \"2-D\", \"g\": 2, \"strip_size\": 262144, \"hints\": {\"striping_unit\": 1}},"
    "    {\"dir\": \"/data/r/auto\", \"layout\": \"auto\", \"strip_size\": 4194304}]}],"
    " \"trace\": {\"enabled\": true, \"dir\": \"/tmp/t\", \"max_records\": 1000, \"job_id\": \"job-7\"},"
    " \"stats\": {\"dir\": \"/tmp/s\"}, \"lazy_sync\": {\"queue_limit_bytes\": 1024, \"background\": false, \"posix\": false}}";

static const char *hint(const pfs_hint *h, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (strcmp(h[i].key, key) == 0)
            return h[i].value;
    return NULL;
}

static void test_valid(void)
{
    pfs_config c;
    char err[512] = "";
    CHECK(pfs_config_parse_text(VALID, &c, err, sizeof err) == 0, "valid config rejected: %s", err);
    CHECK(c.params.e == 0.0003 && c.params.beta == 7.9e-9 && c.params.alpha_rand == 0.0003, "params");
    CHECK(c.params.e_write < 0 && c.params.beta_write < 0, "e_write/beta_write default to unset");
    CHECK(c.variant == PFS_V_PRINTED && c.servers == 4 && c.ranks_per_node == 2, "scalars");
    CHECK(c.nrules == 3, "nrules %d", c.nrules);
    CHECK(strcmp(c.rules[0].prefix, "/data/ior") == 0, "trailing slash kept: %s", c.rules[0].prefix);
    CHECK(c.rules[0].nhints == 3 && strcmp(hint(c.rules[0].hints, 3, "striping_unit"), "65536") == 0, "int hint");
    CHECK(strcmp(hint(c.rules[0].hints, 3, "romio_cb_write"), "enable") == 0, "string hint");
    const pfs_rule *t = &c.rules[2];
    CHECK(t->nreplicas == 3, "replicas %d", t->nreplicas);
    CHECK(t->replicas[0].layout == PFS_L_1DH && t->replicas[0].strip_size == 16384 && t->replicas[0].datafiles == 4, "rep0");
    CHECK(strcmp(hint(t->replicas[0].hints, t->replicas[0].nhints, "striping_unit"), "16384") == 0,
          "layout becomes striping_unit");
    CHECK(strcmp(hint(t->replicas[0].hints, t->replicas[0].nhints, "striping_factor"), "4") == 0,
          "datafiles becomes striping_factor");
    CHECK(strcmp(hint(t->replicas[1].hints, t->replicas[1].nhints, "striping_unit"), "1") == 0,
          "an explicit replica hint wins over the derived one");
    CHECK(t->replicas[1].layout == PFS_L_2D && t->replicas[1].g == 2, "rep1");
    CHECK(t->replicas[2].layout == PFS_L_AUTO, "rep2");
    CHECK(c.trace_enabled && strcmp(c.trace_dir, "/tmp/t") == 0 && c.trace_max_records == 1000 &&
              strcmp(c.job_id, "job-7") == 0, "trace");
    CHECK(strcmp(c.stats_dir, "/tmp/s") == 0 && c.queue_limit_bytes == 1024 && !c.lazy_background && !c.lazy_posix, "stats/lazy_sync");

    const char *tail = NULL;
    const pfs_rule *r = pfs_config_match(&c, "/data/ior/x/out.dat", &tail);
    CHECK(r == &c.rules[0] && strcmp(tail, "/x/out.dat") == 0, "longest prefix wins over /data");
    r = pfs_config_match(&c, "/data/iorx", &tail);
    CHECK(r == &c.rules[1] && strcmp(tail, "/iorx") == 0, "component-wise match: /data/iorx is under /data only");
    r = pfs_config_match(&c, "/data/tile/a", &tail);
    CHECK(r == &c.rules[2] && strcmp(tail, "/a") == 0, "ROMIO prefix in the rule is ignored for matching");
    r = pfs_config_match(&c, "ufs:/data/tile", &tail);
    CHECK(r == &c.rules[2] && strcmp(tail, "") == 0, "ROMIO prefix in the path is ignored for matching");
    CHECK(pfs_config_match(&c, "/other/file", &tail) == NULL, "no rule -> NULL (pass-through)");
    CHECK(pfs_config_match(&c, "/dat", &tail) == NULL, "a shorter path does not match");
    pfs_config_free(&c);
}

static void test_defaults(void)
{
    pfs_config c;
    char err[512] = "";
    CHECK(pfs_config_parse_text("{\"format\": \"pfsshim-config/1\"}", &c, err, sizeof err) == 0, "minimal: %s", err);
    CHECK(c.nrules == 0 && !c.trace_enabled && c.variant == PFS_V_CORRECTED, "minimal defaults");
    CHECK(c.trace_max_records == (1u << 20) && c.queue_limit_bytes == (64L << 20) && c.lazy_background && c.lazy_posix, "limits default");
    pfs_config_free(&c);
    CHECK(pfs_config_parse_text("{\"format\": \"pfsshim-config/1\", \"rules\": [{\"path\": \"/\", \"hints\": {\"a\": \"b\"}}],"
                                " \"trace\": {\"enabled\": false}}", &c, err, sizeof err) == 0, "root rule: %s", err);
    const char *tail = NULL;
    CHECK(pfs_config_match(&c, "/x/y", &tail) == &c.rules[0] && strcmp(tail, "/x/y") == 0, "root rule matches all");
    pfs_config_free(&c);
    CHECK(pfs_posix_path("/a/b") != NULL && strcmp(pfs_posix_path("ufs:/a/b"), "/a/b") == 0, "ufs: is POSIX");
    CHECK(pfs_posix_path("pvfs2:/a/b") == NULL, "pvfs2: is not POSIX");
}

struct bad { const char *json; const char *field; };

#define HDR "{\"format\": \"pfsshim-config/1\", "
#define PRM "\"params\": {\"e\": 1, \"v\": 1, \"alpha_seq\": 1, \"alpha_rand\": 1, \"beta\": 1}, \"servers\": 4, "
static const struct bad BAD[] = {
    {HDR "\"servers\": 4, \"rules\": [{\"path\": \"/d\", \"spread\": {\"datafiles\": 5}}]}", "rules[0].spread.datafiles"},
    {HDR "\"servers\": 4, \"rules\": [{\"path\": \"/d\", \"spread\": {}}]}", "rules[0].spread.datafiles"},
    {HDR "\"servers\": 4, \"rules\": [{\"path\": \"/d\", \"spread\": {\"datafiles\": 1, \"start\": 2}}]}",
     "rules[0].spread.start"},
    {HDR "\"servers\": 4, \"rules\": [{\"path\": \"/d\", \"spread\": 1}]}", "rules[0].spread"},
    {HDR "\"rules\": [{\"path\": \"/d\", \"spread\": {\"datafiles\": 1}}]}", "servers"},
    {"", "(json)"},
    {"{\"format\": \"pfsshim-config/1\",}", "(json)"},
    {"[1, 2]", "(top level)"},
    {"{\"rules\": []}", "format"},
    {"{\"format\": \"pfsshim-config/2\"}", "format"},
    {HDR "\"rule\": []}", "rule"},
    /* control characters in a key quoted back become '?': the message stays one line (found by fuzz.sh) */
    {HDR "\"vari\\nt\": \"printed\"}", "vari?t"},
    {HDR "\"trace\": {\"dir\\tx\": 1}}", "trace.dir?x"},
    {HDR "\"format\": \"pfsshim-config/1\"}", "(json)"}, /* duplicate key */
    {HDR "\"params\": {\"e\": 1}}", "params.v"},
    {HDR "\"params\": {\"e\": -1, \"v\": 1, \"alpha_seq\": 1, \"alpha_rand\": 1, \"beta\": 1}}", "params.e"},
    {HDR "\"params\": {\"e\": \"fast\", \"v\": 1, \"alpha_seq\": 1, \"alpha_rand\": 1, \"beta\": 1}}", "params.e"},
    {HDR "\"params\": {\"e\": 1, \"v\": 1, \"alpha_seq\": 1, \"alpha_rand\": 1, \"beta\": 1, \"gamma\": 2}}", "params.gamma"},
    {HDR "\"params\": {\"e\": 1, \"v\": 1, \"alpha_seq\": 1, \"alpha_rand\": 1, \"beta\": 1, \"e_write\": -1}}",
     "params.e_write"},
    {HDR "\"params\": {\"e\": 1, \"v\": 1, \"alpha_seq\": 1, \"alpha_rand\": 1, \"beta\": 1, \"beta_write\": \"slow\"}}",
     "params.beta_write"},
    {HDR "\"params\": {\"e\": 1, \"v\": 1, \"alpha_seq\": 1, \"alpha_rand\": 1, \"beta\": 1, \"beta_write\": 1e999}}",
     "(json)"}, /* jansson refuses a number that overflows a double; a non-finite value never reaches the parser */
    {HDR "\"variant\": \"paper\"}", "variant"},
    {HDR "\"servers\": 0}", "servers"},
    {HDR "\"servers\": 2.5}", "servers"},
    {HDR "\"rules\": {}}", "rules"},
    {HDR "\"rules\": [{\"path\": \"/a\"}]}", "rules[0]"},
    {HDR "\"rules\": [{\"path\": \"rel/dir\", \"hints\": {}}]}", "rules[0].path"},
    {HDR "\"rules\": [{\"path\": \"/a\", \"hints\": {\"x\": 1.5}}]}", "rules[0].hints.x"},
    {HDR "\"rules\": [{\"path\": \"/a\", \"hints\": {\"x\": -3}}]}", "rules[0].hints.x"},
    {HDR "\"rules\": [{\"path\": \"/a\", \"hints\": {}, \"replica\": []}]}", "rules[0].replica"},
    {HDR "\"rules\": [{\"path\": \"/a\", \"hints\": {}}, {\"path\": \"/a/\", \"hints\": {}}]}", "rules[1].path"},
    {HDR "\"servers\": 4, \"rules\": [{\"path\": \"/a\", \"replicas\": [{\"dir\": \"/r\", \"layout\": \"1-DV\"}]}]}", "params"},
    {HDR "\"params\": {\"e\": 1, \"v\": 1, \"alpha_seq\": 1, \"alpha_rand\": 1, \"beta\": 1}, "
     "\"rules\": [{\"path\": \"/a\", \"replicas\": [{\"dir\": \"/r\", \"layout\": \"1-DV\"}]}]}", "servers"},
    {HDR PRM "\"rules\": [{\"path\": \"/a\", \"replicas\": []}]}", "rules[0].replicas"},
    {HDR PRM "\"rules\": [{\"path\": \"/a\", \"replicas\": [1,2,3,4,5,6,7,8,9]}]}", "rules[0].replicas"},
    {HDR PRM "\"rules\": [{\"path\": \"/a\", \"replicas\": [{\"dir\": \"/r\", \"layout\": \"3-D\"}]}]}", "rules[0].replicas[0].layout"},
    {HDR PRM "\"rules\": [{\"path\": \"/a\", \"replicas\": [{\"layout\": \"1-DV\"}]}]}", "rules[0].replicas[0].dir"},
    {HDR PRM "\"rules\": [{\"path\": \"/a\", \"replicas\": [{\"dir\": \"/r\", \"layout\": \"2-D\"}]}]}", "rules[0].replicas[0].g"},
    {HDR PRM "\"rules\": [{\"path\": \"/a\", \"replicas\": [{\"dir\": \"/r\", \"layout\": \"2-D\", \"g\": 5}]}]}", "rules[0].replicas[0].g"},
    {HDR PRM "\"rules\": [{\"path\": \"/a\", \"replicas\": [{\"dir\": \"/r\", \"layout\": \"auto\"}]}]}", "rules[0].replicas[0].strip_size"},
    {HDR PRM "\"rules\": [{\"path\": \"/a\", \"replicas\": [{\"dir\": \"/r\", \"layout\": \"1-DV\", \"datafiles\": 9}]}]}", "rules[0].replicas[0].datafiles"},
    {HDR PRM "\"rules\": [{\"path\": \"/a\", \"replicas\": [{\"dir\": \"/r\", \"layout\": \"1-DV\", \"stripe\": 9}]}]}", "rules[0].replicas[0].stripe"},
    {HDR PRM "\"rules\": [{\"path\": \"/a\", \"replicas\": [{\"dir\": \"/r\", \"layout\": \"1-DV\", \"slots\": 0}]}]}", "rules[0].replicas[0].slots"},
    {HDR PRM "\"rules\": [{\"path\": \"/a\", \"replicas\": [{\"dir\": \"/r\", \"layout\": \"2-D\", \"g\": 2, \"datafiles\": 2, \"slots\": 3}]}]}",
     "rules[0].replicas[0].slots"},
    {HDR PRM "\"rules\": [{\"path\": \"/a\", \"replicas\": [{\"dir\": \"/r\", \"layout\": \"1-DV\"}, {\"dir\": \"/r/\", \"layout\": \"1-DH\"}]}]}",
     "rules[0].replicas[1]"},
    {HDR "\"rules\": [{\"path\": \"/a\", \"collective\": {}}]}", "rules[0].collective"},
    {HDR "\"rules\": [{\"path\": \"/a\", \"collective\": {\"cb_nodes\": 0}}]}", "rules[0].collective.cb_nodes"},
    {HDR "\"rules\": [{\"path\": \"/a\", \"collective\": {\"cb_nodes\": \"4\"}}]}", "rules[0].collective.cb_nodes"},
    {HDR "\"rules\": [{\"path\": \"/a\", \"collective\": {\"romio_cb_read\": \"on\"}}]}", "rules[0].collective.romio_cb_read"},
    {HDR "\"rules\": [{\"path\": \"/a\", \"collective\": {\"cb_config_list\": \"*:1\"}}]}", "rules[0].collective.cb_config_list"},
    {HDR "\"trace\": {\"enabled\": true}}", "trace.dir"},
    {HDR "\"trace\": {\"enabled\": \"yes\", \"dir\": \"/t\"}}", "trace.enabled"},
    {HDR "\"trace\": {\"enabled\": true, \"dir\": \"/t\", \"max_records\": 0}}", "trace.max_records"},
    {HDR "\"trace\": {\"enabled\": true, \"dir\": \"/t\", \"job_id\": \"a/b\"}}", "trace.job_id"},
    {HDR "\"trace\": {\"enabled\": true, \"dir\": \"/t\", \"buffer\": 5}}", "trace.buffer"},
    {HDR "\"stats\": {}}", "stats.dir"},
    {HDR "\"lazy_sync\": {\"queue_limit_bytes\": -1}}", "lazy_sync.queue_limit_bytes"},
    {HDR "\"lazy_sync\": {\"background\": \"no\"}}", "lazy_sync.background"},
    {HDR "\"lazy_sync\": {\"posix\": 0}}", "lazy_sync.posix"},
};

static void test_malformed(void)
{
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        pfs_config c;
        char err[512] = "";
        int rc = pfs_config_parse_text(BAD[i].json, &c, err, sizeof err);
        CHECK(rc == -1, "bad config %zu accepted: %s", i, BAD[i].json);
        size_t fl = strlen(BAD[i].field);
        CHECK(strncmp(err, BAD[i].field, fl) == 0 && err[fl] == ':', "config %zu: error should name %s, got '%s'", i,
              BAD[i].field, err);
        CHECK(strchr(err, '\n') == NULL && strlen(err) > fl + 10, "config %zu: one informative line, got '%s'", i, err);
        CHECK(c.nrules == 0 && c.rules == NULL, "config %zu: config not zeroed on error", i);
    }
}

/* the optional per-operation terms (docs/shim-config.md): parsed when given, each on its own, and
 * pfs_params_for_op picks a write's e and beta from them */
static void test_write_params(void)
{
    pfs_config c;
    char err[512] = "";
    CHECK(pfs_config_parse_text(HDR "\"params\": {\"e\": 0.0003, \"v\": 1e-8, \"alpha_seq\": 0.0001, "
                                "\"alpha_rand\": 0.0003, \"beta\": 8e-9, \"e_write\": 0.0005, \"beta_write\": 0}}",
                                &c, err, sizeof err) == 0, "e_write/beta_write rejected: %s", err);
    CHECK(c.params.e_write == 0.0005 && c.params.beta_write == 0.0, "e_write %g beta_write %g", c.params.e_write,
          c.params.beta_write);
    pfs_params r, w;
    pfs_params_for_op(&c.params, 0, &r);
    pfs_params_for_op(&c.params, 1, &w);
    CHECK(r.e == 0.0003 && r.beta == 8e-9 && r.v == 1e-8 && r.e_write < 0 && r.beta_write < 0, "read keeps e, beta");
    CHECK(w.e == 0.0005 && w.beta == 0.0 && w.v == 1e-8 && w.alpha_seq == 0.0001 && w.alpha_rand == 0.0003,
          "write takes e_write and a zero beta_write (zero is set, not unset)");
    CHECK(w.e_write < 0 && w.beta_write < 0, "the five-parameter form has no write terms");
    pfs_config_free(&c);
    CHECK(pfs_config_parse_text(HDR "\"params\": {\"e\": 0.0003, \"v\": 1e-8, \"alpha_seq\": 0.0001, "
                                "\"alpha_rand\": 0.0003, \"beta\": 8e-9, \"beta_write\": 2e-8}}",
                                &c, err, sizeof err) == 0, "beta_write alone rejected: %s", err);
    pfs_params_for_op(&c.params, 1, &w);
    CHECK(c.params.e_write < 0 && w.e == 0.0003 && w.beta == 2e-8, "unset e_write: a write uses e");
    pfs_params_for_op(&w, 1, &w); /* in place, and idempotent */
    CHECK(w.e == 0.0003 && w.beta == 2e-8, "for_op in place");
    pfs_config_free(&c);
}

static void test_files(void)
{
    pfs_config c;
    char err[512] = "";
    CHECK(pfs_config_load("/nonexistent/pfsshim.json", &c, err, sizeof err) == -1, "missing file accepted");
    CHECK(strstr(err, "PFSLAYOUT_SHIM_CONFIG") && strstr(err, "/nonexistent/pfsshim.json"), "missing file: %s", err);
    char path[] = "/tmp/pfsshim-test-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    FILE *f = fdopen(fd, "w");
    fputs(VALID, f);
    fclose(f);
    CHECK(pfs_config_load(path, &c, err, sizeof err) == 0, "load: %s", err);
    CHECK(c.nrules == 3, "loaded rules");
    pfs_config_free(&c);
    f = fopen(path, "w");
    fputs("{\"format\": \"pfsshim-config/1\", \"servers\": \"four\"}", f);
    fclose(f);
    CHECK(pfs_config_load(path, &c, err, sizeof err) == -1, "bad file accepted");
    CHECK(strncmp(err, path, strlen(path)) == 0 && strstr(err, ": servers: "), "file error names file and field: %s", err);
    remove(path);
}

/* collective-buffering hints: typed, and a rule may carry only them (applied at every open) */
static void test_collective(void)
{
    pfs_config c;
    char err[512] = "";
    CHECK(pfs_config_parse_text("{\"format\": \"pfsshim-config/1\", \"rules\": [{\"path\": \"/data/coll\", "
                                "\"collective\": {\"cb_nodes\": 3, \"cb_buffer_size\": 8388608, "
                                "\"romio_cb_read\": \"enable\", \"romio_cb_write\": \"disable\"}}]}",
                                &c, err, sizeof err) == 0, "collective rejected: %s", err);
    CHECK(c.nrules == 1 && c.rules[0].nhints == 0 && c.rules[0].nreplicas == 0 && c.rules[0].ncoll == 4, "ncoll");
    CHECK(strcmp(hint(c.rules[0].coll, 4, "cb_nodes"), "3") == 0, "cb_nodes");
    CHECK(strcmp(hint(c.rules[0].coll, 4, "cb_buffer_size"), "8388608") == 0, "cb_buffer_size");
    CHECK(strcmp(hint(c.rules[0].coll, 4, "romio_cb_read"), "enable") == 0, "romio_cb_read");
    CHECK(strcmp(hint(c.rules[0].coll, 4, "romio_cb_write"), "disable") == 0, "romio_cb_write");
    pfs_config_free(&c);
}

/* pinned replicas: the slot is a function of the file's name (docs/shim-config.md, "slots"); the same
 * table is in operator/tests/unit/test_shimconfig.py for pfslayout.shimconfig.slot_of */
static void test_slots(void)
{
    static const struct {
        const char *tail;
        long slots, want;
    } cases[] = {
        {"/data.00000000", 4, 0}, {"/data.00000001", 4, 1}, {"/data.00000006", 4, 2}, {"/sub/data.00000011", 3, 2},
        {"/out_0042.h5", 4, 2},   {"/rank3.dat", 4, 3},     {"/a.b.7.nc4", 8, 7},      {"/x/data.123456789012345678901", 7, 4},
        {"/data.00000005", 1, 0}, {"/plain", 4, 3},         {"/9/plain", 4, 3},        {"/ckpt", 3, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        long got = pfs_slot_of(cases[i].tail, cases[i].slots);
        CHECK(got == cases[i].want, "slot of %s over %ld: %ld, want %ld", cases[i].tail, cases[i].slots, got,
              cases[i].want);
    }
    pfs_replica_cfg rep = {.dir = "pvfs2:/m/.replica-1-DV", .slots = 4};
    char path[64];
    CHECK(pfs_replica_path(&rep, "/d/data.00000003", path, sizeof path) == 0 &&
              strcmp(path, "pvfs2:/m/.replica-1-DV/slot-3/d/data.00000003") == 0, "slot path: %s", path);
    rep.slots = 0;
    CHECK(pfs_replica_path(&rep, "/d/data.00000003", path, sizeof path) == 0 &&
              strcmp(path, "pvfs2:/m/.replica-1-DV/d/data.00000003") == 0, "unpinned path: %s", path);
    CHECK(pfs_replica_path(&rep, "/d/data.00000003", path, 10) == -1, "a path that does not fit is refused");
}

/* file-per-process files under a spread rule take the servers in turn (docs/shim-config.md, "spread") */
static void test_spread(void)
{
    static const struct {
        long k, d, n;
        const char *want;
    } cases[] = {
        {0, 1, 4, "0"}, {3, 1, 4, "3"}, {5, 1, 4, "1"}, {0, 2, 4, "0,1"}, {1, 2, 4, "2,3"}, {2, 2, 4, "0,1"},
        {1, 3, 4, "3,0,1"}, {2, 3, 4, "2,3,0"}, {7, 4, 4, "0,1,2,3"}, {123456789, 1, 6, "3"},
    };
    char out[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = pfs_spread_list(cases[i].k, cases[i].d, cases[i].n, out, sizeof out);
        CHECK(rc == 0 && strcmp(out, cases[i].want) == 0, "spread k=%ld d=%ld n=%ld: '%s', want '%s'", cases[i].k,
              cases[i].d, cases[i].n, out, cases[i].want);
    }
    /* the bound: p files of d datafiles put at most ceil(p·d/n) on any server, for every p, d ≤ n ≤ 8 */
    for (long n = 1; n <= 8; n++)
        for (long d = 1; d <= n; d++)
            for (long p = 1; p <= 3 * n; p++) {
                long count[8] = {0}, most = 0;
                for (long k = 0; k < p; k++) {
                    CHECK(pfs_spread_list(k, d, n, out, sizeof out) == 0, "k=%ld d=%ld n=%ld", k, d, n);
                    for (char *t = strtok(out, ","); t; t = strtok(NULL, ","))
                        count[atol(t)]++;
                }
                for (long j = 0; j < n; j++)
                    most = count[j] > most ? count[j] : most;
                CHECK(most == (p * d + n - 1) / n, "p=%ld d=%ld n=%ld: a server holds %ld datafiles", p, d, n, most);
            }
    CHECK(pfs_spread_list(0, 5, 4, out, sizeof out) == -1 && pfs_spread_list(0, 0, 4, out, sizeof out) == -1 &&
              pfs_spread_list(-1, 1, 4, out, sizeof out) == -1 && pfs_spread_list(0, 4, 4, out, 4) == -1,
          "out-of-range inputs and a short buffer are refused");
    pfs_config c;
    char err[512] = "";
    CHECK(pfs_config_parse_text(HDR "\"servers\": 4, \"rules\": [{\"path\": \"/d\", \"spread\": {\"datafiles\": 2}}]}",
                                &c, err, sizeof err) == 0 && c.rules[0].spread == 2 && c.rules[0].nhints == 0,
          "spread rule: %s", err);
    pfs_config_free(&c);
}

int main(void)
{
    test_spread();
    test_slots();
    test_valid();
    test_collective();
    test_defaults();
    test_malformed();
    test_write_params();
    test_files();
    return check_done("test_config");
}
