"""003 Table 2 as coefficients of the four parameters, and the checks every input goes through.

For a fixed configuration (layout, p, n, m, s, g) the model is linear in the parameters:
T_e = ce·e, T_x = cv·v, T_s = ca·α, T_rw = cb·β. This module holds the formulas once; ``table`` (per
request costs) and ``fast`` (grouped whole-trace costs) both build on it, so neither imports the other
for them.

Variants (docs/cost-model.md):
* ``printed`` — 003 Table 2 exactly as printed (docs/seeds.md §2.2), including its case tests and the 2-D
  client-bound T_e = m⌈p/g⌉e; ⌈n/g⌉ everywhere.
* ``corrected`` (default) — the serial-count "max form" (larger of client and server serial counts,
  docs/seeds.md §2.2) with §6-A fixes: A2 (2-D client-bound T_e = m⌈n/g⌉e), A3 (1-DH client side counts m·n
  connections), A1 (when g ∤ n the parallel divisor is ⌊n/g⌋, the smallest group, and ⌈n/g⌉ counts
  connections).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pfslayout.errors import InputError

LAYOUTS = ("1-DV", "1-DH", "2-D")
# OrangeFS's PINT_SMALL_IO_MAXSIZE: a request whose piece on a server is smaller travels inside the request
# message (small I/O) instead of a flow; split over two servers or more, such writes cost per byte of all
# ranks' data (docs/cost-model.md "Small writes").
SMALL_IO = 16384
VARIANTS = ("printed", "corrected")

ArrayLike = Any  # int/float scalar or numpy array


@dataclass(frozen=True)
class Coefficients:
    """T_e = ce·e + cm·e_shared, T_x = cv·v + cs·v_small_write, T_s = ca·α, T_rw = cb·β (arrays, float64; cv,
    cb and cs carry the bytes). ``cm`` = p·nt counts the messages all p processes send in one round of
    requests (nt = servers one request touches): the term of ``e_shared``, which is set only where clients
    and servers share cores (docs/cost-model.md "Shared cores"). ``cs`` = p·s where a request is split over
    nt ≥ 2 servers into pieces below ``SMALL_IO`` (else 0): the bytes of ``v_small_write``, which a write's
    parameters carry and a read's do not (docs/cost-model.md "Small writes")."""

    ce: np.ndarray
    cv: np.ndarray
    ca: np.ndarray
    cb: np.ndarray
    cm: np.ndarray
    p: np.ndarray  # processes (float), and the request sizes: what nt and cs are computed from when asked
    s: np.ndarray

    # nt and cs on demand: the planner's grouped path (unit sizes, every candidate of every target) needs
    # neither unless the parameters carry v_small_write, and computing them always made it 2.5× slower
    @property
    def nt(self) -> np.ndarray:
        """Servers one request touches (cm = p·nt)."""
        return np.asarray(self.cm / self.p)

    @property
    def cs(self) -> np.ndarray:
        """p·s where ``small_split``, else 0."""
        return np.asarray(np.where(small_split(self.nt, self.s), self.p * self.s, 0.0))


def small_split(nt: Any, s: Any) -> Any:
    """Whether a request of ``s`` bytes over ``nt`` servers is split into pieces below ``SMALL_IO``."""
    return (nt >= 2) & (s < SMALL_IO * nt)


def message_time(ce: Any, cm: Any, params: Any) -> Any:
    """T_e of coefficients ``ce``, ``cm`` under ``params`` (a CostParams): ce·e, plus cm·e_shared when set."""
    shared = params.e_shared
    return ce * params.e if shared is None else ce * params.e + cm * shared


def transfer_time(c: Coefficients, params: Any) -> Any:
    """T_x of coefficients ``c`` under ``params``: cv·v, plus cs·v_small_write when set."""
    small = params.v_small_write
    return c.cv * params.v if small is None else c.cv * params.v + c.cs * small


def total_time(T_e: Any, T_x: Any, T_s: Any, T_rw: Any, params: Any) -> Any:
    """A request's time from its four terms under ``params`` (a CostParams): the seeds' sum, or with
    ``overlap`` the larger of its network side (T_e + T_x) and its storage side (T_s + T_rw) — OrangeFS
    moves a request's data as a flow whose buffers pipeline the network and the storage
    (docs/cost-model.md "Overlapped network and storage")."""
    if params.overlap:
        return np.maximum(T_e + T_x, T_s + T_rw)
    return T_e + T_x + T_s + T_rw


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
        return np.asarray(self.T_e + self.T_x)

    @property
    def storage(self) -> np.ndarray:
        return np.asarray(self.T_s + self.T_rw)

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
    if arr.dtype.kind == "f" and (not np.all(np.isfinite(arr)) or not np.all(arr == np.floor(arr))):
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
        if isinstance(n, float) and float(n).is_integer():
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


def unchecked_coefficients(layout: str, p: np.ndarray, n: int, m: np.ndarray, s: np.ndarray,
                           g: np.ndarray | None, variant: str) -> Coefficients:
    """The coefficients of already validated arrays (``validate``); callers that validated once (the
    grouped trace path) skip a second pass over long arrays."""
    pf = p.astype(np.float64)
    mf = m.astype(np.float64)
    if layout == "1-DV":
        # Table and max form agree exactly for 1-DV (docs/seeds.md §2.2).
        q = _ceil_div(p, n).astype(np.float64)
        k = np.maximum(mf, q)
        return _coefficients(k, k * s, q, q * s, pf, 1, s)
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
        return _coefficients(ce, cv, ca, cb, pf, n, s)
    assert g is not None
    G = _ceil_div(p, g).astype(np.float64)
    kc_int = _ceil_div(np.asarray(n, dtype=np.int64), g)
    kc = kc_int.astype(np.float64)  # servers a request touches: its connection count
    if variant == "printed":
        kp = kc
        small = p <= g
        # m <= ⌈p/g⌉/⌈n/g⌉ tested in integers so no rounding can flip the row
        server = (~small) & (m * kc_int <= _ceil_div(p, g))
        ce = np.where(small, mf * kc, np.where(server, G, mf * G))
        cv = np.where(server, G * s / kc, mf * s)
    else:
        kp = (n // g).astype(np.float64)  # smallest group's width bounds the parallel transfer (docs/seeds.md §6 A1)
        ce = np.maximum(G, mf * kc)
        cv = np.maximum(G * s / kp, mf * s)
    return _coefficients(ce, cv, G, G * s / kp, pf, kc, s)


def _coefficients(ce: Any, cv: Any, ca: Any, cb: Any, p: np.ndarray, nt: Any, s: np.ndarray) -> Coefficients:
    """The coefficients from a layout's four, the processes p and the servers nt one request touches: cm = p·nt
    messages (nt and cs follow from p and s when asked)."""
    return Coefficients(ce=ce, cv=cv, ca=ca, cb=cb, cm=p * nt, p=p, s=s)
