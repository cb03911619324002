/* A file's layout as the servers store it, what a file created now in a directory gets, and the rule
 * that says when the two differ (see main.c's header for why the rule is what it is). */
#include "relayout.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* libpvfs2 hands a file's stored distribution and stuffing state out as "system.pvfs2." attributes
 * (pvfs2-viewdist reads "md" the same way): the keys name the server's internal keyvals. */
#define KEY_DIST "system.pvfs2.md"
#define KEY_STUFFED_DFILES "system.pvfs2.nd"

/* pvfs2.h defines roundup8 as a macro (pvfs2-encode-stubs.h): its own name avoids the clash. */
static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int64_t le64(const unsigned char *p)
{
    return (int64_t)((uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32);
}

/* The wire encoding of a string (OrangeFS endecode-funcs.h): u32 length, the bytes, a NUL, padded to
 * 8. Returns the offset after it, 0 when it does not fit. The padding bytes are not initialised by the
 * encoder, which is why distributions are compared decoded, never byte for byte. */
static size_t decode_string(const unsigned char *buf, size_t len, size_t off, const char **s, uint32_t *slen)
{
    if (off + 4 > len)
        return 0;
    *slen = le32(buf + off);
    if (off + 4 + (size_t)*slen + 1 > len)
        return 0;
    *s = (const char *)buf + off + 4;
    return off + pad8(4 + (size_t)*slen + 1);
}

int layout_decode_dist(const unsigned char *buf, size_t len, struct layout *out)
{
    const char *name, *strips;
    uint32_t nlen, slen;
    size_t off = decode_string(buf, len, 0, &name, &nlen);
    if (!off || nlen == 0 || nlen >= sizeof out->dist_name)
        return -1;
    memcpy(out->dist_name, name, nlen);
    out->dist_name[nlen] = '\0';
    out->params[0] = '\0';
    out->strip_size = -1;
    /* Parameters of the distributions the operator's hints name; others compare by name only. */
    if (strcmp(out->dist_name, "simple_stripe") == 0) {
        if (off + 8 > len)
            return -1;
        out->strip_size = le64(buf + off);
        snprintf(out->params, sizeof out->params, "strip_size:%lld", (long long)out->strip_size);
    } else if (strcmp(out->dist_name, "varstrip_dist") == 0) {
        if (!decode_string(buf, len, off, &strips, &slen) || slen + 8 >= sizeof out->params)
            return -1;
        snprintf(out->params, sizeof out->params, "strips:%.*s", (int)slen, strips);
    }
    return 0;
}

/* A missing key reads back as one of these (the server's "no such attribute"). */
static int is_missing(int err)
{
    return err == -PVFS_ENOENT || err == -PVFS_ENODATA;
}

static int get_xattr(struct session *s, PVFS_object_ref ref, const char *key, void *buf, size_t cap,
                     size_t *got)
{
    PVFS_ds_keyval k = {0}, v = {0};
    k.buffer = (void *)key;
    k.buffer_sz = (int32_t)strlen(key) + 1;
    v.buffer = buf;
    v.buffer_sz = (int32_t)cap;
    int ret = PVFS_sys_geteattr(ref, &s->cred, &k, &v, NULL);
    if (ret == 0)
        *got = (size_t)v.read_sz;
    return ret;
}

int layout_read(struct session *s, PVFS_object_ref ref, int32_t dfile_count, struct layout *out)
{
    unsigned char buf[4096];
    size_t got = 0;
    memset(out, 0, sizeof *out);
    int ret = get_xattr(s, ref, KEY_DIST, buf, sizeof buf, &got);
    if (ret < 0)
        return ret;
    if (layout_decode_dist(buf, got, out) < 0)
        return -PVFS_EINVAL;
    out->stored = dfile_count;
    out->datafiles = dfile_count;
    /* A stuffed file keeps the count it asked for at create in "nd" (the server drops the key when it
     * unstuffs the file): that is the count the file gets as soon as it grows, so it is its layout. */
    ret = get_xattr(s, ref, KEY_STUFFED_DFILES, buf, sizeof buf, &got);
    if (ret == 0 && got >= 4) {
        out->stuffed = 1;
        out->datafiles = (int32_t)le32(buf);
        return 0;
    }
    return ret == 0 || is_missing(ret) ? 0 : ret;
}

int layout_differs(const struct layout *file, const struct layout *current)
{
    return file->datafiles != current->datafiles || strcmp(file->dist_name, current->dist_name) != 0 ||
           strcmp(file->params, current->params) != 0;
}

/* What a file created now in `dir` gets: create an empty file there (the client applies the
 * directory's hints exactly as for any new file), read its layout, remove it. Measured rather than
 * computed from the hints, because the client caps num_dfiles at the server count, falls back to
 * defaults for keys that are not set and ignores a dist_params without dist_name. */
int layout_probe(struct session *s, PVFS_object_ref dir, struct layout *out, char *why, size_t whylen)
{
    char name[64];
    PVFS_object_ref probe;
    PVFS_sys_attr attr;
    snprintf(name, sizeof name, RELAYOUT_PROBE_PREFIX "%ld", (long)getpid());
    /* A probe a killed run left behind would make the create fail: it is ours, remove it. */
    if (pvfs_lookup_in(s, dir, name, &probe) == 0)
        pvfs_remove(s, dir, name);
    int ret = pvfs_create(s, dir, name, &probe);
    if (ret < 0) {
        pvfs_error_text(ret, why, whylen);
        return ret;
    }
    ret = pvfs_getattr(s, probe, &attr);
    if (ret == 0) {
        ret = layout_read(s, probe, attr.dfile_count, out);
        PVFS_util_release_sys_attr(&attr);
    }
    if (ret < 0)
        pvfs_error_text(ret, why, whylen);
    int rm = pvfs_remove(s, dir, name);
    if (ret == 0 && rm < 0) {
        pvfs_error_text(rm, why, whylen);
        ret = rm;
    }
    return ret;
}
