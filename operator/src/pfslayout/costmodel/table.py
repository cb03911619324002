"""Per-request cost of seeds 000/003 Table 2 for 1-DV, 1-DH and 2-D, vectorised with numpy.

For a fixed configuration (layout, p, n, m, s, g) the model is linear in the parameters:
T_e = ce·e, T_x = cv·v, T_s = ca·α, T_rw = cb·β. ``coefficients`` returns those four arrays; ``cost``
multiplies them out. Calibration fits the parameters from the same coefficients, so prediction and fit
can never disagree about the table.

Variants (docs/cost-model.md):
* ``printed`` — 003 Table 2 exactly as printed (DIGEST §2.2), including its case tests and the 2-D
  client-bound T_e = m⌈p/g⌉e; ⌈n/g⌉ everywhere.
* ``corrected`` (default) — the serial-count "max form" (larger of client and server serial counts,
  DIGEST §2.2) with §6-A fixes: A2 (2-D client-bound T_e = m⌈n/g⌉e), A3 (1-DH client side counts m·n
  connections), A1 (when g ∤ n the parallel divisor is ⌊n/g⌋, the smallest group, and ⌈n/g⌉ counts
  connections).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pfslayout.costmodel.params import SEED_ETHERNET, CostParams
from pfslayout.errors import InputError

LAYOUTS = ("1-DV", "1-DH", "2-D")
_FAST_MIN = 1 << 14  # arrays at least this long go through costmodel.fast
VARIANTS = ("printed", "corrected")

ArrayLike = Any  # int/float scalar or numpy array


@dataclass(frozen=True)
class Coefficients:
    """T_e = ce·e, T_x = cv·v, T_s = ca·α, T_rw = cb·β (arrays, float64; cv and cb carry the bytes)."""

    ce: np.ndarray
    cv: np.ndarray
    ca: np.ndarray
    cb: np.ndarray


@dataclass(frozen=True)
class CostBreakdown:
    """Seconds per request; numpy arrays (0-d for scalar input, use ``float()``)."""

    layout: str
    T_e: np.ndarray
    T_x: np.ndarray
    T_s: np.ndarray
    T_rw: np.ndarray
    total: np.ndarray

    @property
    def network(self) -> np.ndarray:
        return self.T_e + self.T_x

    @property
    def storage(self) -> np.ndarray:
        return self.T_s + self.T_rw

    def as_dict(self) -> dict[str, Any]:
        def out(a: np.ndarray) -> Any:
            return float(a) if np.ndim(a) == 0 else a.tolist()

        return {"layout": self.layout, "T_e": out(self.T_e), "T_x": out(self.T_x), "T_s": out(self.T_s),
                "T_rw": out(self.T_rw), "total": out(self.total)}


def check_layout(layout: str) -> str:
    if layout not in LAYOUTS:
        raise InputError("layout", f"unknown layout {layout!r}", f"use one of {', '.join(LAYOUTS)}")
    return layout


def check_variant(variant: str) -> str:
    if variant not in VARIANTS:
        raise InputError("variant", f"unknown variant {variant!r}", f"use one of {', '.join(VARIANTS)}")
    return variant


def _int_array(name: str, value: ArrayLike) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        raise InputError(name, f"must be an integer (got {value!r})")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.floor(arr)):
            raise InputError(name, "must be a whole number", "pass an integer count")
    if arr.dtype.kind == "i":
        return arr  # signed ints as given: no copy of a long trace column
    return arr.astype(np.int64)  # floats, and unsigned (ceil division negates)


def _first_bad(arr: np.ndarray, bad: np.ndarray) -> Any:
    if arr.ndim == 0:
        return arr.item()
    return arr[np.argmax(bad)].item() if bad.ndim else arr.item()


def validate(layout: str, p: ArrayLike, n: int, m: ArrayLike, s: ArrayLike, g: ArrayLike | None,
             variant: str) -> tuple[np.ndarray, int, np.ndarray, np.ndarray, np.ndarray | None]:
    """Check every input; returns (p, n, m, s, g) as arrays. Each problem names its field."""
    check_layout(layout)
    check_variant(variant)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        if isinstance(n, float) and n.is_integer():
            n = int(n)
        else:
            raise InputError("n", f"must be an integer number of servers (got {n!r})")
    n = int(n)
    if n < 1:
        raise InputError("n", f"must be at least 1 (got {n})", "pass the number of data servers")
    p_arr = _int_array("p", p)
    m_arr = _int_array("m", m)
    s_arr = np.asarray(s)
    if s_arr.dtype.kind not in "iuf" or s_arr.dtype.kind == "b":
        raise InputError("s", f"must be a size in bytes (got {s!r:.40})")
    g_arr = None
    if layout == "2-D":
        if g is None:
            raise InputError("g", "is required for layout 2-D", f"pass a group count that divides n={n}")
        g_arr = _int_array("g", g)
    shapes = {a.shape for a in (p_arr, m_arr, s_arr) + ((g_arr,) if g_arr is not None else ()) if a.ndim}
    if len(shapes) > 1:
        raise InputError("p", f"p, m, s and g arrays must have one shape (got shapes {sorted(shapes)})",
                         "pass scalars or arrays of one length")
    bad = p_arr < 1
    if np.any(bad):
        raise InputError("p", f"must be at least 1 (got {_first_bad(p_arr, bad)})", "pass the number of processes")
    bad = m_arr < 1
    if np.any(bad):
        raise InputError("m", f"must be at least 1 (got {_first_bad(m_arr, bad)})", "pass processes per client node")
    bad = m_arr > p_arr
    if np.any(bad):
        raise InputError("m", f"must not exceed p (got m={_first_bad(m_arr, bad)} > p)",
                         "m counts the processes of one client node, a subset of p")
    s_arr = s_arr.astype(np.float64, copy=False)
    bad = ~np.isfinite(s_arr) | (s_arr < 0)
    if np.any(bad):
        raise InputError("s", f"must be a non-negative size in bytes (got {_first_bad(s_arr, bad)})")
    if g_arr is not None:
        bad = (g_arr < 1) | (g_arr > n)
        if np.any(bad):
            raise InputError("g", f"must be between 1 and n={n} (got {_first_bad(g_arr, bad)})",
                             f"pass a group count that divides n={n}")
    return p_arr, n, m_arr, s_arr, g_arr


def _ceil_div(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    return -(-a // b)


def _coefficients_unchecked(layout: str, p: np.ndarray, n: int, m: np.ndarray, s: np.ndarray,
                            g: np.ndarray | None, variant: str) -> Coefficients:
    pf = p.astype(np.float64)
    mf = m.astype(np.float64)
    if layout == "1-DV":
        # Table and max form agree exactly for 1-DV (DIGEST §2.2).
        q = _ceil_div(p, n).astype(np.float64)
        k = np.maximum(mf, q)
        return Coefficients(ce=k, cv=k * s, ca=q, cb=q * s)
    if layout == "1-DH":
        ca = pf
        cb = pf * s / n
        if variant == "printed":
            q = _ceil_div(p, n)
            server = m <= q
            ce = np.where(server, pf, mf * n)
            cv = np.where(server, pf * s / n, mf * s)
        else:
            ce = np.maximum(pf, mf * n)
            cv = np.maximum(pf * s / n, mf * s)
        return Coefficients(ce=ce, cv=cv, ca=ca, cb=cb)
    assert g is not None
    G = _ceil_div(p, g).astype(np.float64)
    kc_int = _ceil_div(np.int64(n), g)
    kc = kc_int.astype(np.float64)  # servers a request touches: its connection count
    if variant == "printed":
        kp = kc
        small = p <= g
        # m <= ⌈p/g⌉/⌈n/g⌉ tested in integers so no rounding can flip the row
        server = (~small) & (m * kc_int <= _ceil_div(p, g))
        ce = np.where(small, mf * kc, np.where(server, G, mf * G))
        cv = np.where(server, G * s / kc, mf * s)
    else:
        kp = (n // g).astype(np.float64)  # smallest group's width bounds the parallel transfer (A1)
        ce = np.maximum(G, mf * kc)
        cv = np.maximum(G * s / kp, mf * s)
    return Coefficients(ce=ce, cv=cv, ca=G, cb=G * s / kp)


def coefficients(layout: str, p: ArrayLike, n: int, m: ArrayLike, s: ArrayLike, g: ArrayLike | None = None,
                 variant: str = "corrected") -> Coefficients:
    """Coefficients of e, v, α, β for each request (see module doc). p, m, s, g broadcast together."""
    p_arr, n, m_arr, s_arr, g_arr = validate(layout, p, n, m, s, g, variant)
    return _coefficients_unchecked(layout, p_arr, n, m_arr, s_arr, g_arr, variant)


def cost(layout: str, p: ArrayLike, n: int, m: ArrayLike, s: ArrayLike, g: ArrayLike | None = None, *,
         random: bool | np.ndarray = False, params: CostParams = SEED_ETHERNET,
         variant: str = "corrected") -> CostBreakdown:
    """Per-request completion time T = T_e + T_x + T_s + T_rw, seconds (003 Table 2)."""
    p_arr, n, m_arr, s_arr, g_arr = validate(layout, p, n, m, s, g, variant)
    rnd = np.asarray(random)
    if rnd.dtype.kind in "iu" and np.all((rnd == 0) | (rnd == 1)):
        rnd = rnd.astype(bool)  # 0/1 flags, as C callers and CSV columns write them
    if rnd.dtype.kind != "b":
        raise InputError("random", f"must be a boolean or 0/1 (got {random!r:.40})")
    if s_arr.ndim == 1 and s_arr.shape[0] >= _FAST_MIN and (g_arr is None or g_arr.ndim == 0):
        # long traces: per-group coefficient tables and gathers beat a dozen full-length temporaries
        from pfslayout.costmodel.fast import breakdown_per_request

        shape = s_arr.shape
        return breakdown_per_request(layout, np.broadcast_to(p_arr, shape), n, np.broadcast_to(m_arr, shape),
                                     s_arr, None if g_arr is None else int(g_arr), np.broadcast_to(rnd, shape),
                                     params, variant)
    c = _coefficients_unchecked(layout, p_arr, n, m_arr, s_arr, g_arr, variant)
    alpha = np.where(rnd, params.alpha_rand, params.alpha_seq) if rnd.ndim else (
        params.alpha_rand if bool(rnd) else params.alpha_seq)
    T_e = c.ce * params.e
    T_x = c.cv * params.v
    T_s = c.ca * alpha
    T_rw = c.cb * params.beta
    total = T_e + T_x + T_s + T_rw
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
