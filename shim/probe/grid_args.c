/* pfsprobe's command-line flags (applied after the grid file, so flags win) and its usage text. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid_internal.h"

void grid_usage(const char *prog)
{
    fprintf(stdout,
            "usage: %s [--grid FILE] [--target LAYOUT[:G]=DIR]... [options]\n"
            "Times a calibration grid of I/O cells and writes pfsprobe/1 JSON (docs/probe-format.md).\n"
            "  --grid FILE           grid JSON (docs/probe.md); the flags below override its fields\n"
            "  --target L[:G]=DIR    a directory realising layout L (1-DH, 1-DV, 2-D:G, default); repeatable\n"
            "  --backend B           posix | mpiio | pvfs2 (default posix)\n"
            "  --servers N           file servers behind the targets (default 1)\n"
            "  --sizes LIST          request sizes, e.g. 4K,64K,1M (default 64K)\n"
            "  --patterns LIST       sequential,random (default sequential)\n"
            "  --sharing LIST        file-per-process,shared (default file-per-process)\n"
            "  --ops LIST            write,read (default write,read)\n"
            "  --procs LIST          process counts p (default 1,2,4,... and the world size)\n"
            "  --placement P         packed (first p ranks) | spread (round-robin over nodes)\n"
            "  --repetitions N       timed repetitions per cell (default 5)\n"
            "  --requests N          requests per rank per repetition (default 16)\n"
            "  --seed N              seed of the random-offset permutation (default 1)\n"
            "  --no-fsync            do not sync at the end of a timed write repetition\n"
            "  --direct              posix only: open with O_DIRECT (sizes must be multiples of 4096)\n"
            "  --drop-caches         posix only: evict the files' pages before each read repetition\n"
            "  --verify              check read-back contents and file sizes after each group\n"
            "  --keep                keep the probe files\n"
            "  --out FILE            output file (default -: stdout)\n"
            "  --verbose             one progress line per cell on stderr\n"
            "backends built: posix mpiio%s\n",
            prog,
#ifdef PFSPROBE_HAVE_PVFS2
            " pvfs2"
#else
            " (pvfs2 needs -DORANGEFS_PREFIX)"
#endif
    );
}

const char *grid_file_arg(int argc, char **argv)
{
    for (int i = 1; i < argc - 1; i++)
        if (strcmp(argv[i], "--grid") == 0)
            return argv[i + 1];
    return NULL;
}

static int flag_word_list(const char *flag, const char *field, const char *val, int *mask, char msg[PROBE_MSG_LEN])
{
    char buf[1024];
    if (strlen(val) >= sizeof buf)
        return fail(msg, "%s: too long; list %s", flag, word_choices(field));
    strcpy(buf, val);
    int m = 0;
    char *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        int bit = word_bit(field, w);
        if (!bit)
            return fail(msg, "%s: \"%s\" is not one of %s", flag, w, word_choices(field));
        if (m & bit)
            return fail(msg, "%s: \"%s\" is listed twice; list each value once", flag, w);
        m |= bit;
    }
    if (!m)
        return fail(msg, "%s: empty; list %s", flag, word_choices(field));
    *mask = m;
    return 0;
}

static int flag_int_list(const char *flag, const char *val, int sizes, int64_t hi, int64_t *out, int *n,
                         char msg[PROBE_MSG_LEN])
{
    char buf[1024];
    if (strlen(val) >= sizeof buf)
        return fail(msg, "%s: too long", flag);
    strcpy(buf, val);
    int k = 0;
    char *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        int64_t x = -1;
        if (sizes) {
            x = parse_size(w);
        } else if (parse_int(w, 1, hi, &x)) {
            x = -1;
        }
        if (x < 1 || x > hi)
            return fail(msg, "%s: \"%s\" is not %s between 1 and %" PRId64, flag, w,
                        sizes ? "a size (bytes, or with K/M/G)" : "an integer", hi);
        if (k == PROBE_MAX_LIST)
            return fail(msg, "%s: at most %d entries; split the grid", flag, PROBE_MAX_LIST);
        for (int j = 0; j < k; j++)
            if (out[j] == x)
                return fail(msg, "%s: %s is listed twice; list each value once", flag, w);
        out[k++] = x;
    }
    if (!k)
        return fail(msg, "%s: empty; give a comma-separated list", flag);
    *n = k;
    return 0;
}

/* "2-D:4=/mnt/ofs/probe/2d" */
static int flag_target(const char *val, probe_target *t, char msg[PROBE_MSG_LEN])
{
    memset(t, 0, sizeof(*t));
    const char *eq = strchr(val, '=');
    if (!eq || eq == val || !eq[1])
        return fail(msg, "--target: \"%s\" is not LAYOUT[:G]=DIR; e.g. --target 2-D:2=/mnt/ofs/probe/2d", val);
    char spec[64];
    size_t len = (size_t)(eq - val);
    if (len >= sizeof spec)
        return fail(msg, "--target: layout \"%.*s\" is not 1-DH, 1-DV, 2-D:G or default", (int)len, val);
    memcpy(spec, val, len);
    spec[len] = 0;
    char *colon = strchr(spec, ':');
    if (colon) {
        *colon = 0;
        int64_t gv;
        if (parse_int(colon + 1, 1, 1 << 20, &gv))
            return fail(msg, "--target: group count \"%s\" in \"%s\" is not a positive integer", colon + 1, val);
        t->g = (int)gv;
    }
    if (parse_layout(spec, &t->layout))
        return fail(msg, "--target: layout \"%s\" is not 1-DH, 1-DV, 2-D:G or default", spec);
    if (strlen(eq + 1) >= sizeof(t->path) - 256)
        return fail(msg, "--target: path too long");
    strcpy(t->path, eq + 1);
    return 0;
}

static int needs_value(const char *a)
{
    static const char *const with_value[] = {"--grid", "--target", "--backend", "--servers", "--sizes",
                                             "--patterns", "--sharing", "--ops", "--procs", "--placement",
                                             "--repetitions", "--requests", "--seed", "--out", NULL};
    for (int i = 0; with_value[i]; i++)
        if (strcmp(a, with_value[i]) == 0)
            return 1;
    return 0;
}

int grid_parse_args(probe_grid *g, int argc, char **argv, const char *grid_text, char msg[PROBE_MSG_LEN])
{
    if (grid_text && grid_from_json(g, grid_text, msg))
        return -1;
    int flag_targets = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            return 1;
        /* "--requests --out x" is a forgotten value, not a request count of "--out" */
        if (needs_value(a) && (i + 1 >= argc || argv[i + 1][0] == '\0' || strncmp(argv[i + 1], "--", 2) == 0))
            return fail(msg, "%s: needs a value; see --help", a);
        const char *v = needs_value(a) ? argv[++i] : NULL;
        int64_t x = 0;
        if (strcmp(a, "--grid") == 0) {
            /* already applied by the caller */
        } else if (strcmp(a, "--target") == 0) {
            if (!flag_targets)
                g->n_targets = 0; /* flags replace the grid file's targets */
            flag_targets = 1;
            if (g->n_targets == PROBE_MAX_TARGETS)
                return fail(msg, "--target: at most %d targets; split the grid", PROBE_MAX_TARGETS);
            if (flag_target(v, &g->targets[g->n_targets], msg))
                return -1;
            g->n_targets++;
        } else if (strcmp(a, "--backend") == 0) {
            if (parse_backend(v, &g->backend))
                return fail(msg, "--backend: \"%s\" is not posix, mpiio or pvfs2", v);
        } else if (strcmp(a, "--servers") == 0) {
            if (parse_int(v, 1, 1 << 20, &x))
                return fail(msg, "--servers: \"%s\" is not a positive integer", v);
            g->servers = (int)x;
        } else if (strcmp(a, "--sizes") == 0) {
            g->set_fields |= SET_SIZES;
            if (flag_int_list(a, v, 1, INT64_C(1) << 30, g->sizes, &g->n_sizes, msg))
                return -1;
        } else if (strcmp(a, "--patterns") == 0) {
            g->set_fields |= SET_PATTERNS;
            if (flag_word_list(a, "patterns", v, &g->patterns, msg)) return -1;
        } else if (strcmp(a, "--sharing") == 0) {
            g->set_fields |= SET_SHARING;
            if (flag_word_list(a, "sharing", v, &g->sharing, msg)) return -1;
        } else if (strcmp(a, "--ops") == 0) {
            g->set_fields |= SET_OPS;
            if (flag_word_list(a, "ops", v, &g->ops, msg)) return -1;
        } else if (strcmp(a, "--procs") == 0) {
            g->set_fields |= SET_PROCS;
            int64_t tmp[PROBE_MAX_LIST];
            if (flag_int_list(a, v, 0, 1 << 24, tmp, &g->n_procs, msg))
                return -1;
            for (int k = 0; k < g->n_procs; k++) g->procs[k] = (int)tmp[k];
        } else if (strcmp(a, "--placement") == 0) {
            g->set_fields |= SET_PLACEMENT;
            if (parse_placement(v, &g->placement))
                return fail(msg, "--placement: \"%s\" is not packed or spread", v);
        } else if (strcmp(a, "--repetitions") == 0) {
            g->set_fields |= SET_REPETITIONS;
            if (parse_int(v, 1, 100000, &x))
                return fail(msg, "--repetitions: \"%s\" is not an integer between 1 and 100000", v);
            g->repetitions = (int)x;
        } else if (strcmp(a, "--requests") == 0) {
            g->set_fields |= SET_REQUESTS;
            if (parse_int(v, 1, INT64_C(1) << 30, &x))
                return fail(msg, "--requests: \"%s\" is not a positive integer", v);
            g->requests_per_rank = x;
        } else if (strcmp(a, "--seed") == 0) {
            if (parse_int(v, 0, INT64_MAX, &x))
                return fail(msg, "--seed: \"%s\" is not a non-negative integer", v);
            g->seed = (uint64_t)x;
        } else if (strcmp(a, "--out") == 0) {
            if (strlen(v) >= sizeof(g->out))
                return fail(msg, "--out: path too long");
            strcpy(g->out, v);
        } else if (strcmp(a, "--fsync") == 0) {
            g->fsync = 1;
        } else if (strcmp(a, "--no-fsync") == 0) {
            g->fsync = 0;
        } else if (strcmp(a, "--direct") == 0) {
            g->direct = 1;
        } else if (strcmp(a, "--drop-caches") == 0) {
            g->drop_caches = 1;
        } else if (strcmp(a, "--keep") == 0) {
            g->keep = 1;
        } else if (strcmp(a, "--verify") == 0) {
            g->verify = 1;
        } else if (strcmp(a, "--verbose") == 0) {
            g->verbose = 1;
        } else {
            return fail(msg, "%s: unknown option; see --help", a);
        }
    }
    return 0;
}
