/* The report: one tab-separated record a line on stdout (main.c lists them). */
#include "relayout.h"

/* Report fields are tab-separated, one record a line: a tab, newline or backslash in a name is
 * written as \t, \n or \\ so that no name can forge or split a line. */
void put_report_field(const char *text)
{
    putchar('\t');
    for (const char *p = text; *p; p++) {
        switch (*p) {
        case '\t': fputs("\\t", stdout); break;
        case '\n': fputs("\\n", stdout); break;
        case '\\': fputs("\\\\", stdout); break;
        default: putchar(*p);
        }
    }
}

static void put_strip(const struct layout *l)
{
    if (l->strip_size >= 0)
        printf("\t%lld", (long long)l->strip_size);
    else
        fputs("\t-", stdout);
}

void report_stale(const char *root, const char *path, const struct layout *l)
{
    fputs("PFSLAYOUT-STALE", stdout);
    put_report_field(root);
    put_report_field(path);
    printf("\t%d", l->datafiles);
    put_report_field(l->dist_name);
    put_strip(l);
    putchar('\n');
}

void report_migrated(const char *root, const char *path, const struct layout *old, const struct layout *now)
{
    fputs("PFSLAYOUT-MIGRATED", stdout);
    put_report_field(root);
    put_report_field(path);
    printf("\t%d\t%d\n", old->datafiles, now->datafiles);
}

void report_failed(const char *root, const char *path, const char *why)
{
    fputs("PFSLAYOUT-MIGRATE-FAILED", stdout);
    put_report_field(root);
    put_report_field(path);
    put_report_field(why);
    putchar('\n');
}

/* Where a bounded scan stopped in `root`: this page's counts and the cursor the next page starts after. */
void report_page(const char *root, long stale, long scanned, const char *after)
{
    fputs("PFSLAYOUT-STALE-PAGE", stdout);
    put_report_field(root);
    printf("\t%ld\t%ld", stale, scanned);
    put_report_field(after);
    putchar('\n');
}

/* A directory this run did not start (the file budget was spent): its cursor stays what it was. */
void report_not_started(const char *root, const char *resume)
{
    report_page(root, 0, 0, resume ? resume : "");
}
