/* The shim's config parser against the configs pfslayout renders (operator/tests/vectors/shim-configs.json,
 * written by generate_shim_configs.py from pfslayout.shimconfig): every `accepted` config parses; every
 * `refused` one is refused with an error line that starts with the field the vector names. An accepted
 * config's e_write/beta_write/e_shared are parsed to what it says (unset when absent), and overlap (false
 * when absent). */
#include <jansson.h>
#include <stdlib.h>

#include "check.h"
#include "vectors.h"
#include "pfsshim.h"

int main(int argc, char **argv)
{
    json_t *doc = vectors_load(argc, argv, "shim-configs.json", "pfslayout-shim-config-vectors/1");
    if (!doc)
        return argc != 2 ? 2 : check_done("test_config_vectors");
    json_t *acc = json_object_get(doc, "accepted"), *ref = json_object_get(doc, "refused");
    CHECK(json_array_size(acc) >= 20 && json_array_size(ref) >= 10, "expected the full vector set");
    char err[512];
    int write_terms = 0, overlaps = 0;
    for (size_t i = 0; i < json_array_size(acc); i++) {
        json_t *v = json_array_get(acc, i);
        const char *name = json_string_value(json_object_get(v, "name"));
        pfs_config cfg;
        int rc = pfs_config_parse_text(json_string_value(json_object_get(v, "text")), &cfg, err, sizeof err);
        CHECK(rc == 0, "accepted[%zu] %s: the shim refuses what pfslayout rendered: %s", i, name, err);
        if (rc != 0)
            continue;
        /* the optional per-operation terms arrive as written, and are unset (negative) when absent */
        json_t *text = json_loads(json_string_value(json_object_get(v, "text")), 0, NULL);
        json_t *prm = json_object_get(text, "params");
        const char *wn[] = {"e_write", "beta_write", "e_shared", "v_small_write"};
        const double got[] = {cfg.params.e_write, cfg.params.beta_write, cfg.params.e_shared, cfg.params.v_small_write};
        for (int k = 0; k < 4; k++) {
            json_t *x = prm ? json_object_get(prm, wn[k]) : NULL;
            if (x)
                write_terms++;
            CHECK(x ? got[k] == json_number_value(x) : got[k] < 0, "accepted[%zu] %s: params.%s = %g", i, name,
                  wn[k], got[k]);
        }
        /* overlap arrives as written, false when absent */
        json_t *ov = prm ? json_object_get(prm, "overlap") : NULL;
        overlaps += ov != NULL;
        CHECK(cfg.params.overlap == (ov ? json_is_true(ov) : 0), "accepted[%zu] %s: params.overlap = %d", i, name,
              cfg.params.overlap);
        json_decref(text);
        pfs_config_free(&cfg);
    }
    CHECK(write_terms >= 4, "expected configs with e_write/beta_write/e_shared, found %d terms", write_terms);
    CHECK(overlaps >= 2, "expected configs with params.overlap, found %d", overlaps);
    for (size_t i = 0; i < json_array_size(ref); i++) {
        json_t *v = json_array_get(ref, i);
        const char *name = json_string_value(json_object_get(v, "name"));
        const char *field = json_string_value(json_object_get(v, "field"));
        pfs_config cfg;
        err[0] = 0;
        int rc = pfs_config_parse_text(json_string_value(json_object_get(v, "text")), &cfg, err, sizeof err);
        CHECK(rc != 0, "refused[%zu] %s: the shim accepts what pfslayout refuses", i, name);
        if (rc == 0) {
            pfs_config_free(&cfg);
            continue;
        }
        size_t n = strlen(field);
        CHECK(strncmp(err, field, n) == 0 && err[n] == ':', "refused[%zu] %s: error names another field: %s "
              "(expected %s)", i, name, err, field);
    }
    json_decref(doc);
    return check_done("test_config_vectors");
}
