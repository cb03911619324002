/* pfsprobe's per-file realisation of a layout (place_servers, layout_realisation) against the planner's
 * directory hints: every case of operator/tests/vectors/classify-vectors.json with a "planner" object
 * carries the datafile count and strip (0 = none) that pfslayout.planner.hints.hints_for gives that layout,
 * sharing and request size on n servers; the probe must realise the layout with exactly those. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "vectors.h"
#include "place.h"

int main(int argc, char **argv)
{
    json_t *doc = vectors_load(argc, argv, "classify-vectors.json", "pfslayout-classify-vectors/1");
    if (!doc)
        return argc != 2 ? 2 : check_done("test_probe_place");
    json_t *cases = json_object_get(doc, "cases");
    size_t checked = 0, strips = 0;
    int *servers = NULL;
    for (size_t i = 0; i < json_array_size(cases); i++) {
        json_t *c = json_array_get(cases, i), *pj = json_object_get(c, "planner");
        if (!json_is_object(pj))
            continue;
        const char *id = json_string_value(json_object_get(c, "id"));
        const char *layout = json_string_value(json_object_get(pj, "layout"));
        const char *sharing = json_string_value(json_object_get(pj, "sharing"));
        const int n = (int)json_integer_value(json_object_get(c, "n"));
        json_t *gj = json_object_get(pj, "g");
        probe_place pl = {0};
        if (strcmp(layout, "1-DH") == 0)
            pl.layout = LAYOUT_1DH;
        else if (strcmp(layout, "1-DV") == 0)
            pl.layout = LAYOUT_1DV;
        else if (strcmp(layout, "2-D") == 0)
            pl.layout = LAYOUT_2D;
        else {
            CHECK(0, "%s: unknown planner layout %s", id, layout);
            continue;
        }
        CHECK(strcmp(sharing, "shared") == 0 || strcmp(sharing, "file-per-process") == 0, "%s: sharing %s", id,
              sharing);
        pl.g = json_is_integer(gj) ? (int)json_integer_value(gj) : 0;
        pl.servers = n;
        pl.idx = 0;
        pl.p = 1;
        pl.request_size = (int64_t)json_integer_value(json_object_get(pj, "request_size"));
        pl.shared = strcmp(sharing, "shared") == 0;
        const long want_count = (long)json_integer_value(json_object_get(c, "datafiles"));
        const int64_t want_strip = (int64_t)json_integer_value(json_object_get(c, "strip_size"));
        servers = realloc(servers, sizeof *servers * (size_t)n);
        if (!servers)
            return 2;
        int64_t strip = -1;
        const int count = place_servers(&pl, n, servers, &strip);
        CHECK(count == want_count, "%s: %d datafiles, the hints give %ld", id, count, want_count);
        if (want_strip) {
            CHECK(strip == want_strip, "%s: strip %lld, the hints give %lld", id, (long long)strip,
                  (long long)want_strip);
            strips++;
        } else {
            CHECK(strip > 0, "%s: a file without a strip in the hints still needs one (got %lld)", id,
                  (long long)strip);
        }
        int dfiles;
        int64_t rule_strip;
        layout_realisation(pl.layout, pl.g, n, pl.shared, pl.request_size, &dfiles, &rule_strip);
        CHECK(dfiles == want_count && rule_strip == want_strip, "%s: layout_realisation %d/%lld, hints %ld/%lld",
              id, dfiles, (long long)rule_strip, want_count, (long long)want_strip);
        checked++;
    }
    free(servers);
    CHECK(checked >= 500, "expected the full planner vector set, got %zu cases", checked);
    printf("test_probe_place: %zu planner cases (%zu with a strip)\n", checked, strips);
    json_decref(doc);
    return check_done("test_probe_place");
}
