"""Whole-trace costing without a per-request Python loop.

For a fixed (p, m, random) every term of 003 Table 2 is either a constant or proportional to s, so the
trace total of a layout is exact from per-group request counts and byte sums: TC = Σ_groups
count·(ce·e + cm·e_shared + ca·α) + Σs·(cv₁·v + cb₁·β), with cv₁, cb₁ the coefficients at s = 1. Grouping costs two
``bincount`` passes over the trace however many layouts (and 2-D group counts) are then compared.
Per-request arrays, when needed (hybrid replica routing), are one gather and one fused multiply-add per
layout from per-group tables, done in cache-sized chunks. With ``CostParams.overlap`` a request takes the
larger of its network and storage sides: the per-request arrays are exact (two lines per group), the totals
take each group's larger side (``Totals.overlapped``). ``v_small_write`` (docs/cost-model.md "Small writes") is
a step in s: per request exact, in the totals judged at each group's mean request size (exact where a
group's requests have one size, as the planner's realisation assumes).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from pfslayout.costmodel.formulas import (
    SMALL_IO,
    Coefficients,
    CostBreakdown,
    message_time,
    small_split,
    unchecked_coefficients,
    validate,
)
from pfslayout.costmodel.params import CostParams

_DENSE_LIMIT = 1 << 22  # largest dense (p, m, random) key table before falling back to np.unique
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Groups:
    """Distinct (p, m, random) of a trace with their request counts and byte sums.

    ``key`` (only with ``with_key=True``) maps each request to its group: either directly to a group index
    (``dense`` None) or to a slot of a dense (p, m, random) table, ``dense`` giving each group's slot —
    which saves a gather over the whole trace."""

    p: np.ndarray
    m: np.ndarray
    random: np.ndarray
    count: np.ndarray
    bytes: np.ndarray
    key: np.ndarray | None
    dense: np.ndarray | None = None
    dense_size: int = 0

    def __len__(self) -> int:
        return int(self.p.shape[0])

    def index(self) -> np.ndarray:
        """Each request's group index (0..len-1); needs ``with_key=True``."""
        if self.key is None:
            raise ValueError("groups were built without with_key=True")
        return self.key if self.dense is None else np.searchsorted(self.dense, self.key)


def _dense_keys(p: np.ndarray, m: np.ndarray, rnd: np.ndarray, width: int) -> np.ndarray:
    """((p·width + m) << 1) | random as intp (what bincount indexes with), built chunk by chunk in cache."""
    key = np.empty(p.shape[0], dtype=np.intp)
    for lo in range(0, p.shape[0], _CHUNK):
        hi = lo + _CHUNK
        k = key[lo:hi]
        np.multiply(p[lo:hi], width, out=k, casting="unsafe")
        k += m[lo:hi]
        k <<= 1
        k |= rnd[lo:hi]
    return key


def group_requests(p: np.ndarray, m: np.ndarray, s: np.ndarray, random: np.ndarray | bool,
                   with_key: bool = False) -> Groups:
    p = np.asarray(p)
    m = np.asarray(m)
    s = np.asarray(s, dtype=np.float64)
    rnd = np.broadcast_to(np.asarray(random, dtype=bool), p.shape)
    if p.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Groups(empty, empty, np.zeros(0, bool), empty, np.zeros(0), empty if with_key else None)
    pmax, mmax = int(p.max()), int(m.max())
    width = mmax + 1
    size = (pmax + 1) * width * 2
    if size <= _DENSE_LIMIT and int(p.min()) >= 0 and int(m.min()) >= 0:
        key = _dense_keys(p, m, rnd, width)
        count = np.bincount(key, minlength=size)
        total = np.bincount(key, weights=s, minlength=size)
        present = np.flatnonzero(count)
        gp, gm = np.divmod(present >> 1, width)
        return Groups(gp.astype(np.int64), gm.astype(np.int64), (present & 1).astype(bool), count[present],
                      total[present], key if with_key else None, dense=present if with_key else None,
                      dense_size=size)
    combined = (p.astype(np.int64) << 33) | (m.astype(np.int64) << 1) | rnd
    uniq, inverse, count = np.unique(combined, return_inverse=True, return_counts=True)
    total = np.bincount(inverse, weights=s, minlength=uniq.size)
    return Groups(uniq >> 33, (uniq >> 1) & ((1 << 32) - 1), (uniq & 1).astype(bool), count, total,
                  inverse.astype(np.intp) if with_key else None)


@dataclass(frozen=True)
class Totals:
    """Trace-wide sums of each term, seconds. ``overlapped``: with ``CostParams.overlap``, the sum over the
    groups of the larger side, max(T_e + T_x, T_s + T_rw) of each group — the total then (exact where one
    side is the larger for every request of a group, as with one request size; a lower bound otherwise)."""

    T_e: float
    T_x: float
    T_s: float
    T_rw: float
    overlapped: float | None = None

    @property
    def total(self) -> float:
        if self.overlapped is not None:
            return self.overlapped
        return self.T_e + self.T_x + self.T_s + self.T_rw

    @property
    def network(self) -> float:
        return self.T_e + self.T_x

    @property
    def storage(self) -> float:
        return self.T_s + self.T_rw


def _unit_coefficients(layout: str, groups: Groups, n: int, g: int | None, variant: str) -> Coefficients:
    ones = np.ones(len(groups))
    gg = None if g is None else np.full(len(groups), g, dtype=np.int64)
    validate(layout, groups.p if len(groups) else 1, n, groups.m if len(groups) else 1, 1.0, g, variant)
    return unchecked_coefficients(layout, groups.p, n, groups.m, ones, gg, variant)


def _message_total(cnt: np.ndarray, ce: np.ndarray, cm: np.ndarray | None, params: CostParams) -> float:
    """T_e of a set of groups: Σ count·ce·e, plus Σ count·cm·e_shared — that second dot product only when
    e_shared is set (the planner's hot path costs every target of every candidate layout)."""
    shared = np.dot(cnt, cm) if params.e_shared is not None and cm is not None else 0.0
    return float(message_time(np.dot(cnt, ce), shared, params))


def _small_per_byte(p: np.ndarray, nt: np.ndarray, cnt: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """Per group: the coefficient of v_small_write per byte of its requests — p where a request of the group's
    mean size is split into small pieces (``small_split``), else 0."""
    mean = np.divide(nbytes, cnt, out=np.zeros_like(nbytes, dtype=np.float64), where=cnt > 0)
    return np.where(small_split(nt, mean), p, 0).astype(np.float64)


def _totals(cnt: np.ndarray, nbytes: np.ndarray, ce: np.ndarray, cm: np.ndarray | None, cv: np.ndarray,
            ca_alpha: np.ndarray, cb: np.ndarray, params: CostParams, cs: np.ndarray | None = None) -> Totals:
    """The four sums of a set of groups, and with ``params.overlap`` the sum of each group's larger side.
    ``cs``: the groups' v_small_write coefficients per byte (``_small_per_byte``), when it is set."""
    per_byte = cv * params.v
    if cs is not None and params.v_small_write is not None:
        per_byte = per_byte + cs * params.v_small_write
    totals = Totals(T_e=_message_total(cnt, ce, cm, params), T_x=float(np.dot(nbytes, per_byte)),
                    T_s=float(np.dot(cnt, ca_alpha)), T_rw=float(np.dot(nbytes, cb)) * params.beta)
    if not params.overlap:
        return totals
    network = cnt * message_time(ce, cm if cm is not None else 0.0, params) + nbytes * per_byte
    storage = cnt * ca_alpha + nbytes * cb * params.beta
    return replace(totals, overlapped=float(np.sum(np.maximum(network, storage))))


def layout_totals(layout: str, groups: Groups, n: int, g: int | None, params: CostParams,
                  variant: str = "corrected") -> Totals:
    """Exact trace totals of one layout from grouped requests."""
    if len(groups) == 0:
        return Totals(0.0, 0.0, 0.0, 0.0)
    c = _unit_coefficients(layout, groups, n, g, variant)
    alpha = np.where(groups.random, params.alpha_rand, params.alpha_seq)
    cnt = groups.count.astype(np.float64)
    cs = None if params.v_small_write is None else _small_per_byte(groups.p, c.nt, cnt, groups.bytes)
    return _totals(cnt, groups.bytes, c.ce, c.cm, c.cv, c.ca * alpha, c.cb, params, cs)


def layout_totals_many(layout: str, rows: Groups, row_of: np.ndarray, count: np.ndarray, nbytes: np.ndarray,
                       sizes: list[int], n: int, g: int | None, params: CostParams | list[CostParams],
                       variant: str = "corrected") -> list[Totals]:
    """``layout_totals`` of many group sets at once (one per planned target), bit for bit the same.

    The sets' groups lie side by side, ``sizes[k]`` groups for set k, with their ``count`` and ``nbytes``;
    group i's (p, m, random) is row ``row_of[i]`` of ``rows`` (whose counts are not used). A coefficient is
    an elementwise function of (p, m, random), so it is computed once per row and gathered, not once per
    group and call; each set's totals are then the dot products ``layout_totals`` takes, over its own
    groups. Saves the per-call validation and coefficient set-up that dominate with many small sets.
    ``params`` may be one per set (their e, v and β may differ — a target's operation mix — but not α)."""
    if len(rows) == 0:
        return [Totals(0.0, 0.0, 0.0, 0.0) for _ in sizes]
    per_set = params if isinstance(params, list) else [params] * len(sizes)
    first = per_set[0]
    if any(q.alpha_seq != first.alpha_seq or q.alpha_rand != first.alpha_rand for q in per_set):
        raise ValueError("layout_totals_many: the sets' parameters may differ in e, v and beta only")
    c = _unit_coefficients(layout, rows, n, g, variant)
    ca_alpha = c.ca * np.where(rows.random, first.alpha_rand, first.alpha_seq)
    ce, cv, cb, ca_alpha = c.ce[row_of], c.cv[row_of], c.cb[row_of], ca_alpha[row_of]
    cm = c.cm[row_of] if any(q.e_shared is not None for q in per_set) else None  # gathered only when costed
    cnt = count.astype(np.float64)
    cs = (_small_per_byte(rows.p[row_of], c.nt[row_of], cnt, nbytes)
          if any(q.v_small_write is not None for q in per_set) else None)
    out = []
    lo = 0
    for k, ps in zip(sizes, per_set):
        hi = lo + k
        if k == 0:
            out.append(Totals(0.0, 0.0, 0.0, 0.0))
        else:
            out.append(_totals(cnt[lo:hi], nbytes[lo:hi], ce[lo:hi], None if cm is None else cm[lo:hi], cv[lo:hi],
                               ca_alpha[lo:hi], cb[lo:hi], ps, None if cs is None else cs[lo:hi]))
        lo = hi
    return out


def per_request_totals(layout: str, groups: Groups, s: np.ndarray, n: int, g: int | None, params: CostParams,
                       variant: str = "corrected", out: np.ndarray | None = None) -> np.ndarray:
    """Per-request total T_i = a[group] + s_i·b[group], chunked so the temporaries stay in cache."""
    if groups.key is None:
        raise ValueError("groups were built without with_key=True")
    c = _unit_coefficients(layout, groups, n, g, variant)
    alpha = np.where(groups.random, params.alpha_rand, params.alpha_seq)
    if params.overlap:  # two lines per group, network and storage; each request takes the larger
        sides = [(message_time(c.ce, c.cm, params), c.cv * params.v), (c.ca * alpha, c.cb * params.beta)]
    else:
        sides = [(message_time(c.ce, c.cm, params) + c.ca * alpha, c.cv * params.v + c.cb * params.beta)]
    small = _small_tables(c, groups.p, params)
    if groups.dense is not None:
        # scatter the per-group values into the dense (p, m, random) table the keys index
        sides = [(_dense(groups, a), _dense(groups, b)) for a, b in sides]
        small = None if small is None else (_dense(groups, small[0]), _dense(groups, small[1]))
    s = np.asarray(s, dtype=np.float64)
    if out is None:
        out = np.empty(s.shape[0], dtype=np.float64)
    buf = np.empty(min(_CHUNK, s.shape[0]), dtype=np.float64)
    other = np.empty_like(buf) if len(sides) > 1 else buf
    key = groups.key
    for lo in range(0, s.shape[0], _CHUNK):
        hi = min(lo + _CHUNK, s.shape[0])
        k = key[lo:hi]
        for i, (a, b) in enumerate(sides):
            o = out[lo:hi] if i == 0 else other[: hi - lo]
            # keys are in range by construction; mode="clip" skips numpy's bounds check (several times faster)
            np.take(b, k, out=o, mode="clip")
            o *= s[lo:hi]
            np.take(a, k, out=buf[: hi - lo], mode="clip")
            o += buf[: hi - lo]
            if i == 0 and small is not None:  # the network side (or the one sum)
                o += _small_cost(small, k, s[lo:hi])
        if len(sides) > 1:
            np.maximum(out[lo:hi], other[: hi - lo], out=out[lo:hi])
    return out


def _small_tables(c: Coefficients, p: np.ndarray, params: CostParams) -> tuple[np.ndarray, np.ndarray] | None:
    """Per group: v_small_write per byte of a small split request (p·v_small_write) and the size below which a
    request is one (SMALL_IO·nt over two servers or more, else 0: never); None when v_small_write is unset."""
    if params.v_small_write is None:
        return None
    return p * params.v_small_write, np.where(c.nt >= 2, SMALL_IO * c.nt, 0.0)


def _small_cost(small: tuple[np.ndarray, np.ndarray], k: np.ndarray, s: np.ndarray) -> np.ndarray:
    """v_small_write's share of requests of sizes ``s`` in groups ``k`` (``_small_tables``)."""
    per_byte, below = small
    return np.asarray(np.take(per_byte, k, mode="clip") * s * (s < np.take(below, k, mode="clip")))


def _dense(groups: Groups, values: np.ndarray) -> np.ndarray:
    """Per-group ``values`` scattered into the dense (p, m, random) table that ``groups.key`` indexes."""
    full = np.zeros(groups.dense_size)
    full[groups.dense] = values
    return full


def breakdown_per_request(layout: str, p: np.ndarray, n: int, m: np.ndarray, s: np.ndarray, g: int | None,
                          random: np.ndarray, params: CostParams, variant: str) -> CostBreakdown:
    """``cost()`` for long arrays with a single g: the four terms per request from per-group coefficient
    tables (one gather per term, chunked), instead of a dozen full-length temporaries. Inputs validated."""
    groups = group_requests(p, m, s, random, with_key=True)
    c = _unit_coefficients(layout, groups, n, g, variant)
    alpha = np.where(groups.random, params.alpha_rand, params.alpha_seq)
    tables = [message_time(c.ce, c.cm, params), c.cv * params.v, c.ca * alpha, c.cb * params.beta]
    small = _small_tables(c, groups.p, params)
    if groups.dense is not None:
        tables = [_dense(groups, tab) for tab in tables]
        small = None if small is None else (_dense(groups, small[0]), _dense(groups, small[1]))
    N = s.shape[0]
    terms = [np.empty(N) for _ in range(4)]
    total = np.empty(N)
    key = groups.key
    assert key is not None  # built with_key=True above
    for lo in range(0, N, _CHUNK):
        hi = min(lo + _CHUNK, N)
        k = key[lo:hi]
        sc = s[lo:hi]
        tot = total[lo:hi]
        for i, (tab, out) in enumerate(zip(tables, terms)):
            o = out[lo:hi]
            np.take(tab, k, out=o, mode="clip")
            if i in (1, 3):  # T_x and T_rw scale with s
                o *= sc
            if i == 1 and small is not None:
                o += _small_cost(small, k, sc)
            if i == 0:
                tot[...] = o
            else:
                tot += o
        if params.overlap:
            np.maximum(terms[0][lo:hi] + terms[1][lo:hi], terms[2][lo:hi] + terms[3][lo:hi], out=tot)
    return CostBreakdown(layout=layout, T_e=terms[0], T_x=terms[1], T_s=terms[2], T_rw=terms[3], total=total)
