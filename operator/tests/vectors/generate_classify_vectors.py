#!/usr/bin/env python3
"""Generate classify-vectors.json: the planner's directory hints, and the layout requests then behave as.

For each layout the planner can choose (1-DH, 1-DV, 2-D with each useful g) on n servers, for shared and
per-process files and a range of common request sizes, ``hints_for`` gives the strip size and datafile
count; ``classify_request`` (the Python twin of the shim's ``pfs_classify``) gives the layout a request
behaves as under them. ``round_trip`` says whether the request of the common size at offset 0 classifies
back to the planner's layout. The C unit test ``test_classify`` checks ``pfs_classify`` against
``expected``; operator/tests/unit/test_classify.py checks the round trip where it must hold. The C unit test
``test_probe_place`` checks that pfsprobe realises each ``planner`` case with the hints' ``datafiles`` and
``strip_size`` (0 = none).

    python3 operator/tests/vectors/generate_classify_vectors.py > operator/tests/vectors/classify-vectors.json
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pfslayout.planner.candidates import useful_groups
from pfslayout.planner.classify import classify_request
from pfslayout.planner.hints import hints_for

SERVERS = (1, 2, 3, 4, 6, 8, 12, 16, 32)
SIZES = (4096, 16384, 65536, 262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20)
# other requests on the same file: misaligned, smaller, larger and empty ones
PROBE_SIZES = (65536, 1 << 20)


def _case(cid: str, n: int, strip: int | None, dfiles: int, offset: int, size: int,
          planner: dict[str, Any] | None) -> dict[str, Any]:
    layout, g = classify_request(n, strip, dfiles, offset, size)
    case: dict[str, Any] = {"id": cid, "n": n, "strip_size": strip or 0, "datafiles": dfiles, "offset": offset,
                            "size": size, "expected": {"layout": layout, "g": g}}
    if planner is not None:
        case["planner"] = planner
        case["round_trip"] = (layout, g) == (planner["layout"], planner["g"])
    return case


def cases() -> list[dict[str, Any]]:
    out = []
    for n in SERVERS:
        for sharing in ("shared", "file-per-process"):
            for s in SIZES:
                for layout, g in [("1-DH", None), ("1-DV", None)] + [("2-D", g) for g in useful_groups(n)]:
                    h = hints_for(layout, g, n, sharing, s)
                    tag = f"n{n}-{'sh' if sharing == 'shared' else 'fpp'}-{layout}{g or ''}-s{s}"
                    planner = {"layout": layout, "g": g, "sharing": sharing, "request_size": s}
                    out.append(_case(tag, n, h.strip_size, h.num_dfiles, 0, s, planner))
                    if s in PROBE_SIZES and h.strip_size:
                        S = h.strip_size
                        for off, size in ((S // 2, s), (S - 1, s), (0, s // 2), (0, 2 * s), (S + 1, 1), (0, 0)):
                            out.append(_case(f"{tag}-at{off}+{size}", n, S, h.num_dfiles, off, size, None))
    return out


def main() -> None:
    # one case per line: small, and a diff shows which cases changed
    head = {"format": "pfslayout-classify-vectors/1",
            "generator": "operator/tests/vectors/generate_classify_vectors.py (pfslayout.planner hints and classify)"}
    lines = [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    body = ",\n".join(f"  {json.dumps(c)}" for c in cases())
    sys.stdout.write("{\n" + "\n".join(lines) + '\n "cases": [\n' + body + "\n ]\n}\n")


if __name__ == "__main__":
    main()
