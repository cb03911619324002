/* relayout-mkfiles DIR FIRST COUNT: create the empty files DIR/f<FIRST> ... DIR/f<FIRST+COUNT-1>
 * (numbers zero-padded to 7 digits, so name order is number order) through libpvfs2, one create each:
 * the test and bench trees of many files, which a pvfs2-touch per file would take minutes to make.
 * The files get DIR's hints, as any new file. Test-only: not installed. Exit 0 when all were created
 * (an existing name counts as created). */
#include "relayout.h"

#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    struct session s;
    PVFS_object_ref dir, file;
    char *end1, *end2;
    long first = argc == 4 ? strtol(argv[2], &end1, 10) : -1;
    long count = argc == 4 ? strtol(argv[3], &end2, 10) : -1;
    if (argc != 4 || *end1 || *end2 || first < 0 || count < 0 || first + count > 10000000) {
        fputs("usage: relayout-mkfiles DIR FIRST COUNT\n", stderr);
        return 2;
    }
    int ret = PVFS_util_init_defaults();
    if (ret == 0)
        ret = PVFS_util_gen_credential_defaults(&s.cred);
    if (ret == 0)
        ret = resolve_path(&s, argv[1], &dir);
    for (long i = first; ret == 0 && i < first + count; i++) {
        char name[24];
        snprintf(name, sizeof name, "f%07ld", i);
        ret = pvfs_create(&s, dir, name, &file);
        if (ret == -PVFS_EEXIST)
            ret = 0;
    }
    if (ret < 0) {
        char text[300];
        pvfs_error_text(ret, text, sizeof text);
        fprintf(stderr, "relayout-mkfiles: %s: %s\n", argv[1], text);
    }
    PVFS_sys_finalize();
    return ret < 0 ? 1 : 0;
}
