/* The shim config (docs/shim-config.md), parsed with jansson into plain structs.
 *
 * Strict on purpose: an unknown key is an error, so a misspelt rule can never silently turn into
 * pass-through. Every error is one line naming the JSON field and the fix; the caller prints it (rank 0)
 * and runs the job unchanged.
 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfs_common.h"
#include "pfsshim.h"

typedef struct {
    char *buf;
    size_t len;
    int failed;
} errbuf;

static int fail(errbuf *eb, const char *field, const char *fmt, ...)
{
    if (eb->failed)
        return -1;
    eb->failed = 1;
    int k = snprintf(eb->buf, eb->len, "%s: ", field);
    if (k < 0 || (size_t)k >= eb->len)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(eb->buf + k, eb->len - (size_t)k, fmt, ap);
    va_end(ap);
    /* one line whatever the input: a key or value quoted back may hold control characters ("vari\nt"
     * came out as two lines until the fuzzer found it; shim/tests/fuzz) */
    for (char *c = eb->buf; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    return -1;
}

static int check_keys(errbuf *eb, const char *where, json_t *obj, const char *const *allowed)
{
    const char *key = pfs_json_unknown_key(obj, allowed);
    if (!key)
        return 0;
    char field[256], list[512];
    snprintf(field, sizeof field, "%s%s%s", where, *where ? "." : "", key);
    pfs_json_key_list(allowed, list, sizeof list);
    return fail(eb, field, "unknown key; allowed keys here are %s", list);
}

static int get_number(errbuf *eb, const char *field, json_t *v, double lo, double *out)
{
    switch (pfs_json_number(v, lo, out)) {
    case PFS_JSON_OK:
        return 0;
    case PFS_JSON_WRONG_TYPE:
        return fail(eb, field, "must be a number (seconds or seconds per byte)");
    default:
        return fail(eb, field, "must be a finite number >= %g, got %g", lo, json_number_value(v));
    }
}

static int get_int(errbuf *eb, const char *field, json_t *v, long lo, long hi, long *out)
{
    int64_t x = 0;
    switch (pfs_json_int(v, lo, hi, &x)) {
    case PFS_JSON_OK:
        *out = (long)x;
        return 0;
    case PFS_JSON_WRONG_TYPE:
        return fail(eb, field, "must be an integer between %ld and %ld", lo, hi);
    default:
        return fail(eb, field, "must be an integer between %ld and %ld, got %lld", lo, hi,
                    (long long)json_integer_value(v));
    }
}

static int get_path(errbuf *eb, const char *field, json_t *v, char **out)
{
    if (!json_is_string(v) || json_string_length(v) == 0)
        return fail(eb, field, "must be a non-empty path string");
    const char *s = json_string_value(v);
    const char *bare = pfs_romio_bare(s);
    if (bare[0] != '/')
        return fail(eb, field, "must be an absolute path (optionally with a ROMIO prefix such as ufs:), got \"%s\"", s);
    size_t n = strlen(s);
    while (n > 1 && s[n - 1] == '/' && s + n - 1 != bare)
        n--;
    *out = strndup(s, n);
    return *out ? 0 : fail(eb, field, "out of memory");
}

static int parse_hints(errbuf *eb, const char *where, json_t *obj, pfs_hint *hints, int *nhints)
{
    if (!json_is_object(obj))
        return fail(eb, where, "must be an object of MPI hint name -> value (string or integer)");
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val) {
        char field[256];
        snprintf(field, sizeof field, "%s.%s", where, key);
        if (*nhints >= PFS_MAX_HINTS)
            return fail(eb, field, "too many hints (at most %d per rule)", PFS_MAX_HINTS);
        if (strlen(key) == 0 || strlen(key) >= sizeof hints[0].key)
            return fail(eb, field, "hint name must be 1..%zu characters", sizeof hints[0].key - 1);
        pfs_hint *h = &hints[*nhints];
        if (json_is_integer(val)) {
            if (json_integer_value(val) < 0)
                return fail(eb, field, "must be a non-negative integer or a string");
            snprintf(h->value, sizeof h->value, "%lld", (long long)json_integer_value(val));
        } else if (json_is_string(val)) {
            if (json_string_length(val) >= sizeof h->value)
                return fail(eb, field, "value longer than %zu characters", sizeof h->value - 1);
            snprintf(h->value, sizeof h->value, "%s", json_string_value(val));
        } else {
            return fail(eb, field, "must be a string or a non-negative integer (MPI_Info values are strings)");
        }
        snprintf(h->key, sizeof h->key, "%s", key);
        (*nhints)++;
    }
    return 0;
}

static int set_hint(pfs_hint *hints, int *n, const char *key, long value)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(hints[i].key, key) == 0)
            return 0; /* an explicit hint in the config wins over one derived from the layout */
    if (*n >= PFS_MAX_HINTS)
        return -1;
    snprintf(hints[*n].key, sizeof hints[*n].key, "%s", key);
    snprintf(hints[*n].value, sizeof hints[*n].value, "%ld", value);
    (*n)++;
    return 0;
}

static int parse_replica(errbuf *eb, const char *where, json_t *obj, long servers, pfs_replica_cfg *rep)
{
    static const char *const keys[] = {"dir", "layout", "g", "strip_size", "datafiles", "slots", "hints", NULL};
    char field[256];
    if (!json_is_object(obj))
        return fail(eb, where, "must be an object with dir, layout and optional g, strip_size, datafiles, slots, hints");
    if (check_keys(eb, where, obj, keys))
        return -1;
    snprintf(field, sizeof field, "%s.dir", where);
    if (get_path(eb, field, json_object_get(obj, "dir"), &rep->dir))
        return -1;
    snprintf(field, sizeof field, "%s.layout", where);
    json_t *l = json_object_get(obj, "layout");
    if (!json_is_string(l) || pfs_layout_parse(json_string_value(l), &rep->layout))
        return fail(eb, field, "must be one of \"1-DV\", \"1-DH\", \"2-D\", \"auto\"");
    json_t *v;
    if ((v = json_object_get(obj, "g"))) {
        snprintf(field, sizeof field, "%s.g", where);
        if (get_int(eb, field, v, 1, servers, &rep->g))
            return -1;
    }
    if (rep->layout == PFS_L_2D && rep->g == 0) {
        snprintf(field, sizeof field, "%s.g", where);
        return fail(eb, field, "required for layout 2-D: the number of storage groups, 1..servers (%ld)", servers);
    }
    if ((v = json_object_get(obj, "strip_size"))) {
        snprintf(field, sizeof field, "%s.strip_size", where);
        if (get_int(eb, field, v, 1, (long)1 << 40, &rep->strip_size))
            return -1;
    }
    if ((v = json_object_get(obj, "datafiles"))) {
        snprintf(field, sizeof field, "%s.datafiles", where);
        if (get_int(eb, field, v, 1, servers, &rep->datafiles))
            return -1;
    }
    if ((v = json_object_get(obj, "slots"))) {
        snprintf(field, sizeof field, "%s.slots", where);
        if (get_int(eb, field, v, 1, servers, &rep->slots))
            return -1;
        if (rep->datafiles && rep->slots * rep->datafiles > servers)
            return fail(eb, field, "slots x datafiles (%ld x %ld) exceeds servers (%ld): each slot pins its own "
                                   "datafiles servers", rep->slots, rep->datafiles, servers);
    }
    if (rep->layout == PFS_L_AUTO && rep->strip_size == 0) {
        snprintf(field, sizeof field, "%s.strip_size", where);
        return fail(eb, field, "required for layout auto (the replica is classified per request by strip size)");
    }
    if ((v = json_object_get(obj, "hints"))) {
        snprintf(field, sizeof field, "%s.hints", where);
        if (parse_hints(eb, field, v, rep->hints, &rep->nhints))
            return -1;
    }
    /* the layout itself becomes creation hints of the replica (ROMIO applies them only at create) */
    if ((rep->strip_size && set_hint(rep->hints, &rep->nhints, "striping_unit", rep->strip_size)) ||
        (rep->datafiles && set_hint(rep->hints, &rep->nhints, "striping_factor", rep->datafiles))) {
        snprintf(field, sizeof field, "%s.hints", where);
        return fail(eb, field, "too many hints (at most %d per replica)", PFS_MAX_HINTS);
    }
    return 0;
}

/* "collective": the planner's collective-buffering advice (docs/cost-model.md, "Collective I/O"), typed so a
 * misspelt value is refused here rather than ignored by ROMIO */
static int parse_collective(errbuf *eb, const char *where, json_t *obj, pfs_rule *rule)
{
    static const char *const keys[] = {"cb_nodes", "cb_buffer_size", "romio_cb_read", "romio_cb_write", NULL};
    if (!json_is_object(obj))
        return fail(eb, where, "must be an object with cb_nodes, cb_buffer_size, romio_cb_read, romio_cb_write");
    if (check_keys(eb, where, obj, keys))
        return -1;
    char field[256];
    for (int k = 0; keys[k]; k++) {
        json_t *v = json_object_get(obj, keys[k]);
        if (!v)
            continue;
        snprintf(field, sizeof field, "%s.%s", where, keys[k]);
        pfs_hint *h = &rule->coll[rule->ncoll];
        if (k < 2) {
            long x = 0;
            if (get_int(eb, field, v, 1, k == 0 ? 1L << 20 : 1L << 40, &x))
                return -1;
            snprintf(h->value, sizeof h->value, "%ld", x);
        } else {
            const char *val = json_is_string(v) ? json_string_value(v) : "";
            if (strcmp(val, "enable") && strcmp(val, "disable") && strcmp(val, "automatic"))
                return fail(eb, field, "must be \"enable\", \"disable\" or \"automatic\"");
            snprintf(h->value, sizeof h->value, "%s", val);
        }
        snprintf(h->key, sizeof h->key, "%s", keys[k]);
        rule->ncoll++;
    }
    if (rule->ncoll == 0)
        return fail(eb, where, "must set at least one of cb_nodes, cb_buffer_size, romio_cb_read, romio_cb_write");
    return 0;
}

static int parse_rule(errbuf *eb, int i, json_t *obj, const pfs_config *cfg, int have_params, pfs_rule *rule)
{
    static const char *const keys[] = {"path", "hints", "replicas", "collective", "spread", NULL};
    char where[64], field[128];
    snprintf(where, sizeof where, "rules[%d]", i);
    if (!json_is_object(obj))
        return fail(eb, where, "must be an object with path and hints or replicas");
    if (check_keys(eb, where, obj, keys))
        return -1;
    snprintf(field, sizeof field, "%s.path", where);
    if (get_path(eb, field, json_object_get(obj, "path"), &rule->prefix))
        return -1;
    rule->prefix_len = strlen(rule->prefix);
    json_t *h = json_object_get(obj, "hints"), *reps = json_object_get(obj, "replicas");
    json_t *coll = json_object_get(obj, "collective"), *spread = json_object_get(obj, "spread");
    if (!h && !reps && !coll && !spread)
        return fail(eb, where, "needs \"hints\" (stripe hints at create), \"replicas\" (a replica set), "
                               "\"collective\" (collective-buffering hints at open) or \"spread\" (where "
                               "file-per-process files start)");
    if (spread) {
        static const char *const skeys[] = {"datafiles", NULL};
        snprintf(field, sizeof field, "%s.spread", where);
        if (!json_is_object(spread))
            return fail(eb, field, "must be an object {\"datafiles\": d}");
        if (check_keys(eb, field, spread, skeys))
            return -1;
        if (reps)
            return fail(eb, field, "a replica set places its copies itself (replicas[].slots); drop spread");
        if (cfg->servers < 1)
            return fail(eb, "servers", "required when a rule has spread: the number of file servers n");
        snprintf(field, sizeof field, "%s.spread.datafiles", where);
        json_t *d = json_object_get(spread, "datafiles");
        if (!d)
            return fail(eb, field, "required: the datafiles per file, 1..servers (%ld)", cfg->servers);
        if (get_int(eb, field, d, 1, cfg->servers, &rule->spread))
            return -1;
    }
    if (coll) {
        snprintf(field, sizeof field, "%s.collective", where);
        if (parse_collective(eb, field, coll, rule))
            return -1;
    }
    if (h) {
        snprintf(field, sizeof field, "%s.hints", where);
        if (parse_hints(eb, field, h, rule->hints, &rule->nhints))
            return -1;
    }
    if (reps) {
        snprintf(field, sizeof field, "%s.replicas", where);
        if (!json_is_array(reps) || json_array_size(reps) < 1 || json_array_size(reps) > PFS_MAX_REPLICAS)
            return fail(eb, field, "must be a list of 1..%d replicas", PFS_MAX_REPLICAS);
        if (!have_params)
            return fail(eb, "params", "required when a rule has replicas (the router costs each request)");
        if (cfg->servers < 1)
            return fail(eb, "servers", "required when a rule has replicas: the number of file servers n");
        for (size_t r = 0; r < json_array_size(reps); r++) {
            snprintf(field, sizeof field, "%s.replicas[%zu]", where, r);
            if (parse_replica(eb, field, json_array_get(reps, r), cfg->servers, &rule->replicas[r]))
                return -1;
            rule->nreplicas++;
            for (size_t q = 0; q < r; q++)
                if (strcmp(rule->replicas[q].dir, rule->replicas[r].dir) == 0)
                    return fail(eb, field, "dir \"%s\" is used by replicas[%zu] too; every replica needs its own directory",
                                rule->replicas[r].dir, q);
        }
    }
    return 0;
}

/* "params": the five measured parameters the router costs each request with, and the optional per-operation
 * terms; absent, the unset markers stay and the rules may not have replicas (parse_rules checks) */
static int parse_params(errbuf *eb, json_t *v, pfs_config *cfg)
{
    cfg->params.e_write = cfg->params.beta_write = PFS_PARAM_UNSET; /* writes cost as reads unless given */
    cfg->params.e_shared = PFS_PARAM_UNSET;                          /* no shared-core term unless given */
    cfg->params.v_small_write = PFS_PARAM_UNSET;                     /* no small-write term unless given */
    cfg->params.overlap = 0;                                         /* the seeds' sum unless given */
    if (!v)
        return 0;
    static const char *const pkeys[] = {"e", "v", "alpha_seq", "alpha_rand", "beta", "e_write", "beta_write",
                                        "e_shared", "v_small_write", "overlap", "servers", NULL};
    if (!json_is_object(v))
        return fail(eb, "params", "must be an object with e, v, alpha_seq, alpha_rand, beta (e_write, beta_write, e_shared, v_small_write, overlap optional)");
    /* per-server overrides (heterogeneous servers) are accepted for the operator's sake and ignored:
     * the per-request table uses one value per parameter */
    if (check_keys(eb, "params", v, pkeys))
        return -1;
    const char *names[] = {"e", "v", "alpha_seq", "alpha_rand", "beta"};
    double *dst[] = {&cfg->params.e, &cfg->params.v, &cfg->params.alpha_seq, &cfg->params.alpha_rand,
                     &cfg->params.beta};
    for (int i = 0; i < 5; i++) {
        char field[64];
        snprintf(field, sizeof field, "params.%s", names[i]);
        json_t *x = json_object_get(v, names[i]);
        if (!x)
            return fail(eb, field, "missing; give all five of e, v, alpha_seq, alpha_rand, beta");
        if (get_number(eb, field, x, 0.0, dst[i]))
            return -1;
    }
    /* optional per-operation terms: a write's e and beta (docs/cost-model.md "Reads and writes") */
    /* the shared-core term of every message (docs/cost-model.md "Shared cores") and the per-byte term of
     * small split writes (docs/cost-model.md "Small writes") */
    const char *wnames[] = {"e_write", "beta_write", "e_shared", "v_small_write"};
    double *wdst[] = {&cfg->params.e_write, &cfg->params.beta_write, &cfg->params.e_shared,
                      &cfg->params.v_small_write};
    for (int i = 0; i < 4; i++) {
        char field[64];
        snprintf(field, sizeof field, "params.%s", wnames[i]);
        json_t *x = json_object_get(v, wnames[i]);
        if (x && get_number(eb, field, x, 0.0, wdst[i]))
            return -1;
    }
    /* network and storage overlapping (docs/cost-model.md "Overlapped network and storage") */
    json_t *o = json_object_get(v, "overlap");
    if (o) {
        if (!json_is_boolean(o))
            return fail(eb, "params.overlap", "must be true or false");
        cfg->params.overlap = json_is_true(o);
    }
    return 0;
}

/* "variant", "servers", "ranks_per_node": the cost model's top-level scalars, checked in that order */
static int parse_model(errbuf *eb, json_t *root, pfs_config *cfg)
{
    json_t *v;
    cfg->variant = PFS_V_CORRECTED;
    if ((v = json_object_get(root, "variant"))) {
        const char *s = json_is_string(v) ? json_string_value(v) : "";
        if (strcmp(s, "corrected") == 0)
            cfg->variant = PFS_V_CORRECTED;
        else if (strcmp(s, "printed") == 0)
            cfg->variant = PFS_V_PRINTED;
        else
            return fail(eb, "variant", "must be \"corrected\" (default) or \"printed\"");
    }
    if ((v = json_object_get(root, "servers")) && get_int(eb, "servers", v, 1, 1 << 20, &cfg->servers))
        return -1;
    if ((v = json_object_get(root, "ranks_per_node")) &&
        get_int(eb, "ranks_per_node", v, 1, 1 << 20, &cfg->ranks_per_node))
        return -1;
    return 0;
}

/* "trace": the per-rank request trace (off unless enabled, and then it needs a dir) */
static int parse_trace(errbuf *eb, json_t *v, pfs_config *cfg)
{
    cfg->trace_max_records = 1u << 20;
    if (!v)
        return 0;
    static const char *const tkeys[] = {"enabled", "dir", "max_records", "job_id", NULL};
    if (!json_is_object(v))
        return fail(eb, "trace", "must be an object with enabled, dir, max_records, job_id");
    if (check_keys(eb, "trace", v, tkeys))
        return -1;
    json_t *x;
    if ((x = json_object_get(v, "enabled"))) {
        if (!json_is_boolean(x))
            return fail(eb, "trace.enabled", "must be true or false");
        cfg->trace_enabled = json_is_true(x);
    }
    if ((x = json_object_get(v, "dir")) && get_path(eb, "trace.dir", x, &cfg->trace_dir))
        return -1;
    if (cfg->trace_enabled && !cfg->trace_dir)
        return fail(eb, "trace.dir", "required when trace.enabled is true: the directory for the per-rank files");
    long mr = 0;
    if ((x = json_object_get(v, "max_records"))) {
        if (get_int(eb, "trace.max_records", x, 1, (long)1 << 36, &mr))
            return -1;
        cfg->trace_max_records = (uint64_t)mr;
    }
    if ((x = json_object_get(v, "job_id"))) {
        const char *s = json_is_string(x) ? json_string_value(x) : "";
        if (!*s || strchr(s, '/') || strlen(s) > 128)
            return fail(eb, "trace.job_id", "must be a non-empty file-name-safe string (no '/'), at most 128 characters");
        cfg->job_id = strdup(s);
    }
    return 0;
}

/* "stats": where each closed replica-set file's counters go */
static int parse_stats(errbuf *eb, json_t *v, pfs_config *cfg)
{
    if (!v)
        return 0;
    static const char *const skeys[] = {"dir", NULL};
    if (!json_is_object(v) || check_keys(eb, "stats", v, skeys))
        return eb->failed ? -1 : fail(eb, "stats", "must be an object {\"dir\": PATH}");
    return get_path(eb, "stats.dir", json_object_get(v, "dir"), &cfg->stats_dir);
}

/* "route": the paths under route.path are opened with a ROMIO prefix (route.prefix) */
static int parse_route(errbuf *eb, json_t *v, pfs_config *cfg)
{
    if (!v)
        return 0;
    static const char *const rkeys[] = {"path", "prefix", NULL};
    if (!json_is_object(v) || check_keys(eb, "route", v, rkeys))
        return eb->failed ? -1 : fail(eb, "route", "must be an object {\"path\": PATH, \"prefix\": \"pvfs2:\"}");
    if (get_path(eb, "route.path", json_object_get(v, "path"), &cfg->route_path))
        return -1;
    if (pfs_romio_prefix_len(cfg->route_path))
        return fail(eb, "route.path", "must be a plain path (no ROMIO prefix): the paths opened under it get route.prefix");
    json_t *x = json_object_get(v, "prefix");
    const char *p = json_is_string(x) ? json_string_value(x) : "";
    if (!*p || pfs_romio_prefix_len(p) != strlen(p))
        return fail(eb, "route.prefix", "must be a ROMIO file-system prefix such as \"pvfs2:\" (letters, digits or _ and a colon)");
    cfg->route_prefix = strdup(p);
    return 0;
}

/* "lazy_sync": how the updates owed to the other replicas are applied (docs/shim.md, "Thread and
 * consistency model"); every switch defaults to on */
static int parse_lazy_sync(errbuf *eb, json_t *v, pfs_config *cfg)
{
    cfg->queue_limit_bytes = 64L << 20;
    cfg->lazy_background = 1;
    cfg->lazy_posix = 1;
    cfg->lazy_alongside = 1;
    if (!v)
        return 0;
    static const char *const lkeys[] = {"queue_limit_bytes", "background", "posix", "alongside", NULL};
    if (!json_is_object(v) || check_keys(eb, "lazy_sync", v, lkeys))
        return eb->failed ? -1
                          : fail(eb, "lazy_sync", "must be an object {\"queue_limit_bytes\": N, \"background\": BOOL, "
                                                  "\"posix\": BOOL, \"alongside\": BOOL}");
    json_t *x = json_object_get(v, "queue_limit_bytes");
    if (x && get_int(eb, "lazy_sync.queue_limit_bytes", x, 0, (long)1 << 40, &cfg->queue_limit_bytes))
        return -1;
    if ((x = json_object_get(v, "background"))) {
        if (!json_is_boolean(x))
            return fail(eb, "lazy_sync.background", "must be true (helper thread) or false (drain at sync points only)");
        cfg->lazy_background = json_is_true(x);
    }
    if ((x = json_object_get(v, "posix"))) {
        if (!json_is_boolean(x))
            return fail(eb, "lazy_sync.posix", "must be true (POSIX I/O on replicas where possible) or false (MPI-IO only)");
        cfg->lazy_posix = json_is_true(x);
    }
    if ((x = json_object_get(v, "alongside"))) {
        if (!json_is_boolean(x))
            return fail(eb, "lazy_sync.alongside", "must be true (write every copy with the write, overlapped) or "
                                                   "false (replay the other copies at the next drain)");
        cfg->lazy_alongside = json_is_true(x);
    }
    return 0;
}

/* "rules": parsed last, since a rule with replicas needs params and servers from above */
static int parse_rules(errbuf *eb, json_t *v, pfs_config *cfg, int have_params)
{
    if (!v)
        return 0;
    if (!json_is_array(v))
        return fail(eb, "rules", "must be a list of {path, hints | replicas}");
    size_t n = json_array_size(v);
    cfg->rules = calloc(n ? n : 1, sizeof *cfg->rules);
    if (!cfg->rules)
        return fail(eb, "rules", "out of memory");
    for (size_t i = 0; i < n; i++) {
        cfg->nrules++; /* counted first so pfs_config_free releases a half-parsed rule */
        if (parse_rule(eb, (int)i, json_array_get(v, i), cfg, have_params, &cfg->rules[i]))
            return -1;
        for (size_t j = 0; j < i; j++)
            if (strcmp(cfg->rules[j].prefix, cfg->rules[i].prefix) == 0) {
                char field[64];
                snprintf(field, sizeof field, "rules[%zu].path", i);
                return fail(eb, field, "\"%s\" is also rules[%zu].path; merge the two rules", cfg->rules[i].prefix, j);
            }
    }
    return 0;
}

/* The document: its shape and version first, then one section at a time in a fixed order, so the same
 * bad config always gets the same one-line refusal (the tests compare it). */
static int parse_doc(errbuf *eb, json_t *root, pfs_config *cfg)
{
    static const char *const keys[] = {"format", "params", "variant", "servers", "ranks_per_node", "rules",
                                       "trace", "stats", "lazy_sync", "route", NULL};
    if (!json_is_object(root))
        return fail(eb, "(top level)", "must be a JSON object with \"format\": \"%s\"", PFS_CONFIG_FORMAT);
    json_t *fmt = json_object_get(root, "format");
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), PFS_CONFIG_FORMAT) != 0)
        return fail(eb, "format", "must be \"%s\" (this shim reads only that version)", PFS_CONFIG_FORMAT);
    if (check_keys(eb, "", root, keys))
        return -1;
    json_t *params = json_object_get(root, "params");
    if (parse_params(eb, params, cfg) ||
        parse_model(eb, root, cfg) ||
        parse_trace(eb, json_object_get(root, "trace"), cfg) ||
        parse_stats(eb, json_object_get(root, "stats"), cfg) ||
        parse_route(eb, json_object_get(root, "route"), cfg) ||
        parse_lazy_sync(eb, json_object_get(root, "lazy_sync"), cfg))
        return -1;
    return parse_rules(eb, json_object_get(root, "rules"), cfg, params != NULL);
}

int pfs_config_parse_text(const char *text, pfs_config *cfg, char *err, size_t errlen)
{
    errbuf eb = {err, errlen, 0};
    memset(cfg, 0, sizeof *cfg);
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        fail(&eb, "(json)", "line %d column %d: %s; fix the JSON syntax", jerr.line, jerr.column, jerr.text);
        return -1;
    }
    int rc = parse_doc(&eb, root, cfg);
    json_decref(root);
    if (rc) {
        pfs_config_free(cfg);
        return -1;
    }
    return 0;
}

int pfs_config_load(const char *path, pfs_config *cfg, char *err, size_t errlen)
{
    memset(cfg, 0, sizeof *cfg);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "PFSLAYOUT_SHIM_CONFIG: cannot read %s: %s; point it at the rendered shim config",
                 path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t k = fread(buf + len, 1, cap - len - 1, f);
        len += k;
        if (k == 0)
            break;
        if (len + 1 == cap) {
            if (cap > (64u << 20)) {
                free(buf);
                buf = NULL;
                break;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) {
        snprintf(err, errlen, "PFSLAYOUT_SHIM_CONFIG: %s is larger than 64 MiB or out of memory", path);
        return -1;
    }
    buf[len] = 0;
    char inner[400];
    int rc = pfs_config_parse_text(buf, cfg, inner, sizeof inner);
    free(buf);
    if (rc)
        snprintf(err, errlen, "%s: %s", path, inner);
    return rc;
}

void pfs_config_free(pfs_config *cfg)
{
    for (int i = 0; i < cfg->nrules; i++) {
        free(cfg->rules[i].prefix);
        for (int r = 0; r < PFS_MAX_REPLICAS; r++)
            free(cfg->rules[i].replicas[r].dir);
    }
    free(cfg->rules);
    free(cfg->trace_dir);
    free(cfg->job_id);
    free(cfg->stats_dir);
    free(cfg->route_path);
    free(cfg->route_prefix);
    memset(cfg, 0, sizeof *cfg);
}

const char *pfs_posix_path(const char *path)
{
    const size_t n = pfs_romio_prefix_len(path);
    if (n == 0)
        return path;
    if (strncmp(path, "ufs:", 4) == 0 || strncmp(path, "nfs:", 4) == 0)
        return path + n;
    return NULL;
}

const pfs_rule *pfs_config_match(const pfs_config *cfg, const char *path, const char **tail)
{
    const pfs_rule *best = NULL;
    const char *p = pfs_romio_bare(path);
    size_t best_len = 0;
    for (int i = 0; i < cfg->nrules; i++) {
        const pfs_rule *r = &cfg->rules[i];
        const char *pre = pfs_romio_bare(r->prefix);
        size_t n = strlen(pre);
        if (n == 1 && pre[0] == '/') {
            if (p[0] == '/' && !best) {
                best = r;
                best_len = 0;
                if (tail)
                    *tail = p;
            }
            continue;
        }
        if (strncmp(p, pre, n) == 0 && (p[n] == 0 || p[n] == '/') && n > best_len) {
            best = r;
            best_len = n;
            if (tail)
                *tail = p + n;
        }
    }
    return best;
}

int pfs_spread_list(long k, long d, long n, char *out, size_t len)
{
    if (d < 1 || n < 1 || d > n || k < 0 || len == 0)
        return -1;
    size_t used = 0;
    const long first = (long)(((unsigned long)k % (unsigned long)n) * (unsigned long)d % (unsigned long)n);
    for (long i = 0; i < d; i++) {
        int w = snprintf(out + used, len - used, "%s%ld", i ? "," : "", (first + i) % n);
        if (w < 0 || (size_t)w >= len - used)
            return -1;
        used += (size_t)w;
    }
    return 0;
}

long pfs_slot_of(const char *tail, long slots)
{
    if (slots <= 1)
        return 0;
    const char *slash = strrchr(tail, '/');
    const char *name = slash ? slash + 1 : tail;
    /* the number is searched in the stem: an extension (".h5", ".nc4") is not a rank, unless the whole
     * suffix after the last dot is digits (IOR's data.00000003) */
    const char *stop = name + strlen(name);
    const char *dot = strrchr(name, '.');
    if (dot && dot[1]) {
        int digits = 1;
        for (const char *c = dot + 1; *c; c++)
            digits = digits && isdigit((unsigned char)*c);
        if (!digits)
            stop = dot;
    }
    const char *end = NULL; /* the last digit of the last run before stop */
    for (const char *c = name; c < stop; c++)
        if (isdigit((unsigned char)*c))
            end = c;
    if (end) {
        const char *start = end;
        while (start > name && isdigit((unsigned char)start[-1]))
            start--;
        long v = 0; /* mod slots digit by digit: exact for any length */
        for (const char *c = start; c <= end; c++)
            v = (v * 10 + (*c - '0')) % slots;
        return v;
    }
    uint32_t h = 2166136261u; /* FNV-1a, 32 bit, over the whole name */
    for (const char *c = name; *c; c++) {
        h ^= (unsigned char)*c;
        h *= 16777619u;
    }
    return (long)(h % (uint32_t)slots);
}

int pfs_replica_path(const pfs_replica_cfg *rep, const char *tail, char *out, size_t n)
{
    int w = rep->slots > 1 ? snprintf(out, n, "%s/slot-%ld%s", rep->dir, pfs_slot_of(tail, rep->slots), tail)
                           : snprintf(out, n, "%s%s", rep->dir, tail);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}
