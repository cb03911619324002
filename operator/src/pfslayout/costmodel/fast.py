"""Whole-trace costing without a per-request Python loop.

For a fixed (p, m, random) every term of 003 Table 2 is either a constant or proportional to s, so the
trace total of a layout is exact from per-group request counts and byte sums: TC = Σ_groups
count·(ce·e + ca·α) + Σs·(cv₁·v + cb₁·β), with cv₁, cb₁ the coefficients at s = 1. Grouping costs two
``bincount`` passes over the trace however many layouts (and 2-D group counts) are then compared.
Per-request arrays, when needed (hybrid replica routing), are one gather and one fused multiply-add per
layout from per-group tables, done in cache-sized chunks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pfslayout.costmodel.params import CostParams
from pfslayout.costmodel.table import _coefficients_unchecked, validate

_DENSE_LIMIT = 1 << 22  # largest dense (p, m, random) key table before falling back to np.unique
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Groups:
    """Distinct (p, m, random) of a trace with their request counts and byte sums; ``key`` maps each
    request to its group (None when not asked for)."""

    p: np.ndarray
    m: np.ndarray
    random: np.ndarray
    count: np.ndarray
    bytes: np.ndarray
    key: np.ndarray | None

    def __len__(self) -> int:
        return int(self.p.shape[0])


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
    if (pmax + 1) * width * 2 <= _DENSE_LIMIT:
        dtype = np.int32 if (pmax + 1) * width * 2 < 2**31 else np.int64
        key = p.astype(dtype, copy=True)
        key *= width
        key += m
        key <<= 1
        key |= rnd
        size = (pmax + 1) * width * 2
        count = np.bincount(key, minlength=size)
        total = np.bincount(key, weights=s, minlength=size)
        present = np.flatnonzero(count)
        gp, rest = np.divmod(present >> 1, width)
        remap = None
        if with_key:
            remap = np.zeros(size, dtype=np.int32)
            remap[present] = np.arange(present.size, dtype=np.int32)
            key = np.take(remap, key, mode="clip")
        return Groups(gp.astype(np.int64), rest.astype(np.int64), (present & 1).astype(bool), count[present],
                      total[present], key if with_key else None)
    combined = (p.astype(np.int64) << 33) | (m.astype(np.int64) << 1) | rnd
    uniq, inverse, count = np.unique(combined, return_inverse=True, return_counts=True)
    total = np.bincount(inverse, weights=s, minlength=uniq.size)
    return Groups(uniq >> 33, (uniq >> 1) & ((1 << 32) - 1), (uniq & 1).astype(bool), count, total,
                  inverse.astype(np.int32) if with_key else None)


@dataclass(frozen=True)
class Totals:
    """Trace-wide sums of each term, seconds."""

    T_e: float
    T_x: float
    T_s: float
    T_rw: float

    @property
    def total(self) -> float:
        return self.T_e + self.T_x + self.T_s + self.T_rw

    @property
    def network(self) -> float:
        return self.T_e + self.T_x

    @property
    def storage(self) -> float:
        return self.T_s + self.T_rw


def _unit_coefficients(layout: str, groups: Groups, n: int, g: int | None, variant: str):
    ones = np.ones(len(groups))
    gg = None if g is None else np.full(len(groups), g, dtype=np.int64)
    validate(layout, groups.p if len(groups) else 1, n, groups.m if len(groups) else 1, 1.0, g, variant)
    return _coefficients_unchecked(layout, groups.p, n, groups.m, ones, gg, variant)


def layout_totals(layout: str, groups: Groups, n: int, g: int | None, params: CostParams,
                  variant: str = "corrected") -> Totals:
    """Exact trace totals of one layout from grouped requests."""
    if len(groups) == 0:
        return Totals(0.0, 0.0, 0.0, 0.0)
    c = _unit_coefficients(layout, groups, n, g, variant)
    alpha = np.where(groups.random, params.alpha_rand, params.alpha_seq)
    cnt = groups.count.astype(np.float64)
    return Totals(
        T_e=float(np.dot(cnt, c.ce)) * params.e,
        T_x=float(np.dot(groups.bytes, c.cv)) * params.v,
        T_s=float(np.dot(cnt, c.ca * alpha)),
        T_rw=float(np.dot(groups.bytes, c.cb)) * params.beta,
    )


def per_request_totals(layout: str, groups: Groups, s: np.ndarray, n: int, g: int | None, params: CostParams,
                       variant: str = "corrected", out: np.ndarray | None = None) -> np.ndarray:
    """Per-request total T_i = a[group] + s_i·b[group], chunked so the temporaries stay in cache."""
    if groups.key is None:
        raise ValueError("groups were built without with_key=True")
    c = _unit_coefficients(layout, groups, n, g, variant)
    alpha = np.where(groups.random, params.alpha_rand, params.alpha_seq)
    a = c.ce * params.e + c.ca * alpha
    b = c.cv * params.v + c.cb * params.beta
    s = np.asarray(s, dtype=np.float64)
    if out is None:
        out = np.empty(s.shape[0], dtype=np.float64)
    buf = np.empty(min(_CHUNK, s.shape[0]), dtype=np.float64)
    key = groups.key
    for lo in range(0, s.shape[0], _CHUNK):
        hi = min(lo + _CHUNK, s.shape[0])
        k = key[lo:hi]
        o = out[lo:hi]
        np.take(b, k, out=o, mode="clip")  # keys are in range by construction; "clip" skips the bounds check
        o *= s[lo:hi]
        np.take(a, k, out=buf[: hi - lo], mode="clip")
        o += buf[: hi - lo]
    return out
