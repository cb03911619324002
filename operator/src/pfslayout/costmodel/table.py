"""Per-request cost of seeds 000/003 Table 2 for 1-DV, 1-DH and 2-D, vectorised with numpy.

``coefficients`` returns the four coefficient arrays of ``formulas``; ``cost`` multiplies them out.
Calibration fits the parameters from the same coefficients, so prediction and fit can never disagree
about the table. Long arrays are costed through ``fast`` (grouped coefficient tables); the dependency
runs one way: table → fast → formulas.
"""

from __future__ import annotations

import numpy as np

from pfslayout.costmodel.fast import breakdown_per_request
from pfslayout.costmodel.formulas import (
    LAYOUTS,
    VARIANTS,
    ArrayLike,
    Coefficients,
    CostBreakdown,
    check_layout,
    check_variant,
    message_time,
    total_time,
    transfer_time,
    unchecked_coefficients,
    validate,
)
from pfslayout.costmodel.params import SEED_ETHERNET, CostParams
from pfslayout.errors import InputError

# Re-exported: callers have always found these here.
__all__ = ["LAYOUTS", "VARIANTS", "ArrayLike", "Coefficients", "CostBreakdown", "check_layout", "check_variant",
           "coefficients", "cost", "table_row", "validate"]

_FAST_MIN = 1 << 14  # arrays at least this long go through costmodel.fast


def coefficients(layout: str, p: ArrayLike, n: int, m: ArrayLike, s: ArrayLike, g: ArrayLike | None = None,
                 variant: str = "corrected") -> Coefficients:
    """Coefficients of e, v, α, β (and e_shared, v_small_write) for each request (see module doc). p, m, s, g broadcast
    together."""
    p_arr, n, m_arr, s_arr, g_arr = validate(layout, p, n, m, s, g, variant)
    return unchecked_coefficients(layout, p_arr, n, m_arr, s_arr, g_arr, variant)


def cost(layout: str, p: ArrayLike, n: int, m: ArrayLike, s: ArrayLike, g: ArrayLike | None = None, *,
         random: bool | np.ndarray = False, params: CostParams = SEED_ETHERNET,
         variant: str = "corrected") -> CostBreakdown:
    """Per-request completion time T = T_e + T_x + T_s + T_rw, seconds (003 Table 2); with
    ``params.overlap``, T = max(T_e + T_x, T_s + T_rw)."""
    p_arr, n, m_arr, s_arr, g_arr = validate(layout, p, n, m, s, g, variant)
    rnd = np.asarray(random)
    if rnd.dtype.kind in "iu" and np.all((rnd == 0) | (rnd == 1)):
        rnd = rnd.astype(bool)  # 0/1 flags, as C callers and CSV columns write them
    if rnd.dtype.kind != "b":
        raise InputError("random", f"must be a boolean or 0/1 (got {random!r:.40})")
    if s_arr.ndim == 1 and s_arr.shape[0] >= _FAST_MIN and (g_arr is None or g_arr.ndim == 0):
        # long traces: per-group coefficient tables and gathers beat a dozen full-length temporaries
        shape = s_arr.shape
        return breakdown_per_request(layout, np.broadcast_to(p_arr, shape), n, np.broadcast_to(m_arr, shape),
                                     s_arr, None if g_arr is None else int(g_arr), np.broadcast_to(rnd, shape),
                                     params, variant)
    c = unchecked_coefficients(layout, p_arr, n, m_arr, s_arr, g_arr, variant)
    alpha = np.where(rnd, params.alpha_rand, params.alpha_seq) if rnd.ndim else (
        params.alpha_rand if bool(rnd) else params.alpha_seq)
    T_e = message_time(c.ce, c.cm, params)
    T_x = transfer_time(c, params)
    T_s = c.ca * alpha
    T_rw = c.cb * params.beta
    total = total_time(T_e, T_x, T_s, T_rw, params)
    return CostBreakdown(layout=layout, T_e=T_e, T_x=T_x, T_s=T_s, T_rw=T_rw, total=total)


def table_row(layout: str, p: int, n: int, m: int, g: int | None = None) -> str:
    """The 003 Table 2 row that (p, n, m, g) falls in (a label for explanations and test vectors)."""
    q = -(-p // n)
    if layout == "1-DV":
        if p <= n:
            return "p<=n"
        return "p>n,m<=ceil(p/n)" if m <= q else "p>n,m>ceil(p/n)"
    if layout == "1-DH":
        return "m<=ceil(p/n)" if m <= q else "m>ceil(p/n)"
    assert g is not None
    if p <= g:
        return "p<=g"
    G, kc = -(-p // g), -(-n // g)
    return "p>g,m<=ceil(p/g)/ceil(n/g)" if m * kc <= G else "p>g,m>ceil(p/g)/ceil(n/g)"
