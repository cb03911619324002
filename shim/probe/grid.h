/* The calibration grid: what pfsprobe measures, parsed from a JSON file and/or flags. */
#ifndef PFSPROBE_GRID_H
#define PFSPROBE_GRID_H

#include <stddef.h>
#include <stdint.h>

#define PROBE_MAX_LIST 64
#define PROBE_MAX_TARGETS 32
#define PROBE_MSG_LEN 512

/* LAYOUT_DEFAULT is the file system's own layout (no distribution or server list at create: OrangeFS's
 * configured distribution on every server, starting at a server of its choosing) — the baseline the
 * model's picks are compared with, never a layout the model chooses (issue 33). */
typedef enum { LAYOUT_1DH = 0, LAYOUT_1DV = 1, LAYOUT_2D = 2, LAYOUT_DEFAULT = 3 } probe_layout;
typedef enum { BACKEND_POSIX = 0, BACKEND_MPIIO = 1, BACKEND_PVFS2 = 2 } probe_backend_kind;
typedef enum { PLACEMENT_PACKED = 0, PLACEMENT_SPREAD = 1 } probe_placement;

/* Bit masks so a grid lists each value at most once and the run order is fixed. */
#define PATTERN_SEQUENTIAL 1
#define PATTERN_RANDOM 2
#define SHARING_FPP 1
#define SHARING_SHARED 2
#define OP_WRITE 1
#define OP_READ 2

typedef struct {
    probe_layout layout;
    int g;               /* 0 when the layout is not 2-D */
    int64_t strip_size;  /* 0 = derive from layout (pvfs2 backend only) */
    char path[4096];
} probe_target;

/* One cell of an explicit (designed) grid, format pfsprobe-grid/1 from `pfslayout`'s calibration design. */
typedef struct {
    probe_layout layout;
    int g;
    int op, pattern, sharing; /* single OP_/PATTERN_/SHARING_ bits */
    int p, m;
    int64_t request_size, requests_per_rank;
    int repetitions;
} probe_cell_spec;

/* What the runner executes: files created once per group, then every pattern/op of the group timed on
 * them. A cross-product grid and a designed cell list both become a list of groups. */
typedef struct {
    int target;          /* index into targets */
    int shared;
    int p;
    int m;               /* 0 = choose ranks by placement; otherwise exactly m taking-part ranks per node */
    int64_t s, r;
    int reps;
    int patterns, ops;   /* masks */
} probe_group;

typedef struct {
    probe_backend_kind backend;
    int servers;
    int n_targets;
    probe_target targets[PROBE_MAX_TARGETS];
    int n_sizes;
    int64_t sizes[PROBE_MAX_LIST];
    int patterns;        /* PATTERN_* mask */
    int sharing;         /* SHARING_* mask */
    int ops;             /* OP_* mask */
    int n_procs;         /* 0 = default: powers of two up to the world size, and the world size */
    int procs[PROBE_MAX_LIST];
    probe_placement placement;
    int repetitions;
    int64_t requests_per_rank;
    uint64_t seed;
    int fsync;
    int direct;
    int drop_caches;
    int keep;
    int verify;
    int verbose;
    char out[4096];      /* "-" = stdout */
    int n_cells;         /* > 0: the grid file listed explicit cells (pfsprobe-grid/1) */
    probe_cell_spec *cells;
    int n_groups;        /* built by grid_validate */
    probe_group *groups;
    int set_fields;      /* SET_* bits: cross-product fields given, refused next to explicit cells */
} probe_grid;

#define SET_SIZES 1
#define SET_PATTERNS 2
#define SET_SHARING 4
#define SET_OPS 8
#define SET_PROCS 16
#define SET_PLACEMENT 32
#define SET_REPETITIONS 64
#define SET_REQUESTS 128

/* Fills in the defaults. */
void grid_defaults(probe_grid *g);

/* Applies a grid JSON document (text) onto g. On bad input writes one line naming the field into msg
 * and returns -1. */
int grid_from_json(probe_grid *g, const char *text, char msg[PROBE_MSG_LEN]);

/* Applies command-line flags (after the grid file, so flags win). `grid_text`, if non-NULL, receives the
 * value of --grid (the caller reads the file on rank 0 and calls grid_from_json before the other flags
 * are applied: see grid_parse_args). Returns 0, -1 on bad input (msg filled), 1 for --help. */
int grid_parse_args(probe_grid *g, int argc, char **argv, const char *grid_text, char msg[PROBE_MSG_LEN]);

/* Returns the value of --grid FILE from argv, or NULL. */
const char *grid_file_arg(int argc, char **argv);

/* Checks the combined grid against the world size; fills the default process counts and builds the
 * groups. */
int grid_validate(probe_grid *g, int world_size, char msg[PROBE_MSG_LEN]);
void grid_free(probe_grid *g);

const char *layout_name(probe_layout l);
const char *backend_name(probe_backend_kind b);

/* Parses "64K", "1M", "4096" into bytes; -1 when malformed. */
int64_t parse_size(const char *s);

void grid_usage(const char *prog);

#endif
