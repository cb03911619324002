/* relayout-test-cursor: a resumed walk visits exactly the files after the cursor, in the walk's own
 * order (each directory's names by strcmp, depth first), whether or not the cursor still exists.
 * Exit 0 when every check holds; each failure is printed. */
#include "relayout.h"

#include <stdlib.h>
#include <string.h>

static int failures;

/* The files of a tree: no name is both a file and a directory. Names chosen around the cases strcmp
 * orders differently from a path compare: "a.x" and "a-b" sort before "a/..."-less "ab", "b.c" after
 * "b" but "b/..." is a directory's content, "ba" after both. */
static const char *const files[] = {
    "a", "a-b", "a.x", "b/a", "b/c/d", "b/c/e", "b/c/f/g", "b/d", "b.c", "ba", "c/a/b/c", "z",
};
/* Cursors of files gone since, or never there: the order alone must place every file. */
static const char *const gone[] = {
    "", "0", "aa", "b/b", "b/c", "b/c/zz", "b/c/d/e", "b/c/f", "ba/x", "c", "c/a", "zz", "/b//c/d/",
};

static size_t split(const char *path, char *buf, size_t len, char **parts)
{
    size_t n = 0;
    snprintf(buf, len, "%s", path);
    char *save = NULL;
    for (char *p = strtok_r(buf, "/", &save); p; p = strtok_r(NULL, "/", &save))
        parts[n++] = p;
    return n;
}

/* The walk order: components compared by strcmp, a path before the paths below it. */
static int after(const char *path, const char *cursor)
{
    char a[256], b[256], *pa[16], *pb[16];
    size_t na = split(path, a, sizeof a, pa), nb = split(cursor, b, sizeof b, pb);
    for (size_t i = 0; i < na && i < nb; i++) {
        int cmp = strcmp(pa[i], pb[i]);
        if (cmp)
            return cmp > 0;
    }
    return na > nb;
}

/* What scan.c's walk does with the file `path` when resumed at `c`: each directory on the way is
 * placed by cursor_step while the walk is still on the cursor's path. */
static int visited(const struct cursor *c, const char *path)
{
    char buf[256], *parts[16];
    size_t n = split(path, buf, sizeof buf, parts);
    int on_cursor = c->count > 0;
    for (size_t depth = 0; depth < n && on_cursor; depth++) {
        int is_file = depth + 1 == n;
        switch (cursor_step(c, depth, parts[depth])) {
        case CURSOR_BEFORE: return 0;
        case CURSOR_AFTER: return 1;
        case CURSOR_ON_PATH:
            if (is_file)
                return 0;
            break;
        }
    }
    return 1;
}

static void check_cursor(const char *text)
{
    struct cursor c;
    if (cursor_parse(text, &c) < 0) {
        printf("FAIL cursor_parse(%s)\n", text);
        failures++;
        return;
    }
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        int want = after(files[i], text), got = visited(&c, files[i]);
        if (want != got) {
            printf("FAIL resume after \"%s\": %s %s, expected %s\n", text, files[i], got ? "visited" : "skipped",
                   want ? "visited" : "skipped");
            failures++;
        }
    }
    cursor_free(&c);
}

int main(void)
{
    /* The list is in walk order, so resuming at the k-th file visits exactly the ones after it. */
    for (size_t i = 1; i < sizeof files / sizeof *files; i++)
        if (!after(files[i], files[i - 1])) {
            printf("FAIL the file list is not in walk order at %s\n", files[i]);
            failures++;
        }
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        check_cursor(files[i]);
    for (size_t i = 0; i < sizeof gone / sizeof *gone; i++)
        check_cursor(gone[i]);

    struct cursor c;
    if (cursor_parse("/b//c/d/", &c) < 0 || c.count != 3 || strcmp(c.parts[2], "d") != 0) {
        printf("FAIL empty components are not dropped\n");
        failures++;
    }
    cursor_free(&c);
    if (cursor_parse(NULL, &c) < 0 || c.count != 0 || cursor_step(&c, 0, "a") != CURSOR_AFTER) {
        printf("FAIL no cursor does not start at the beginning\n");
        failures++;
    }
    cursor_free(&c);
    printf("%s: %d failures\n", failures ? "FAIL" : "ok", failures);
    return failures ? 1 : 0;
}
