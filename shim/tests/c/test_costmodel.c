/* The C cost model against the shared vectors (operator/tests/vectors/cost-vectors.json): every case,
 * every term, both variants — the same file the Python model is tested with. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "vectors.h"
#include "pfsshim.h"

static int close_enough(double got, double want)
{
    if (want == 0.0)
        return got == 0.0;
    return fabs(got - want) <= 1e-12 * fabs(want) + 1e-18;
}

/* the params object of a case: the five, plus e_write/beta_write/e_shared when given (unset otherwise) and
 * overlap (false unless true) */
static pfs_params read_params(json_t *prm)
{
    json_t *ew = json_object_get(prm, "e_write"), *bw = json_object_get(prm, "beta_write");
    json_t *es = json_object_get(prm, "e_shared"), *sw = json_object_get(prm, "v_small_write");
    pfs_params P = {json_number_value(json_object_get(prm, "e")), json_number_value(json_object_get(prm, "v")),
                    json_number_value(json_object_get(prm, "alpha_seq")),
                    json_number_value(json_object_get(prm, "alpha_rand")),
                    json_number_value(json_object_get(prm, "beta")),
                    ew ? json_number_value(ew) : PFS_PARAM_UNSET, bw ? json_number_value(bw) : PFS_PARAM_UNSET,
                    es ? json_number_value(es) : PFS_PARAM_UNSET, sw ? json_number_value(sw) : PFS_PARAM_UNSET,
                    json_is_true(json_object_get(prm, "overlap"))};
    return P;
}

/* Checks every case of one list; a case with an "op" is costed with that operation's parameters
 * (pfs_params_for_op), one without with e and beta. Returns the number of cases. */
static size_t check_cases(json_t *cases, size_t seen[2][3], size_t *writes_differ, size_t *shared,
                          size_t *overlap, size_t *small)
{
    size_t n = json_array_size(cases);
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(cases, i);
        const char *id = json_string_value(json_object_get(c, "id"));
        const char *variant = json_string_value(json_object_get(c, "variant"));
        pfs_layout layout;
        CHECK(pfs_layout_parse(json_string_value(json_object_get(c, "layout")), &layout) == 0, "%s: layout", id);
        pfs_variant var = strcmp(variant, "printed") == 0 ? PFS_V_PRINTED : PFS_V_CORRECTED;
        json_t *exp = json_object_get(c, "expected"), *op = json_object_get(c, "op");
        const pfs_params given = read_params(json_object_get(c, "params"));
        pfs_params P = given;
        if (given.e_shared > 0)
            (*shared)++;
        if (given.overlap)
            (*overlap)++;
        if (given.v_small_write > 0)
            (*small)++;
        if (op) {
            const char *o = json_string_value(op);
            CHECK(o && (strcmp(o, "read") == 0 || strcmp(o, "write") == 0), "%s: op must be read or write", id);
            const int write = o && strcmp(o, "write") == 0;
            pfs_params_for_op(&given, write, &P);
            CHECK(write || P.v_small_write < 0, "%s: a read kept v_small_write", id);
            if (write && (P.e != given.e || P.beta != given.beta))
                (*writes_differ)++;
        }
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
    return n;
}

int main(int argc, char **argv)
{
    json_t *doc = vectors_load(argc, argv, "cost-vectors.json", "pfslayout-cost-vectors/1");
    if (!doc)
        return argc != 2 ? 2 : check_done("test_costmodel");
    size_t seen[2][3] = {{0}}, op_seen[2][3] = {{0}}, differ = 0, unused = 0, shared = 0, unshared = 0;
    size_t overlap = 0, unoverlapped = 0, small = 0, unsmall = 0;
    const size_t n = check_cases(json_object_get(doc, "cases"), seen, &unused, &unshared, &unoverlapped, &unsmall);
    CHECK(n >= 100, "expected the full vector set, got %zu cases", n);
    CHECK(unused == 0 && unshared == 0 && unoverlapped == 0 && unsmall == 0,
          "a five-parameter case carries an op, e_shared, v_small_write or overlap");
    const size_t nop = check_cases(json_object_get(doc, "op_cases"), op_seen, &differ, &shared, &overlap, &small);
    CHECK(nop >= 100 && differ >= nop / 4, "expected the per-operation cases, got %zu (%zu writes with their own "
          "e or beta)", nop, differ);
    CHECK(shared >= nop / 8, "expected cases with e_shared, got %zu of %zu", shared, nop);
    CHECK(overlap >= nop / 8, "expected cases with overlap, got %zu of %zu", overlap, nop);
    CHECK(small >= nop / 8, "expected cases with v_small_write, got %zu of %zu", small, nop);
    for (int v = 0; v < 2; v++)
        for (int l = 0; l < 3; l++)
            CHECK(seen[v][l] > 0 && op_seen[v][l] > 0, "no vector for variant %d layout %d", v, l);
    printf("test_costmodel: %zu vector cases, %zu per-operation cases\n", n, nop);
    json_decref(doc);

    /* inputs the table cannot cost are rejected, not computed */
    pfs_params P = {3e-4, 1e-8, 1e-4, 3e-4, 1e-8, PFS_PARAM_UNSET, PFS_PARAM_UNSET, PFS_PARAM_UNSET, PFS_PARAM_UNSET,
                    0};
    pfs_cost c;
    CHECK(pfs_cost_eval(PFS_V_CORRECTED, PFS_L_2D, &P, 4, 8, 1, 0, 4096, 0, &c) == -1, "g = 0 accepted");
    CHECK(pfs_cost_eval(PFS_V_CORRECTED, PFS_L_2D, &P, 4, 8, 1, 9, 4096, 0, &c) == -1, "g > n accepted");
    CHECK(pfs_cost_eval(PFS_V_PRINTED, PFS_L_1DV, &P, 0, 8, 1, 0, 4096, 0, &c) == -1, "p = 0 accepted");
    CHECK(pfs_cost_eval(PFS_V_PRINTED, PFS_L_AUTO, &P, 1, 8, 1, 0, 4096, 0, &c) == -1, "auto costed directly");
    return check_done("test_costmodel");
}
