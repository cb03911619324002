/* pfs-relayout: find (and re-lay out) files whose OrangeFS layout is not the one their directory's
 * hints give new files.
 *
 *   pfs-relayout scan    [--max-list N] [--max-files F] [--resume DIR CURSOR]... [--] DIR...
 *   pfs-relayout migrate [--max-list N] [--max-migrate M] [--max-files F] [--resume DIR CURSOR]... [--] DIR...
 *   pfs-relayout inspect PATH...
 *   pfs-relayout remove PATH...
 *
 * DIR and PATH are client paths below a pvfs2tab mount point (PVFS2TAB_FILE), as for pvfs2-ls; no
 * mount is needed. Directory hints (user.pvfs2.num_dfiles, dist_name, dist_params) apply to files
 * created after they are set; this tool handles the files that already exist.
 *
 * scan walks each DIR recursively (regular files only; names starting with ".pfslayout-" are the
 * operator's own probe, check and temporary files and are skipped, as are subdirectories named
 * ".replica-*", which are entries of their own) and prints, tab-separated, one line a record:
 *
 *   PFSLAYOUT-STALE        <dir> <file> <datafiles> <dist name> <strip size or ->   (at most N per DIR, default 100)
 *   PFSLAYOUT-STALE-COUNT  <dir> <stale files> <files scanned>                       (one per DIR)
 *
 * Pages. A large tree takes longer than a Job may run, so --max-files F bounds the files compared (F >= 1,
 * shared by all DIRs of the run; no bound without it). The walk is depth-first with each directory's
 * entries in strcmp order, so a position in it is the path of a file relative to DIR. When the budget
 * runs out inside a DIR, its count line is replaced by
 *
 *   PFSLAYOUT-STALE-PAGE   <dir> <stale files> <files scanned> <cursor>
 *
 * with the counts of this run and the cursor: the last file compared, relative to DIR (sub/b/file7).
 * "--resume DIR CURSOR" (DIR exactly as among the operands) starts the next run after it: in each
 * directory on the cursor's path, names before the cursor's are skipped (cursor.c). It is an order, not
 * a lookup, so a cursor whose file has gone meanwhile still works; files created before the cursor
 * meanwhile wait for the next pass. A DIR the run does not reach because the budget is spent gets a
 * PAGE line with 0 0 and the cursor it was given (empty: from its beginning). A DIR that finishes prints
 * its count line, with the counts of this run only (the caller sums the pages of a pass).
 *
 * migrate does the same and re-lays out up to M stale files (default 50: copies started, shared by
 * all DIRs of the run; a file it refuses before copying costs none: when not run as root, files of
 * other owners, whose owner the copy could not keep — at most N such lines per DIR): each is copied into ".pfslayout-migrate-<name>" beside it, which is created now and so
 * gets the directory's current layout; the copy is verified (size, FNV-1a checksum read back from the
 * copy, the original unchanged meanwhile, the copy's layout the current one), takes the original's
 * owner, group, mode and times, and is renamed over the original. Any failure removes the temporary
 * and leaves the original as it was.
 *
 *   PFSLAYOUT-MIGRATED        <dir> <file> <old datafiles> <new datafiles>
 *   PFSLAYOUT-MIGRATE-FAILED  <dir> <file> <reason>
 *
 * and its STALE lines and count are the files still stale after the run (failed or beyond M), so the
 * next run continues where this one stopped. Pages work the same way in migrate (M still applies).
 * inspect prints one line per path:
 *
 *   PFSLAYOUT-LAYOUT <path> <datafiles> <datafiles stored now> <stuffed|unstuffed> <dist name> <params or ->
 *
 * remove deletes each file PATH (remove.c) and prints "PFSLAYOUT-REMOVED <path>" for each one removed.
 *
 * In names, a tab, newline and backslash are written \t, \n and \\. Exit status: 0 when everything
 * could be read (MIGRATE-FAILED lines are results, not errors), 1 when a directory, file or probe
 * could not be read (said on stderr; the counts then miss those files), 2 on a usage or
 * initialisation error.
 *
 * The stale rule. "Differs" means: the file's datafile count, distribution name or distribution
 * parameters (strip_size for simple_stripe, the strips for varstrip_dist; other distributions by
 * name only) differ from those of a probe file created now in the file's OWN directory (a
 * subdirectory may carry other hints, and a migrated copy is created in the file's own directory too).
 * The datafile count of a file is the count it has, except for a stuffed file, where it is the count
 * the file gets once it grows. Why, by experiment against OrangeFS 2.10 servers (FileStuffing yes,
 * 4 servers, directory hints num_dfiles 4):
 *   - A new file is stuffed: PVFS_sys_getattr's dfile_count, "system.pvfs2.dh" and pvfs2-viewdist
 *     all say 1 datafile until a write goes past the first strip, whatever num_dfiles asked for.
 *     Comparing that count would call every small file stale under a num_dfiles > 1 hint, and a
 *     migrated copy of it would be stuffed again: migrated forever.
 *   - The server keeps the requested count of a stuffed file in the keyval "nd", readable as the
 *     attribute "system.pvfs2.nd" (int32), and removes it when it unstuffs the file, which then has
 *     exactly that many datafiles. So "nd" present = stuffed, and its value is the count the file has
 *     as soon as it holds more than one strip: that is the count compared.
 *   - A file created under a 1-datafile hint is never stuffed (the server only stuffs when more than
 *     one datafile is asked for): it has no "nd", 1 datafile, and is stale under a 4-datafile hint,
 *     small or not; migrated, it becomes a stuffed file that grows onto 4 servers.
 *   - The probe is measured, not computed from the hints, because the client caps num_dfiles at the
 *     number of servers, falls back to defaults for keys not set and ignores dist_params without
 *     dist_name; the probe is an empty (stuffed) file, read the same way as the files it is compared
 *     with.
 *   - Which servers hold the datafiles (layout, server_list) is not compared: ROUND_ROBIN starts each
 *     file on a random server, so two files created under the same hints differ there anyway.
 * Rename: PVFS_sys_rename onto an existing name replaces that entry (the client changes the target's
 * directory entry to the new handle, removes the source entry and then the old object), so the name
 * always resolves to the old file or to the verified copy.
 */
#include "relayout.h"

#include <stdlib.h>
#include <string.h>

static int usage(void)
{
    fputs("usage: pfs-relayout scan [--max-list N] [--max-files F] [--resume DIR CURSOR]... [--] DIR...\n"
          "       pfs-relayout migrate [--max-list N] [--max-migrate M] [--max-files F]\n"
          "                            [--resume DIR CURSOR]... [--] DIR...\n"
          "       pfs-relayout inspect PATH...\n"
          "       pfs-relayout remove PATH...\n",
          stderr);
    return 2;
}

static int parse_count(const char *text, long *out)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (!*text || *end || v < 0)
        return -1;
    *out = v;
    return 0;
}

/* The --resume pairs of a run: argv[at[k]] is a DIR, argv[at[k] + 1] its cursor. */
struct resumes {
    int *at;
    int count;
};

/* Each DIR named once, and among the operands: a cursor for a directory not scanned is a caller's
 * mistake, not something to ignore. */
static int check_resumes(int argc, char **argv, int first, const struct resumes *r)
{
    for (int k = 0; k < r->count; k++) {
        const char *dir = argv[r->at[k]];
        int known = 0;
        for (int i = first; i < argc && !known; i++)
            known = strcmp(argv[i], dir) == 0;
        for (int j = 0; j < k && known; j++)
            known = strcmp(argv[r->at[j]], dir) != 0;
        if (!known) {
            fprintf(stderr, "pfs-relayout: --resume %s: not one of the directories, or named twice\n", dir);
            return -1;
        }
    }
    return 0;
}

static const char *resume_of(char **argv, const struct resumes *r, const char *dir)
{
    for (int k = 0; k < r->count; k++)
        if (strcmp(argv[r->at[k]], dir) == 0)
            return argv[r->at[k] + 1];
    return NULL;
}

/* Options come first; what follows them is the list of directories (or paths for inspect). */
static int parse_options(int argc, char **argv, int paged, struct scan_options *opt, struct resumes *r,
                         int *first)
{
    int i = 2;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (paged && strcmp(argv[i], "--resume") == 0 && i + 2 < argc) {
            r->at[r->count++] = i + 1;
            i += 2;
            continue;
        }
        long *target = strcmp(argv[i], "--max-list") == 0                   ? &opt->max_list
                       : opt->migrate && strcmp(argv[i], "--max-migrate") == 0 ? &opt->max_migrate
                       : paged && strcmp(argv[i], "--max-files") == 0        ? &opt->max_files
                                                                              : NULL;
        /* A budget of no files would make no progress: pages must move. */
        if (!target || i + 1 >= argc || parse_count(argv[i + 1], target) < 0 ||
            (target == &opt->max_files && *target < 1)) {
            fprintf(stderr, "pfs-relayout: bad option %s\n", argv[i]);
            return -1;
        }
        i++;
    }
    *first = i;
    return i < argc ? check_resumes(argc, argv, i, r) : -1;
}

static int start(struct session *s)
{
    int ret = PVFS_util_init_defaults();
    if (ret == 0)
        ret = PVFS_util_gen_credential_defaults(&s->cred);
    if (ret < 0) {
        char text[300];
        pvfs_error_text(ret, text, sizeof text);
        fprintf(stderr, "pfs-relayout: cannot initialise the OrangeFS client (PVFS2TAB_FILE?): %s\n", text);
    }
    return ret;
}

int main(int argc, char **argv)
{
    struct scan_options opt = {0, 100, 50, -1};
    struct scan_totals tot = {0};
    struct session s;
    int first, status = 0;
    if (argc < 2)
        return usage();
    int scan = strcmp(argv[1], "scan") == 0, migrate = strcmp(argv[1], "migrate") == 0;
    int inspect = strcmp(argv[1], "inspect") == 0, remove = strcmp(argv[1], "remove") == 0;
    opt.migrate = migrate;
    /* At most one --resume per three arguments. */
    struct resumes resumes = {calloc((size_t)argc / 3 + 1, sizeof(int)), 0};
    if (!resumes.at)
        return 2;
    if (!(scan || migrate || inspect || remove) ||
        parse_options(argc, argv, scan || migrate, &opt, &resumes, &first) < 0) {
        free(resumes.at);
        return usage();
    }
    /* Line-buffered: report lines and stderr complaints interleave in the Job log as they happened. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (start(&s) < 0)
        return 2;
    for (int i = first; i < argc; i++) {
        const char *resume = resume_of(argv, &resumes, argv[i]);
        if ((scan || migrate) && opt.max_files == 0) {
            report_not_started(argv[i], resume);
            continue;
        }
        int ret = inspect ? inspect_path(&s, argv[i])
                  : remove ? remove_path(&s, argv[i])
                           : scan_directory(&s, argv[i], resume, &opt, &tot);
        if (ret < 0)
            status = 1;
    }
    if (tot.errors)
        status = 1;
    PVFS_sys_finalize();
    free(resumes.at);
    return status;
}
