"""Which layout one request behaves as on a striped file (docs/seeds.md §3.2, ours).

A request at ``offset`` of ``size`` bytes on a file with strip ``strip_size`` over ``datafiles`` datafiles
(of ``n`` servers) touches k = min(D, ⌈((offset mod S) + size)/S⌉) servers: k = 1 is 1-DV, k ≥ n is 1-DH,
anything between is 2-D with g = n/k. This is the Python twin of the shim's ``pfs_classify``
(shim/src/route.c), which costs each request on an ``auto`` replica this way; the two are checked
against the same vectors (operator/tests/vectors/classify-vectors.json), which also record that the
directory hints the planner emits for a layout (``hints_for``) classify back to that layout.
"""

from __future__ import annotations

from pfslayout.planner.models import LayoutName


def servers_touched(n: int, strip_size: int | None, datafiles: int | None, offset: int, size: int) -> int:
    """k; an unset strip (0/None) means the file is not striped by size: every datafile is touched."""
    d = datafiles if datafiles else n
    if not strip_size:
        return d
    k = ((offset % strip_size) + size + strip_size - 1) // strip_size
    return min(max(k, 1), d)


def classify_request(n: int, strip_size: int | None, datafiles: int | None, offset: int,
                     size: int) -> tuple[LayoutName, int | None]:
    """(layout, g) the request is costed as; g only for 2-D."""
    k = servers_touched(n, strip_size, datafiles, offset, size)
    if k == 1:
        return "1-DV", None
    if k >= n:
        return "1-DH", None
    return "2-D", max(n // k, 1)
