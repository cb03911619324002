"""Layout → OrangeFS directory hints (docs/seeds.md §3.2, §7).

* 1-DH: all n servers, a small strip so a typical request touches every server.
* 1-DV: file per process → one datafile per file; shared file → strip = the common request size.
* 2-D: file per process → ⌈n/g⌉ datafiles per file; shared file → strip = (g/n) × the request size.
* Heterogeneous servers: a file striped over all n servers gets ``varstrip_dist`` strips sized by seed
  002's balancing (``costmodel.placement.strip_sizes``) and a pin (layout NONE, or LIST with the servers'
  addresses) so datafile i lands on server i.

``dist_params`` only takes effect when ``dist_name`` is set on the same directory, so both are always
emitted together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from pfslayout.costmodel.params import CostParams
from pfslayout.costmodel.placement import coarse_balance, strip_sizes
from pfslayout.planner.models import Hints, Sharing

ALIGN = 4096
SMALL_STRIP = 64 * 1024  # OrangeFS's default strip; the 1-DH upper bound
LAYOUT_NONE = "1"  # deterministic: datafile i on the i-th server in <DataHandleRanges> order
LAYOUT_LIST = "4"

KEY_NUM = "user.pvfs2.num_dfiles"
KEY_DIST = "user.pvfs2.dist_name"
KEY_PARAMS = "user.pvfs2.dist_params"
KEY_LAYOUT = "user.pvfs2.layout"
KEY_LIST = "user.pvfs2.server_list"
SLOT_PREFIX = "slot-"  # <dir>/slot-<j>: the pinned directories of a layout (pinned_slots)


def _align(size: float, lo: int = ALIGN, hi: int | None = None) -> int:
    value = max(lo, int(size) // ALIGN * ALIGN)
    return min(value, hi) if hi is not None else value


def server_list(addresses: Sequence[str]) -> str:
    """``user.pvfs2.server_list``'s value: the count (the server reads it with strtol), then the BMI
    addresses, e.g. ``00001 tcp://10.0.0.3:3334``."""
    return f"{len(addresses):05d} " + " ".join(addresses)


def slot_count(num_dfiles: int, n: int) -> int:
    """How many pinned directories a file-per-process layout of ``num_dfiles`` datafiles over ``n`` servers
    gets: ``n // num_dfiles`` when that is 2 or more (1-DV: n, 2-D: g), else 0 — a layout over every
    server has nothing to pin."""
    slots = n // max(num_dfiles, 1)
    return slots if slots >= 2 else 0


def pinned_slots(xattrs: Mapping[str, str], addresses: Sequence[str]) -> list[dict[str, str]]:
    """The directory xattrs of each of a layout's pinned slots (``<dir>/slot-<j>``): the layout's own keys
    plus layout LIST over servers ``[j·w, (j+1)·w)`` of ``addresses`` (w = the layout's datafiles), so the
    files of a file-per-process layout spread evenly instead of starting on random servers (OrangeFS's
    ROUND_ROBIN draws ``rand() % n`` per file: of three 1-DV files on four servers, two or more share a
    server 62% of the time). Which slot a file goes to is ``shimconfig.slot_of`` of its name. Empty when the layout
    covers every server."""
    n = len(addresses)
    w = int(xattrs.get(KEY_NUM, n))  # the layout's datafiles (a directory's xattrs always name them)
    return [{**xattrs, KEY_LAYOUT: LAYOUT_LIST, KEY_LIST: server_list(addresses[j * w:(j + 1) * w])}
            for j in range(slot_count(w, n))]


def _varstrip(params: CostParams, n: int, strip: int) -> tuple[dict[str, str], list[int], list[str]]:
    # bytes/s through server i (disk + its link)
    strips = strip_sizes(_speeds(params, n), max(strip * n, ALIGN * n), align=ALIGN)
    xattrs = {KEY_DIST: "varstrip_dist", KEY_PARAMS: "strips:" + ";".join(f"{i}:{s}" for i, s in enumerate(strips)),
              KEY_NUM: str(n)}
    notes = ["heterogeneous servers: varstrip_dist strips sized by seed 002 balancing of 1/(beta+v) per server"]
    names = [s.name for s in (params.servers or [])][:n]
    if len(names) == n and all(names):
        xattrs[KEY_LAYOUT] = LAYOUT_LIST
        xattrs[KEY_LIST] = server_list(names)  # type: ignore[arg-type]
        notes.append("pinned with layout LIST so datafile i is on servers[i]")
    else:
        xattrs[KEY_LAYOUT] = LAYOUT_NONE
        notes.append("pinned with layout NONE: datafile i on the i-th server of <DataHandleRanges>, which must "
                     "list servers in the order of params.servers")
    return xattrs, strips, notes


def _speeds(params: CostParams, n: int) -> np.ndarray:
    return np.array([1.0 / max(params.for_server(i).beta + params.for_server(i).v, 1e-300) for i in range(n)])


def _file_placement(params: CostParams, n: int, files: int) -> list[int]:
    """Seed 002 coarse-grained balance of equal files over servers of different speed (every file is
    remote, so the network term is folded into the speed): faster servers receive more files."""
    speeds = _speeds(params, n)
    return coarse_balance(np.ones(files), speeds, np.inf, np.full(files, -1)).assignment


def hints_for(layout: str, g: int | None, n: int, sharing: Sharing, s_common: int,
              params: CostParams | None = None, files: int | None = None) -> Hints:
    """The directory xattrs that make new files in it follow ``layout``."""
    s_common = max(int(s_common), 1)
    notes: list[str] = []
    if layout == "1-DH":
        dfiles = n
        strip = _align(s_common / n, hi=SMALL_STRIP)
        notes.append(f"strip {strip} B so a {s_common} B request spreads over all {n} servers")
    elif layout == "1-DV":
        if sharing == "file-per-process":
            dfiles, strip = 1, None
            notes.append("one datafile per file; OrangeFS starts each file on a random server, so injected jobs "
                         "get the shim's spread (file k on server k mod n, docs/shim-config.md) for an exact one")
        else:
            dfiles, strip = n, _align(s_common)
            notes.append(f"strip = the common request size {strip} B, so each request stays on one server")
    else:
        assert g is not None
        width = -(-n // g)
        if sharing == "file-per-process":
            dfiles = width
            strip = _align(s_common / width)
            notes.append(f"{width} datafiles per file (n/g with g={g}); strip {strip} B spreads a request over them")
        else:
            dfiles = n
            strip = _align(s_common * g / n)
            notes.append(f"strip = (g/n)·{s_common} B = {strip} B so each request covers n/g = {width} servers")
    xattrs = {KEY_NUM: str(dfiles), KEY_DIST: "simple_stripe"}
    if strip is not None:
        xattrs[KEY_PARAMS] = f"strip_size:{strip}"
    hints = Hints(xattrs=xattrs, num_dfiles=dfiles, dist_name="simple_stripe", strip_size=strip, notes=notes)
    if params is not None and params.heterogeneous:
        if dfiles == n and n > 1 and strip is not None:
            vx, strips, vnotes = _varstrip(params, n, strip)
            return Hints(xattrs=vx, num_dfiles=n, dist_name="varstrip_dist", strip_size=None, strips=strips,
                         notes=notes + vnotes)
        if dfiles == 1 and files:
            placement = _file_placement(params, n, min(files, 4096))
            counts = np.bincount(placement, minlength=n).tolist()
            hints.file_placement = placement
            hints.notes.append(f"heterogeneous servers: seed 002 balance puts {counts} of {len(placement)} files on "
                               "servers 0..n-1; realise it with per-rank subdirectories, each with layout=4 and a "
                               "one-server server_list (file_placement gives each rank's server)")
        else:
            hints.notes.append("heterogeneous servers: this layout does not stripe over all servers, so strips stay "
                               "uniform; the cost uses the global parameters")
    return hints
