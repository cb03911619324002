/* Resuming a bounded scan: where a walk stopped, and which entries a resumed walk skips.
 *
 * The walk is depth-first and lists each directory's entries in strcmp order, so the files come in the
 * order of their relative paths compared component by component. The cursor is the relative path of
 * the last file compared ("sub/b/file7"); a resumed walk skips, in each directory on the cursor's path,
 * the names before the cursor's component there. Comparing, not looking up: a cursor whose file (or
 * directories) has gone since still places every entry before or after it. Pure: no libpvfs2 call. */
#include "relayout.h"

#include <stdlib.h>
#include <string.h>

int cursor_parse(const char *text, struct cursor *c)
{
    c->parts = NULL;
    c->count = 0;
    c->text = strdup(text ? text : "");
    if (!c->text)
        return -1;
    size_t n = 0;
    for (const char *p = c->text; *p; p++)
        n += *p == '/';
    c->parts = calloc(n + 1, sizeof *c->parts);
    if (!c->parts) {
        cursor_free(c);
        return -1;
    }
    /* Empty components ("a//b", a leading or trailing "/") name nothing: dropped. */
    char *save = NULL;
    for (char *part = strtok_r(c->text, "/", &save); part; part = strtok_r(NULL, "/", &save))
        c->parts[c->count++] = part;
    return 0;
}

void cursor_free(struct cursor *c)
{
    free(c->parts);
    free(c->text);
    c->parts = NULL;
    c->text = NULL;
    c->count = 0;
}

/* In a directory at `depth` below the scanned one whose path is the cursor's first `depth` components
 * (past the last one, everything follows the cursor). */
enum cursor_step cursor_step(const struct cursor *c, size_t depth, const char *name)
{
    if (depth >= c->count)
        return CURSOR_AFTER;
    int cmp = strcmp(name, c->parts[depth]);
    return cmp < 0 ? CURSOR_BEFORE : cmp > 0 ? CURSOR_AFTER : CURSOR_ON_PATH;
}
