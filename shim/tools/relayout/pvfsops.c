/* Thin wrappers around the libpvfs2 system interface: one place that refreshes the credential (a
 * long migration can outlive it) and turns PVFS error codes into text for the report. */
#include "relayout.h"

#include <stdlib.h>
#include <string.h>

/* libpvfs2 hands out the readdir array from PINT_malloc, which keeps a header in front of the block, so
 * it must go back through PINT_free (exported by libpvfs2, declared only in its internal pint-malloc.h;
 * the installed pvfs2-ls gets the same through that header's free() macro). */
void PINT_free(void *mem);

void pvfs_error_text(int err, char *buf, size_t len)
{
    char text[256] = "";
    PVFS_strerror_r(err, text, (int)sizeof text);
    snprintf(buf, len, "%s (%d)", text[0] ? text : "error", err);
}

static PVFS_credential *cred(struct session *s)
{
    PVFS_util_refresh_credential(&s->cred);
    return &s->cred;
}

int pvfs_lookup_in(struct session *s, PVFS_object_ref dir, const char *name, PVFS_object_ref *out)
{
    PVFS_sysresp_lookup resp;
    memset(&resp, 0, sizeof resp);
    /* Symlinks are not followed: the scan must not leave the directory tree through one. */
    int ret = PVFS_sys_ref_lookup(dir.fs_id, (char *)name, dir, cred(s), &resp, PVFS2_LOOKUP_LINK_NO_FOLLOW,
                                  NULL);
    if (ret == 0)
        *out = resp.ref;
    return ret;
}

int pvfs_getattr(struct session *s, PVFS_object_ref ref, PVFS_sys_attr *attr)
{
    PVFS_sysresp_getattr resp;
    memset(&resp, 0, sizeof resp);
    int ret = PVFS_sys_getattr(ref, PVFS_ATTR_SYS_ALL_NOHINT, cred(s), &resp, NULL);
    *attr = resp.attr;
    return ret;
}

int pvfs_create(struct session *s, PVFS_object_ref dir, const char *name, PVFS_object_ref *out)
{
    PVFS_sys_attr attr;
    PVFS_sysresp_create resp;
    memset(&attr, 0, sizeof attr);
    memset(&resp, 0, sizeof resp);
    PVFS_credential *c = cred(s);
    attr.owner = c->userid;
    attr.group = c->num_groups ? c->group_array[0] : 0;
    /* Owner-only until the copy is complete: nobody reads a half-written file through its temp name. */
    attr.perms = PVFS_util_translate_mode(0600, 0);
    attr.mask = PVFS_ATTR_SYS_ALL_SETABLE;
    /* No distribution, no layout, no datafile count: the directory's hints decide, as for any new file. */
    int ret = PVFS_sys_create((char *)name, dir, attr, c, NULL, &resp, NULL, NULL);
    if (ret == 0)
        *out = resp.ref;
    return ret;
}

int pvfs_remove(struct session *s, PVFS_object_ref dir, const char *name)
{
    return PVFS_sys_remove((char *)name, dir, cred(s), NULL);
}

int pvfs_io(struct session *s, PVFS_object_ref ref, enum PVFS_io_type type, int64_t offset, void *buf,
            size_t len, size_t *done)
{
    PVFS_Request mem;
    PVFS_sysresp_io resp;
    memset(&resp, 0, sizeof resp);
    int ret = PVFS_Request_contiguous((int32_t)len, PVFS_BYTE, &mem);
    if (ret < 0)
        return ret;
    ret = PVFS_sys_io(ref, PVFS_BYTE, offset, buf, mem, cred(s), &resp, type, NULL);
    PVFS_Request_free(&mem);
    *done = ret == 0 ? (size_t)resp.total_completed : 0;
    return ret;
}

static int add_name(char ***names, size_t *count, size_t *cap, const char *name)
{
    if (*count == *cap) {
        size_t ncap = *cap ? *cap * 2 : 64;
        char **grown = realloc(*names, ncap * sizeof *grown);
        if (!grown)
            return -PVFS_ENOMEM;
        *names = grown;
        *cap = ncap;
    }
    if (!((*names)[*count] = strdup(name)))
        return -PVFS_ENOMEM;
    (*count)++;
    return 0;
}

/* All entry names of `dir`, read before anything in it changes: a migration creates and renames
 * entries, which would move the readdir position of an iteration still under way. */
int pvfs_list(struct session *s, PVFS_object_ref dir, char ***names, size_t *count)
{
    PVFS_ds_position token = PVFS_READDIR_START;
    size_t cap = 0;
    int ret = 0;
    *names = NULL;
    *count = 0;
    while (ret == 0) {
        PVFS_sysresp_readdir resp;
        memset(&resp, 0, sizeof resp);
        ret = PVFS_sys_readdir(dir, token, 512, cred(s), &resp, NULL);
        if (ret < 0)
            break;
        for (uint32_t i = 0; i < resp.pvfs_dirent_outcount && ret == 0; i++)
            ret = add_name(names, count, &cap, resp.dirent_array[i].d_name);
        /* Allocated (by libpvfs2's own allocator) only when entries came back. */
        if (resp.pvfs_dirent_outcount)
            PINT_free(resp.dirent_array);
        if (resp.pvfs_dirent_outcount == 0 || resp.token == PVFS_READDIR_END)
            break;
        token = resp.token;
    }
    if (ret < 0) {
        pvfs_free_list(*names, *count);
        *names = NULL;
        *count = 0;
    }
    return ret;
}

void pvfs_free_list(char **names, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
}
