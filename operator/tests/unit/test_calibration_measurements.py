"""pfsprobe/1 and IOR JSON inputs: strict validation with field paths, and IOR's real output shape."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pfslayout.calibration import load_measurements, parse_ior, parse_probe
from pfslayout.calibration.measurements import field_path, layout_from_path
from pfslayout.errors import InputError

DATA = Path(__file__).resolve().parents[1] / "data"
PROBE = json.loads((DATA / "probe-synthetic.json").read_text())
IOR = json.loads((DATA / "ior-summary.json").read_text())


def test_probe_fixture_parses() -> None:
    m = parse_probe(PROBE, "probe.json")
    assert m.servers == 4 and m.source_format == "probe" and len(m.cells) == len(PROBE["cells"])
    first, raw = m.cells[0], PROBE["cells"][0]
    assert (first.layout, first.g, first.p, first.m, first.request_size) == (
        raw["layout"], raw["g"], raw["p"], raw["m"], raw["request_size"])
    assert first.time == raw["median"] and first.source == "cells[0]" and len(first.times) == raw["repetitions"]


def mutated(path: tuple[Any, ...], value: Any = None, delete: bool = False) -> dict[str, Any]:
    doc = copy.deepcopy(PROBE)
    target = doc
    for key in path[:-1]:
        target = target[key]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value", "delete", "field", "words"),
    [
        (("cells", 3, "request_size"), "64K", False, "cells[3].request_size", "valid integer"),
        (("cells", 3, "request_size"), 0, False, "cells[3].request_size", "greater than or equal to 1"),
        (("cells", 2, "p"), 1.5, False, "cells[2].p", "valid integer"),
        (("cells", 1, "layout"), "1-DX", False, "cells[1].layout", "'1-DX'"),
        (("cells", 0, "op"), None, True, "cells[0].op", "is required"),
        (("cells", 0, "colour"), "red", False, "cells[0].colour", "not a field"),
        (("platform", "servers"), 0, False, "platform.servers", "greater than or equal to 1"),
        (("platform", "backend"), "nfs", False, "platform.backend", "'nfs'"),
        (("format",), "pfsprobe/2", False, "format", "pfsprobe/1"),
        (("cells",), [], False, "cells", "at least 1"),
        (("cells", 0, "times", 1), "fast", False, "cells[0].times[1]", "valid number"),
        (("cells", 0, "median"), -1.0, False, "cells[0].median", "greater than or equal to 0"),
    ],
)
def test_probe_schema_errors_name_the_field(path: tuple, value: Any, delete: bool, field: str, words: str) -> None:
    with pytest.raises(InputError) as err:
        parse_probe(mutated(path, value, delete), "probe.json")
    message = str(err.value)
    assert message.startswith(f"probe.json: {field}: "), message
    assert words in message and "\n" not in message


def test_probe_semantic_errors_name_the_field() -> None:
    def twod(g: Any) -> dict[str, Any]:
        doc = mutated(("cells", 5, "layout"), "2-D")
        doc["cells"][5]["g"] = g
        return doc

    assert parse_probe(twod(2), "probe.json").cells[5].g == 2
    cases = [
        (twod(None), "cells[5].g", "required for layout 2-D"),
        (twod(8), "cells[5].g", "more than platform.servers=4"),
        (mutated(("cells", 4, "g"), 2), "cells[4].g", "must be null"),
        (mutated(("cells", 0, "m"), PROBE["cells"][0]["p"] + 1), "cells[0].m", "more than p="),
        (mutated(("cells", 0, "p"), 99), "cells[0].p", "more than platform.ranks=8"),
        (mutated(("cells", 0, "repetitions"), 2), "cells[0].times", "repetitions says 2"),
        (mutated(("cells", 0, "median"), 1e9), "cells[0].median", "is not between min="),
    ]
    for doc, field, words in cases:
        with pytest.raises(InputError) as err:
            parse_probe(doc, "probe.json")
        assert str(err.value).startswith(f"probe.json: {field}: ") and words in str(err.value), str(err.value)


def test_ior_fixture_has_ior_shape_and_parses() -> None:
    # the shape of hpc/ior's JSON writer (src/ior-output.c)
    assert set(IOR) == {"Version", "Began", "Command line", "Machine", "tests", "summary", "Finished"}
    test = IOR["tests"][0]
    assert {"TestID", "StartTime", "Path", "Parameters", "Options", "Results", "max"} <= set(test)
    assert {r["access"] for r in test["Results"]} == {"write", "read", "remove"}
    assert {"operation", "API", "TestID", "transferSize", "blockSize", "numTasks", "tasksPerNode", "MeanTime",
            "bwMaxMIB"} <= set(IOR["summary"][0])
    m = parse_ior(IOR, 4, "ior.json")
    assert m.source_format == "ior" and len(m.cells) == 2 * len(IOR["tests"])
    c = m.cells[0]
    p = test["Parameters"]
    assert (c.layout, c.g, c.op, c.pattern) == ("1-DH", None, "write", "sequential")
    assert (c.p, c.m, c.request_size) == (test["Options"]["tasks"], p["tasksPerNode"], p["transferSize"])
    assert c.requests_per_rank == p["blockSize"] // p["transferSize"] * p["segmentCount"]
    total_requests = c.p * c.requests_per_rank
    # phase time from iops (IOR prints wrRdTime with only 4 decimals)
    assert c.times == pytest.approx([total_requests / r["iops"] for r in test["Results"] if r["access"] == "write"])
    assert c.times == pytest.approx([r["wrRdTime"] for r in test["Results"] if r["access"] == "write"], abs=6e-5)
    twod = [x for x in m.cells if x.layout == "2-D"]
    assert twod and all(x.g == 2 for x in twod)
    assert {x.pattern for x in m.cells} == {"sequential", "random"}


def test_ior_summary_only_and_nested_results() -> None:
    doc = copy.deepcopy(IOR)
    for t in doc["tests"]:
        del t["Results"]
    m = parse_ior(doc, 4, "ior.json")
    s = next(e for e in IOR["summary"] if e["TestID"] == 0 and e["operation"] == "read")
    cell = next(c for c in m.cells if c.source == "tests[0].read")
    assert cell.time == pytest.approx(cell.p * cell.requests_per_rank / s["OPsMean"])
    assert cell.time == pytest.approx(s["MeanTime"], abs=6e-5)  # open-to-close, 4 decimals
    for entry in doc["summary"]:
        del entry["OPsMean"]
    assert parse_ior(doc, 4, "ior.json").cells[1].time == s["MeanTime"]
    nested = copy.deepcopy(IOR)
    for t in nested["tests"]:
        t["Results"] = [t["Results"][i:i + 3] for i in range(0, len(t["Results"]), 3)]
    assert [c.time for c in parse_ior(nested, 4, "n.json").cells] == [c.time for c in parse_ior(IOR, 4, "i.json").cells]


def test_ior_layout_override_and_errors() -> None:
    m = parse_ior(IOR, 4, "ior.json", layout="1-DV")
    assert {c.layout for c in m.cells} == {"1-DV"} and all(c.g is None for c in m.cells)
    with pytest.raises(InputError, match="--servers: is required"):
        parse_ior(IOR, None, "ior.json")
    with pytest.raises(InputError, match="--layout: unknown layout"):
        parse_ior(IOR, 4, "ior.json", layout="stripe")
    with pytest.raises(InputError, match="--g: layout 2-D needs a group count"):
        parse_ior(IOR, 4, "ior.json", layout="2-D")
    doc = copy.deepcopy(IOR)
    doc["tests"][1]["Parameters"]["testFileName"] = "/scratch/testfile"
    with pytest.raises(InputError,
        match=r"ior.json: tests\[1\].Parameters.testFileName: '/scratch/testfile' does not name"):
        parse_ior(doc, 4, "ior.json")
    doc = copy.deepcopy(IOR)
    doc["tests"][2]["Parameters"]["blockSize"] = 1000
    with pytest.raises(InputError, match=r"tests\[2\].Parameters.blockSize: 1000 is not a multiple"):
        parse_ior(doc, 4, "ior.json")
    doc = copy.deepcopy(IOR)
    doc["tests"][0]["Results"][0]["iops"] = "inf"  # how IOR prints an infinite rate
    doc["tests"][0]["Results"][0]["wrRdTime"] = 0.0  # and a phase shorter than 0.05 ms
    with pytest.raises(InputError, match=r"tests\[0\].Results\[0\].wrRdTime: must give a positive time.*more data"):
        parse_ior(doc, 4, "ior.json")
    del doc["tests"][0]["Results"][0]["iops"]
    doc["tests"][0]["Results"][0]["wrRdTime"] = "inf"
    with pytest.raises(InputError, match=r"tests\[0\].Results\[0\].wrRdTime: must be int/float"):
        parse_ior(doc, 4, "ior.json")
    doc = copy.deepcopy(IOR)
    del doc["tests"][0]["Parameters"]["transferSize"]
    with pytest.raises(InputError, match=r"tests\[0\].Parameters.transferSize: is required"):
        parse_ior(doc, 4, "ior.json")


def test_layout_from_path() -> None:
    assert layout_from_path("/mnt/ofs/2-D-g4/testfile") == ("2-D", 4)
    assert layout_from_path("/mnt/ofs/1-DV/f.00000001") == ("1-DV", None)
    assert layout_from_path("/x/run_1-DH.dat") == ("1-DH", None)
    assert layout_from_path("/x/11-DHx/f") is None


def test_load_measurements_detects_and_checks(tmp_path: Path) -> None:
    assert load_measurements(DATA / "probe-synthetic.json").source_format == "probe"
    assert load_measurements(DATA / "ior-summary.json", servers=4).source_format == "ior"
    with pytest.raises(InputError, match="--servers: is 3 but"):
        load_measurements(DATA / "probe-synthetic.json", servers=3)
    bad = tmp_path / "bad.json"
    bad.write_text('{"cells": [1,\n')
    with pytest.raises(InputError, match=r"bad.json:2: is not valid JSON"):
        load_measurements(bad)
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    with pytest.raises(InputError, match="neither pfsprobe/1 nor IOR"):
        load_measurements(other)
    with pytest.raises(InputError, match="--format: unknown measurements format 'fio'"):
        load_measurements(other, "fio")
    with pytest.raises(InputError, match=r"--measurements: file .* does not exist"):
        load_measurements(tmp_path / "none.json")


def test_field_path() -> None:
    assert field_path(("cells", 3, "request_size")) == "cells[3].request_size"
    assert field_path(()) == "document"


def test_real_ior_output() -> None:
    """ior-real-posix.json is real output of IOR 4.1.0+dev (hpc/ior, built locally, not part of this
    repository) on this machine: `mpirun -np 2 ior -f calib.ior -O summaryFormat=JSON -O summaryFile=…`
    with two tests, 64 KiB sequential into a directory named 1-DV and 4 KiB random into one named 2-D-g2."""
    doc = json.loads((DATA / "ior-real-posix.json").read_text())
    assert doc["Version"].startswith("4.") and len(doc["tests"]) == 2
    # IOR's 4-decimal printing rounds fast phases to 0.0: the reader must not depend on wrRdTime
    m = parse_ior(doc, 4, "real.json")
    assert [(c.layout, c.g, c.op, c.pattern, c.p, c.m, c.request_size, c.requests_per_rank) for c in m.cells] == [
        ("1-DV", None, "write", "sequential", 2, 2, 65536, 32), ("1-DV", None, "read", "sequential", 2, 2, 65536, 32),
        ("2-D", 2, "write", "random", 2, 2, 4096, 64), ("2-D", 2, "read", "random", 2, 2, 4096, 64)]
    for c in m.cells:
        assert len(c.times) == 3 and all(t > 0 for t in c.times)
        iops = [r["iops"] for r in doc["tests"][int(c.source[6])]["Results"] if r["access"] == c.op]
        assert c.times == pytest.approx([c.p * c.requests_per_rank / i for i in iops])
