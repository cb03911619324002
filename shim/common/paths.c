/* Path helpers shared by the shim and the probe: ROMIO prefixes and mkdir -p. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "pfs_common.h"

size_t pfs_romio_prefix_len(const char *path)
{
    size_t i = 0;
    while (isalnum((unsigned char)path[i]) || path[i] == '_')
        i++;
    return i > 0 && path[i] == ':' ? i + 1 : 0;
}

const char *pfs_romio_bare(const char *path)
{
    return path + pfs_romio_prefix_len(path);
}

int pfs_mkdir_p(const char *dir, char *failed, size_t failed_len)
{
    char buf[4096];
    if (strlen(dir) >= sizeof buf) {
        errno = ENAMETOOLONG;
        if (failed && failed_len)
            snprintf(failed, failed_len, "%s", dir);
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", dir);
    if (!buf[0])
        return 0;
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        const char c = *p;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
            if (failed && failed_len)
                snprintf(failed, failed_len, "%s", buf);
            return -1;
        }
        *p = c;
        if (!c)
            break;
    }
    return 0;
}
