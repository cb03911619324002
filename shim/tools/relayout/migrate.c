/* Re-lay out one file: copy it into a temporary sibling (created now, so the directory's current
 * hints decide its layout), verify the copy, then rename the copy over the original. The original is
 * only ever replaced by a verified copy: any failure removes the temporary and leaves it untouched. */
#include "relayout.h"

#include <stdlib.h>
#include <string.h>

#define COPY_CHUNK (4u << 20)

/* FNV-1a: not cryptographic, but it tells a copy that lost or reordered bytes from the original,
 * which is all the verification needs. */
static uint64_t fnv1a(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}
#define FNV_START 14695981039346656037ull

static void fail_with(char *why, size_t whylen, const char *what, int err)
{
    char text[300];
    pvfs_error_text(err, text, sizeof text);
    snprintf(why, whylen, "%s: %s", what, text);
}

/* The temporary's name: beside the original (same directory, so the rename stays in one directory and
 * the copy gets that directory's hints), hidden, and skipped by every scan. */
static void temp_name(const char *name, char *out, size_t len)
{
    size_t need = strlen(RELAYOUT_MIGRATE_PREFIX) + strlen(name);
    if (need < PVFS_NAME_MAX && need < len) {
        snprintf(out, len, RELAYOUT_MIGRATE_PREFIX "%s", name);
        return;
    }
    /* Too long with the prefix: a hash of the name keeps it unique per original. */
    snprintf(out, len, RELAYOUT_MIGRATE_PREFIX "%016llx",
             (unsigned long long)fnv1a(FNV_START, (const unsigned char *)name, strlen(name)));
}

/* Reads [0, size) of `from` and, when `to` is given, writes it there; the checksum of what was read. */
static int copy_bytes(struct session *s, PVFS_object_ref from, const PVFS_object_ref *to, int64_t size,
                      uint64_t *sum, char *why, size_t whylen)
{
    unsigned char *buf = malloc(COPY_CHUNK);
    int ret = 0;
    *sum = FNV_START;
    if (!buf) {
        snprintf(why, whylen, "out of memory");
        return -PVFS_ENOMEM;
    }
    for (int64_t off = 0; off < size && ret == 0; ) {
        size_t want = (size_t)(size - off < COPY_CHUNK ? size - off : COPY_CHUNK), got = 0, put = 0;
        ret = pvfs_io(s, from, PVFS_IO_READ, off, buf, want, &got);
        if (ret < 0) {
            fail_with(why, whylen, to ? "read" : "re-read", ret);
        } else if (got != want) {
            snprintf(why, whylen, "short read at offset %lld", (long long)(off + (int64_t)got));
            ret = -PVFS_EIO;
        } else if (to && (ret = pvfs_io(s, *to, PVFS_IO_WRITE, off, buf, want, &put)) < 0) {
            fail_with(why, whylen, "write", ret);
        } else if (to && put != want) {
            snprintf(why, whylen, "short write at offset %lld", (long long)(off + (int64_t)put));
            ret = -PVFS_EIO;
        } else {
            *sum = fnv1a(*sum, buf, want);
            off += (int64_t)want;
        }
    }
    free(buf);
    return ret;
}

/* The copy holds what the original held: same size, same checksum read back from the copy, and the
 * original did not change while it was copied (a writer still at work makes the copy stale). */
static int verify_copy(struct session *s, PVFS_object_ref file, PVFS_object_ref tmp, const PVFS_sys_attr *before,
                       uint64_t sum, char *why, size_t whylen)
{
    PVFS_sys_attr after, copy;
    uint64_t back;
    int ret = pvfs_getattr(s, file, &after);
    if (ret < 0) {
        fail_with(why, whylen, "getattr of the original after the copy", ret);
        return ret;
    }
    int changed = after.size != before->size || after.mtime != before->mtime;
    PVFS_util_release_sys_attr(&after);
    if (changed) {
        snprintf(why, whylen, "the file changed during the copy");
        return -PVFS_EAGAIN;
    }
    if ((ret = pvfs_getattr(s, tmp, &copy)) < 0) {
        fail_with(why, whylen, "getattr of the copy", ret);
        return ret;
    }
    int64_t copy_size = copy.size;
    PVFS_util_release_sys_attr(&copy);
    if (copy_size != before->size) {
        snprintf(why, whylen, "the copy has %lld bytes, the original %lld", (long long)copy_size,
                 (long long)before->size);
        return -PVFS_EIO;
    }
    if ((ret = copy_bytes(s, tmp, NULL, copy_size, &back, why, whylen)) < 0)
        return ret;
    if (back != sum) {
        snprintf(why, whylen, "the copy's checksum differs from the original's");
        return -PVFS_EIO;
    }
    return 0;
}

/* Owner, group, mode and times of the original, so the rename changes nothing but the layout. A
 * non-root run cannot give a file to another owner: the migration fails rather than steal the file. */
static int keep_attributes(struct session *s, PVFS_object_ref tmp, const PVFS_sys_attr *orig, char *why,
                           size_t whylen)
{
    PVFS_sys_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.owner = orig->owner;
    attr.group = orig->group;
    attr.perms = orig->perms;
    attr.atime = orig->atime;
    attr.mtime = orig->mtime;
    attr.mask = PVFS_ATTR_SYS_UID | PVFS_ATTR_SYS_GID | PVFS_ATTR_SYS_PERM | PVFS_ATTR_SYS_ATIME |
                PVFS_ATTR_SYS_ATIME_SET | PVFS_ATTR_SYS_MTIME | PVFS_ATTR_SYS_MTIME_SET;
    int ret = PVFS_sys_setattr(tmp, attr, &s->cred, NULL);
    if (ret < 0)
        fail_with(why, whylen, "cannot keep owner, mode and times", ret);
    return ret;
}

/* The copy must have what a new file gets now; if it does not, renaming it over the original would
 * gain nothing (and the next run would try again forever). */
static int check_new_layout(struct session *s, PVFS_object_ref tmp, const struct layout *current,
                            struct layout *now, char *why, size_t whylen)
{
    PVFS_sys_attr attr;
    int ret = pvfs_getattr(s, tmp, &attr);
    if (ret == 0) {
        ret = layout_read(s, tmp, attr.dfile_count, now);
        PVFS_util_release_sys_attr(&attr);
    }
    if (ret < 0) {
        fail_with(why, whylen, "layout of the copy", ret);
        return ret;
    }
    if (layout_differs(now, current)) {
        snprintf(why, whylen, "the copy got %d datafiles %s %s, not the directory's %d %s %s", now->datafiles,
                 now->dist_name, now->params, current->datafiles, current->dist_name, current->params);
        return -PVFS_EINVAL;
    }
    return 0;
}

static int copy_and_verify(struct session *s, PVFS_object_ref file, PVFS_object_ref tmp, const PVFS_sys_attr *orig,
                           const struct layout *current, struct layout *now, char *why, size_t whylen)
{
    uint64_t sum;
    int ret = copy_bytes(s, file, &tmp, orig->size, &sum, why, whylen);
    if (ret == 0)
        ret = verify_copy(s, file, tmp, orig, sum, why, whylen);
    if (ret == 0)
        ret = check_new_layout(s, tmp, current, now, why, whylen);
    if (ret == 0)
        ret = keep_attributes(s, tmp, orig, why, whylen);
    return ret;
}

/* Only root can give the copy to another owner: a non-root run refuses before copying anything (the
 * scan then spends no migration budget on the file). */
int migrate_refused(const struct session *s, const PVFS_sys_attr *attr, char *why, size_t whylen)
{
    if (s->cred.userid == 0 || attr->owner == s->cred.userid)
        return 0;
    snprintf(why, whylen, "owned by uid %u: a run as uid %u can keep the owner of its own files only",
             (unsigned)attr->owner, (unsigned)s->cred.userid);
    return 1;
}

int migrate_file(struct session *s, PVFS_object_ref dir, const char *name, PVFS_object_ref file,
                 const struct layout *current, struct layout *now, char *why, size_t whylen)
{
    char tmpname[PVFS_NAME_MAX + 1];
    PVFS_object_ref tmp;
    PVFS_sys_attr orig;
    temp_name(name, tmpname, sizeof tmpname);
    int ret = pvfs_getattr(s, file, &orig);
    if (ret < 0) {
        fail_with(why, whylen, "getattr", ret);
        return ret;
    }
    if (migrate_refused(s, &orig, why, whylen)) {
        PVFS_util_release_sys_attr(&orig);
        return -PVFS_EPERM;
    }
    /* A temporary of an interrupted run is ours and incomplete: it goes before we start again. */
    if (pvfs_lookup_in(s, dir, tmpname, &tmp) == 0)
        pvfs_remove(s, dir, tmpname);
    if ((ret = pvfs_create(s, dir, tmpname, &tmp)) < 0) {
        fail_with(why, whylen, "cannot create the temporary copy", ret);
    } else {
        ret = copy_and_verify(s, file, tmp, &orig, current, now, why, whylen);
        /* The rename replaces the original's entry in one server operation (chdirent): readers see the
         * old file or the new one, never no file. */
        if (ret == 0 && (ret = PVFS_sys_rename(tmpname, dir, (char *)name, dir, &s->cred, NULL)) < 0)
            fail_with(why, whylen, "rename over the original", ret);
        if (ret < 0)
            pvfs_remove(s, dir, tmpname);
    }
    PVFS_util_release_sys_attr(&orig);
    return ret;
}
