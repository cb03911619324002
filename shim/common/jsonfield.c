/* JSON field checks shared by the shim config (shim/src/config.c) and the probe grid (shim/probe/). */
#include <math.h>
#include <string.h>

#include "pfs_common.h"

pfs_json_status pfs_json_int(const json_t *v, int64_t lo, int64_t hi, int64_t *out)
{
    if (!json_is_integer(v))
        return PFS_JSON_WRONG_TYPE;
    const json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return PFS_JSON_OUT_OF_RANGE;
    *out = (int64_t)x;
    return PFS_JSON_OK;
}

pfs_json_status pfs_json_number(const json_t *v, double lo, double *out)
{
    if (!json_is_number(v))
        return PFS_JSON_WRONG_TYPE;
    const double d = json_number_value(v);
    if (!isfinite(d) || d < lo)
        return PFS_JSON_OUT_OF_RANGE;
    *out = d;
    return PFS_JSON_OK;
}

pfs_json_status pfs_json_bool(const json_t *v, int *out)
{
    if (!json_is_boolean(v))
        return PFS_JSON_WRONG_TYPE;
    *out = json_is_true(v);
    return PFS_JSON_OK;
}

const char *pfs_json_unknown_key(json_t *obj, const char *const *allowed)
{
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val) {
        int known = 0;
        for (const char *const *a = allowed; *a && !known; a++)
            known = strcmp(key, *a) == 0;
        if (!known)
            return key;
    }
    return NULL;
}

void pfs_json_key_list(const char *const *allowed, char *out, size_t n)
{
    if (!n)
        return;
    out[0] = 0;
    for (const char *const *a = allowed; *a; a++) {
        strncat(out, *a, n - strlen(out) - 1);
        if (a[1])
            strncat(out, ", ", n - strlen(out) - 1);
    }
}
