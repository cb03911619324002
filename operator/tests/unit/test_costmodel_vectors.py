"""The numpy cost model against the shared vectors (generated independently, exact rationals)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from pfslayout.costmodel import CostParams, coefficients, cost

VECTORS_DIR = Path(__file__).resolve().parents[1] / "vectors"
VECTORS = json.loads((VECTORS_DIR / "cost-vectors.json").read_text())
CASES = VECTORS["cases"]
# per-operation cases (e_write/beta_write): each is costed with the parameters of its op
OP_CASES = VECTORS["op_cases"]
TERMS = ("T_e", "T_x", "T_s", "T_rw", "total")


def close(got: float, want: float) -> bool:
    return abs(got - want) <= 1e-12 * abs(want) + 1e-18


def test_format_and_size() -> None:
    assert VECTORS["format"] == "pfslayout-cost-vectors/1"
    assert VECTORS["units"] == {"time": "s", "size": "bytes"}
    assert len(CASES) >= 200
    assert len({c["id"] for c in CASES}) == len(CASES)
    rows = Counter((c["variant"], c["layout"], c["branch"]) for c in CASES)
    assert len(rows) == 16  # 8 table rows x 2 variants, each present


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_scalar_case(case: dict) -> None:
    params = CostParams(**case["params"])
    got = cost(case["layout"], case["p"], case["n"], case["m"], case["s"], case["g"], random=case["random"],
               params=params, variant=case["variant"])
    for term in TERMS:
        assert close(float(getattr(got, term)), case["expected"][term]), (term, float(getattr(got, term)))


@pytest.mark.parametrize("case", OP_CASES, ids=[c["id"] for c in OP_CASES])
def test_per_operation_case(case: dict) -> None:
    params = CostParams.model_validate(case["params"]).for_op(case["op"])
    got = cost(case["layout"], case["p"], case["n"], case["m"], case["s"], case["g"], random=case["random"],
               params=params, variant=case["variant"])
    for term in TERMS:
        assert close(float(getattr(got, term)), case["expected"][term]), (term, float(getattr(got, term)))


def test_per_operation_cases_cover_both_operations_and_differ() -> None:
    assert len(OP_CASES) >= 100
    assert len({c["id"] for c in OP_CASES} | {c["id"] for c in CASES}) == len(OP_CASES) + len(CASES)
    assert Counter(c["op"] for c in OP_CASES) == {"read": len(OP_CASES) // 2, "write": len(OP_CASES) // 2}
    assert {(c["variant"], c["layout"]) for c in OP_CASES} == {(v, L) for v in ("printed", "corrected")
                                                               for L in ("1-DV", "1-DH", "2-D")}
    assert all(c["params"].keys() & {"e_write", "beta_write"} for c in OP_CASES)
    # the write terms matter: a write of s > 0 bytes costs other than the same read
    reads = {(c["variant"], c["layout"], c["p"], c["n"], c["m"], c["g"], c["s"], c["random"],
              json.dumps(c["params"], sort_keys=True)): c["expected"]["total"] for c in OP_CASES if c["op"] == "read"}
    differ = [c for c in OP_CASES if c["op"] == "write" and c["s"] > 0
              and reads[(c["variant"], c["layout"], c["p"], c["n"], c["m"], c["g"], c["s"], c["random"],
                         json.dumps(c["params"], sort_keys=True))] != c["expected"]["total"]]
    assert len(differ) >= 40
    by_id = {c["id"]: c for c in OP_CASES}
    assert sum(1 for h in VECTORS["op_hand_checked"] if "e_shared" in by_id[h["id"]]["params"]) >= 4
    assert sum(1 for h in VECTORS["op_hand_checked"] if by_id[h["id"]]["params"].get("overlap")) >= 2
    # overlap: the larger side, and each side is the larger somewhere (docs/cost-model.md "Overlapped ...")
    over = [c["expected"] for c in OP_CASES if c["params"].get("overlap")]
    assert len(over) >= 40
    assert all(close(e["total"], max(e["T_e"] + e["T_x"], e["T_s"] + e["T_rw"])) for e in over)
    assert any(e["T_e"] + e["T_x"] > e["T_s"] + e["T_rw"] for e in over)
    assert any(e["T_e"] + e["T_x"] < e["T_s"] + e["T_rw"] for e in over)
    for h in VECTORS["op_hand_checked"]:
        assert h["checked_against"]
        assert abs(by_id[h["id"]]["expected"]["total"] * 1e3 - h["ms"]) < 5e-5, h["id"]


@pytest.mark.parametrize("variant", ["printed", "corrected"])
@pytest.mark.parametrize("layout", ["1-DV", "1-DH", "2-D"])
def test_vectorised_matches_cases(variant: str, layout: str) -> None:
    # One array call per (layout, variant, n, params) group: the vectorised path must equal the scalar one.
    groups: dict[tuple, list[dict]] = {}
    for c in CASES:
        if c["variant"] == variant and c["layout"] == layout:
            groups.setdefault((c["n"], json.dumps(c["params"], sort_keys=True)), []).append(c)
    assert groups
    for (n, pjson), cases in groups.items():
        arr = {k: np.array([c[k] for c in cases]) for k in ("p", "m", "s", "random")}
        g = np.array([c["g"] for c in cases]) if layout == "2-D" else None
        got = cost(layout, arr["p"], n, arr["m"], arr["s"], g, random=arr["random"],
                   params=CostParams(**json.loads(pjson)), variant=variant)
        for term in TERMS:
            want = np.array([c["expected"][term] for c in cases])
            np.testing.assert_allclose(getattr(got, term), want, rtol=1e-12, atol=1e-18)


def test_coefficients_are_linear_in_parameters() -> None:
    case = next(c for c in CASES if c["id"] == "hand-2d-corrected-g-not-dividing-n")
    c = coefficients("2-D", case["p"], case["n"], case["m"], case["s"], case["g"], variant="corrected")
    prm = case["params"]
    total = c.ce * prm["e"] + c.cv * prm["v"] + c.ca * prm["alpha_seq"] + c.cb * prm["beta"]
    assert close(float(total), case["expected"]["total"])


def test_hand_checked_cases_match_their_milliseconds() -> None:
    by_id = {c["id"]: c for c in CASES}
    assert len(VECTORS["hand_checked"]) >= 12
    for h in VECTORS["hand_checked"]:
        assert h["checked_against"]
        assert abs(by_id[h["id"]]["expected"]["total"] * 1e3 - h["ms"]) < 5e-5, h["id"]


def test_digest_29_argmins() -> None:
    # docs/seeds.md §2.9 argmin column, and the note that row 4 picks 1-DV under the max form.
    by_id = {c["id"]: c for c in CASES}
    for tag, best in [("eth-rand-p8", "2-D"), ("eth-seq-p64", "1-DV"), ("ib-seq-p4", "2-D"), ("eth-rand-p1", "1-DH")]:
        totals = {L: by_id[f"digest-2.9-{tag}-{L}"]["expected"]["total"] for L in ("1-DV", "1-DH", "2-D")}
        assert min(totals, key=totals.__getitem__) == best
    row4 = {L: float(cost(L, 1, 16, 1, 4096, 8 if L == "2-D" else None, random=True).total)
            for L in ("1-DV", "1-DH", "2-D")}
    assert min(row4, key=row4.__getitem__) == "1-DV"


def test_committed_file_is_what_the_generator_writes() -> None:
    out = subprocess.run([sys.executable, str(VECTORS_DIR / "generate_cost_vectors.py")], capture_output=True,
                         text=True, check=True).stdout
    assert out == (VECTORS_DIR / "cost-vectors.json").read_text()


def test_shared_core_cases_charge_every_message_of_the_round() -> None:
    """docs/cost-model.md "Shared cores": e_shared adds p·nt·e_shared to T_e (nt = servers one request
    touches) and nothing else; both operations keep it."""
    shared = [c for c in OP_CASES if "e_shared" in c["params"]]
    assert len(shared) >= len(OP_CASES) // 8
    assert {c["op"] for c in shared} == {"read", "write"} and {c["layout"] for c in shared} == {"1-DV", "1-DH", "2-D"}
    for c in shared:
        with_ = CostParams.model_validate(c["params"]).for_op(c["op"])
        without = with_.model_copy(update={"e_shared": None})
        a = cost(c["layout"], c["p"], c["n"], c["m"], c["s"], c["g"], random=c["random"], params=with_,
                 variant=c["variant"])
        b = cost(c["layout"], c["p"], c["n"], c["m"], c["s"], c["g"], random=c["random"], params=without,
                 variant=c["variant"])
        nt = 1 if c["layout"] == "1-DV" else c["n"] if c["layout"] == "1-DH" else -(-c["n"] // c["g"])
        assert close(float(a.T_e) - float(b.T_e), c["p"] * nt * c["params"]["e_shared"]), c["id"]
        assert float(a.T_x + a.T_s + a.T_rw) == float(b.T_x + b.T_s + b.T_rw), c["id"]
