/* pvfs2 backend: OrangeFS through libpvfs2's system interface, with no mount and no ROMIO driver. Each
 * file is created with an explicit server list (PVFS_SYS_LAYOUT_LIST) and a simple_stripe strip size (the
 * planner's directory-hints rule, place.c layout_realisation)
 * that realise the cell's layout, so file-per-process files are spread evenly over the servers as the
 * cost model assumes (OrangeFS's default layout starts every file on a random server). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pvfs2.h>

/* The installed pvfs2-mgmt.h includes headers an install does not ship (pint-uid-mgmt.h), so the two
 * management calls used here are declared as pvfs2-mgmt.h declares them. */
PVFS_error PVFS_mgmt_count_servers(PVFS_fs_id fs_id, int server_type, int *count);
PVFS_error PVFS_mgmt_get_server_array(PVFS_fs_id fs_id, int server_type, PVFS_BMI_addr_t *addr_array,
                                      int *inout_count_p);
#define PROBE_MGMT_IO_SERVER 1 /* PVFS_MGMT_IO_SERVER */

#include "backend.h"

struct probe_file {
    PVFS_object_ref ref;
    PVFS_Request req; /* contiguous request of the cell's size, reused by every call */
    int64_t req_len;
    char path[4352];
};

static PVFS_credential cred;
static int n_io;
static PVFS_BMI_addr_t *io_addrs;
static int initialised;

static void pvfs_msg(char *msg, const char *what, const char *path, int rc)
{
    char err[256] = "";
    PVFS_strerror_r(rc, err, sizeof err);
    snprintf(msg, PROBE_MSG_LEN, "%s %.200s: %.150s", what, path, err);
}

/* Splits an absolute file-system path into its parent and last component. */
static void split(const char *path, char *parent, size_t np, char *name, size_t nn)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(parent, np, "/");
        snprintf(name, nn, "%s", path);
        return;
    }
    size_t len = (size_t)(slash - path);
    if (len == 0)
        snprintf(parent, np, "/");
    else
        snprintf(parent, np, "%.*s", (int)len, path);
    snprintf(name, nn, "%s", slash + 1);
}

static int resolve(const char *path, PVFS_fs_id *fs, char *fspath, int n, char *msg)
{
    int rc = PVFS_util_resolve(path, fs, fspath, n);
    if (rc < 0) {
        snprintf(msg, PROBE_MSG_LEN, "targets: %.200s is below no pvfs2tab mount point (%s); give a path under "
                 "one listed in $PVFS2TAB_FILE", path, rc == -PVFS_ENOENT ? "not found" : "unresolvable");
        return -1;
    }
    if (fspath[0] == '\0')
        snprintf(fspath, (size_t)n, "/");
    return 0;
}

static int lookup(PVFS_fs_id fs, const char *fspath, PVFS_object_ref *ref)
{
    PVFS_sysresp_lookup resp;
    memset(&resp, 0, sizeof resp);
    int rc = PVFS_sys_lookup(fs, (char *)fspath, &cred, &resp, PVFS2_LOOKUP_LINK_FOLLOW, NULL);
    if (rc == 0)
        *ref = resp.ref;
    return rc;
}

static int pvfs2_init(probe_grid *g, char *msg)
{
    int rc = PVFS_util_init_defaults();
    if (rc < 0) {
        pvfs_msg(msg, "backend: pvfs2: cannot initialise libpvfs2 from", "$PVFS2TAB_FILE", rc);
        return -1;
    }
    initialised = 1;
    if ((rc = PVFS_util_gen_credential_defaults(&cred)) < 0) {
        pvfs_msg(msg, "backend: pvfs2: no credential for", "this user", rc);
        return -1;
    }
    PVFS_fs_id fs = 0;
    char fspath[PVFS_NAME_MAX];
    for (int i = 0; i < g->n_targets; i++) {
        PVFS_fs_id this_fs;
        if (resolve(g->targets[i].path, &this_fs, fspath, sizeof fspath, msg))
            return -1;
        if (i > 0 && this_fs != fs) {
            snprintf(msg, PROBE_MSG_LEN, "targets[%d]: %.200s is in another OrangeFS file system than targets[0]; "
                     "probe one file system per run", i, g->targets[i].path);
            return -1;
        }
        fs = this_fs;
    }
    if ((rc = PVFS_mgmt_count_servers(fs, PROBE_MGMT_IO_SERVER, &n_io)) < 0 || n_io < 1) {
        pvfs_msg(msg, "backend: pvfs2: cannot count the I/O servers of", g->targets[0].path, rc);
        return -1;
    }
    io_addrs = calloc((size_t)n_io, sizeof(PVFS_BMI_addr_t));
    int count = n_io;
    if (!io_addrs || (rc = PVFS_mgmt_get_server_array(fs, PROBE_MGMT_IO_SERVER, io_addrs, &count)) < 0 ||
        count != n_io) {
        pvfs_msg(msg, "backend: pvfs2: cannot list the I/O servers of", g->targets[0].path, rc);
        return -1;
    }
    /* n is the file system's: a different --servers is a mistake, the default 1 is filled in. */
    if (g->servers != 1 && g->servers != n_io) {
        snprintf(msg, PROBE_MSG_LEN, "servers: %d given, but the file system has %d I/O servers; drop --servers "
                 "or give %d", g->servers, n_io, n_io);
        return -1;
    }
    g->servers = n_io;
    for (int i = 0; i < g->n_targets; i++)
        if (g->targets[i].g > n_io) {
            snprintf(msg, PROBE_MSG_LEN, "targets[%d].g: %d groups exceed the file system's %d I/O servers; use "
                     "g <= %d", i, g->targets[i].g, n_io, n_io);
            return -1;
        }
    return 0;
}

/* a new object owned by the probe's credential, all settable attributes given */
static PVFS_sys_attr new_attr(PVFS_permissions perms)
{
    PVFS_sys_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.owner = cred.userid;
    attr.group = cred.group_array[0];
    attr.perms = perms;
    attr.atime = attr.mtime = attr.ctime = time(NULL);
    attr.mask = PVFS_ATTR_SYS_ALL_SETABLE;
    return attr;
}

static int pvfs2_prepare_dir(const char *dir, char *msg)
{
    PVFS_fs_id fs;
    char fspath[PVFS_NAME_MAX], sofar[PVFS_NAME_MAX] = "";
    if (resolve(dir, &fs, fspath, sizeof fspath, msg))
        return -1;
    PVFS_object_ref parent;
    int rc = lookup(fs, "/", &parent);
    if (rc) {
        pvfs_msg(msg, "targets: cannot look up the root of", dir, rc);
        return -1;
    }
    char buf[PVFS_NAME_MAX];
    snprintf(buf, sizeof buf, "%s", fspath);
    char *save = NULL;
    for (char *comp = strtok_r(buf, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
        size_t len = strlen(sofar);
        snprintf(sofar + len, sizeof sofar - len, "/%s", comp);
        PVFS_object_ref here;
        rc = lookup(fs, sofar, &here);
        if (rc == -PVFS_ENOENT) {
            PVFS_sysresp_mkdir resp;
            rc = PVFS_sys_mkdir(comp, parent, new_attr(0777), &cred, &resp, NULL);
            if (rc == 0)
                here = resp.ref;
            else if (rc == -PVFS_EEXIST) /* another node made it first */
                rc = lookup(fs, sofar, &here);
        }
        if (rc) {
            pvfs_msg(msg, "targets: cannot create directory", dir, rc);
            return -1;
        }
        parent = here;
    }
    return 0;
}

static int create(PVFS_fs_id fs, const char *fspath, const probe_place *pl, PVFS_object_ref *ref, char *msg,
                  const char *path)
{
    char parent_path[PVFS_NAME_MAX], name[PVFS_NAME_MAX];
    split(fspath, parent_path, sizeof parent_path, name, sizeof name);
    PVFS_object_ref parent;
    int rc = lookup(fs, parent_path, &parent);
    if (rc) {
        pvfs_msg(msg, "targets: cannot look up the directory of", path, rc);
        return -1;
    }
    rc = PVFS_sys_remove(name, parent, &cred, NULL);
    if (rc && rc != -PVFS_ENOENT) {
        pvfs_msg(msg, "cannot remove the old", path, rc);
        return -1;
    }
    PVFS_sysresp_create resp;
    memset(&resp, 0, sizeof resp);
    if (pl->layout == LAYOUT_DEFAULT) {
        /* the baseline: no distribution, no server list, no datafile count — the file system decides, as it
         * does for an application that sets nothing */
        rc = PVFS_sys_create(name, parent, new_attr(0644), &cred, NULL, &resp, NULL, NULL);
        if (rc) {
            pvfs_msg(msg, "targets: cannot create", path, rc);
            return -1;
        }
        *ref = resp.ref;
        return 0;
    }
    int idx[4096];
    int64_t strip;
    int count = place_servers(pl, n_io < 4096 ? n_io : 4096, idx, &strip);
    PVFS_BMI_addr_t *addrs = calloc((size_t)count, sizeof(PVFS_BMI_addr_t));
    PVFS_sys_dist *dist = PVFS_sys_dist_lookup("simple_stripe");
    if (!addrs || !dist) {
        free(addrs);
        snprintf(msg, PROBE_MSG_LEN, "pvfs2: no simple_stripe distribution or out of memory");
        return -1;
    }
    for (int j = 0; j < count; j++)
        addrs[j] = io_addrs[idx[j]];
    PVFS_size strip_size = strip;
    PVFS_sys_dist_setparam(dist, "strip_size", &strip_size);
    PVFS_sys_layout layout;
    layout.algorithm = PVFS_SYS_LAYOUT_LIST;
    layout.server_list.count = count;
    layout.server_list.servers = addrs;
    PVFS_sys_attr attr = new_attr(0644);
    attr.dfile_count = count; /* LIST refuses a count below the list's length */
    attr.mask |= PVFS_ATTR_SYS_DFILE_COUNT;
    rc = PVFS_sys_create(name, parent, attr, &cred, dist, &resp, &layout, NULL);
    PVFS_sys_dist_free(dist);
    free(addrs);
    if (rc) {
        pvfs_msg(msg, "targets: cannot create", path, rc);
        return -1;
    }
    *ref = resp.ref;
    return 0;
}

static int pvfs2_open(const char *path, MPI_Comm comm, const probe_place *pl, int direct, probe_file **out,
                      char *msg)
{
    (void)direct;
    PVFS_fs_id fs;
    char fspath[PVFS_NAME_MAX];
    int me, ok = 1;
    MPI_Comm_rank(comm, &me);
    PVFS_object_ref ref;
    int resolved = resolve(path, &fs, fspath, sizeof fspath, msg) == 0;
    if (me == 0)
        ok = resolved && create(fs, fspath, pl, &ref, msg, path) == 0;
    MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
    if (!ok) {
        if (me != 0)
            snprintf(msg, PROBE_MSG_LEN, "targets: cannot create %.200s", path);
        return -1;
    }
    if (me != 0) {
        int rc = resolved ? lookup(fs, fspath, &ref) : -1;
        if (rc) {
            if (resolved)
                pvfs_msg(msg, "cannot look up", path, rc);
            return -1;
        }
    }
    probe_file *f = calloc(1, sizeof(*f));
    if (!f || PVFS_Request_contiguous((int32_t)pl->request_size, PVFS_BYTE, &f->req) < 0) {
        free(f);
        snprintf(msg, PROBE_MSG_LEN, "pvfs2: out of memory");
        return -1;
    }
    f->ref = ref;
    f->req_len = pl->request_size;
    snprintf(f->path, sizeof f->path, "%s", path);
    *out = f;
    return 0;
}

static int pvfs2_io(probe_file *f, int write, void *buf, int64_t len, int64_t off, char *msg)
{
    PVFS_Request req = f->req;
    if (len != f->req_len && PVFS_Request_contiguous((int32_t)len, PVFS_BYTE, &req) < 0) {
        snprintf(msg, PROBE_MSG_LEN, "pvfs2: out of memory");
        return -1;
    }
    PVFS_sysresp_io resp;
    memset(&resp, 0, sizeof resp);
    /* The same contiguous request describes memory and file, as ROMIO's contiguous path does. */
    int rc = PVFS_sys_io(f->ref, req, off, buf, req, &cred, &resp, write ? PVFS_IO_WRITE : PVFS_IO_READ, NULL);
    if (req != f->req)
        PVFS_Request_free(&req);
    if (rc) {
        pvfs_msg(msg, write ? "write to" : "read from", f->path, rc);
        return -1;
    }
    if (resp.total_completed != len) {
        snprintf(msg, PROBE_MSG_LEN, "%s %.200s at offset %lld: %lld of %lld bytes", write ? "write to" : "read from",
                 f->path, (long long)off, (long long)resp.total_completed, (long long)len);
        return -1;
    }
    return 0;
}

static int pvfs2_sync(probe_file *f, char *msg)
{
    int rc = PVFS_sys_flush(f->ref, &cred, NULL);
    if (rc) {
        pvfs_msg(msg, "flush", f->path, rc);
        return -1;
    }
    return 0;
}

static int pvfs2_size(probe_file *f, int64_t *size, char *msg)
{
    PVFS_sysresp_getattr resp;
    memset(&resp, 0, sizeof resp);
    int rc = PVFS_sys_getattr(f->ref, PVFS_ATTR_SYS_SIZE, &cred, &resp, NULL);
    if (rc) {
        pvfs_msg(msg, "getattr", f->path, rc);
        return -1;
    }
    *size = resp.attr.size;
    PVFS_util_release_sys_attr(&resp.attr);
    return 0;
}

static int pvfs2_close(probe_file *f, char *msg)
{
    (void)msg;
    PVFS_Request_free(&f->req);
    free(f);
    return 0;
}

static int pvfs2_remove(const char *path, char *msg)
{
    PVFS_fs_id fs;
    char fspath[PVFS_NAME_MAX], parent_path[PVFS_NAME_MAX], name[PVFS_NAME_MAX];
    if (resolve(path, &fs, fspath, sizeof fspath, msg))
        return -1;
    split(fspath, parent_path, sizeof parent_path, name, sizeof name);
    PVFS_object_ref parent;
    int rc = lookup(fs, parent_path, &parent);
    if (!rc)
        rc = PVFS_sys_remove(name, parent, &cred, NULL);
    if (rc && rc != -PVFS_ENOENT) {
        pvfs_msg(msg, "remove", path, rc);
        return -1;
    }
    return 0;
}

static void pvfs2_finalize(void)
{
    free(io_addrs);
    io_addrs = NULL;
    if (initialised)
        PVFS_sys_finalize();
    initialised = 0;
}

const probe_backend probe_backend_pvfs2 = {
    .name = "pvfs2",
    .collective = 0,
    .init = pvfs2_init,
    .prepare_dir = pvfs2_prepare_dir,
    .open = pvfs2_open,
    .io = pvfs2_io,
    .sync = pvfs2_sync,
    .evict = NULL,
    .size = pvfs2_size,
    .close = pvfs2_close,
    .remove = pvfs2_remove,
    .finalize = pvfs2_finalize,
};
