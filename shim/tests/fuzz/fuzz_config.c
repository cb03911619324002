/* libFuzzer target: the shim's config parser (pfs_config_parse_text) on arbitrary bytes, then matching a
 * path against what it accepted. A parse either succeeds or fails with one non-empty line in err; the
 * sanitizers (address, undefined) turn any memory error, leak or UB into a finding. Built and run by
 * fuzz.sh (issue 14, docs/reliability.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfsshim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1); /* the parser takes a C string: the bytes up to the first NUL */
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    pfs_config cfg;
    char err[512];
    err[0] = '\0';
    if (pfs_config_parse_text(text, &cfg, err, sizeof err) == 0) {
        const char *tail = NULL;
        (void)pfs_config_match(&cfg, "/mnt/orangefs/run/out/part.0", &tail);
        (void)pfs_config_match(&cfg, text, &tail);
        pfs_config_free(&cfg);
    } else if (err[0] == '\0' || strchr(err, '\n') != NULL) {
        fprintf(stderr, "a refused config must say why in one line, got \"%s\"\n", err);
        abort();
    }
    free(text);
    return 0;
}
