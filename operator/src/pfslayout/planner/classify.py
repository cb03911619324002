"""Which layout one request behaves as on a striped file (docs/seeds.md §3.2, ours).

A request at ``offset`` of ``size`` bytes on a file with strip ``strip_size`` over ``datafiles`` datafiles
(of ``n`` servers) touches k = min(D, ⌈((offset mod S) + size)/S⌉) servers: k = 1 is 1-DV, k ≥ n is 1-DH,
anything between is 2-D with g = n/k. This is the Python twin of the shim's ``pfs_classify``
(shim/src/route.c), which costs each request on an ``auto`` replica this way; the two are checked
against the same vectors (operator/tests/vectors/classify-vectors.json), which also record that the
directory hints the planner emits for a layout (``hints_for``) classify back to that layout.
"""

from __future__ import annotations

from functools import lru_cache

from pfslayout.planner.hints import hints_for
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


@lru_cache(maxsize=4096)  # a calibration grid asks for a few dozen distinct (layout, g, n, sharing, size)
def realised_as(layout: LayoutName, g: int | None, n: int, sharing: str, size: int) -> tuple[LayoutName, int | None]:
    """The layout a request of ``size`` bytes (at an aligned offset) behaves as when its file is realised
    by the planner's hints for that size (``hints_for``: the rule the probe, the operator's directories and
    the shim's replicas share). The rule keeps a strip of at least 4 KiB, so a request smaller than
    k × 4 KiB touches fewer than the layout's k servers: 1-DH of a 4 KiB request on 4 servers is one server
    (1-DV), of 16 KiB on 8 servers four (2-D, g = 2). Otherwise the layout itself."""
    h = hints_for(layout, g, n, "shared" if sharing == "shared" else "file-per-process", size)
    designed = 1 if layout == "1-DV" else n if layout == "1-DH" else -(-n // (g or 1))
    if servers_touched(n, h.strip_size, h.num_dfiles, 0, size) >= designed:
        return layout, g
    return classify_request(n, h.strip_size, h.num_dfiles, 0, size)
