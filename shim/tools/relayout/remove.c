/* pfs-relayout remove PATH...: delete files through libpvfs2. OrangeFS 2.10's client tools have no rm
 * (pvfs2-remove-object removes an object by handle and leaves its directory entry), and the operator's
 * trace retention (kinds/layoutpolicy/learn.py) deletes old runs' trace files with this, from the
 * collector's copy container, which has the OrangeFS image's tools but no mount. */
#include "relayout.h"

#include <stdlib.h>
#include <string.h>

int remove_path(struct session *s, const char *path)
{
    char text[300];
    const char *slash = strrchr(path, '/');
    if (!slash || !slash[1] || slash == path) {
        fprintf(stderr, "pfs-relayout: %s: not a file below a directory\n", path);
        return -1;
    }
    size_t n = (size_t)(slash - path);
    char *dir = malloc(n + 1);
    if (!dir)
        return -1;
    memcpy(dir, path, n);
    dir[n] = '\0';
    PVFS_object_ref parent;
    int ret = resolve_path(s, dir, &parent);
    if (ret == 0)
        ret = pvfs_remove(s, parent, slash + 1);
    free(dir);
    if (ret < 0) {
        pvfs_error_text(ret, text, sizeof text);
        fprintf(stderr, "pfs-relayout: %s: cannot remove: %s\n", path, text);
        return ret;
    }
    fputs("PFSLAYOUT-REMOVED", stdout);
    put_report_field(path);
    putchar('\n');
    return 0;
}
