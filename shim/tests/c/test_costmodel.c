/* The C cost model against the shared vectors (operator/tests/vectors/cost-vectors.json): every case,
 * every term, both variants — the same file the Python model is tested with. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "pfsshim.h"

static int close_enough(double got, double want)
{
    if (want == 0.0)
        return got == 0.0;
    return fabs(got - want) <= 1e-12 * fabs(want) + 1e-18;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s cost-vectors.json\n", argv[0]);
        return 2;
    }
    json_error_t err;
    json_t *doc = json_load_file(argv[1], 0, &err);
    CHECK(doc != NULL, "cannot read %s: %s", argv[1], err.text);
    if (!doc)
        return check_done("test_costmodel");
    CHECK(strcmp(json_string_value(json_object_get(doc, "format")), "pfslayout-cost-vectors/1") == 0,
          "unknown vector format");
    json_t *cases = json_object_get(doc, "cases");
    size_t n = json_array_size(cases), seen[2][3] = {{0}};
    CHECK(n >= 100, "expected the full vector set, got %zu cases", n);
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(cases, i);
        const char *id = json_string_value(json_object_get(c, "id"));
        const char *variant = json_string_value(json_object_get(c, "variant"));
        pfs_layout layout;
        CHECK(pfs_layout_parse(json_string_value(json_object_get(c, "layout")), &layout) == 0, "%s: layout", id);
        pfs_variant var = strcmp(variant, "printed") == 0 ? PFS_V_PRINTED : PFS_V_CORRECTED;
        json_t *prm = json_object_get(c, "params"), *exp = json_object_get(c, "expected");
        pfs_params P = {json_number_value(json_object_get(prm, "e")), json_number_value(json_object_get(prm, "v")),
                        json_number_value(json_object_get(prm, "alpha_seq")),
                        json_number_value(json_object_get(prm, "alpha_rand")),
                        json_number_value(json_object_get(prm, "beta"))};
        json_t *g = json_object_get(c, "g");
        pfs_cost got;
        int rc = pfs_cost_eval(var, layout, &P, (long)json_integer_value(json_object_get(c, "p")),
                               (long)json_integer_value(json_object_get(c, "n")),
                               (long)json_integer_value(json_object_get(c, "m")),
                               json_is_integer(g) ? (long)json_integer_value(g) : 0,
                               (double)json_integer_value(json_object_get(c, "s")),
                               json_is_true(json_object_get(c, "random")), &got);
        CHECK(rc == 0, "%s: pfs_cost_eval rejected the inputs", id);
        const char *names[] = {"T_e", "T_x", "T_s", "T_rw", "total"};
        double vals[] = {got.T_e, got.T_x, got.T_s, got.T_rw, got.total};
        for (int k = 0; k < 5; k++) {
            double want = json_number_value(json_object_get(exp, names[k]));
            CHECK(close_enough(vals[k], want), "%s (%s, branch %s): %s = %.17g, expected %.17g", id, variant,
                  json_string_value(json_object_get(c, "branch")), names[k], vals[k], want);
        }
        seen[var][layout]++;
    }
    for (int v = 0; v < 2; v++)
        for (int l = 0; l < 3; l++)
            CHECK(seen[v][l] > 0, "no vector for variant %d layout %d", v, l);
    printf("test_costmodel: %zu vector cases\n", n);
    json_decref(doc);

    /* inputs the table cannot cost are rejected, not computed */
    pfs_params P = {3e-4, 1e-8, 1e-4, 3e-4, 1e-8};
    pfs_cost c;
    CHECK(pfs_cost_eval(PFS_V_CORRECTED, PFS_L_2D, &P, 4, 8, 1, 0, 4096, 0, &c) == -1, "g = 0 accepted");
    CHECK(pfs_cost_eval(PFS_V_CORRECTED, PFS_L_2D, &P, 4, 8, 1, 9, 4096, 0, &c) == -1, "g > n accepted");
    CHECK(pfs_cost_eval(PFS_V_PRINTED, PFS_L_1DV, &P, 0, 8, 1, 0, 4096, 0, &c) == -1, "p = 0 accepted");
    CHECK(pfs_cost_eval(PFS_V_PRINTED, PFS_L_AUTO, &P, 1, 8, 1, 0, 4096, 0, &c) == -1, "auto costed directly");
    return check_done("test_costmodel");
}
