/* Small helpers both C targets need (libpfsshim's config parser and pfsprobe's grid and backends), kept
 * once: JSON field checks, the ROMIO file-system prefix of a path, and mkdir -p. MPI-free. */
#ifndef PFS_COMMON_H
#define PFS_COMMON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- JSON fields (jsonfield.c) */

/* What is wrong with a value; each caller words its own one-line message around it. */
typedef enum { PFS_JSON_OK = 0, PFS_JSON_WRONG_TYPE = 1, PFS_JSON_OUT_OF_RANGE = 2 } pfs_json_status;

/* A JSON integer (not a real, not a boolean) in [lo, hi]. */
pfs_json_status pfs_json_int(const json_t *v, int64_t lo, int64_t hi, int64_t *out);
/* A JSON number (integer or real), finite and >= lo. */
pfs_json_status pfs_json_number(const json_t *v, double lo, double *out);
/* true or false. */
pfs_json_status pfs_json_bool(const json_t *v, int *out);
/* The first key of obj that is not in allowed (NULL-terminated), or NULL when every key is known. */
const char *pfs_json_unknown_key(json_t *obj, const char *const *allowed);
/* "a, b, c": the allowed keys, for the message naming them. */
void pfs_json_key_list(const char *const *allowed, char *out, size_t n);

/* ---------------------------------------------------------------- paths (paths.c) */

/* Length of the ROMIO file-system prefix of path, "name:" with name of letters, digits or '_' before any
 * '/' ("ufs:/a" -> 4, "pvfs2:/a" -> 6), or 0 when there is none. */
size_t pfs_romio_prefix_len(const char *path);
/* path without its ROMIO prefix. */
const char *pfs_romio_bare(const char *path);
/* mkdir -p: creates dir and every missing parent (mode 0777 less the umask). 0, or -1 with errno set and
 * the component that failed copied into failed (when not NULL). */
int pfs_mkdir_p(const char *dir, char *failed, size_t failed_len);

#endif
