/* The scan: walk a directory tree, compare every regular file with what a file created now in its
 * own directory gets, report (and with a migration budget, re-lay out) the files that differ. With a
 * file budget the walk stops when it is spent and says where (a page); the next run resumes there
 * (cursor.c). */
#include "relayout.h"

#include <stdlib.h>
#include <string.h>

struct walk {
    struct session *s;
    struct scan_options *opt;
    struct scan_totals *tot;
    const char *root; /* the directory as the caller named it: the <dir> field of every line */
    long listed, stale, scanned, refused;
    struct cursor resume; /* where the previous page stopped (no components: from the beginning) */
    char *last;           /* the last file compared, relative to root: this page's cursor */
    int stopped;          /* the file budget ran out before the walk ended */
};

/* What a new file in one directory gets, measured once per directory and only if it holds files. */
struct probe {
    int state; /* 0 not yet, 1 measured, -1 could not be measured */
    struct layout current;
};

static void complain(struct walk *w, const char *path, const char *what, int err)
{
    char text[300];
    pvfs_error_text(err, text, sizeof text);
    fprintf(stderr, "pfs-relayout: %s: %s: %s\n", path, what, text);
    w->tot->errors = 1;
}

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir);
    const char *sep = n && dir[n - 1] == '/' ? "" : "/";
    char *out = malloc(n + strlen(sep) + strlen(name) + 1);
    if (out)
        sprintf(out, "%s%s%s", dir, sep, name);
    return out;
}

int resolve_path(struct session *s, const char *path, PVFS_object_ref *ref)
{
    char fspath[PVFS_NAME_MAX + 1];
    PVFS_fs_id fs_id;
    PVFS_sysresp_lookup resp;
    int ret = PVFS_util_resolve(path, &fs_id, fspath, PVFS_NAME_MAX);
    if (ret < 0)
        return ret;
    memset(&resp, 0, sizeof resp);
    ret = PVFS_sys_lookup(fs_id, fspath, &s->cred, &resp, PVFS2_LOOKUP_LINK_FOLLOW, NULL);
    if (ret == 0)
        *ref = resp.ref;
    return ret;
}

/* Stale or not, and with budget left, migrated: the copy is made in the file's own directory. */
static void visit_file(struct walk *w, PVFS_object_ref dir, const char *dirpath, struct probe *p, const char *name,
                       PVFS_object_ref ref, const PVFS_sys_attr *attr)
{
    struct layout have, now;
    char why[512];
    char *path = join(dirpath, name);
    if (!path)
        return;
    if (p->state == 0) {
        p->state = layout_probe(w->s, dir, &p->current, why, sizeof why) == 0 ? 1 : -1;
        if (p->state < 0) {
            fprintf(stderr, "pfs-relayout: %s: cannot create a probe file to learn the current layout: %s\n",
                    dirpath, why);
            w->tot->errors = 1;
        }
    }
    /* Without the current layout there is nothing to compare with: the directory's files are not scanned. */
    int ret = p->state > 0 ? layout_read(w->s, ref, attr->dfile_count, &have) : 1;
    if (ret < 0)
        complain(w, path, "cannot read its layout", ret);
    if (ret == 0) {
        w->scanned++;
        if (layout_differs(&have, &p->current)) {
            if (w->opt->migrate && migrate_refused(w->s, attr, why, sizeof why)) {
                /* Refused again on every run: listed within the same bound as the stale files. */
                if (w->refused++ < w->opt->max_list)
                    report_failed(w->root, path, why);
                w->tot->failed++;
            } else if (w->opt->migrate && w->opt->max_migrate > 0) {
                w->opt->max_migrate--;
                if (migrate_file(w->s, dir, name, ref, &p->current, &now, why, sizeof why) == 0) {
                    report_migrated(w->root, path, &have, &now);
                    w->tot->migrated++;
                    free(path);
                    return;
                }
                report_failed(w->root, path, why);
                w->tot->failed++;
            }
            w->stale++;
            if (w->listed < w->opt->max_list) {
                report_stale(w->root, path, &have);
                w->listed++;
            }
        }
    }
    free(path);
}

static int skipped(const char *name)
{
    return strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
           strncmp(name, RELAYOUT_OWN_PREFIX, strlen(RELAYOUT_OWN_PREFIX)) == 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Where walk_dir is: the directory's client path, its path relative to the scanned one ("" there),
 * its depth below it, and whether its path is the resume cursor's prefix (its entries are placed
 * against the cursor). */
struct place {
    const char *path, *rel;
    size_t depth;
    int on_cursor;
};

static void walk_dir(struct walk *w, PVFS_object_ref dir, const struct place *at);

/* A file the budget allows is counted and becomes the cursor before it is compared: a file that
 * cannot be read is not tried again on the next page either. */
static int take_file(struct walk *w, const struct place *at, const char *name)
{
    if (w->opt->max_files == 0) {
        w->stopped = 1;
        return 0;
    }
    char *rel = *at->rel ? join(at->rel, name) : strdup(name);
    if (!rel)
        return 0;
    if (w->opt->max_files > 0)
        w->opt->max_files--;
    free(w->last);
    w->last = rel;
    return 1;
}

static void visit_entry(struct walk *w, PVFS_object_ref dir, const struct place *at, struct probe *p,
                        const char *name, enum cursor_step step)
{
    const char *dirpath = at->path;
    PVFS_object_ref ref;
    PVFS_sys_attr attr;
    int ret = pvfs_lookup_in(w->s, dir, name, &ref);
    if (ret == 0)
        ret = pvfs_getattr(w->s, ref, &attr);
    if (ret < 0) {
        /* Gone since the listing (removed or renamed by someone else): nothing to judge. */
        if (ret != -PVFS_ENOENT) {
            char *path = join(dirpath, name);
            complain(w, path ? path : name, "cannot look it up", ret);
            free(path);
        }
        return;
    }
    if (attr.objtype == PVFS_TYPE_METAFILE) {
        /* Only a file after the cursor is new to this pass (the others were compared on earlier pages). */
        if (step == CURSOR_AFTER && take_file(w, at, name))
            visit_file(w, dir, dirpath, p, name, ref, &attr);
    } else if (attr.objtype == PVFS_TYPE_DIRECTORY &&
               strncmp(name, RELAYOUT_REPLICA_PREFIX, strlen(RELAYOUT_REPLICA_PREFIX)) != 0) {
        char *sub = join(dirpath, name);
        char *rel = *at->rel ? join(at->rel, name) : strdup(name);
        struct place below = {sub, rel, at->depth + 1, step == CURSOR_ON_PATH};
        if (sub && rel)
            walk_dir(w, ref, &below);
        free(sub);
        free(rel);
    }
    PVFS_util_release_sys_attr(&attr);
}

static void walk_dir(struct walk *w, PVFS_object_ref dir, const struct place *at)
{
    char **names;
    size_t count;
    struct probe p = {0};
    int ret = pvfs_list(w->s, dir, &names, &count);
    if (ret < 0) {
        complain(w, at->path, "cannot list the directory", ret);
        return;
    }
    /* Name order: a bounded run lists and migrates the same files first every time, and a page's
     * cursor places every entry before or after it. */
    qsort(names, count, sizeof *names, by_name);
    for (size_t i = 0; i < count && !w->stopped; i++) {
        if (skipped(names[i]))
            continue;
        /* Placed before the lookup: the entries an earlier page covered cost no round trip. */
        enum cursor_step step = at->on_cursor ? cursor_step(&w->resume, at->depth, names[i]) : CURSOR_AFTER;
        if (step != CURSOR_BEFORE)
            visit_entry(w, dir, at, &p, names[i], step);
    }
    pvfs_free_list(names, count);
}

int scan_directory(struct session *s, const char *path, const char *resume, struct scan_options *opt,
                   struct scan_totals *tot)
{
    struct walk w = {.s = s, .opt = opt, .tot = tot, .root = path};
    PVFS_object_ref ref;
    if (cursor_parse(resume, &w.resume) < 0) {
        fprintf(stderr, "pfs-relayout: %s: out of memory\n", path);
        tot->errors = 1;
        return -1;
    }
    int ret = resolve_path(s, path, &ref);
    if (ret < 0) {
        complain(&w, path, "cannot resolve the directory", ret);
        cursor_free(&w.resume);
        return ret;
    }
    struct place top = {path, "", 0, w.resume.count > 0};
    walk_dir(&w, ref, &top);
    if (w.stopped) {
        /* The budget ran out here: the counts are this page's, the cursor where the next one starts. */
        report_page(path, w.stale, w.scanned, w.last ? w.last : resume ? resume : "");
    } else {
        fputs("PFSLAYOUT-STALE-COUNT", stdout);
        put_report_field(path);
        printf("\t%ld\t%ld\n", w.stale, w.scanned);
    }
    tot->scanned += w.scanned;
    tot->stale += w.stale;
    free(w.last);
    cursor_free(&w.resume);
    return 0;
}

/* One line per path with everything the rule looks at: for tests and for a person asking why. */
int inspect_path(struct session *s, const char *path)
{
    struct scan_totals tot = {0};
    struct walk w = {.s = s, .tot = &tot, .root = path};
    PVFS_object_ref ref;
    PVFS_sys_attr attr;
    struct layout l;
    int ret = resolve_path(s, path, &ref);
    if (ret == 0 && (ret = pvfs_getattr(s, ref, &attr)) == 0) {
        ret = layout_read(s, ref, attr.dfile_count, &l);
        PVFS_util_release_sys_attr(&attr);
    }
    if (ret < 0) {
        complain(&w, path, "cannot read its layout", ret);
        return ret;
    }
    fputs("PFSLAYOUT-LAYOUT", stdout);
    put_report_field(path);
    printf("\t%d\t%d\t%s", l.datafiles, l.stored, l.stuffed ? "stuffed" : "unstuffed");
    put_report_field(l.dist_name);
    put_report_field(l.params[0] ? l.params : "-");
    putchar('\n');
    return 0;
}
