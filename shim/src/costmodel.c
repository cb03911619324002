/* Per-request cost of seeds 000/003 Table 2 — the C twin of pfslayout.costmodel.formulas.
 *
 * Both are checked against operator/tests/vectors/cost-vectors.json (shim/tests/c/test_costmodel.c).
 * printed: 003 Table 2 exactly as printed, ⌈n/g⌉ everywhere, 2-D client-bound T_e = m⌈p/g⌉e.
 * corrected: the serial-count max form with docs/seeds.md §6 A1 (⌊n/g⌋ as the parallel divisor), A2
 * (client-bound 2-D T_e = m⌈n/g⌉e) and A3 (1-DH client side m·n connections).
 * With params.overlap the total is the larger of the network side (T_e + T_x) and the storage side
 * (T_s + T_rw) instead of the sum, as formulas.total_time. A write split over nt >= 2 servers into pieces
 * below PFS_SMALL_IO adds p·s·v_small_write to T_x, as formulas.transfer_time.
 * Doubles throughout: counts up to 2^53 are exact, and the routing hot path must not allocate.
 */
#include <string.h>

#include "pfsshim.h"

void pfs_params_for_op(const pfs_params *in, int write, pfs_params *out)
{
    pfs_params o = *in;
    if (write) {
        if (in->e_write >= 0)
            o.e = in->e_write;
        if (in->beta_write >= 0)
            o.beta = in->beta_write;
    } else {
        o.v_small_write = PFS_PARAM_UNSET;
    }
    o.e_write = o.beta_write = PFS_PARAM_UNSET;
    *out = o;
}

static inline double ceil_div(long a, long b) { return (double)((a + b - 1) / b); }
static inline double dmax(double a, double b) { return a > b ? a : b; }

int pfs_cost_eval(pfs_variant var, pfs_layout layout, const pfs_params *prm, long p, long n, long m, long g,
                  double s, int random, pfs_cost *out)
{
    double ce, cv, ca, cb, nt; /* nt: servers one request touches (the e_shared term counts p·nt messages) */
    if (p < 1 || n < 1 || m < 1 || s < 0)
        return -1;
    const double P = (double)p, N = (double)n, M = (double)m;
    if (layout == PFS_L_1DV) {
        const double q = ceil_div(p, n);
        if (var == PFS_V_PRINTED) {
            const int server_bound = p > n && m <= (long)q;
            ce = server_bound ? q : M;
            cv = server_bound ? q * s : M * s;
        } else {
            ce = dmax(q, M);
            cv = dmax(q * s, M * s);
        }
        ca = q;
        cb = q * s;
        nt = 1.0;
    } else if (layout == PFS_L_1DH) {
        const double q = ceil_div(p, n);
        if (var == PFS_V_PRINTED) {
            const int server_bound = m <= (long)q;
            ce = server_bound ? P : M * N;
            cv = server_bound ? P * s / N : M * s;
        } else {
            ce = dmax(P, M * N);
            cv = dmax(P * s / N, M * s);
        }
        ca = P;
        cb = P * s / N;
        nt = N;
    } else if (layout == PFS_L_2D) {
        if (g < 1 || g > n)
            return -1;
        const double G = ceil_div(p, g), k = ceil_div(n, g);
        nt = k;
        if (var == PFS_V_PRINTED) {
            if (p <= g) {
                ce = M * k;
                cv = M * s;
            } else if (M * k <= G) { /* m <= ⌈p/g⌉/⌈n/g⌉ without rounding */
                ce = G;
                cv = G * s / k;
            } else {
                ce = M * G; /* as printed (docs/seeds.md §6 A2) */
                cv = M * s;
            }
            ca = G;
            cb = G * s / k;
        } else {
            const double kpar = (double)(n / g);
            ce = dmax(G, M * k);
            cv = dmax(G * s / kpar, M * s);
            ca = G;
            cb = G * s / kpar;
        }
    } else {
        return -1;
    }
    const double alpha = random ? prm->alpha_rand : prm->alpha_seq;
    out->T_e = ce * prm->e;
    if (prm->e_shared > 0)
        out->T_e += P * nt * prm->e_shared;
    out->T_x = cv * prm->v;
    if (prm->v_small_write > 0 && nt >= 2 && s < PFS_SMALL_IO * nt) /* formulas.small_split */
        out->T_x += P * s * prm->v_small_write;
    out->T_s = ca * alpha;
    out->T_rw = cb * prm->beta;
    out->total = prm->overlap ? dmax(out->T_e + out->T_x, out->T_s + out->T_rw)
                              : out->T_e + out->T_x + out->T_s + out->T_rw;
    return 0;
}

int pfs_layout_parse(const char *name, pfs_layout *out)
{
    static const struct { const char *name; pfs_layout l; } names[] = {
        {"1-DV", PFS_L_1DV}, {"1-DH", PFS_L_1DH}, {"2-D", PFS_L_2D}, {"auto", PFS_L_AUTO}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i].name) == 0) {
            *out = names[i].l;
            return 0;
        }
    return -1;
}

const char *pfs_layout_name(pfs_layout l)
{
    switch (l) {
    case PFS_L_1DV: return "1-DV";
    case PFS_L_1DH: return "1-DH";
    case PFS_L_2D: return "2-D";
    default: return "auto";
    }
}
