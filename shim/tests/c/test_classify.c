/* pfs_classify (the shim's per-request layout of an `auto` replica) against the planner's hint mapping:
 * operator/tests/vectors/classify-vectors.json, written by generate_classify_vectors.py from
 * pfslayout.planner (the hints a layout gets, and the layout a request then behaves as). */
#include <jansson.h>
#include <stdlib.h>

#include "check.h"
#include "vectors.h"
#include "pfsshim.h"

int main(int argc, char **argv)
{
    json_t *doc = vectors_load(argc, argv, "classify-vectors.json", "pfslayout-classify-vectors/1");
    if (!doc)
        return argc != 2 ? 2 : check_done("test_classify");
    json_t *cases = json_object_get(doc, "cases");
    CHECK(json_array_size(cases) >= 50, "expected the full vector set, got %zu", json_array_size(cases));
    for (size_t i = 0; i < json_array_size(cases); i++) {
        json_t *c = json_array_get(cases, i);
        const char *id = json_string_value(json_object_get(c, "id"));
        json_t *exp = json_object_get(c, "expected");
        pfs_layout want;
        CHECK(pfs_layout_parse(json_string_value(json_object_get(exp, "layout")), &want) == 0, "%s: layout", id);
        json_t *wg = json_object_get(exp, "g");
        long want_g = json_is_integer(wg) ? (long)json_integer_value(wg) : 0;
        pfs_layout got;
        long g = -1;
        pfs_classify((long)json_integer_value(json_object_get(c, "n")),
                     (long)json_integer_value(json_object_get(c, "strip_size")),
                     (long)json_integer_value(json_object_get(c, "datafiles")),
                     (uint64_t)json_integer_value(json_object_get(c, "offset")),
                     (uint64_t)json_integer_value(json_object_get(c, "size")), &got, &g);
        CHECK(got == want && g == want_g, "%s: got %s g=%ld, expected %s g=%ld", id, pfs_layout_name(got), g,
              pfs_layout_name(want), want_g);
    }
    json_decref(doc);
    return check_done("test_classify");
}
