/* libpfsshim internals shared by the PMPI wrappers and the C unit tests.
 *
 * Everything here is MPI-free except where noted, so the unit tests can link the core without mpirun.
 * Config format: docs/shim-config.md. Trace format: docs/trace-format.md. Design: docs/shim.md.
 */
#ifndef PFSSHIM_H
#define PFSSHIM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define PFS_CONFIG_FORMAT "pfsshim-config/1"
#define PFS_MAX_REPLICAS 8
#define PFS_MAX_HINTS 16

/* ---------------------------------------------------------------- cost model (costmodel.c) */

typedef enum { PFS_L_1DV = 0, PFS_L_1DH = 1, PFS_L_2D = 2, PFS_L_AUTO = 3 } pfs_layout;
typedef enum { PFS_V_CORRECTED = 0, PFS_V_PRINTED = 1 } pfs_variant;

/* e_write and beta_write are a write's e and beta when writes cost differently (docs/cost-model.md "Reads
 * and writes"); a negative value (PFS_PARAM_UNSET) means unset: writes use e and beta. pfs_cost_eval reads
 * the five and e_shared; pfs_params_for_op picks the five an operation is costed with.
 * e_shared is what every message of a round (p processes × the servers one request touches) costs when
 * clients and servers share cores (docs/cost-model.md "Shared cores"); unset or 0: nothing.
 * v_small_write is what a write split over two servers or more into pieces below PFS_SMALL_IO costs per byte
 * of all p processes' data (docs/cost-model.md "Small writes"); a write term: pfs_params_for_op drops it for
 * a read. Unset or 0: nothing. */
#define PFS_SMALL_IO 16384.0 /* OrangeFS's PINT_SMALL_IO_MAXSIZE, the twin of formulas.SMALL_IO */
#define PFS_PARAM_UNSET (-1.0)
typedef struct {
    double e, v, alpha_seq, alpha_rand, beta; /* s, s/byte, s, s, s/byte */
    double e_write, beta_write;               /* s, s/byte; < 0 = unset */
    double e_shared;                          /* s; <= 0 = none */
    double v_small_write;                     /* s/byte; <= 0 = none */
    int overlap; /* 1: a request takes the larger of T_e + T_x and T_s + T_rw (docs/cost-model.md "Overlapped
                  * network and storage"); 0: their sum, as the seeds */
} pfs_params;

/* The five-parameter form of one operation, the twin of pfslayout CostParams.for_op: a read (write = 0)
 * keeps e and beta and drops v_small_write; a write takes e_write and beta_write where set and keeps
 * v_small_write. out's e_write and beta_write are unset.
 * in and out may be the same. */
void pfs_params_for_op(const pfs_params *in, int write, pfs_params *out);

typedef struct {
    double T_e, T_x, T_s, T_rw, total;
} pfs_cost;

/* One request of s bytes under 003 Table 2. g is used by 2-D only (1 <= g <= n). Returns 0, or -1 when
 * the inputs are out of range (p, n, m < 1; 2-D g outside 1..n). Allocation-free, branch-light. */
int pfs_cost_eval(pfs_variant var, pfs_layout layout, const pfs_params *prm, long p, long n, long m, long g,
                  double s, int random, pfs_cost *out);
int pfs_layout_parse(const char *name, pfs_layout *out); /* "1-DV" | "1-DH" | "2-D" | "auto" */
const char *pfs_layout_name(pfs_layout l);

/* ---------------------------------------------------------------- config (config.c) */

typedef struct {
    char key[64];
    char value[128];
} pfs_hint;

#define PFS_MAX_COLL_HINTS 4 /* cb_nodes, cb_buffer_size, romio_cb_read, romio_cb_write */

typedef struct {
    char *dir;             /* replica directory; the logical path's tail below the rule is appended */
    pfs_layout layout;     /* PFS_L_AUTO: classify per request from strip_size/datafiles (docs/seeds.md §3.2) */
    long g;                /* 2-D groups (0 when not 2-D) */
    long strip_size;       /* bytes, 0 = unset */
    long datafiles;        /* 0 = unset */
    long slots;            /* > 1: pinned, each file in <dir>/slot-<j> (pfs_replica_path); 0 = unset */
    int nhints;
    pfs_hint hints[PFS_MAX_HINTS];
} pfs_replica_cfg;

typedef struct {
    char *prefix;          /* normalised: no trailing '/' (except "/") */
    size_t prefix_len;
    int nhints;            /* hints rule */
    pfs_hint hints[PFS_MAX_HINTS];
    int nreplicas;         /* > 0: replica-set (hybrid) rule */
    pfs_replica_cfg replicas[PFS_MAX_REPLICAS];
    int ncoll;             /* collective-buffering hints, added at every open (ROMIO reads them at open) */
    pfs_hint coll[PFS_MAX_COLL_HINTS];
    long spread;           /* > 0: a file-per-process file this process creates gets its `spread` datafiles
                              on servers k·d … k·d+d−1 mod n (pfs_spread_list); 0 = the file system's choice */
    long spread_creates;   /* this process's creates under the rule so far (k = rank + size × this) */
} pfs_rule;

typedef struct {
    pfs_params params;
    pfs_variant variant;
    long servers;
    long ranks_per_node; /* 0 = measure at runtime (MPI_COMM_TYPE_SHARED) */
    int nrules;
    pfs_rule *rules;
    int trace_enabled;
    char *trace_dir;
    char *job_id;
    uint64_t trace_max_records;
    char *stats_dir; /* NULL = no stats file */
    long queue_limit_bytes; /* lazy-sync backlog that forces a drain */
    int lazy_background;    /* apply POSIX updates from a helper thread (default 1) */
    int lazy_posix;         /* may use POSIX I/O on replicas (updates, markers, repair; default 1) */
    int lazy_alongside;     /* MPI-only replicas: write the other copies with the write itself (iwrite_at,
                               overlapped) rather than replay them at the next drain (default 1) */
    char *route_path;       /* plain paths a program opens under this one ... */
    char *route_prefix;     /* ... are opened with this ROMIO prefix ("pvfs2:"); NULL = no routing */
} pfs_config;

/* Parse the JSON text/file. On error returns -1 and writes one line (no newline) naming the field and
 * the fix into err. The config is zeroed on error. */
int pfs_config_parse_text(const char *text, pfs_config *cfg, char *err, size_t errlen);
int pfs_config_load(const char *path, pfs_config *cfg, char *err, size_t errlen);
void pfs_config_free(pfs_config *cfg);
/* Longest-prefix rule for an absolute path (component-wise: "/a/b" matches "/a/b" and "/a/b/c", not
 * "/a/bc"). *tail gets the rest of the path after the prefix (starting with '/' or empty). */
const pfs_rule *pfs_config_match(const pfs_config *cfg, const char *path, const char **tail);
/* Which of `slots` pinned directories a replica file lives in (docs/shim-config.md, "slots"): the last
 * decimal number in the file's name (its extension left out unless all digits) mod slots, so
 * rank-numbered files (IOR's data.00000003, out_0042.h5) spread over the slots as the ranks do; a name
 * without one: its FNV-1a hash mod slots. A function of
 * the name alone, so every process that opens or deletes the file finds the same copy. The twin of
 * pfslayout.shimconfig.slot_of. */
long pfs_slot_of(const char *tail, long slots);
/* ROMIO's romio_pvfs2_server_list for file k of a rule spreading d datafiles over n servers: the indices
 * k·d mod n … (k·d + d − 1) mod n, comma-separated — files k = 0, 1, … take consecutive servers in turn, so
 * no server holds more than ⌈files·d/n⌉ datafiles (docs/shim-config.md, "spread"). 0, or -1 when the
 * inputs are out of range (d < 1, n < 1, d > n, k < 0) or the list does not fit in len bytes. */
int pfs_spread_list(long k, long d, long n, char *out, size_t len);
/* The replica's path for the logical path's tail below the rule: <dir><tail>, or with slots
 * <dir>/slot-<j><tail>. 0, or -1 when it does not fit in n bytes. */
int pfs_replica_path(const pfs_replica_cfg *rep, const char *tail, char *out, size_t n);
/* Strip a ROMIO file-system prefix ("ufs:", "nfs:") and return the POSIX path, or NULL if the prefix
 * names a backend that is not reachable through POSIX (e.g. "pvfs2:"). */
const char *pfs_posix_path(const char *path);

/* ---------------------------------------------------------------- routing (route.c) */

typedef struct {
    pfs_variant variant;
    pfs_params params;
    long p, n, m; /* processes sharing the file, servers, processes of this node in that group */
    int nrep;
    pfs_layout layout[PFS_MAX_REPLICAS];
    long g[PFS_MAX_REPLICAS];
    long strip[PFS_MAX_REPLICAS];
    long dfiles[PFS_MAX_REPLICAS];
} pfs_router;

/* docs/seeds.md §3.2: the layout a request at (offset, size) behaves as on a replica with strip size strip
 * over datafiles datafiles (0 = n) of n servers: k servers touched; k = 1 -> 1-DV, k >= n -> 1-DH, else 2-D
 * with g = n/k. *g is 0 unless 2-D. The twin of pfslayout.planner.classify (shared vectors in
 * operator/tests/vectors/classify-vectors.json). */
void pfs_classify(long n, long strip, long datafiles, uint64_t offset, uint64_t size, pfs_layout *layout, long *g);

/* Cost of a request (offset, size) on each replica into costs[], with the parameters of its operation
 * (write != 0: pfs_params_for_op); returns the index of the cheapest replica among those whose bit is set
 * in allowed (ties: lowest index), or -1 if none is allowed. */
int pfs_route(const pfs_router *r, int write, uint64_t offset, uint64_t size, int random, unsigned allowed,
              double *costs);

/* The routing decision for one request on a replica set, MPI-free so a unit test can drive it:
 *   read:       only replicas clean for [lo, hi) may serve it; none clean -> drain first (forced), then any;
 *   write:      the cheapest replica; if it still owes an overlapping update -> drain first (forced), so
 *               this write stays the newest;
 *   collective: drain (every rank calls the same collective on the same replica), then each rank's costs
 *               are summed over the file's ranks and the lowest sum wins (ties: lowest index).
 * write is the call's operation (non-zero: a write): costs use that operation's parameters
 * (pfs_params_for_op), a collective's as much as an independent call's; kind picks the rule above.
 * The environment supplies the dirty-range query, the drain and the agreement (an MPI_Allreduce in the
 * shim). Returns the replica; *forced_drain says whether a read or write had to drain first. */
typedef enum { PFS_REQ_READ = 0, PFS_REQ_WRITE = 1, PFS_REQ_COLLECTIVE = 2 } pfs_request_kind;
typedef struct {
    int (*dirty)(void *ctx, int replica, uint64_t lo, uint64_t hi);
    void (*drain)(void *ctx);
    void (*agree)(void *ctx, const double *costs, double *sum, int n);
    void *ctx;
} pfs_route_env;
int pfs_route_request(const pfs_router *r, pfs_request_kind kind, int write, uint64_t lo, uint64_t hi, uint64_t bytes,
                      int random, const pfs_route_env *env, double *costs, int *forced_drain);

/* ---------------------------------------------------------------- dirty ranges (ranges.c) */

/* Sorted, non-overlapping, coalesced half-open byte ranges. Insertion may grow the array; queries do
 * not allocate. */
typedef struct {
    uint64_t *lo, *hi;
    size_t n, cap;
} pfs_ranges;

void pfs_ranges_init(pfs_ranges *r);
void pfs_ranges_free(pfs_ranges *r);
int pfs_ranges_add(pfs_ranges *r, uint64_t lo, uint64_t hi); /* 0 or -1 (ENOMEM) */
int pfs_ranges_overlaps(const pfs_ranges *r, uint64_t lo, uint64_t hi);
void pfs_ranges_clear(pfs_ranges *r);
uint64_t pfs_ranges_bytes(const pfs_ranges *r);

/* ---------------------------------------------------------------- lazy-sync queue (syncq.c) */

/* An update still owed to some replicas. POSIX entries (contiguous bytes at an absolute offset, on a
 * replica reachable through POSIX) may be applied by the background thread with pwrite(); MPI entries
 * (noncontiguous views, non-POSIX backends) are replayed by the thread that drains at a sync point,
 * because only that thread may call MPI (the job may not run MPI_THREAD_MULTIPLE). */
typedef enum { PFS_Q_POSIX = 0, PFS_Q_MPI = 1 } pfs_qkind;

typedef struct pfs_qentry {
    struct pfs_qentry *next;
    pfs_qkind kind;
    unsigned mask;        /* replicas still owed this update */
    uint64_t byte_lo, byte_hi; /* absolute byte envelope, for dirty ranges and fcntl locks */
    void *data;           /* POSIX: the bytes; MPI: copy of the user buffer's memory span */
    size_t len;           /* bytes in data */
    size_t cap;           /* bytes allocated for data (POSIX entries grow when writes are coalesced) */
    /* MPI replay: write_at(rep, etype_off, data - span_lb, count, dtype) */
    long long etype_off;
    int count;
    long span_lb;
    int has_dtype;
    unsigned char dtype[8]; /* MPI_Datatype (duplicated) stored as bytes: a pointer in Open MPI, an int in MPICH */
} pfs_qentry;

typedef void (*pfs_apply_fn)(void *ctx, pfs_qentry *e, int replica);

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pfs_qentry *head, *tail;
    int busy;            /* an entry is being applied outside the lock */
    int stop;
    int nrep;
    size_t bytes;        /* data bytes queued */
    unsigned long pending[PFS_MAX_REPLICAS]; /* queued entries owing each replica */
    pfs_ranges dirty[PFS_MAX_REPLICAS];      /* union of owed envelopes per replica */
    pfs_apply_fn posix_apply;                /* used by the background thread */
    void *ctx;
    pthread_t thread;
    int thread_started;
    /* counters */
    unsigned long applied_thread, applied_drain, drains; /* entries applied by the helper / by drains */
    unsigned long coalesced;                             /* entries appended to the previous one */
} pfs_syncq;

#define PFS_COALESCE_MAX (1u << 20)
int pfs_syncq_init(pfs_syncq *q, int nrep, pfs_apply_fn posix_apply, void *ctx, int start_thread);
/* Takes ownership of e. Marks e->mask replicas dirty over the envelope. A POSIX entry that continues the
 * last queued one (same replicas, starts where it ends, not yet picked up) is appended to it, up to
 * PFS_COALESCE_MAX bytes, so sequential small writes cost one pwrite per replica per MiB. 0 or -1. */
int pfs_syncq_push(pfs_syncq *q, pfs_qentry *e);
/* Whether replica r may be stale for [lo, hi) (locks the queue). */
int pfs_syncq_dirty(pfs_syncq *q, int r, uint64_t lo, uint64_t hi);
/* Apply everything queued, in FIFO order, from the calling thread (waits for the background thread's
 * entry in flight first). apply is called for both kinds. */
void pfs_syncq_drain(pfs_syncq *q, pfs_apply_fn apply, void *ctx);
void pfs_syncq_destroy(pfs_syncq *q); /* stops the thread; entries left are freed, not applied */
void pfs_qentry_free(pfs_qentry *e);
/* Frees an MPI entry's datatype; set by the shim (NULL in the MPI-free unit tests). */
extern void (*pfs_qentry_release)(pfs_qentry *e);

/* ---------------------------------------------------------------- trace (trace.c) */

#define PFS_TR_COLLECTIVE 1u
#define PFS_TR_NONBLOCKING 2u
#define PFS_TR_EXPLICIT 4u
#define PFS_TR_ROUTED 8u
#define PFS_TR_NO_REPLICA 0xFFFFu

typedef struct {
    double start, end;
    uint64_t offset, size;
    uint32_t file_id;
    uint8_t op, flags;
    uint16_t replica;
} pfs_trace_rec;

typedef struct {
    pfs_trace_rec *recs;
    uint64_t cap, n, dropped;
    char **paths;
    uint32_t npaths, path_cap;
    uint32_t rank, comm_size, node_id, ranks_on_node;
    double epoch;
    pthread_mutex_t mu;
} pfs_trace;

int pfs_trace_init(pfs_trace *t, uint64_t max_records);
void pfs_trace_free(pfs_trace *t);
uint32_t pfs_trace_file_id(pfs_trace *t, const char *path); /* existing id or a new one */
void pfs_trace_add(pfs_trace *t, const pfs_trace_rec *r);   /* drops (and counts) when full */
/* Writes <dir>/<job>.rank-NNNNNN.pfstrace atomically (temp file + rename). 0 or -1 with errno. */
int pfs_trace_write(const pfs_trace *t, const char *dir, const char *job);
/* The file's bytes (header, records, file table) in one malloc'd buffer the caller frees; NULL if out of
 * memory. */
unsigned char *pfs_trace_image(const pfs_trace *t, size_t *len);
/* <dir>/<job>.rank-NNNNNN.pfstrace ("run" when job is NULL). */
void pfs_trace_file_name(char *out, size_t cap, const char *dir, const char *job, uint32_t rank);
double pfs_now(void); /* CLOCK_REALTIME seconds */

#endif
