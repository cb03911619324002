/* Opening one of the shared vector files (operator/tests/vectors/) in a C test run as `PROG FILE`: the
 * usage line, a read error and a wrong `format` go through CHECK like every other failure. */
#ifndef PFS_VECTORS_H
#define PFS_VECTORS_H
#include <jansson.h>
#include <string.h>

#include "check.h"

/* The parsed document, or NULL when there is none to test: then return 2 for a wrong command line
 * (argc != 2), else check_done (the read error was counted). A document of another format is returned
 * with the failure counted, so its cases still report. */
static inline json_t *vectors_load(int argc, char **argv, const char *file, const char *format)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s %s\n", argv[0], file);
        return NULL;
    }
    json_error_t err;
    json_t *doc = json_load_file(argv[1], 0, &err);
    CHECK(doc != NULL, "cannot read %s: %s", argv[1], err.text);
    if (doc) {
        const char *got = json_string_value(json_object_get(doc, "format"));
        CHECK(got && strcmp(got, format) == 0, "unknown vector format %s (expected %s)", got ? got : "(none)",
              format);
    }
    return doc;
}
#endif
