"""The per-request layout classification (the twin of the shim's pfs_classify) and the planner's hints.

The planner turns a layout into directory hints (strip size, datafile count); a request of the common size
on a file created under them must behave as that layout, or the shim's `auto` replicas and the planner
would disagree about what a copy is. The C side checks the same vector file (shim/tests/c/test_classify.c).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pfslayout.planner.classify import classify_request, servers_touched
from pfslayout.planner.hints import ALIGN

VECTORS_DIR = Path(__file__).resolve().parents[1] / "vectors"
GENERATOR = VECTORS_DIR / "generate_classify_vectors.py"
VECTORS = json.loads((VECTORS_DIR / "classify-vectors.json").read_text())


def test_servers_touched() -> None:
    assert servers_touched(16, 65536, 16, 0, 65536) == 1
    assert servers_touched(16, 65536, 16, 1, 65536) == 2  # one byte over a strip boundary
    assert servers_touched(16, 16384, 16, 0, 1 << 20) == 16  # capped by the datafiles
    assert servers_touched(16, 16384, 4, 0, 1 << 20) == 4
    assert servers_touched(8, None, None, 0, 10) == 8  # not striped by size: every datafile
    assert servers_touched(8, 4096, 8, 0, 0) == 1  # an empty request still costs one server


def test_classify_request() -> None:
    assert classify_request(16, 4 << 20, 16, 0, 1 << 20) == ("1-DV", None)
    assert classify_request(16, 256 << 10, 16, 0, 1 << 20) == ("2-D", 4)
    assert classify_request(16, 16 << 10, 16, 0, 1 << 20) == ("1-DH", None)


def test_planner_hints_classify_back_to_the_planner_layout() -> None:
    """Where the hints can express the layout exactly — n ≥ 2 and a common size that splits into whole 4 KiB
    units per server — the request of that size classifies back to the planner's choice."""
    checked = 0
    for case in VECTORS["cases"]:
        planner = case.get("planner")
        if planner is None or case["n"] < 2 or planner["request_size"] % (ALIGN * case["n"]):
            continue
        assert case["round_trip"], case["id"]
        checked += 1
    assert checked > 200


def test_one_server_layouts_are_all_one_datafile() -> None:
    one = [c for c in VECTORS["cases"] if c["n"] == 1 and "planner" in c]
    assert one and all(c["expected"] == {"layout": "1-DV", "g": None} for c in one)


def test_vectors_are_what_python_classifies() -> None:
    for c in VECTORS["cases"]:
        got = classify_request(c["n"], c["strip_size"], c["datafiles"], c["offset"], c["size"])
        assert list(got) == [c["expected"]["layout"], c["expected"]["g"]], c["id"]


def test_committed_vectors_are_what_the_generator_writes() -> None:
    out = subprocess.run([sys.executable, str(GENERATOR)], capture_output=True, text=True, check=True).stdout
    assert out == (VECTORS_DIR / "classify-vectors.json").read_text(), (
        "regenerate: python3 operator/tests/vectors/generate_classify_vectors.py "
        "> operator/tests/vectors/classify-vectors.json")
