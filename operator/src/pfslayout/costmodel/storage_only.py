"""Seed 001 (PDSW'09): the storage-only layout model — each server access costs α + sβ, no network terms.

Formulas from docs/seeds.md §2.6 with the §6 A9 resolution: 001's two p < n expressions ("α+sβ" for 1-DH and
"α + ⌈s/n⌉β" for 2-D) contradict its own Eq. (1) and are not used; everything is derived from the
per-server cost α + sβ instead.
"""

from __future__ import annotations

import numpy as np

from pfslayout.costmodel.formulas import ArrayLike, check_layout
from pfslayout.errors import InputError


def storage_only_cost(layout: str, p: ArrayLike, n: int, s: ArrayLike, alpha: float, beta: float,
                      g: int | None = None) -> np.ndarray:
    """Completion time of p concurrent accesses of s bytes each (seconds).

    * 1-DH: p(α + sβ/n) — processes served one after another, each by all n servers (001 Eq. (1)).
    * 1-DV: ⌈p/n⌉(α + sβ) — each server serves ⌈p/n⌉ processes, each wholly.
    * 2-D: ⌈p/g⌉(α + sβ/⌊n/g⌋); 001 only defines g = p (n/p servers per process, p < n), which gives
      α + (p·s/n)β, and that is the default when g is omitted.
    """
    check_layout(layout)
    if n < 1:
        raise InputError("n", f"must be at least 1 (got {n})")
    p_arr = np.asarray(p, dtype=np.int64)
    if np.any(p_arr < 1):
        raise InputError("p", "must be at least 1")
    s_arr = np.asarray(s, dtype=np.float64)
    if np.any(s_arr < 0):
        raise InputError("s", "must be a non-negative size in bytes")
    if layout == "1-DH":
        return p_arr * (alpha + s_arr * beta / n)
    if layout == "1-DV":
        return -(-p_arr // n) * (alpha + s_arr * beta)
    if g is None:
        if np.any(p_arr >= n):
            raise InputError("g", "001 defines 2-D only for p < n (g = p groups)", "pass g explicitly")
        return alpha + p_arr * s_arr * beta / n
    if not 1 <= g <= n:
        raise InputError("g", f"must be between 1 and n={n} (got {g})")
    return -(-p_arr // g) * (alpha + s_arr * beta / (n // g))
