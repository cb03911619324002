/* pfs-relayout: shared declarations. See main.c for what the tool does and the stale rule. */
#ifndef PFS_RELAYOUT_H
#define PFS_RELAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <pvfs2.h>
#include <pvfs2-sysint.h>
#include <pvfs2-util.h>

/* Every name the tool creates starts with this, and the scan skips such names: they are our probe,
 * check and migration files, never user data. */
#define RELAYOUT_OWN_PREFIX ".pfslayout-"
#define RELAYOUT_MIGRATE_PREFIX ".pfslayout-migrate-"
#define RELAYOUT_PROBE_PREFIX ".pfslayout-probe-"
/* Subdirectories the operator keeps as separate entries of their own (replicas): not scanned. */
#define RELAYOUT_REPLICA_PREFIX ".replica-"

#define RELAYOUT_DIST_NAME_MAX 64
#define RELAYOUT_PARAMS_MAX 1100 /* varstrip's strips string is at most 1025 bytes */

/* What decides where a file's bytes go: the datafile count and the distribution with its parameters. */
struct layout {
    int32_t datafiles;  /* the count the file has, or gets once it outgrows its first strip (stuffed) */
    int32_t stored;     /* datafiles it has right now (1 while stuffed) */
    int stuffed;        /* the server still keeps it in one datafile */
    char dist_name[RELAYOUT_DIST_NAME_MAX];
    char params[RELAYOUT_PARAMS_MAX]; /* "strip_size:N", "strips:..." or "" (compared as text) */
    int64_t strip_size; /* simple_stripe's strip, -1 for other distributions */
};

/* One connection's state: the credential every call uses. */
struct session {
    PVFS_credential cred;
};

/* layout.c */
int layout_read(struct session *s, PVFS_object_ref ref, int32_t dfile_count, struct layout *out);
int layout_decode_dist(const unsigned char *buf, size_t len, struct layout *out);
int layout_differs(const struct layout *file, const struct layout *current);
int layout_probe(struct session *s, PVFS_object_ref dir, struct layout *out, char *why, size_t whylen);

/* pvfsops.c: thin wrappers that turn PVFS errors into text */
void pvfs_error_text(int err, char *buf, size_t len);
int pvfs_lookup_in(struct session *s, PVFS_object_ref dir, const char *name, PVFS_object_ref *out);
int pvfs_getattr(struct session *s, PVFS_object_ref ref, PVFS_sys_attr *attr);
int pvfs_create(struct session *s, PVFS_object_ref dir, const char *name, PVFS_object_ref *out);
int pvfs_remove(struct session *s, PVFS_object_ref dir, const char *name);
int pvfs_io(struct session *s, PVFS_object_ref ref, enum PVFS_io_type type, int64_t offset, void *buf,
            size_t len, size_t *done);
int pvfs_list(struct session *s, PVFS_object_ref dir, char ***names, size_t *count);
void pvfs_free_list(char **names, size_t count);

/* migrate.c */
int migrate_refused(const struct session *s, const PVFS_sys_attr *attr, char *why, size_t whylen);
int migrate_file(struct session *s, PVFS_object_ref dir, const char *name, PVFS_object_ref file,
                 const struct layout *current, struct layout *now, char *why, size_t whylen);

/* cursor.c: where a bounded scan stopped, as the relative path of the last file compared */
struct cursor {
    char *text;    /* a copy of the path, split in place */
    char **parts;  /* its components, empty ones dropped */
    size_t count;  /* 0: no cursor, the walk starts at the beginning */
};
/* Where an entry of a directory on the cursor's path stands (directories off that path are walked whole). */
enum cursor_step {
    CURSOR_BEFORE,  /* before the cursor: compared in an earlier page, skipped */
    CURSOR_ON_PATH, /* the cursor's component here. A file: the cursor itself, or one that sorts before the
                     * cursor's path below it: skipped. A directory: walked with the cursor (below the
                     * cursor's last component, which a directory may have replaced, all follows it) */
    CURSOR_AFTER,   /* after the cursor: walked as usual */
};
int cursor_parse(const char *text, struct cursor *c);
void cursor_free(struct cursor *c);
enum cursor_step cursor_step(const struct cursor *c, size_t depth, const char *name);

/* scan.c */
struct scan_options {
    int migrate;      /* re-lay out stale files (else only report them) */
    long max_list;    /* stale files listed per directory */
    long max_migrate; /* copies this run may still start (shared by all directories) */
    long max_files;   /* files this run may still compare (shared by all directories); -1: no bound */
};
struct scan_totals {
    long scanned, stale, migrated, failed;
    int errors; /* something could not be read: the report is incomplete */
};
/* `resume`: the cursor a previous page of this directory printed ("" or NULL: from the beginning). */
int scan_directory(struct session *s, const char *path, const char *resume, struct scan_options *opt,
                   struct scan_totals *tot);
int inspect_path(struct session *s, const char *path);
/* a client path to its object (links followed) */
int resolve_path(struct session *s, const char *path, PVFS_object_ref *ref);

/* report.c: the lines main.c's header lists; each field with its tab, newline, backslash escaped */
void put_report_field(const char *text);
void report_stale(const char *root, const char *path, const struct layout *l);
void report_migrated(const char *root, const char *path, const struct layout *old, const struct layout *now);
void report_failed(const char *root, const char *path, const char *why);
void report_page(const char *root, long stale, long scanned, const char *after);
/* The line of a directory this run did not start (the file budget was spent): resume where it was. */
void report_not_started(const char *root, const char *resume);

/* remove.c */
int remove_path(struct session *s, const char *path);

#endif
